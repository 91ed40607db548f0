//! SXY22 Lemma 1 (eq. 11) and the eq. 12 decomposition: exact algebraic identities between a
//! message-level Phase 2 round and the closed form `θ_{j,t} = θ_{j,t−1} − ηBΛ_{j,t}(φθ_{j,t−1} − y)`.
//!
//! Statistic: the largest relative deviation over random federations, clusters, FedAvg with
//! `s ∈ {1, 2, 5, 10}` and FedProx, of (a) the simulated round from eq. 11 and (b) the error from
//! the sum of eq. 12's three terms. Bound: `1e−10` (identities hold to rounding). Eq. 11 is
//! checked on both implementations of a round: the message-level `aggregate` (weights passed
//! per client) and `phase2_round_fused` (the batched kernel with shares `n_i/N` that
//! `run_phase2`, hence the two-phase algorithm, takes), each with its own cluster choices.
//! Sabotage: the closed form is built as FedAvg with `s + 1` local steps (a perturbed operator,
//! also for the FedProx case).

use crate::framework::{CheckConfig, CheckRecord, Figure, Series};
use fedmix::algorithms::fedx_clustering::{aggregate, assign_clusters, phase2_round_fused};
use fedmix::algorithms::lemma1::{lambda_diag, noise_vector, GlobalOperator};
use fedmix::engine::init::random_init;
use fedmix::engine::local_update::prox_factors;
use fedmix::params::{LocalSolver, Phase2Params};
use fedmix::prec::{max_nan, IDENTITY_RTOL};
use fedmix::synthetic::generate_named;
use nalgebra::DVector;

fn rel(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    (a - b).norm() / a.norm().max(b.norm()).max(f64::MIN_POSITIVE)
}

