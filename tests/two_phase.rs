//! Tests of the SXY22 two-phase algorithm: Phase 1, federated moment descent (SXY22 §4.1,
//! App. D), and Phase 2, FedX + clustering (SXY22 §4.2, App. E).

use fedmix::algorithms::fedmd::{client_moments, run_fedmd, subspace_matrix};

use fedmix::algorithms::fedx_clustering::{aggregate, assign_clusters};
use fedmix::algorithms::lemma1::{lambda_diag, noise_vector, p_block, GlobalOperator};
use fedmix::algorithms::orthogonal_iteration::{assemble, federated_orthogonal_iteration};
use fedmix::algorithms::two_phase::{Phase2Only, TwoPhase};
use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::contract::Algorithm;
use fedmix::engine::init::random_init;
use fedmix::engine::recorder::{Comm, Recorder};
use fedmix::error::FedmixError;
use fedmix::federation::Federation;
use fedmix::linalg::{orthonormalize, random_orthonormal};
use fedmix::metrics::{bottleneck_distance, client_curvature};
use fedmix::params::{
    AlgorithmKind, Phase1Config, Phase2Config, Phase2OnlyParams, StepRule, TwoPhaseParams,
};
use fedmix::params::{FedMdParams, Pairing, Phase1Variant, SubspaceMethod};
use fedmix::params::{LocalSolver, Phase2Params};
use fedmix::params::{ParamGuard, Valid};

/// Parameters the tests write, checked as every algorithm's parameters are.
fn ok<P: ParamGuard>(p: P) -> Valid<P> {
    p.check().expect("test parameters in range")
}
use fedmix::prec::{max_nan, min_nan, IDENTITY_RTOL};
use fedmix::seed_streams::{stream, Purpose};
use fedmix::synthetic::generate_named;
use nalgebra::{DMatrix, DVector, SymmetricEigen};
use proptest::prelude::*;

