//! FedSoft's unit tests: one round by hand and against a plain-loop re-implementation, the
//! importance and server weights by hand, λ = 0 as local gradient descent, the start's streams.

use super::*;
use crate::engine::executor::Executor;
use crate::engine::local_update::local_update;
use crate::federation::FederationParts;
use crate::params::{LocalSolver, Phase2Params};

/// `‖a − b‖∞ ≤ rtol · max(‖b‖∞, 1e-300)`, failing on NaN.
fn close(a: &[f64], b: &[f64], rtol: f64) -> bool {
    let scale = b.iter().fold(1e-300, |m: f64, v| m.max(v.abs()));
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= rtol * scale)
}

fn params(k: usize, lambda: f64, smoother: f64, interval: usize) -> FedSoftParams {
    FedSoftParams {
        k,
        lambda,
        smoother,
        interval,
        eta: 0.1,
        local_steps: 2,
        rounds: 1,
        init_scale: 1.0,
    }
}

/// A federation of `samples[i]` = client i's `(φ_ij, y_ij)` pairs.
fn federation(samples: &[Vec<(Vec<f64>, f64)>]) -> Federation {
    let d = samples[0][0].0.len();
    let all: Vec<&(Vec<f64>, f64)> = samples.iter().flatten().collect();
    Federation::new(FederationParts {
        features: DMatrix::from_fn(d, all.len(), |r, j| all[j].0[r]),
        responses: DVector::from_iterator(all.len(), all.iter().map(|s| s.1)),
        sizes: samples.iter().map(Vec::len).collect(),
        ..FederationParts::default()
    })
    .unwrap()
}

/// The round of docs/math.md §3.6 written out with plain loops over clients, samples and
/// coordinates (no shared code with the implementation): `x[i][j]` is `(φ_ij, y_ij)`, `c[s]`
/// the cluster models, `w[i]` the personal models, `kept` the previous importance weights in
/// a round without estimation. Returns `(c, w, u)` after the round.
#[allow(clippy::type_complexity, clippy::needless_range_loop)]
fn round_by_loops(
    x: &[Vec<(Vec<f64>, f64)>],
    c: &[Vec<f64>],
    w: &[Vec<f64>],
    kept: Option<&[Vec<f64>]>,
    p: &FedSoftParams,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let (m, k, d) = (x.len(), c.len(), c[0].len());
    let dot = |a: &[f64], b: &[f64]| (0..d).map(|r| a[r] * b[r]).sum::<f64>();
    let mut u = vec![vec![0.0; k]; m];
    let mut w_new = w.to_vec();
    for i in 0..m {
        let n = x[i].len();
        // Importance estimation: count each sample's nearest cluster, ties → lowest.
        let mut counts = vec![0usize; k];
        for (phi, y) in &x[i] {
            let mut best = 0;
            for s in 1..k {
                if (y - dot(phi, &c[s])).powi(2) < (y - dot(phi, &c[best])).powi(2) {
                    best = s;
                }
            }
            counts[best] += 1;
        }
        for s in 0..k {
            u[i][s] = match kept {
                Some(kept) => kept[i][s],
                None if counts[s] == 0 => p.smoother,
                None => counts[s] as f64 / n as f64,
            };
        }
        // s gradient steps on F_i(w) + (λ/2) Σ_s u_is ‖w − c_s‖²,
        // F_i(w) = Σ_j (y_ij − ⟨φ_ij, w⟩)²/(2n_i).
        for _ in 0..p.local_steps {
            let wi = w_new[i].clone();
            for r in 0..d {
                let mut g = 0.0;
                for (phi, y) in &x[i] {
                    g += phi[r] * (dot(phi, &wi) - y) / n as f64;
                }
                for s in 0..k {
                    g += p.lambda * u[i][s] * (wi[r] - c[s][r]);
                }
                w_new[i][r] = wi[r] - p.eta * g;
            }
        }
    }
    // Server: c_s = Σ_i v_si w_i, v_si = u_is n_i / Σ_i' u_i's n_i'.
    let mut c_new = vec![vec![0.0; d]; k];
    for s in 0..k {
        let total: f64 = (0..m).map(|i| u[i][s] * x[i].len() as f64).sum();
        for i in 0..m {
            let v = u[i][s] * x[i].len() as f64 / total;
            for r in 0..d {
                c_new[s][r] += v * w_new[i][r];
            }
        }
    }
    (c_new, w_new, u)
}

