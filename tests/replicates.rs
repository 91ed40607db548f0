//! Batched replicates equal single runs bit for bit (`src/engine/client_pass.rs`).
//!
//! The property rests on [`gemm_batched`]: each entry of a product depends on its own row of
//! the left factor and column of the right factor alone, whatever else is batched next to it. It is checked directly (both of
//! nalgebra's paths: matrixmultiply when every dimension exceeds 5, column-wise `gemv`
//! otherwise; inner dimensions above matrixmultiply's 256-wide blocks), then end to end for
//! every algorithm that batches: IFCA restarts (options I and II, FedAvg and FedProx local
//! solvers, partial participation), the `ifca-official` grid (with diverging runs), and
//! batched Phase 2 runs with mixed `s`, `η`, FedProx, fixed labels and a failing job.

use fedmix::algorithms::fedx_clustering::{run_phase2, run_phase2_batch, Phase2Job};

use fedmix::algorithms::ifca::IfcaConfig;
use fedmix::algorithms::ifca::{
    official_init, official_run, official_runs_batch, run_restart_with, run_restarts_batch, Ifca,
    IfcaParams,
};
use fedmix::engine::contract::Algorithm;
use fedmix::engine::init::random_init;
use fedmix::engine::recorder::Recorder;
use fedmix::federation::Federation;
use fedmix::linalg::{columns_operand, gemm_batched, Batched, GEMM_MIN_BATCH};
use fedmix::params::IfcaOption;
use fedmix::params::{LocalSolver, Phase2Params};
use fedmix::params::{ParamGuard, Phase2Config};
use fedmix::seed_streams::{stream, Purpose};
use fedmix::synthetic::generate_named;
use nalgebra::DMatrix;
use rand::RngExt;

fn data(setting: &str, seed: u64, pairs: &[(&str, &str)]) -> Federation {
    let sets: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    generate_named(setting, seed, &sets).expect("data").train
}

fn random(rows: usize, cols: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = stream(seed, Purpose::Replicate, 0);
    DMatrix::from_fn(rows, cols, |_, _| rng.random::<f64>() * 2.0 - 1.0)
}

fn bits(m: &DMatrix<f64>) -> Vec<u64> {
    m.iter().map(|v| v.to_bits()).collect()
}

/// `a · b` through `gemm_batched`.
fn product(a: &DMatrix<f64>, b: &DMatrix<f64>, batched: Batched) -> DMatrix<f64> {
    let mut c = DMatrix::zeros(a.nrows(), b.ncols());
    gemm_batched(
        c.as_mut_slice(),
        columns_operand(a, 0, a.ncols()),
        columns_operand(b, 0, b.ncols()),
        batched,
        usize::MAX,
    );
    c
}

/// `a · b` as nalgebra computes it (matrixmultiply, or its `gemv` path for small shapes).
fn nalgebra_product(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut c = DMatrix::zeros(a.nrows(), b.ncols());
    c.gemm(1.0, a, b, 0.0);
    c
}

#[test]
fn gemm_batched_gives_nalgebras_bits() {
    // The unpacked kernel (when the CPU has AVX2 + FMA) must reproduce matrixmultiply's
    // accumulation order exactly; shapes across its 8 × 4 tiles and 256-blocks, and the small
    // shapes that take nalgebra's own path.
    for (case, &(m, k, n)) in [
        (6, 1000, 100),
        (60, 1000, 37),
        (1000, 100, 6),
        (1003, 257, 30),
        (7, 6, 9),
        (6, 3, 40),
        (9, 600, 6),
    ]
    .iter()
    .enumerate()
    {
        let a = random(m, k, 500 + case as u64);
        let b = random(k, n, 600 + case as u64);
        let batched = if m <= n { Batched::Rows } else { Batched::Cols };
        let full = product(&a, &b, batched);
        assert_eq!(
            bits(&full),
            bits(&nalgebra_product(&a, &b)),
            "m {m}, k {k}, n {n}"
        );
        // Only the first two batched entries live: the same bits there, zeros after.
        let mut c = DMatrix::from_element(m, n, f64::NAN);
        gemm_batched(
            c.as_mut_slice(),
            columns_operand(&a, 0, k),
            columns_operand(&b, 0, n),
            batched,
            2,
        );
        let (live, dead, dead_full) = match batched {
            Batched::Rows => (
                full.rows(0, 2).clone_owned(),
                c.rows(2, m - 2).clone_owned(),
                full.rows(2, m - 2).clone_owned(),
            ),
            Batched::Cols => (
                full.columns(0, 2).clone_owned(),
                c.columns(2, n - 2).clone_owned(),
                full.columns(2, n - 2).clone_owned(),
            ),
        };
        let got = match batched {
            Batched::Rows => c.rows(0, 2).clone_owned(),
            Batched::Cols => c.columns(0, 2).clone_owned(),
        };
        assert_eq!(bits(&got), bits(&live), "live entries, m {m}, k {k}, n {n}");
        // The other entries: zero on the kernel's path, computed in full on matrixmultiply's.
        assert!(
            dead.iter().all(|v| *v == 0.0) || bits(&dead) == bits(&dead_full),
            "m {m}, k {k}, n {n}"
        );
    }
}

