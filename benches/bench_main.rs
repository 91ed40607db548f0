//! Criterion benchmarks. Run: `cargo bench` (add `-- --quick --noplot` for a smoke run).
//! Inputs are seeded and built outside `iter`; ids name the sizes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fedmix::algorithms::fedmd::{client_moments, run_fedmd, subspace_basis};
use fedmix::algorithms::fedx_clustering::phase2_round_fused;
use fedmix::algorithms::ifca::IfcaConfig;
use fedmix::algorithms::ifca::{
    ifca_round, official_init, official_step, official_step_batch, IfcaParams,
};
use fedmix::algorithms::kmeans::kmeans;
use fedmix::algorithms::orthogonal_iteration::federated_orthogonal_iteration;
use fedmix::engine::init::random_init;
use fedmix::engine::recorder::{Comm, Recorder};
use fedmix::federation::Federation;
use fedmix::linalg::{columns_operand, gemm_batched, random_orthonormal, Batched};
use fedmix::metrics::bottleneck_distance;
use fedmix::params::{IfcaOption, ParamGuard};
use fedmix::params::{Pairing, Phase1Variant};
use fedmix::params::{Phase1Config, Phase2Config, StepRule, TwoPhaseParams};
use fedmix::seed_streams::{stream, Purpose};
use fedmix::synthetic::generate_named;
use nalgebra::DMatrix;
use std::time::Duration;

fn fed(setting: &str, sets: &[(&str, &str)]) -> Federation {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    generate_named(setting, 1, &sets)
        .expect("setting generates")
        .train
}

fn quick<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g
}

fn bench_ifca(c: &mut Criterion) {
    let f = fed("ifca-official", &[]);
    let cfg = IfcaConfig {
        option: IfcaOption::Gradient,
        phase2: Phase2Config {
            step: StepRule::Fixed(0.1),
            ..Phase2Config::default()
        },
        ..IfcaConfig::default()
    };
    let p = IfcaParams::resolve(&cfg.check().expect("valid"), &f).expect("valid");
    let theta = random_init(f.d(), 2, 1.0, 1, 0);
    let all: Vec<usize> = (0..f.num_clients()).collect();
    let mut g = quick(c, "ifca");
    g.bench_function(BenchmarkId::new("ifca_round", "k2_m100_n100_d1000"), |b| {
        b.iter(|| ifca_round(&f, &theta, &all, &p, None))
    });
    g.finish();
}

/// Batched vs sequential replicates: one iteration of 30 official runs
/// (10 inits × 3 learning rates) as 30 single passes or one batched pass — same results.
fn bench_replicates(c: &mut Criterion) {
    let f = fed("ifca-official", &[]);
    let starts: Vec<DMatrix<f64>> = (0..30).map(|i| official_init(f.d(), 2, 1, i)).collect();
    let lrs = [1.0, 0.1, 0.01];
    let runs: Vec<(&DMatrix<f64>, f64)> = starts
        .iter()
        .enumerate()
        .map(|(i, t)| (t, lrs[i % 3]))
        .collect();
    let mut g = quick(c, "replicates");
    g.bench_function(
        BenchmarkId::new("official_30_sequential", "k2_m100_n100_d1000"),
        |b| {
            b.iter(|| {
                runs.iter()
                    .map(|&(t, lr)| official_step(&f, t, lr))
                    .collect::<Vec<_>>()
            })
        },
    );
    g.bench_function(
        BenchmarkId::new("official_30_batched", "k2_m100_n100_d1000"),
        |b| b.iter(|| official_step_batch(&f, &runs)),
    );
    g.finish();
}

fn bench_phase2(c: &mut Criterion) {
    let mut g = quick(c, "phase2");
    for setting in ["sxy-balanced", "sxy-unbalanced-data", "sxy-unbalanced-both"] {
        let f = fed(setting, &[]);
        let p = Phase2Config::default().resolve(&f);
        let theta = random_init(f.d(), 3, 1.0, 1, 0);
        g.bench_function(BenchmarkId::new("phase2_round", setting), |b| {
            b.iter(|| phase2_round_fused(&f, &theta, &p, None, None))
        });
    }
    g.finish();
}

fn bench_phase1(c: &mut Criterion) {
    let f = fed("sxy-balanced", &[]);
    let cfg = TwoPhaseParams {
        phase1: Phase1Config {
            iterations: 1,
            ..Phase1Config::default()
        },
        ..TwoPhaseParams::default()
    };
    let k = fedmix::params::resolve_k(cfg.k, &f).expect("valid");
    let p = cfg.phase1.resolve(k, &f);
    let theta0 = random_init(f.d(), 1, 1.0, 1, 0).column(0).clone_owned();
    let set: Vec<usize> = (0..f.num_clients()).collect();
    let moments = client_moments(
        &f,
        &set,
        &theta0,
        Phase1Variant::Practical,
        Pairing::AllPairs,
    );
    let q0 = random_orthonormal(f.d(), 3, &mut stream(1, Purpose::Subspace, 0)).expect("k ≤ d");
    let big = fed("ifca-official", &[("r", "0.3"), ("sigma", "0.5")]);
    let big_set: Vec<usize> = (0..big.num_clients()).collect();
    let big_theta = random_init(big.d(), 1, 1.0, 1, 0).column(0).clone_owned();
    let mut g = quick(c, "phase1");
    g.bench_function(BenchmarkId::new("fedmd_iteration", "sxy-balanced"), |b| {
        b.iter(|| run_fedmd(&f, &p, &theta0, 1, &mut Recorder::quiet()).expect("runs"))
    });
    g.bench_function(
        BenchmarkId::new("federated_orthogonal_iteration", "k3_d100_t40"),
        |b| {
            b.iter(|| {
                federated_orthogonal_iteration(&moments, &q0, 40, &mut Comm::default())
                    .expect("runs")
            })
        },
    );
    g.bench_function(
        BenchmarkId::new("subspace_krylov", "k2_m100_n100_d1000"),
        |b| {
            b.iter(|| {
                subspace_basis(&big, &big_set, &big_theta, Pairing::AllPairs, 2).expect("converges")
            })
        },
    );
    g.finish();
}

