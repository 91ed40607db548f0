//! Lemma 4 [GVL13 Thm 8.2.2]: for symmetric `Y = UΛUᵀ`, `|λ₁| ≥ … ≥ |λ_d|`, `|λ_k| > |λ_{k+1}|`,
//! and `cos ψ = σ_min(U₁ᵀQ₀)`, orthogonal iteration satisfies
//! `‖Q_tQ_tᵀ − U₁U₁ᵀ‖₂ ≤ tan(ψ) |λ_{k+1}/λ_k|^t` for every t. Deterministic: checked exactly.
//!
//! Statistic: the largest excess `‖Q_tQ_tᵀ − U₁U₁ᵀ‖ − bound_t` over instances (random
//! eigenvectors, several gaps, random `Q₀`) and all `t`, against a rounding allowance
//! `1e−12`. The same bound is checked on the library's federated orthogonal iteration
//! (SXY22 Algorithm 3, App. D.1) with `Y` held by one client as `a = UΛ`, `b = U`: `2t` of its
//! half-steps are `t` orthogonal-iteration steps on `YYᵀ = Y²`, whose top-k subspace is `U₁`
//! and whose gap ratio is `|λ_{k+1}/λ_k|²`, so the bound is `tan(ψ) |λ_{k+1}/λ_k|^{2t}`.
//! Sabotage: every rate exponent doubled (too fast).

use crate::framework::{CheckConfig, CheckRecord, Figure, Series};
use fedmix::algorithms::orthogonal_iteration::{federated_orthogonal_iteration, ClientMoment};
use fedmix::linalg::{orthogonal_iteration_path, projector_distance, random_orthonormal};
use fedmix::rng::{stream, Purpose};
use fedmix::run::Comm;
use nalgebra::{DMatrix, DVector};

/// Allowance for rounding in the projector distance (entries O(1), d ≤ 60).
const ROUNDING: f64 = 1e-12;

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let ratios: Vec<f64> = cfg.pick(vec![0.5, 0.8, 0.95], vec![0.3, 0.5, 0.8, 0.9, 0.95, 0.99]);
    let (d, k, steps) = (cfg.pick(30, 60), 3, cfg.pick(60, 150));
    let mut worst = f64::NEG_INFINITY;
    let mut figure_obs = Vec::new();
    let mut figure_bound = Vec::new();
    let mut instances = 0;
    for (ri, &ratio) in ratios.iter().enumerate() {
        for rep in 0..cfg.pick(3, 10) {
            let idx = (ri * 100 + rep) as u64;
            let u = random_orthonormal(d, d, &mut stream(cfg.seed, Purpose::Subspace, 2 * idx))
                .expect("d ≥ 1");
            // Spectrum: top-k in [2, 3], λ_{k+1} = λ_k · ratio, then decreasing; alternate signs
            // to exercise |λ| ordering.
            let mut lam = DVector::zeros(d);
            for i in 0..d {
                let mag = if i < k {
                    3.0 - i as f64 * 0.5
                } else {
                    2.0 * ratio * 0.97f64.powi((i - k) as i32)
                };
                lam[i] = if i % 2 == 0 { mag } else { -mag };
            }
            let y = &u * DMatrix::from_diagonal(&lam) * u.transpose();
            let u1 = u.columns(0, k).clone_owned();
            let q0 =
                random_orthonormal(d, k, &mut stream(cfg.seed, Purpose::Subspace, 2 * idx + 1))
                    .expect("k ≤ d");
            let cos_psi = (u1.transpose() * &q0).singular_values().min();
            let tan_psi = (1.0 - cos_psi * cos_psi).max(0.0).sqrt() / cos_psi;
            let rate = (lam[k] / lam[k - 1]).abs();
            let path = orthogonal_iteration_path(&y, &q0, steps);
            for (t, q) in path.iter().enumerate() {
                let obs = projector_distance(q, &u1);
                let exp = if cfg.sabotage { 2 * t } else { t } as i32;
                let bound = tan_psi * rate.powi(exp);
                worst = worst.max(obs - bound);
                if rep == 0 && ri + 1 == ratios.len() {
                    figure_obs.push((t as f64, obs.max(1e-17)));
                    figure_bound.push((t as f64, bound.max(1e-17)));
                }
            }
            let client = [ClientMoment {
                a: &u * DMatrix::from_diagonal(&lam),
                b: u.clone(),
                weight: 1.0,
            }];
            for t in 0..=steps {
                let q = federated_orthogonal_iteration(&client, &q0, 2 * t, &mut Comm::default())
                    .expect("even step count, one client of height d");
                let exp = if cfg.sabotage { 4 * t } else { 2 * t } as i32;
                worst = worst.max(projector_distance(&q, &u1) - tan_psi * rate.powi(exp));
            }
            instances += 1;
        }
    }
    CheckRecord {
        name: "lemma4_orthogonal_iteration_rate".into(),
        claim: "‖Q_tQ_tᵀ − U₁U₁ᵀ‖ ≤ tan ψ |λ_{k+1}/λ_k|^t for every t".into(),
        source: "SXY22 Lemma 4 = GVL13 Thm 8.2.2".into(),
        statistic: worst,
        bound: ROUNDING,
        constant: None,
        slopes: Vec::new(),
        passed: worst <= ROUNDING,
        details: vec![
            format!("{instances} instances: d = {d}, k = {k}, gap ratios |λ_(k+1)/λ_k| ∈ {ratios:?}, random U and Q₀, t = 0..{steps}; Algorithm 3 (2t half-steps) against rate^(2t)"),
            format!("statistic = max over instances and t of (observed − bound); ≤ {ROUNDING:e} passes"),
        ],
        figure: Some(Figure {
            title: format!("Lemma 4: orthogonal iteration, gap ratio {}", ratios[ratios.len() - 1]),
            x_label: "t".into(),
            y_label: "‖Q_tQ_tᵀ − U₁U₁ᵀ‖₂".into(),
            log_x: false,
            log_y: true,
            series: vec![
                Series { label: "observed".into(), points: figure_obs, line: false },
                Series { label: "tan ψ |λ_(k+1)/λ_k|^t".into(), points: figure_bound, line: true },
            ],
        }),
    }
}
