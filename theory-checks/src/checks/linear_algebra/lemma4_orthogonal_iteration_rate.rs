//! Lemma 4 [GVL13 Thm 8.2.2]: for symmetric `Y = UΛUᵀ`, `|λ₁| ≥ … ≥ |λ_d|`, `|λ_k| > |λ_{k+1}|`,
//! and `cos ψ = σ_min(U₁ᵀQ₀)`, orthogonal iteration satisfies
//! `‖Q_tQ_tᵀ − U₁U₁ᵀ‖₂ ≤ tan(ψ) |λ_{k+1}/λ_k|^t` for every t. Deterministic: checked exactly.
//!
//! Statistic: the largest excess `‖Q_tQ_tᵀ − U₁U₁ᵀ‖ − bound_t` over instances (random
//! eigenvectors, several gaps, random `Q₀`) and all `t`, against a rounding allowance
//! `1e−12`. The same bound is checked on the library's federated orthogonal iteration
//! (SXY22 Algorithm 3, App. D.1) on `Y = UΛUᵀ`: `2t` of its
//! half-steps are `t` orthogonal-iteration steps on `YYᵀ = Y²`, whose top-k subspace is `U₁`
//! and whose gap ratio is `|λ_{k+1}/λ_k|²`, so the bound is `tan(ψ) |λ_{k+1}/λ_k|^{2t}`. `Y` is
//! held by four clients with unequal weights `w_i = n_i/N` (Algorithm 3 aggregates `Σ w_i M_i`;
//! client `c` holds the eigen-columns `j ≡ c mod 4` as `a = (UΛ)_S / w_c`, `b = U_S`), so the
//! aggregation weights are exercised: a mis-weighted sum iterates on another matrix.
//!
//! The bound is loose on these instances (a random `Q₀` makes `tan ψ` large, and the spectrum
//! below `λ_{k+1}` decays), so an iterate reported one step late would stay under it. Two exact
//! identities therefore pin the reported iterates themselves, each up to [`IDENTITY_RTOL`]
//! relative (the library's tolerance for algebraic identities in floating point; a Householder
//! QR of a `d × k` block is backward stable to `O(dk·eps)`; measured ≤ 2e−15 here):
//! - **The recursion** (SXY22 §4.1, `YQ_t = Q_{t+1}R_{t+1}` with a QR factorisation; GVL13
//!   §8.2.4): for every reported `t`, `R := Q_{t+1}ᵀYQ_t` satisfies `Q_{t+1}R = YQ_t`, is upper
//!   triangular with `diag R ≥ 0` (the sign convention of `fedmix::linalg::qr_positive`), and
//!   `Q_{t+1}ᵀQ_{t+1} = I`. Deviation: the largest of `‖Q_{t+1}R − YQ_t‖_F / ‖YQ_t‖_F`,
//!   `max_{i>j} |R_ij| / ‖YQ_t‖_F`, `max_i (−R_ii)⁺ / ‖YQ_t‖_F` and `‖Q_{t+1}ᵀQ_{t+1} − I‖_max`.
//! - **Power iteration is orthogonal iteration with `k = 1`** (SXY22 §4.1: "when `k = 1`, this is
//!   just the power method"): `fedmix::linalg::power_iteration(S, v₀, t)` with `S = YYᵀ` (the PSD
//!   form SXY22 Phase 1 step 9 iterates on through Algorithm 3) and `v₀` the first column of `Q₀`
//!   equals the one-column orthogonal-iteration path at step `t`, for every `t = 0..T`, and so does
//!   its Rayleigh quotient `vᵀSv` (relative to `‖S‖_F`). Deviation: the largest of `‖v_t − q_t‖`
//!   and `|vᵀSv − qᵀSq| / ‖S‖_F` over `t`.
//!
//! Sabotage: every rate exponent doubled (too fast); the identities are not sabotaged.