fn sets(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// A small random federation: heavy-tailed sizes (some n_i < d, some ≥ d) and per-cluster
/// covariances, so every code path (dual and primal FedProx factor) is exercised.
fn random_fed(seed: u64, k: usize, d: usize, clients: usize, sigma: f64) -> Federation {
    let s = sets(&[
        ("k", k.to_string()),
        ("d", d.to_string()),
        ("clients", clients.to_string()),
        ("samples", "6".into()),
        ("sizes", "lognormal".into()),
        ("size_spread", "0.8".into()),
        ("size_min", "1".into()),
        ("size_max", "40".into()),
        ("covariance", "diagonal".into()),
        ("sigma", sigma.to_string()),
    ]);
    generate_named("sxy-balanced", seed, &s).unwrap().train
}

fn rel(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    (a - b).norm() / a.norm().max(b.norm()).max(f64::MIN_POSITIVE)
}

fn solver_cases() -> Vec<(LocalSolver, usize)> {
    vec![
        (LocalSolver::Fedavg, 1),
        (LocalSolver::Fedavg, 2),
        (LocalSolver::Fedavg, 5),
        (LocalSolver::Fedavg, 10),
        (LocalSolver::Fedprox, 1),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// SXY22 Lemma 1: a message-level Phase 2 round equals eq. 11 (relative 1e-10), and eq. 12's
    /// three terms sum to the new error, for every cluster, s ∈ {1,2,5,10} and FedProx.
    #[test]
    fn lemma1_eq11_and_eq12_hold(seed in 0u64..1_000_000, k in 2usize..4, d in 2usize..9, clients in 4usize..14, gamma in 0.05f64..0.95) {
        let fed = random_fed(seed, k, d, clients, 0.3);
        let theta_prev = random_init(d, k, 1.0, seed, 7);
        let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
        for (solver, s) in solver_cases() {
            let p = Phase2Params { eta: gamma / g1, local_steps: s, local_solver: solver, rounds: 1 };
            let prox = (solver == LocalSolver::Fedprox).then(|| fedmix::engine::local_update::prox_factors(&fed, p.eta).unwrap());
            let labels = assign_clusters(&fed, &theta_prev);
            let next = aggregate(&fed, &theta_prev, &labels, &p, prox.as_deref());
            let op = GlobalOperator::new(&fed, &p).unwrap();
            let zeta = noise_vector(&fed).unwrap();
            let ts = fed.theta_star().unwrap();
            let truth = fed.labels().unwrap();
            for j in 0..k {
                let prev = theta_prev.column(j).clone_owned();
                let closed = op.eq11(&prev, &lambda_diag(&fed, &labels, j));
                let sim = next.column(j).clone_owned();
                prop_assert!(rel(&sim, &closed) <= IDENTITY_RTOL, "eq. 11, {solver:?} s={s} j={j}: rel {}", rel(&sim, &closed));
                let tsj = ts.column(j).clone_owned();
                let terms = op.eq12(&prev, &tsj, &lambda_diag(&fed, &labels, j), &lambda_diag(&fed, truth, j), &zeta);
                let sum = &terms[0] + &terms[1] + &terms[2];
                let err = &sim - &tsj;
                prop_assert!(rel(&err, &sum) <= IDENTITY_RTOL, "eq. 12, {solver:?} s={s} j={j}: rel {}", rel(&err, &sum));
            }
        }
    }

    /// The eigenvalues of P_i (SXY22 Lemma 1) lie in [s/κ_i, s] (FedAvg) and [1/(1+γ_i), 1]
    /// (FedProx), with γ_i = η‖φ_i‖²/n_i and s/κ_i = (1 − (1−γ_i)^s)/γ_i: the bound
    /// s/κ ≤ λ(P) ≤ s that the proof of SXY22 Lemma 7 (App. E.2) takes from SXY21 Lemma 3,
    /// stated per client (γ_i in place of SXY22 §4.2's γ = max_i γ_i; FedProx is s = 1,
    /// κ = 1 + γ).
    #[test]
    fn p_block_spectrum(seed in 0u64..1_000_000, d in 1usize..12, gamma in 0.01f64..0.99) {
        let fed = random_fed(seed, 2, d, 6, 0.1);
        let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
        let eta = gamma / g1;
        for (solver, s) in solver_cases() {
            let p = Phase2Params { eta, local_steps: s, local_solver: solver, rounds: 1 };
            for i in 0..fed.num_clients() {
                let gi = eta * client_curvature(&fed, i);
                let ev = SymmetricEigen::new(p_block(&fed, i, &p).unwrap()).eigenvalues;
                let (lo, hi) = match solver {
                    LocalSolver::Fedavg => ((1.0 - (1.0 - gi).powi(s as i32)) / gi, s as f64),
                    LocalSolver::Fedprox => (1.0 / (1.0 + gi), 1.0),
                };
                let tol = 1e-12 * hi;
                // NaN-propagating extremes (nalgebra's `min`/`max` skip a NaN eigenvalue).
                let ev_min = ev.iter().copied().fold(f64::INFINITY, min_nan);
                let ev_max = ev.iter().copied().fold(f64::NEG_INFINITY, max_nan);
                prop_assert!(ev_min >= lo - tol && ev_max <= hi + tol,
                    "{solver:?} s={s} client {i}: eigenvalues [{ev_min}, {ev_max}] vs [{lo}, {hi}]");
            }
        }
    }
}

/// The check above can fail: with a perturbed P (one extra local step in the closed form) eq. 11
/// no longer matches the simulated round.
#[test]
fn lemma1_check_detects_a_perturbed_operator() {
    let fed = random_fed(3, 2, 5, 8, 0.3);
    let theta = random_init(5, 2, 1.0, 3, 0);
    let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
    let p = Phase2Params {
        eta: 0.5 / g1,
        local_steps: 3,
        local_solver: LocalSolver::Fedavg,
        rounds: 1,
    };
    let labels = assign_clusters(&fed, &theta);
    let next = aggregate(&fed, &theta, &labels, &p, None);
    let wrong = GlobalOperator::new(
        &fed,
        &Phase2Params {
            local_steps: 4,
            ..p
        },
    )
    .unwrap();
    let closed = wrong.eq11(
        &theta.column(0).clone_owned(),
        &lambda_diag(&fed, &labels, 0),
    );
    assert!(rel(&next.column(0).clone_owned(), &closed) > 1e-6);
}

/// With oracle labels and no noise, one round maps the error of cluster j by `I − ηK_j`, whose
/// norm is exactly `1 − ηλ_min(K_j)` (ηλ_max ≤ 1): an error along the bottom eigenvector of
/// `K_j` shrinks by exactly that factor; any error shrinks by at most that factor.
#[test]
fn oracle_round_contracts_by_exactly_the_norm() {
    let fed = random_fed(11, 2, 6, 30, 0.0);
    let ts = fed.theta_star().unwrap().clone();
    let truth = fed.labels().unwrap().to_vec();
    let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
    for (solver, s) in solver_cases() {
        let p = Phase2Params {
            eta: 0.5 / g1,
            local_steps: s,
            local_solver: solver,
            rounds: 1,
        };
        let op = GlobalOperator::new(&fed, &p).unwrap();
        let prox = (solver == LocalSolver::Fedprox)
            .then(|| fedmix::engine::local_update::prox_factors(&fed, p.eta).unwrap());
        for j in 0..2 {
            let kj = op.K(&lambda_diag(&fed, &truth, j));
            let kj = (&kj + kj.transpose()) * 0.5; // symmetric up to rounding
            let eig = SymmetricEigen::new(kj.clone());
            let imin = eig.eigenvalues.imin();
            let top = eig.eigenvalues.iter().copied().fold(0.0, max_nan);
            assert!(p.eta * top <= 1.0);
            let norm = 1.0 - p.eta * eig.eigenvalues[imin];
            let mut theta = ts.clone();
            let dir = eig.eigenvectors.column(imin).clone_owned() * 0.3;
            theta.set_column(j, &(ts.column(j) + &dir));
            let next = aggregate(&fed, &theta, &truth, &p, prox.as_deref());
            let ratio = (next.column(j) - ts.column(j)).norm() / dir.norm();
            assert!(
                (ratio - norm).abs() <= 1e-10,
                "{solver:?} s={s}: ratio {ratio} vs ‖I−ηK‖ {norm}"
            );
            // A generic direction contracts at least as much.
            let generic = DVector::from_fn(6, |r, _| (r as f64 + 1.0).sin());
            theta.set_column(j, &(ts.column(j) + &generic));
            let next = aggregate(&fed, &theta, &truth, &p, prox.as_deref());
            let r2 = (next.column(j) - ts.column(j)).norm() / generic.norm();
            assert!(r2 <= norm + 1e-12, "{solver:?} s={s}: {r2} > {norm}");
        }
    }
}

/// Federated orthogonal iteration (Algorithm 3) on Phase 1's client moments equals the
/// centralised iteration on the assembled Y, and the fast all-pairs Y equals the assembled one.
#[test]
fn federated_oi_equals_centralised_on_phase1_moments() {
    let fed = random_fed(5, 3, 10, 40, 0.2);
    let theta = random_init(10, 1, 1.0, 5, 0).column(0).clone_owned();
    let set: Vec<usize> = (0..fed.num_clients()).filter(|&i| fed.n(i) >= 2).collect();
    for pairing in [Pairing::AllPairs, Pairing::Halves, Pairing::FirstTwo] {
        let moments = client_moments(&fed, &set, &theta, Phase1Variant::Practical, pairing);
        let y = assemble(&moments, 10);
        let fast = subspace_matrix(&fed, &set, &theta, pairing);
        assert!(
            fedmix::prec::amax_nan(&(&y - &fast)) <= 1e-12 * fedmix::prec::amax_nan(&y),
            "{pairing:?}"
        );
        let q0 = random_orthonormal(10, 3, &mut stream(5, Purpose::Subspace, 0)).unwrap();
        let mut comm = Comm::default();
        let q = federated_orthogonal_iteration(&moments, &q0, 10, &mut comm).unwrap();
        let mut c = q0.clone();
        for t in 0..10 {
            c = if t % 2 == 0 {
                y.transpose() * &c
            } else {
                orthonormalize(&y * &c)
            };
        }
        assert!(
            fedmix::prec::amax_nan(&(&q - &c)) < 1e-10,
            "{pairing:?}: {}",
            fedmix::prec::amax_nan(&(&q - &c))
        );
    }
}

fn small_balanced(seed: u64) -> Federation {
    let s = sets(&[
        ("d", "20".into()),
        ("clients", "120".into()),
        ("samples", "40".into()),
    ]);
    generate_named("sxy-balanced", seed, &s).unwrap().train
}

/// End to end on a small balanced federation: Phase 1 finds k clusters within Δ/2 and Phase 2
/// reaches the oracle's error (same η, s) within 10%.
#[test]
fn two_phase_reaches_the_oracle_on_small_balanced_data() {
    for seed in 1..=3 {
        let fed = small_balanced(seed);
        let ts = fed.theta_star().unwrap();
        let phase2 = Phase2Config {
            rounds: 150,
            ..Phase2Config::default()
        };
        let (out, p1) = TwoPhase {
            params: ok(TwoPhaseParams {
                phase2,
                ..TwoPhaseParams::default()
            }),
            init: None,
        }
        .run_detailed(&fed, seed, &mut Recorder::new(false))
        .unwrap();
        let delta = fedmix::metrics::separation(ts);
        let p1_err = bottleneck_distance(&p1.theta_hat, ts).unwrap().value;
        assert!(
            p1_err < delta / 2.0,
            "seed {seed}: Phase 1 error {p1_err} vs Δ/2 = {}",
            delta / 2.0
        );
        let ours = bottleneck_distance(&out.theta_hat, ts).unwrap().value;
        let oracle = Phase2Only {
            params: ok(Phase2OnlyParams {
                phase2,
                ..Phase2OnlyParams::default()
            }),
            init: None,
            oracle: true,
        }
        .run(&fed, seed, &mut Recorder::new(false))
        .unwrap();
        let floor = bottleneck_distance(&oracle.theta_hat, ts).unwrap().value;
        assert!(
            ours <= 1.1 * floor,
            "seed {seed}: final {ours} vs oracle {floor}"
        );
    }
}

/// Same seed ⇒ bit-identical result.
#[test]
fn two_phase_is_deterministic() {
    let fed = small_balanced(9);
    let cfg = TwoPhaseParams {
        phase1: Phase1Config {
            iterations: 5,
            ..Phase1Config::default()
        },
        phase2: Phase2Config {
            rounds: 20,
            ..Phase2Config::default()
        },
        ..TwoPhaseParams::default()
    };
    let a = TwoPhase {
        params: ok(cfg),
        init: None,
    }
    .run(&fed, 4, &mut Recorder::new(false))
    .unwrap();
    let b = TwoPhase {
        params: ok(cfg),
        init: None,
    }
    .run(&fed, 4, &mut Recorder::new(false))
    .unwrap();
    let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.theta_hat), bits(&b.theta_hat));
    assert_eq!(a.labels, b.labels);
}