fn bench_metrics(c: &mut Criterion) {
    let f = fed("sxy-balanced", &[]);
    let ts = f
        .theta_star()
        .expect("synthetic data has theta_star")
        .clone();
    let est = ts.map(|v| v * 1.01);
    let points = DMatrix::from_fn(100, 1000, |r, c| {
        ((r * 7 + c * 13) % 17) as f64 / 17.0 + (c % 3) as f64
    });
    let mut g = quick(c, "metrics");
    g.bench_function(BenchmarkId::new("bottleneck_distance", "k3_d100"), |b| {
        b.iter(|| bottleneck_distance(&est, &ts).expect("valid"))
    });
    g.bench_function(BenchmarkId::new("kmeans", "k3_m1000_d100_10starts"), |b| {
        b.iter(|| kmeans(&points, 3, 10, 300, 1).expect("valid"))
    });
    g.finish();
}

/// The narrow products of a client pass (`d = 1000`, `n_i = 100`): `gemm_batched` (the unpacked
/// AVX2 kernel of `fedmix-kernels` where the CPU has it) against nalgebra's `gemm`
/// (matrixmultiply, which packs both operands) on the same operands — same bits, see
/// `tests/replicates.rs`. Rows: `k` models (padded to 6) times a client's features; Cols: a
/// client's features times `k` residual columns.
fn bench_narrow_products(c: &mut Criterion) {
    let mut g = quick(c, "narrow_products");
    let mut rng = stream(3, Purpose::Sampling, 0);
    let mut random = |r: usize, c: usize| {
        DMatrix::from_fn(r, c, |_, _| rand::RngExt::random::<f64>(&mut rng) - 0.5)
    };
    let (d, n) = (1000, 100);
    // `live`: the replicates actually computed (the rest is zero padding). One live row or
    // column is a single run's Phase 2 local step on one client (prediction, then gradient);
    // four live rows are its k = 4 cluster choice. A row block's lanes run along the models, so
    // one live row uses one of the four lanes of each FMA.
    for (label, m, k, cols, batched, live) in [
        ("rows_6x1000x100", 6, d, n, Batched::Rows, usize::MAX),
        ("rows_60x1000x100", 60, d, n, Batched::Rows, usize::MAX),
        ("cols_1000x100x6", d, n, 6, Batched::Cols, usize::MAX),
        ("cols_1000x100x30", d, n, 30, Batched::Cols, usize::MAX),
        ("rows_6x1000x100_live1", 6, d, n, Batched::Rows, 1),
        ("rows_6x1000x100_live4", 6, d, n, Batched::Rows, 4),
        ("cols_1000x100x6_live1", d, n, 6, Batched::Cols, 1),
    ] {
        let a = random(m, k);
        let b = random(k, cols);
        let mut out = DMatrix::zeros(m, cols);
        g.bench_function(BenchmarkId::new("gemm_batched", label), |bch| {
            bch.iter(|| {
                gemm_batched(
                    out.as_mut_slice(),
                    columns_operand(&a, 0, k),
                    columns_operand(&b, 0, cols),
                    batched,
                    live,
                )
            })
        });
        if live == usize::MAX {
            g.bench_function(BenchmarkId::new("nalgebra_gemm", label), |bch| {
                bch.iter(|| out.gemm(1.0, &a, &b, 0.0))
            });
        }
    }
    g.finish();
}

/// Phase 1's Gram products `ẼẼᵀ` over one 256-column block (the unit in which `subspace_matrices`
/// accumulates them): the lower-triangle kernel (`fedmix_kernels::gram_lower`, unpacked, half
/// the tiles) against nalgebra / matrixmultiply's full product of the same bits.
fn bench_gram_products(c: &mut Criterion) {
    let mut g = quick(c, "gram_products");
    let mut rng = stream(3, Purpose::Sampling, 1);
    for d in [100, 256] {
        let k = fedmix_kernels::KC;
        let e = DMatrix::from_fn(d, k, |_, _| rand::RngExt::random::<f64>(&mut rng) - 0.5);
        let mut out = DMatrix::zeros(d, d);
        let label = format!("{d}x{k}");
        g.bench_function(BenchmarkId::new("gram_lower", &label), |bch| {
            bch.iter(|| {
                let op = fedmix_kernels::Operand {
                    data: e.as_slice(),
                    rows: d,
                    cols: k,
                    ld: d,
                };
                fedmix_kernels::gram_lower(op, out.as_mut_slice(), d, true)
            })
        });
        g.bench_function(BenchmarkId::new("nalgebra_gemm", &label), |bch| {
            let et = nalgebra::DMatrixView::from_slice_with_strides(e.as_slice(), k, d, d, 1);
            bch.iter(|| out.gemm(1.0, &e, &et, 1.0))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_gram_products,
    bench_narrow_products,
    bench_ifca,
    bench_replicates,
    bench_phase2,
    bench_phase1,
    bench_metrics
);
criterion_main!(benches);