use crate::framework::{CheckConfig, CheckRecord, Figure, Series};
use fedmix::algorithms::orthogonal_iteration::{federated_orthogonal_iteration, ClientMoment};
use fedmix::engine::recorder::Comm;
use fedmix::linalg::{
    orthogonal_iteration_path, power_iteration, projector_distance, random_orthonormal,
};
use fedmix::prec::{amax_nan, max_nan, min_nan, IDENTITY_RTOL};
use fedmix::seed_streams::{stream, Purpose};
use nalgebra::{DMatrix, DVector};

/// Aggregation weights `n_i / N` of the four clients that hold `Y` in the federated run
/// (`n = 725, 200, 50, 25`, `N = 1000`).
const CLIENT_WEIGHTS: [f64; 4] = [0.725, 0.2, 0.05, 0.025];

/// Allowance for rounding in the projector distance (entries O(1), d ≤ 60).
const ROUNDING: f64 = 1e-12;

/// Largest relative deviation of a reported orthogonal-iteration path from the recursion
/// `YQ_t = Q_{t+1}R_{t+1}` (QR with `diag R ≥ 0`, `Q_{t+1}` orthonormal), over `t`.
fn recursion_deviation(y: &DMatrix<f64>, path: &[DMatrix<f64>]) -> f64 {
    let mut worst: f64 = 0.0;
    for pair in path.windows(2) {
        let (q, next) = (&pair[0], &pair[1]);
        let yq = y * q;
        let scale = yq.norm().max(f64::MIN_POSITIVE);
        let r = next.tr_mul(&yq);
        worst = max_nan(worst, (next * &r - &yq).norm() / scale);
        for i in 0..r.nrows() {
            worst = max_nan(worst, max_nan(-r[(i, i)], 0.0) / scale);
            for j in 0..i.min(r.ncols()) {
                worst = max_nan(worst, r[(i, j)].abs() / scale);
            }
        }
        let k = next.ncols();
        worst = max_nan(
            worst,
            amax_nan(&(next.tr_mul(next) - DMatrix::identity(k, k))),
        );
    }
    worst
}

/// Largest deviation of `power_iteration(S, v₀, t)` (`v₀` = first column of `q0`) from the
/// one-column orthogonal-iteration path on `S`, in the vector and in the Rayleigh quotient
/// (relative to `‖S‖_F`), over `t = 0..=steps`.
fn power_deviation(s: &DMatrix<f64>, q0: &DMatrix<f64>, steps: usize) -> f64 {
    let v0 = q0.column(0).clone_owned();
    let path = orthogonal_iteration_path(
        s,
        &DMatrix::from_column_slice(v0.len(), 1, v0.as_slice()),
        steps,
    );
    let scale = s.norm();
    path.iter()
        .enumerate()
        .map(|(t, q)| {
            let q = q.column(0);
            let (v, lambda) = power_iteration(s, &v0, t);
            let rayleigh = q.dot(&(s * q));
            max_nan((&v - q).norm(), (lambda - rayleigh).abs() / scale)
        })
        .fold(0.0, max_nan)
}

/// The instances' spectrum: top-k magnitudes `3, 2.5, …` (in `[2, 3]` for k = 3),
/// `|λ_{k+1}| = |λ_k| · ratio`, then decreasing by 0.97 per index; signs alternate, to exercise
/// the ordering by `|λ|`.
fn spectrum(d: usize, k: usize, ratio: f64) -> DVector<f64> {
    DVector::from_fn(d, |i, _| {
        let mag = if i < k {
            3.0 - i as f64 * 0.5
        } else {
            2.0 * ratio * 0.97f64.powi((i - k) as i32)
        };
        if i % 2 == 0 {
            mag
        } else {
            -mag
        }
    })
}

/// `tan ψ` from `cos ψ ∈ (0, 1]`.
fn tan_from_cos(cos_psi: f64) -> f64 {
    (1.0 - cos_psi * cos_psi).max(0.0).sqrt() / cos_psi
}