/// The faithful variant (fresh clients, fresh samples, federated orthogonal iteration) runs on
/// a federation built for it and moves the anchors towards their models.
#[test]
fn faithful_variant_runs_and_descends() {
    let s = sets(&[
        ("d", "8".into()),
        ("clients", "1200".into()),
        ("samples", "2".into()),
        ("large_clients", "30".into()),
        ("large_samples", "200".into()),
        ("k", "2".into()),
    ]);
    let fed = generate_named("sxy-balanced", 2, &s).unwrap().train;
    let cfg = Phase1Config {
        variant: Phase1Variant::Faithful,
        iterations: 4,
        anchors: Some(12),
        m: Some(250),
        ell: Some(25),
        t1: 20,
        ..Phase1Config::default()
    };
    let p = cfg.resolve(fedmix::params::resolve_k(None, &fed).unwrap(), &fed);
    let theta0 = DVector::zeros(8);
    let mut rec = Recorder::new(false);
    let out = run_fedmd(&fed, &p, &theta0, 2, &mut rec).unwrap();
    let first = rec.rows.first().unwrap().distance.unwrap();
    let last = rec.rows.last().unwrap().distance.unwrap();
    let start = fed
        .theta_star()
        .unwrap()
        .column_iter()
        .map(|c| c.norm())
        .fold(0.0, max_nan);
    assert!(
        last < 0.6 * start,
        "anchors' max error {first} → {last}, start {start}"
    );
    assert!(out.components_found >= 2);
}