/// d = 2, M = 3 (n = 3, 2, 4), k = 2. At `c_0 = (1, −0.5)`, `c_1 = (0.5, 2)` the
/// predictions `(⟨φ, c_0⟩, ⟨φ, c_1⟩)` are, by hand: client 0 (0.75, 1.5), (−1.3, 3.85),
/// (1.25, −1.85) against y = 0.8, −0.9, 1.6, all nearest c_0: u_0 = (1, σ); client 1
/// (1.4, 1.15), (−0.25, 2.8) against y = 1.4, 3.1, one each: u_1 = (1/2, 1/2), label 0 by
/// the tie rule; client 2 (0.5, 2.05), (−1.5, 0.6), (0.5, −0.65), (1.5, 3) against
/// y = 2.6, 1.1, −0.6, 0.4: c_1, c_1, c_1, c_0, u_2 = (1/4, 3/4).
fn tiny() -> Vec<Vec<(Vec<f64>, f64)>> {
    vec![
        vec![
            (vec![1.0, 0.5], 0.8),
            (vec![-0.3, 2.0], -0.9),
            (vec![0.7, -1.1], 1.6),
        ],
        vec![(vec![1.5, 0.2], 1.4), (vec![0.4, 1.3], 3.1)],
        vec![
            (vec![0.9, 0.8], 2.6),
            (vec![-1.2, 0.6], 1.1),
            (vec![0.3, -0.4], -0.6),
            (vec![2.0, 1.0], 0.4),
        ],
    ]
}

/// (a) One round on the tiny federation equals the plain-loop round to 1e-12 relative: the
/// importance weights exactly, the personal models, the cluster models, the labels and the
/// communication (k·d down, d + k up per client in an estimation round).
#[test]
fn one_round_equals_the_round_written_with_plain_loops() {
    let data = tiny();
    let fed = federation(&data);
    let c0 = vec![vec![1.0, -0.5], vec![0.5, 2.0]];
    let w0 = vec![vec![0.2, 0.1], vec![-0.4, 0.6], vec![0.8, -0.2]];
    let p = FedSoftParams {
        lambda: 0.7,
        smoother: 0.01,
        ..params(2, 0.0, 0.0, 1)
    };
    let (c_want, w_want, u_want) = round_by_loops(&data, &c0, &w0, None, &p);
    let solver = FedSoftRounds { p, init: None };
    let start = ModelState::start(
        DMatrix::from_fn(2, 2, |r, s| c0[s][r]),
        vec![0; 3],
        Personal {
            models: DMatrix::from_fn(2, 3, |r, i| w0[i][r]),
            importance: DMatrix::zeros(2, 3),
            estimated_after: 0,
        },
    );
    let next = Executor::new(&fed, &solver, 1).step(start).unwrap();
    // The importance weights by hand (see `tiny`), exact: a zero count (σ), a tie, a mixture.
    let by_hand = vec![vec![1.0, 0.01], vec![0.5, 0.5], vec![0.25, 0.75]];
    assert_eq!(u_want, by_hand);
    for (i, want) in by_hand.iter().enumerate() {
        let got: Vec<f64> = next.extra.importance.column(i).iter().copied().collect();
        assert_eq!(&got, want, "client {i}");
    }
    for (i, want) in w_want.iter().enumerate() {
        let got: Vec<f64> = next.extra.models.column(i).iter().copied().collect();
        assert!(close(&got, want, 1e-12), "w_{i}: {got:?} vs {want:?}");
    }
    for (s, want) in c_want.iter().enumerate() {
        let got: Vec<f64> = next.theta.column(s).iter().copied().collect();
        assert!(close(&got, want, 1e-12), "c_{s}: {got:?} vs {want:?}");
    }
    assert_eq!(next.labels, vec![0, 0, 1]);
    assert_eq!(next.round, 1);
    assert_eq!(next.comm, Comm::broadcast_and_upload(3, 2 * 2, 2 + 2));
}