fn col_bits(m: &DMatrix<f64>, j: usize) -> Vec<u64> {
    m.column(j).iter().map(|v| v.to_bits()).collect()
}

fn row_bits(m: &DMatrix<f64>, i: usize) -> Vec<u64> {
    m.row(i).iter().map(|v| v.to_bits()).collect()
}

#[test]
fn gemm_entries_do_not_depend_on_the_other_replicates() {
    // (fixed outer size, inner): ≤ 5 → nalgebra's gemv path; otherwise matrixmultiply, with
    // inner > 256 crossing its kc blocks.
    for (case, &(outer, inner)) in [(3, 4), (3, 40), (40, 4), (13, 37), (30, 600)]
        .iter()
        .enumerate()
    {
        let case = case as u64;
        for width in [GEMM_MIN_BATCH, 7, 13, 31] {
            // Columns batched: C = A (outer × inner) · B (inner × width).
            let a = random(outer, inner, 100 + case);
            let b = random(inner, width, 200 + width as u64);
            let full = product(&a, &b, Batched::Cols);
            // Rows batched: C = Bᵀ (width × inner) · A' (inner × outer).
            let at = random(inner, outer, 300 + case);
            let bt = b.transpose();
            let full_rows = product(&bt, &at, Batched::Rows);
            for j in 0..width {
                for pos in [0, GEMM_MIN_BATCH - 1] {
                    let mut alone = DMatrix::zeros(inner, GEMM_MIN_BATCH);
                    alone.set_column(pos, &b.column(j));
                    let c = product(&a, &alone, Batched::Cols);
                    let what = format!("outer {outer}, inner {inner}, width {width}, entry {j}");
                    assert_eq!(col_bits(&c, pos), col_bits(&full, j), "columns: {what}");
                    let r = product(&alone.transpose(), &at, Batched::Rows);
                    assert_eq!(row_bits(&r, pos), row_bits(&full_rows, j), "rows: {what}");
                }
            }
        }
    }
}

#[test]
#[should_panic(expected = "at least 6 batched")]
fn gemm_batched_refuses_a_narrow_batch() {
    let a = random(8, 8, 1);
    let b = random(8, 2, 2);
    let _ = product(&a, &b, Batched::Cols);
}

fn ifca_cfg(option: IfcaOption, solver: LocalSolver, batch: usize) -> IfcaConfig {
    IfcaConfig {
        option,
        phase2: Phase2Config {
            local_solver: solver,
            local_steps: 3,
            rounds: 12,
            ..Phase2Config::default()
        },
        restarts: 5,
        participation: 0.5,
        replicate_batch: batch,
        ..IfcaConfig::default()
    }
}

#[test]
fn ifca_restarts_batched_equal_one_at_a_time() {
    // n_i = 7 > 5 (matrixmultiply path) and n_i = 3 (gemv path).
    for samples in ["7", "3"] {
        let fed = data(
            "sxy-balanced",
            4,
            &[("d", "9"), ("clients", "30"), ("samples", samples)],
        );
        for (option, solver) in [
            (IfcaOption::Gradient, LocalSolver::Fedavg),
            (IfcaOption::Model, LocalSolver::Fedavg),
            (IfcaOption::Model, LocalSolver::Fedprox),
        ] {
            let run = |batch: usize| {
                let alg = Ifca {
                    params: ifca_cfg(option, solver, batch).check().expect("in range"),
                    init: None,
                };
                let mut rec = Recorder::new(true);
                let out = alg.run(&fed, 11, &mut rec).expect("IFCA run");
                (out, rec)
            };
            let (one, rec1) = run(1);
            for batch in [2, 5, 32] {
                let (b, recb) = run(batch);
                let what = format!("{option:?}/{solver:?}, n_i = {samples}, batch {batch}");
                assert_eq!(bits(&one.theta_hat), bits(&b.theta_hat), "{what}");
                assert_eq!(one.labels, b.labels, "{what}");
                assert_eq!(one.summary, b.summary, "{what}: restart losses / choice");
                assert_eq!(rec1.to_csv(), recb.to_csv(), "{what}: trace");
            }
            // And each restart of a batch equals that restart run alone.
            let cfg = ifca_cfg(option, solver, 5).check().expect("valid");
            let p = IfcaParams::resolve(&cfg, &fed).expect("params");
            let starts: Vec<DMatrix<f64>> = (0..5)
                .map(|r| fedmix::algorithms::ifca::init_models(9, 3, p.init(), 1.0, 11, r))
                .collect();
            let ids: Vec<usize> = (0..5).collect();
            let batch = run_restarts_batch(&fed, &p, &starts, &ids, 11, None).expect("batch");
            for (r, o) in batch.iter().enumerate() {
                let alone =
                    run_restart_with(&fed, &p, &starts[r], 11, r, None, &mut Recorder::quiet())
                        .expect("restart");
                let (theta, labels) = o.result.as_ref().expect("batched restart");
                assert_eq!(bits(theta), bits(&alone.0));
                assert_eq!(labels, &alone.1);
            }
        }
    }
}