fn base_p1(k: usize) -> FedMdParams {
    FedMdParams {
        variant: Phase1Variant::Practical,
        k,
        anchors: 4,
        iterations: 2,
        t1: 10,
        t2: 20,
        m: 1,
        ell: 1,
        epsilon: 0.05,
        separation: None,
        alpha: 1.0,
        beta: 1.0,
        pairing: Pairing::AllPairs,
        subspace: SubspaceMethod::Svd,
        anchor_min_samples: 15,
    }
}

#[test]
fn bad_inputs_give_typed_errors() {
    let fed = small_balanced(1);
    // γ ≥ 1: reports γ and the largest admissible η.
    let mut params = TwoPhaseParams::default();
    params.phase2.step = StepRule::Fixed(10.0);
    let e = TwoPhase {
        params: ok(params),
        init: None,
    }
    .run(&fed, 1, &mut Recorder::new(false))
    .unwrap_err();
    assert!(matches!(e, FedmixError::StepTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("largest admissible eta"), "{e}");
    // Too few eligible anchors.
    let p = FedMdParams {
        anchor_min_samples: 1000,
        ..base_p1(3)
    };
    let e = run_fedmd(&fed, &p, &DVector::zeros(20), 1, &mut Recorder::new(false)).unwrap_err();
    assert!(
        matches!(
            e,
            FedmixError::NotEnoughClients {
                found: 0,
                needed: 4,
                ..
            }
        ),
        "{e}"
    );
    // Faithful anchors need 2ℓT fresh samples.
    let p = FedMdParams {
        variant: Phase1Variant::Faithful,
        ell: 30,
        m: 5,
        ..base_p1(3)
    };
    let e = run_fedmd(&fed, &p, &DVector::zeros(20), 1, &mut Recorder::new(false)).unwrap_err();
    assert!(e.to_string().contains("2ℓT"), "{e}");
    // Fewer than k clusters: a huge Δ merges every anchor.
    let p = FedMdParams {
        separation: Some(1e6),
        ..base_p1(3)
    };
    let e = run_fedmd(&fed, &p, &DVector::zeros(20), 1, &mut Recorder::new(false)).unwrap_err();
    assert!(
        matches!(e, FedmixError::TooFewClusters { found: 1, k: 3 }),
        "{e}"
    );
    // Non-finite iterate: a start at 1e300 overflows the residual moments.
    let p = base_p1(3);
    let e = run_fedmd(
        &fed,
        &p,
        &DVector::from_element(20, 1e300),
        1,
        &mut Recorder::new(false),
    )
    .unwrap_err();
    assert!(matches!(e, FedmixError::Divergence { .. }), "{e}");
    // Odd T₁ for orthogonal iteration.
    let p = FedMdParams {
        subspace: SubspaceMethod::OrthogonalIteration,
        t1: 3,
        ..base_p1(3)
    };
    assert!(run_fedmd(&fed, &p, &DVector::zeros(20), 1, &mut Recorder::new(false)).is_err());
    // Wrong init dimension.
    let e = Phase2Only {
        params: ok(Phase2OnlyParams::default()),
        init: Some(DMatrix::zeros(7, 3)),
        oracle: false,
    }
    .run(&fed, 1, &mut Recorder::new(false))
    .unwrap_err();
    assert!(matches!(e, FedmixError::DimensionMismatch { .. }), "{e}");
    // Unknown config key / wrong type.
    let parse = |key: &str, value: &str| {
        AlgorithmParams::from_sources(AlgorithmKind::TwoPhase, None, &sets(&[(key, value.into())]))
    };
    assert!(parse("etaa", "0.1").is_err());
    assert!(parse("local_steps", "many").is_err());
    assert!(parse("local_steps", "0").is_err());
}

/// Clients with n_i = 1 are excluded from the subspace step and counted.
#[test]
fn singleton_clients_are_excluded_and_counted() {
    let s = sets(&[
        ("d", "20".into()),
        ("clients", "130".into()),
        ("samples", "40".into()),
        ("singleton_clients", "10".into()),
    ]);
    let fed = generate_named("sxy-balanced", 4, &s).unwrap().train;
    // A tiny Δ keeps every anchor its own component, so clustering cannot fail here.
    let p = FedMdParams {
        anchors: 9,
        iterations: 3,
        separation: Some(1e-9),
        ..base_p1(3)
    };
    let out = run_fedmd(&fed, &p, &DVector::zeros(20), 4, &mut Recorder::new(false)).unwrap();
    assert_eq!(out.excluded_clients, 10);
    assert_eq!(out.components_found, 9);
}

/// Theorem 1's parameter helper: orders as stated, and a clear error naming what is missing
/// when the federation is too small.
#[test]
fn theorem1_choices_and_their_errors() {
    use fedmix::algorithms::fedmd::{theorem1_choices, Theorem1Constants};
    let c = Theorem1Constants {
        c_m: 0.01,
        c_ell: 0.5,
        c_t1: 1.0,
        c_t2: 1.0,
        iterations: 2,
        epsilon: 0.2,
    };
    let s = sets(&[
        ("d", "5".into()),
        ("clients", "3000".into()),
        ("samples", "2".into()),
        ("large_clients", "60".into()),
        ("large_samples", "100".into()),
        ("k", "2".into()),
        ("labels", "modulo".into()),
    ]);
    let fed = generate_named("sxy-balanced", 1, &s).unwrap().train;
    let p = theorem1_choices(&fed, 2, &c).unwrap();
    let n = fed.total_samples() as f64;
    // n_H = ⌈log N / p_min⌉ with p_min = 1/2 (modulo labels).
    assert_eq!(p.anchors, (n.ln() / 0.5).ceil() as usize);
    assert_eq!(p.t1 % 2, 0);
    assert!(p.t1 >= (2.0 * (n * 5.0).ln()).ceil() as usize);
    // The other choices as documented: m = ⌈c_m d log N / p_min²⌉, ℓ = ⌈c_ell k log N⌉,
    // T₂ = ⌈c_t2 log(Nd)⌉ (natural logs, d = 5, k = 2, p_min = 1/2).
    assert_eq!(p.m, (0.01 * 5.0 * n.ln() / 0.25).ceil() as usize);
    assert_eq!(p.ell, (0.5 * 2.0 * n.ln()).ceil() as usize);
    assert_eq!(p.t2, (n * 5.0).ln().ceil() as usize);
    // Too small: the error says which requirement fails.
    let small = small_balanced(1);
    let e = theorem1_choices(&small, 3, &c).unwrap_err();
    assert!(matches!(e, FedmixError::NotEnoughClients { .. }), "{e}");
    assert!(e.to_string().contains("Theorem 1"), "{e}");
}