/// (b) Importance weights by hand (d = 1, k = 3, c = (1, 3, 10), φ = 1): y = 2 is 1 from
/// both c_0 and c_1 (squared residuals 1 and 1, exact), a tie that goes to s = 0; y = 0.5
/// is nearest c_0 (0.25 < 6.25); y = 3.2 nearest c_1 (0.04 < 4.84); no sample chooses
/// c_2. So counts (2, 1, 0) and u = (2/3, 1/3, σ); the hard label is 0. A second client,
/// y = (9, 11) (both nearest c_2: 1 < 36), has u = (σ, σ, 1) and label 2; a third with
/// y = (2, 2) ties twice and has u = (1, σ, σ), label 0.
#[test]
fn importance_weights_by_hand_with_a_tie_and_a_zero_count() {
    let one = |ys: &[f64]| ys.iter().map(|&y| (vec![1.0], y)).collect::<Vec<_>>();
    let fed = federation(&[one(&[2.0, 0.5, 3.2]), one(&[9.0, 11.0]), one(&[2.0, 2.0])]);
    let c = DMatrix::from_row_slice(1, 3, &[1.0, 3.0, 10.0]);
    let sigma = 1e-4;
    let u: Vec<Vec<f64>> = (0..3)
        .map(|i| importance_weights(&fed, i, &c, sigma))
        .collect();
    assert_eq!(u[0], vec![2.0 / 3.0, 1.0 / 3.0, sigma]);
    assert_eq!(u[1], vec![sigma, sigma, 1.0]);
    assert_eq!(u[2], vec![1.0, sigma, sigma]);
    let um = DMatrix::from_fn(3, 3, |s, i| u[i][s]);
    assert_eq!(hard_labels(&um), vec![0, 2, 0]);
    // Equal weights (a tie in argmax) go to the lowest s.
    assert_eq!(
        hard_labels(&DMatrix::from_column_slice(3, 1, &[0.5, 0.5, sigma])),
        vec![0]
    );
    // The server's weights by hand (n = 3, 2, 2): cluster 2's masses u_i2 n_i are
    // (3σ, 2, 2σ), so v_2 = (3σ, 2, 2σ)/(2 + 5σ); with personal models w = (1, 2, 4) the
    // new c_2 = (3σ·1 + 2·2 + 2σ·4)/(2 + 5σ).
    let w = DMatrix::from_row_slice(1, 3, &[1.0, 2.0, 4.0]);
    let c_new = aggregate(&fed, &w, &um);
    let want = (3.0 * sigma + 4.0 + 8.0 * sigma) / (2.0 + 5.0 * sigma);
    assert!(
        (c_new[(0, 2)] - want).abs() <= 1e-15 * want,
        "{}",
        c_new[(0, 2)]
    );
    // Cluster 0: masses (2, 2σ, 2): c_0 = (2·1 + 2σ·2 + 2·4)/(4 + 2σ).
    let want0 = (2.0 + 4.0 * sigma + 8.0) / (4.0 + 2.0 * sigma);
    assert!(
        (c_new[(0, 0)] - want0).abs() <= 1e-15 * want0,
        "{}",
        c_new[(0, 0)]
    );
}

/// (a, continued) Five rounds with k = 3 and τ = 2 (estimation in rounds 1, 3, 5 only) on
/// `sxy-balanced` (d = 3, M = 8 clients of log-normal sizes) from the run's own start equal
/// the plain-loop rounds to 1e-12 relative, round after round.
#[test]
fn five_rounds_with_three_clusters_equal_the_plain_loops() {
    let fed = crate::synthetic::train_federation(
        "sxy-balanced",
        4,
        &[
            ("d", "3"),
            ("clients", "8"),
            ("samples", "6"),
            ("sizes", "lognormal"),
        ],
    );
    let data: Vec<Vec<(Vec<f64>, f64)>> = (0..fed.num_clients())
        .map(|i| {
            let (x, y) = (fed.x(i), fed.y(i));
            (0..fed.n(i))
                .map(|j| (x.column(j).iter().copied().collect(), y[j]))
                .collect()
        })
        .collect();
    let p = FedSoftParams {
        eta: 0.05,
        local_steps: 3,
        ..params(3, 0.8, 0.05, 2)
    };
    let solver = FedSoftRounds { p, init: None };
    let ex = Executor::new(&fed, &solver, 5);
    let mut state = ex.init(2, &Randomness::default()).unwrap();
    let cols = |mat: &DMatrix<f64>| -> Vec<Vec<f64>> {
        mat.column_iter()
            .map(|c| c.iter().copied().collect())
            .collect()
    };
    let (mut c, mut w, mut u) = (cols(&state.theta), cols(&state.extra.models), Vec::new());
    for t in 0..5 {
        let kept = (t % 2 == 1).then_some(u.as_slice());
        (c, w, u) = round_by_loops(&data, &c, &w, kept, &p);
        state = ex.step(state).unwrap();
        assert_eq!(cols(&state.extra.importance), u, "round {}", t + 1);
        for (got, want) in cols(&state.extra.models).iter().zip(&w) {
            assert!(
                close(got, want, 1e-12),
                "round {}: {got:?} vs {want:?}",
                t + 1
            );
        }
        for (got, want) in cols(&state.theta).iter().zip(&c) {
            assert!(
                close(got, want, 1e-12),
                "round {}: {got:?} vs {want:?}",
                t + 1
            );
        }
    }
}

/// Seven clients of unequal (log-normal) sizes, d = 5 (FedAvg's test federation).
fn unequal() -> Federation {
    crate::algorithms::fedavg::tests::unequal_clients_one_round().0
}