#[test]
fn official_runs_batched_equal_single_runs_including_divergence() {
    let fed = data(
        "ifca-official",
        3,
        &[
            ("d", "20"),
            ("clients", "12"),
            ("samples", "15"),
            ("r", "1"),
        ],
    );
    // lr = 8 diverges (first non-finite iterate ends the run), 0.1 and 0.01 converge.
    let lrs = [8.0, 0.1, 0.01];
    let starts: Vec<(DMatrix<f64>, f64)> = (0..4)
        .flat_map(|init| {
            lrs.iter()
                .map(move |&lr| (official_init(20, 2, 9, init), lr))
        })
        .collect();
    let batch = official_runs_batch(&fed, &starts, 400).expect("batch");
    let mut diverged = 0;
    for ((theta0, lr), b) in starts.iter().zip(&batch) {
        let alone = official_run(&fed, theta0, *lr, 400, &mut Recorder::quiet()).expect("run");
        assert_eq!(alone.diverged_at, b.diverged_at, "lr {lr}");
        assert_eq!(bits(&alone.theta), bits(&b.theta), "lr {lr}");
        assert_eq!(alone.labels, b.labels);
        assert_eq!(alone.min_dist.to_bits(), b.min_dist.to_bits());
        assert_eq!(alone.training_loss.to_bits(), b.training_loss.to_bits());
        diverged += usize::from(b.diverged_at.is_some());
    }
    assert_eq!(diverged, 4, "every lr = 8 run diverges, no other");
}

#[test]
fn phase2_batch_equals_single_runs_trace_included() {
    for samples in ["9", "4"] {
        let fed = data(
            "sxy-balanced",
            6,
            &[("d", "10"), ("clients", "24"), ("samples", samples)],
        );
        let base = Phase2Config::default().resolve(&fed);
        let starts: Vec<DMatrix<f64>> = (0..3).map(|r| random_init(10, 3, 1.0, 6, r)).collect();
        let truth = fed.labels().expect("labels").to_vec();
        let job = |start: usize, s: usize, eta_scale: f64, solver, rounds| Phase2Job {
            theta0: &starts[start],
            params: Phase2Params {
                eta: base.eta * eta_scale,
                local_steps: s,
                local_solver: solver,
                rounds,
            },
            fixed_labels: None,
        };
        let mut jobs = vec![
            job(0, 1, 1.0, LocalSolver::Fedavg, 15),
            job(0, 5, 1.0, LocalSolver::Fedavg, 15),
            job(1, 10, 0.5, LocalSolver::Fedavg, 9),
            job(2, 2, 1.0, LocalSolver::Fedprox, 15),
            job(1, 1, 0.5, LocalSolver::Fedprox, 12),
            // γ ≥ 1: refused, the others unaffected.
            job(0, 2, 1e3, LocalSolver::Fedavg, 15),
        ];
        jobs.push(Phase2Job {
            fixed_labels: Some(&truth),
            ..job(2, 3, 1.0, LocalSolver::Fedavg, 15)
        });
        let mut recs: Vec<Recorder> = (0..jobs.len()).map(|_| Recorder::new(true)).collect();
        recs[1] = Recorder::quiet();
        let out = run_phase2_batch(&fed, &jobs, &mut recs);
        for (j, (job, (res, rec))) in jobs.iter().zip(out.iter().zip(&recs)).enumerate() {
            let mut alone_rec = if j == 1 {
                Recorder::quiet()
            } else {
                Recorder::new(true)
            };
            let alone = run_phase2(
                &fed,
                job.theta0,
                &job.params,
                job.fixed_labels,
                &mut alone_rec,
            );
            match (res, alone) {
                (Ok((t, l)), Ok((ta, la))) => {
                    assert_eq!(bits(t), bits(&ta), "job {j}, n_i = {samples}");
                    assert_eq!(l, &la);
                    assert_eq!(rec.to_csv(), alone_rec.to_csv(), "job {j}: trace");
                    assert_eq!(rec.iterates.len(), alone_rec.iterates.len());
                }
                (Err(e), Err(ea)) => {
                    assert_eq!(j, 5);
                    assert_eq!(e.to_string(), ea.to_string());
                }
                (r, a) => panic!("job {j}: batch {:?} vs alone {:?}", r.is_ok(), a.is_ok()),
            }
        }
    }
}