/// Lemma 4's rate `|λ_{k+1}/λ_k|` (eigenvalues ordered by magnitude, 0-based `λ[k]` is
/// `λ_{k+1}`).
fn gap_ratio(lam: &DVector<f64>, k: usize) -> f64 {
    (lam[k] / lam[k - 1]).abs()
}

/// The instance of ratio `ri`, replicate `rep` (< 100): its rotation is drawn from stream
/// `2·index` and its start from `2·index + 1`.
fn instance_index(ri: usize, rep: usize) -> u64 {
    (ri * 100 + rep) as u64
}

/// The (rotation, start) stream indices of instance `(ri, rep)`: `2·index` and `2·index + 1`.
fn instance_streams(ri: usize, rep: usize) -> (u64, u64) {
    let idx = instance_index(ri, rep);
    (2 * idx, 2 * idx + 1)
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let ratios: Vec<f64> = cfg.pick(vec![0.5, 0.8, 0.95], vec![0.3, 0.5, 0.8, 0.9, 0.95, 0.99]);
    let (d, k, steps) = (cfg.pick(30, 60), 3, cfg.pick(60, 150));
    let mut worst = f64::NEG_INFINITY;
    let mut figure_obs = Vec::new();
    let mut figure_bound = Vec::new();
    let mut instances = 0;
    let mut recursion_dev: f64 = 0.0;
    let mut power_dev: f64 = 0.0;
    for (ri, &ratio) in ratios.iter().enumerate() {
        for rep in 0..cfg.pick(3, 10) {
            let (rotation, start) = instance_streams(ri, rep);
            let u = random_orthonormal(d, d, &mut stream(cfg.seed, Purpose::Subspace, rotation))
                .expect("d ≥ 1");
            let lam = spectrum(d, k, ratio);
            let y = &u * DMatrix::from_diagonal(&lam) * u.transpose();
            let u1 = u.columns(0, k).clone_owned();
            let q0 = random_orthonormal(d, k, &mut stream(cfg.seed, Purpose::Subspace, start))
                .expect("k ≤ d");
            let cos_psi = (u1.transpose() * &q0)
                .singular_values()
                .iter()
                .copied()
                .fold(f64::INFINITY, min_nan);
            let tan_psi = tan_from_cos(cos_psi);
            let rate = gap_ratio(&lam, k);
            let path = orthogonal_iteration_path(&y, &q0, steps);
            recursion_dev = max_nan(recursion_dev, recursion_deviation(&y, &path));
            power_dev = max_nan(
                power_dev,
                power_deviation(&(&y * y.transpose()), &q0, steps),
            );
            for (t, q) in path.iter().enumerate() {
                let obs = projector_distance(q, &u1);
                let exp = if cfg.sabotage { 2 * t } else { t } as i32;
                let bound = tan_psi * rate.powi(exp);
                worst = max_nan(worst, obs - bound);
                if rep == 0 && ri + 1 == ratios.len() {
                    figure_obs.push((t as f64, obs.max(1e-17)));
                    figure_bound.push((t as f64, bound.max(1e-17)));
                }
            }
            // Y split over four clients with unequal weights w = n_i/N (SXY22 Algorithm 3 sums
            // w_i M_i): client c holds the eigen-columns j ≡ c (mod 4) as a = (UΛ)_S / w_c,
            // b = U_S, so that Σ_c w_c a_c b_cᵀ = UΛUᵀ = Y exactly. The weights differ by up to
            // 29×, so an aggregation that mis-weights the messages iterates on another matrix
            // whose top-k subspace is not U₁.
            let ul = &u * DMatrix::from_diagonal(&lam);
            let clients: Vec<ClientMoment> = CLIENT_WEIGHTS
                .iter()
                .enumerate()
                .map(|(c, &w)| {
                    let cols: Vec<usize> = (c..d).step_by(CLIENT_WEIGHTS.len()).collect();
                    ClientMoment {
                        a: ul.select_columns(&cols) / w,
                        b: u.select_columns(&cols),
                        weight: w,
                    }
                })
                .collect();
            for t in 0..=steps {
                let q = federated_orthogonal_iteration(&clients, &q0, 2 * t, &mut Comm::default())
                    .expect("even step count, clients of height d");
                let exp = if cfg.sabotage { 4 * t } else { 2 * t } as i32;
                worst = max_nan(
                    worst,
                    projector_distance(&q, &u1) - tan_psi * rate.powi(exp),
                );
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
        constants: Vec::new(),
        passed: worst <= ROUNDING && recursion_dev <= IDENTITY_RTOL && power_dev <= IDENTITY_RTOL,
        inconclusive: None,
        details: vec![
            format!("{instances} instances: d = {d}, k = {k}, gap ratios |λ_(k+1)/λ_k| ∈ {ratios:?}, random U and Q₀, t = 0..{steps}; Algorithm 3 (2t half-steps, Y split over 4 clients with weights {CLIENT_WEIGHTS:?}) against rate^(2t)"),
            format!("statistic = max over instances and t of (observed − bound); ≤ {ROUNDING:e} passes"),
            format!("recursion YQ_t = Q_(t+1)R_(t+1) (QR, diag R ≥ 0, Q orthonormal) on the reported path, every t: largest relative deviation {recursion_dev:.2e} (allowance {IDENTITY_RTOL:e})"),
            format!("power_iteration(YYᵀ, first column of Q₀, t) = one-column orthogonal iteration at t, t = 0..{steps} (vector and Rayleigh quotient / ‖YYᵀ‖_F): largest deviation {power_dev:.2e} (allowance {IDENTITY_RTOL:e})"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every instance of the full grid (6 ratios × 10 replicates) draws its own rotation and
    /// start: the 120 stream indices are distinct.
    #[test]
    fn every_instance_has_its_own_streams() {
        let streams: Vec<(u64, u64)> = (0..6)
            .flat_map(|ri| (0..10).map(move |rep| instance_streams(ri, rep)))
            .collect();
        // Rotations and starts together: no instance's start shares a stream with any rotation.
        crate::checks::phase_dynamics::support::assert_distinct(
            streams.iter().flat_map(|&(u, q)| [u, q]),
            "lemma 4's instance streams",
        );
        assert_eq!(instance_index(2, 7), 207);
        assert_eq!(instance_streams(2, 7), (414, 415));
    }

    #[test]
    fn the_instances_and_the_bound_by_hand() {
        // k = 3, ratio 0.5: 3, −2.5, 2, then 2·0.5 = 1 (index 3, odd: −1), 0.97, −0.9409.
        let lam = spectrum(6, 3, 0.5);
        let want = [3.0, -2.5, 2.0, -1.0, 0.97, -0.9409];
        assert!(
            lam.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15),
            "{lam}"
        );
        assert_eq!(gap_ratio(&lam, 3).to_bits(), 0.5f64.to_bits());
        // Magnitudes non-increasing at every ratio of the full grid (so U₁ is the top-k space).
        for ratio in [0.3, 0.5, 0.8, 0.9, 0.95, 0.99] {
            let l = spectrum(60, 3, ratio);
            assert!(l
                .iter()
                .zip(l.iter().skip(1))
                .all(|(a, b)| a.abs() >= b.abs()));
            assert!((gap_ratio(&l, 3) - ratio).abs() < 1e-15);
        }
        // cos ψ = 0.6: sin ψ = 0.8, tan ψ = 4/3; cos ψ = 1: 0.
        assert!((tan_from_cos(0.6) - 4.0 / 3.0).abs() < 1e-15);
        assert_eq!(tan_from_cos(1.0).to_bits(), 0f64.to_bits());
    }
}