/// (c) With λ = 0 and τ larger than the run, the personal models do plain local GD: after
/// every round, client i's model is `engine::local_update`'s FedAvg steps from its previous
/// one, bit for bit; the importance weights are those of round 1 (estimated at the start,
/// never again); the cluster models are the u-weighted means `Σ_i u_is n_i w_i / Σ_i u_is n_i`
/// (written out here); the upload carries the k weights only in round 1.
#[test]
fn without_the_pull_clients_do_local_gd_and_the_server_a_weighted_mean() {
    let fed = unequal();
    let (m, d, k) = (fed.num_clients(), fed.d(), 3);
    let p = FedSoftParams {
        eta: 0.02,
        local_steps: 3,
        rounds: 4,
        ..params(k, 0.0, 1e-3, 1_000_000)
    };
    let solver = FedSoftRounds { p, init: None };
    let ex = Executor::new(&fed, &solver, 4);
    let mut state = ex.init(9, &Randomness::default()).unwrap();
    let u0 = state.extra.importance.clone();
    let gd = Phase2Params {
        eta: p.eta,
        local_steps: p.local_steps,
        local_solver: LocalSolver::Fedavg,
        rounds: 1,
    };
    for t in 1..=4 {
        let before = state.extra.models.clone();
        state = ex.step(state).unwrap();
        assert_eq!(state.extra.importance, u0, "round {t}: re-estimated");
        for i in 0..m {
            let want = local_update(&fed, i, &before.column(i).clone_owned(), &gd, None);
            assert_eq!(
                state.extra.models.column(i),
                want.column(0),
                "round {t}, w_{i}"
            );
        }
        for s in 0..k {
            let total: f64 = (0..m).map(|i| u0[(s, i)] * fed.n(i) as f64).sum();
            let mut want = vec![0.0; d];
            for i in 0..m {
                for (r, v) in want.iter_mut().enumerate() {
                    *v += u0[(s, i)] * fed.n(i) as f64 * state.extra.models[(r, i)];
                }
            }
            want.iter_mut().for_each(|v| *v /= total);
            let got: Vec<f64> = state.theta.column(s).iter().copied().collect();
            assert!(close(&got, &want, 1e-13), "round {t}, c_{s}");
        }
        let up = if t == 1 { d + k } else { d } as u64;
        assert_eq!(
            state.comm,
            Comm::broadcast_and_upload(m as u64, (k * d) as u64, up)
        );
    }
}

/// The start: `c` is `phase2`'s random start (`stream(seed, Init, 0)`'s first `kd` draws),
/// every personal model the next `d` draws, whether or not `c` is supplied; the labels of
/// the start are the argmax of the importance weights at `c`.
#[test]
fn the_start_draws_c_then_w0_from_the_init_stream() {
    let fed = unequal();
    let (d, k) = (fed.d(), 3);
    let solver = FedSoftRounds {
        p: params(k, 1.0, 1e-4, 1),
        init: None,
    };
    let s = solver.init(&fed, 4, &Randomness::default()).unwrap();
    let draws = random_init(d, k + 1, 1.0, 4, 0);
    assert_eq!(s.theta, random_init(d, k, 1.0, 4, 0));
    assert_eq!(s.theta, draws.columns(0, k));
    for i in 0..fed.num_clients() {
        assert_eq!(s.extra.models.column(i), draws.column(k));
    }
    assert_eq!(s.labels, hard_labels(&s.extra.importance));
    let given = Randomness {
        init: Some(Supplied {
            source: "c.npy".into(),
            value: vec![DMatrix::from_element(d, k, 0.5)],
        }),
        ..Randomness::default()
    };
    let g = solver.init(&fed, 4, &given).unwrap();
    assert_eq!(g.theta, DMatrix::from_element(d, k, 0.5));
    assert_eq!(g.extra.models, s.extra.models);
}

/// Running from the supplied cluster models that the run drew (`resolve`) reproduces the
/// run bit for bit under the same seed.
#[test]
fn the_resolved_start_replays_the_run() {
    let fed = unequal();
    let alg = FedSoft {
        params: crate::params::ParamGuard::check(FedSoftConfig {
            k: Some(3),
            phase2: crate::params::Phase2Config {
                rounds: 6,
                ..crate::params::Phase2Config::default()
            },
            ..FedSoftConfig::default()
        })
        .unwrap(),
        init: None,
    };
    let r = alg.resolve(&fed, 8, &Randomness::default()).unwrap();
    let run = |given: &Randomness| {
        let o = alg
            .run_with(&fed, 8, given, &mut Recorder::quiet())
            .unwrap();
        (o.theta_hat, o.labels)
    };
    assert_eq!(run(&Randomness::default()), run(&r));
}