/// The engine against an independent per-client reference (nalgebra products, one client at a
/// time) on data where a chunk of clients spans several prediction groups of mixed sizes
/// (`PREDICTION_GROUP_FLOATS`): labels, training loss, an option-I gradient round and a Phase 2
/// FedAvg round. (A slot misalignment at group boundaries once passed every other test, whose
/// data fit one group per chunk.)
#[test]
fn engine_matches_a_per_client_reference_across_prediction_groups() {
    use fedmix::algorithms::fedx_clustering::{assign_clusters, phase2_round_fused};
    use fedmix::algorithms::ifca::gradient_step;
    use fedmix::engine::client_pass::training_loss;
    use fedmix::engine::client_pass::{CLIENT_CHUNK, PREDICTION_GROUP_FLOATS};
    use fedmix::engine::local_update::{client_gradient, local_update};
    use fedmix::metrics::{argmin, client_losses};
    for (setting, pairs) in [
        (
            "sxy-balanced",
            vec![("d", "200"), ("clients", "29"), ("samples", "40")],
        ),
        (
            "sxy-unbalanced-data",
            vec![("d", "900"), ("clients", "60"), ("large_clients", "9")],
        ),
    ] {
        let fed = data(setting, 8, &pairs);
        let (d, m) = (fed.d(), fed.num_clients());
        // A chunk of clients spans several prediction groups.
        assert!(d * fed.n(0) * CLIENT_CHUNK > PREDICTION_GROUP_FLOATS);
        let theta = random(d, 3, 77);
        let labels = assign_clusters(&fed, &theta);
        let mut loss = 0.0;
        for i in 0..m {
            let l = client_losses(&fed, i, &theta);
            assert_eq!(labels[i], argmin(&l), "{setting}: client {i}");
            loss += fed.n(i) as f64 / fed.total_samples() as f64 * l[labels[i]];
        }
        let engine_loss = training_loss(&fed, &theta);
        assert!(
            (engine_loss - loss).abs() <= 1e-12 * loss,
            "{setting}: loss"
        );
        // Option I: θ_j − (γ/M) Σ_{z_i = j} ∇F_i(θ_j).
        let all: Vec<usize> = (0..m).collect();
        let got = gradient_step(&fed, &theta, &all, &labels, 0.3, m as f64, 1.0);
        let mut want = theta.clone();
        for (i, &z) in labels.iter().enumerate() {
            let g = client_gradient(&fed, i, &theta.column(z).clone_owned());
            want.column_mut(z).axpy(-0.3 / m as f64, &g, 1.0);
        }
        assert!(
            fedmix::prec::amax_nan(&(&got - &want)) <= 1e-12 * fedmix::prec::amax_nan(&want),
            "{setting}: gradient round"
        );
        // Phase 2 FedAvg, s = 3: θ_j + Σ_{z_i = j} (n_i/N)(G_i³(θ_j) − θ_j).
        let p = Phase2Params {
            local_steps: 3,
            ..Phase2Config::default().resolve(&fed)
        };
        let (got, got_labels) = phase2_round_fused(&fed, &theta, &p, None, None);
        assert_eq!(got_labels, labels);
        let mut want = theta.clone();
        for (i, &z) in labels.iter().enumerate() {
            let start = theta.column(z).clone_owned();
            let delta = local_update(&fed, i, &start, &p, None) - &start;
            let w = fed.n(i) as f64 / fed.total_samples() as f64;
            want.column_mut(z).axpy(w, &delta, 1.0);
        }
        assert!(
            fedmix::prec::amax_nan(&(&got - &want)) <= 1e-12 * fedmix::prec::amax_nan(&want),
            "{setting}: phase 2 round"
        );
    }
}