/// The parameters eq. 11's closed form is built with: the round's own, or (sabotaged) FedAvg
/// with one local step more.
fn closed_form_params(p: Phase2Params, sabotage: bool) -> Phase2Params {
    if sabotage {
        Phase2Params {
            local_steps: p.local_steps + 1,
            local_solver: LocalSolver::Fedavg,
            ..p
        }
    } else {
        p
    }
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let reps = cfg.pick(6, 40);
    let cases: [(LocalSolver, usize); 5] = [
        (LocalSolver::Fedavg, 1),
        (LocalSolver::Fedavg, 2),
        (LocalSolver::Fedavg, 5),
        (LocalSolver::Fedavg, 10),
        (LocalSolver::Fedprox, 1),
    ];
    let mut worst11: f64 = 0.0;
    let mut worst12: f64 = 0.0;
    let mut points11 = Vec::new();
    let mut points12 = Vec::new();
    for r in 0..reps {
        let seed = cfg.seed.wrapping_add(r as u64);
        let sets: Vec<(String, String)> = [
            ("k", "3"),
            ("d", "8"),
            ("clients", "20"),
            ("samples", "6"),
            ("sizes", "lognormal"),
            ("size_min", "1"),
            ("size_max", "30"),
            ("covariance", "diagonal"),
            ("sigma", "0.3"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let Ok(data) = generate_named("sxy-balanced", seed, &sets) else {
            continue;
        };
        let fed = data.train;
        let theta = random_init(8, 3, 1.0, seed, 1);
        let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
        for (ci, &(solver, s)) in cases.iter().enumerate() {
            let p = Phase2Params {
                eta: 0.6 / g1,
                local_steps: s,
                local_solver: solver,
                rounds: 1,
            };
            let prox = (solver == LocalSolver::Fedprox)
                .then(|| prox_factors(&fed, p.eta).expect("finite data"));
            let labels = assign_clusters(&fed, &theta);
            let next = aggregate(&fed, &theta, &labels, &p, prox.as_deref());
            let (fused, fused_labels) = phase2_round_fused(&fed, &theta, &p, prox.as_deref(), None);
            let closed_p = closed_form_params(p, cfg.sabotage);
            let op = GlobalOperator::new(&fed, &closed_p).expect("finite data");
            let zeta = noise_vector(&fed).expect("synthetic data");
            let (ts, truth) = (
                fed.theta_star().expect("synthetic"),
                fed.labels().expect("synthetic"),
            );
            for j in 0..3 {
                let prev = theta.column(j).clone_owned();
                let lt = lambda_diag(&fed, &labels, j);
                let sim = next.column(j).clone_owned();
                let fused_lt = lambda_diag(&fed, &fused_labels, j);
                let e11 = max_nan(
                    rel(&sim, &op.eq11(&prev, &lt)),
                    rel(&fused.column(j).clone_owned(), &op.eq11(&prev, &fused_lt)),
                );
                let tsj = ts.column(j).clone_owned();
                let terms = op.eq12(&prev, &tsj, &lt, &lambda_diag(&fed, truth, j), &zeta);
                let e12 = rel(&(&sim - &tsj), &(&terms[0] + &terms[1] + &terms[2]));
                worst11 = max_nan(worst11, e11);
                worst12 = max_nan(worst12, e12);
                let x = (r * cases.len() + ci) as f64 + 1.0;
                points11.push((x, e11.max(1e-18)));
                points12.push((x, e12.max(1e-18)));
            }
        }
    }
    let statistic = max_nan(worst11, worst12);
    let n = points11.len();
    CheckRecord {
        name: "lemma1_global_iteration".into(),
        claim: "a Phase 2 round equals eq. 11 and eq. 12's three terms sum to the error (exact identities)".into(),
        source: "SXY22 Lemma 1, eq. 11–12".into(),
        statistic,
        bound: IDENTITY_RTOL,
        constant: None,
        slopes: Vec::new(),
        constants: Vec::new(),
        passed: statistic <= IDENTITY_RTOL,
        inconclusive: None,
        details: vec![
            format!("{reps} random federations (k=3, d=8, M=20, lognormal n_i ≥ 1, diagonal Σ_j, σ=0.3), 3 clusters, FedAvg s∈{{1,2,5,10}} and FedProx, γ=0.6: {n} comparisons; eq. 11 on both `aggregate` and `phase2_round_fused`"),
            format!("max relative deviation eq. 11: {worst11:.3e}; eq. 12: {worst12:.3e}"),
        ],
        figure: Some(Figure {
            title: "Lemma 1: simulated round vs closed form".into(),
            x_label: "case".into(),
            y_label: "relative deviation".into(),
            log_x: false,
            log_y: true,
            series: vec![
                Series { label: "eq. 11".into(), points: points11, line: false },
                Series { label: "eq. 12 (sum of terms)".into(), points: points12, line: false },
                Series { label: "tolerance 1e-10".into(), points: vec![(0.0, IDENTITY_RTOL), (n as f64 / 3.0 + 1.0, IDENTITY_RTOL)], line: true },
            ],
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sabotaged_closed_form_takes_fedavg_with_one_step_more() {
        use fedmix::params::{LocalSolver, Phase2Params};
        let p = Phase2Params {
            eta: 0.1,
            local_steps: 5,
            local_solver: LocalSolver::Fedprox,
            rounds: 1,
        };
        let same = super::closed_form_params(p, false);
        assert_eq!(
            (same.local_steps, same.local_solver),
            (5, LocalSolver::Fedprox)
        );
        let broken = super::closed_form_params(p, true);
        assert_eq!(
            (broken.local_steps, broken.local_solver),
            (6, LocalSolver::Fedavg)
        );
        assert_eq!(broken.eta.to_bits(), 0.1f64.to_bits());
    }

    #[test]
    fn rel_is_the_difference_over_the_larger_norm() {
        let v = |x: &[f64]| nalgebra::DVector::from_column_slice(x);
        // ‖(0, −0.5)‖ = 0.5 over max(‖(3, 4)‖, ‖(3, 4.5)‖) = √29.25.
        let want = 0.5 / 29.25f64.sqrt();
        assert_eq!(
            super::rel(&v(&[3.0, 4.0]), &v(&[3.0, 4.5])).to_bits(),
            want.to_bits()
        );
        assert_eq!(
            super::rel(&v(&[3.0, 4.5]), &v(&[3.0, 4.0])).to_bits(),
            want.to_bits()
        );
        // Both zero: 0, not NaN.
        assert_eq!(super::rel(&v(&[0.0]), &v(&[0.0])).to_bits(), 0f64.to_bits());
    }
}
