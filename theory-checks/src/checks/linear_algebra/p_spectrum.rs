//! The spectrum of `P_i` (SXY21, Lemma 3, as used in the proof of SXY22 Lemma 7, App. E.2;
//! `P_i` is defined in SXY22 Lemma 1, §4.2.1): with `γ_i = η‖φ_i‖²/n_i < 1`,
//! FedAvg `P_i = Σ_{l<s}(I − ηφ_iφ_iᵀ/n_i)^l` has eigenvalues in `[s/κ_i, s]` with
//! `s/κ_i = (1 − (1−γ_i)^s)/γ_i`; FedProx `P_i = (I + ηφ_iφ_iᵀ/n_i)⁻¹` has them in
//! `[1/(1+γ_i), 1]`. Deterministic: checked exactly (up to rounding).
//!
//! Statistic: the largest violation `max(lo − λ_min, λ_max − hi, 0)/hi` over clients, γ and
//! solvers. Bound: `1e−12`.
//! Sabotage: `κ` with `γ^s` in the numerator, as SXY22 §4.2 prints it (definition of κ before
//! Theorem 2), which is wrong for `s ≥ 2`: the bound `s/κ ≤ λ_min(P_i)` that Lemma 7's proof
//! quotes from SXY21 Lemma 3 needs `κ = sγ/(1 − (1−γ)^s)`, i.e. `s/κ = (1 − (1−γ)^s)/γ`.

use crate::framework::{CheckConfig, CheckRecord, Figure, Series};
use fedmix::algorithms::lemma1::p_block;
use fedmix::metrics::client_curvature;
use fedmix::params::{LocalSolver, Phase2Params};
use fedmix::prec::{max_nan, min_nan};
use fedmix::synthetic::generate_named;
use nalgebra::SymmetricEigen;

/// Tolerance for an eigenvalue to sit on the boundary of its interval (relative to `s`).
const EIGENVALUE_TOL: f64 = 1e-12;

/// The range `[lo, hi]` of the eigenvalues of `P_i` at `g = γ_i = η‖φ_i‖²/n_i` (SXY21 Lemma 3):
/// FedAvg with `s` local steps `[(1 − (1 − g)^s)/g, s]`, FedProx `[1/(1 + g), 1]`. Sabotaged
/// (FedAvg only): the lower end `s/κ` with SXY22 §4.2's printed `κ`, `s(1 − (1 − g)^s)/g^s`.
fn eigenvalue_range(solver: LocalSolver, g: f64, s: usize, sabotage: bool) -> (f64, f64) {
    match solver {
        LocalSolver::Fedavg if sabotage => (
            s as f64 / (g.powi(s as i32) / (1.0 - (1.0 - g).powi(s as i32))),
            s as f64,
        ),
        LocalSolver::Fedavg => ((1.0 - (1.0 - g).powi(s as i32)) / g, s as f64),
        LocalSolver::Fedprox => (1.0 / (1.0 + g), 1.0),
    }
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let sets: Vec<(String, String)> = [
        ("d", "12"),
        ("clients", "30"),
        ("samples", "8"),
        ("sizes", "lognormal"),
        ("size_min", "1"),
        ("size_max", "40"),
        ("covariance", "diagonal"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let fed = generate_named("sxy-balanced", cfg.seed, &sets)
        .expect("valid setting")
        .train;
    let (g1, _) = fedmix::metrics::gamma(&fed, 1.0);
    let gammas: Vec<f64> = cfg.pick(
        vec![0.1, 0.5, 0.9, 0.99],
        vec![0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99],
    );
    let mut worst: f64 = 0.0;
    let mut lows = Vec::new();
    let mut mins = Vec::new();
    for &g in &gammas {
        for (solver, s) in [
            (LocalSolver::Fedavg, 1),
            (LocalSolver::Fedavg, 2),
            (LocalSolver::Fedavg, 5),
            (LocalSolver::Fedavg, 10),
            (LocalSolver::Fedprox, 1),
        ] {
            let p = Phase2Params {
                eta: g / g1,
                local_steps: s,
                local_solver: solver,
                rounds: 1,
            };
            for i in 0..fed.num_clients() {
                let gi = p.eta * client_curvature(&fed, i);
                let ev =
                    SymmetricEigen::new(p_block(&fed, i, &p).expect("finite data")).eigenvalues;
                let (lo, hi) = eigenvalue_range(solver, gi, s, cfg.sabotage);
                // NaN-propagating extremes: nalgebra's `min`/`max` skip a NaN eigenvalue.
                let ev_min = ev.iter().copied().fold(f64::INFINITY, min_nan);
                let ev_max = ev.iter().copied().fold(f64::NEG_INFINITY, max_nan);
                let viol = max_nan(max_nan(lo - ev_min, ev_max - hi), 0.0) / hi;
                worst = max_nan(worst, viol);
                if solver == LocalSolver::Fedavg && s == 5 {
                    lows.push((gi, lo / s as f64));
                    mins.push((gi, ev.min() / s as f64));
                }
            }
        }
    }
    lows.sort_by(|a, b| a.0.total_cmp(&b.0));
    CheckRecord {
        name: "p_spectrum".into(),
        claim: "eigenvalues of P_i lie in [s/κ_i, s] (FedAvg) and [1/(1+γ_i), 1] (FedProx)".into(),
        source: "SXY21 Lemma 3, via SXY22 App. E.2 (proof of Lemma 7)".into(),
        statistic: worst,
        bound: EIGENVALUE_TOL,
        constant: None,
        slopes: Vec::new(),
        constants: Vec::new(),
        passed: worst <= EIGENVALUE_TOL,
        inconclusive: None,
        details: vec![
            format!("M = {} clients (lognormal n_i ≥ 1, d = 12, diagonal Σ_j), γ ∈ {gammas:?}, s ∈ {{1,2,5,10}} and FedProx", fed.num_clients()),
            format!("largest relative violation {worst:.3e}"),
        ],
        figure: Some(Figure {
            title: "P_i spectrum, FedAvg s = 5: λ_min(P_i)/s vs its lower bound".into(),
            x_label: "γ_i".into(),
            y_label: "λ / s".into(),
            log_x: true,
            log_y: false,
            series: vec![
                Series { label: "λ_min(P_i)/s".into(), points: mins, line: false },
                Series { label: "bound 1/κ_i = (1−(1−γ_i)^s)/(sγ_i)".into(), points: lows, line: true },
            ],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eigenvalue_range_is_lemma1s_by_hand() {
        // g = 0.5, s = 3: (1 − 0.125)/0.5 = 1.75 (exact); sabotaged 3·0.875/0.125 = 21.
        let r = |solver, sabotage| eigenvalue_range(solver, 0.5, 3, sabotage);
        let (lo, hi) = r(LocalSolver::Fedavg, false);
        assert_eq!(
            (lo.to_bits(), hi.to_bits()),
            (1.75f64.to_bits(), 3f64.to_bits())
        );
        assert!((r(LocalSolver::Fedavg, true).0 - 21.0).abs() < 1e-13);
        // FedProx at g = 1: [1/2, 1].
        let (lo, hi) = eigenvalue_range(LocalSolver::Fedprox, 1.0, 5, false);
        assert_eq!(
            (lo.to_bits(), hi.to_bits()),
            (0.5f64.to_bits(), 1f64.to_bits())
        );
    }
}
