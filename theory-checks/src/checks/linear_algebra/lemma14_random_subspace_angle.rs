//! SXY22 Lemma 14 (App. G): for a fixed orthonormal `U ∈ R^{d×ℓ}` and a uniformly
//! random orthonormal `Q ∈ R^{d×ℓ}`,
//! `P[σ_min(UᵀQ) < ε / (√ℓ (√d + √(2 log(2/ε))))] ≤ C·ε` (the paper's `σ_max(A) ≤ √d + t` with
//! `P ≥ 1 − 2e^{−t²/2}` at `t = √(2 log(2/ε))`, and Szarek's `σ_min(X) ≥ ε/√ℓ` w.p. `1 − O(ε)`).
//!
//! Monte Carlo: `Q` from `fedmix::linalg::random_orthonormal` (sign-fixed QR of a Gaussian
//! matrix, so the check also exercises that `Q` is Haar), `U` a fixed random frame per cell;
//! one draw of `σ_min(UᵀQ)` is compared with the threshold of every `ε` of the grid. The
//! constant `C` is calibrated on the `(d, ℓ)` cells of `CALIBRATION` (largest `p̂/ε` times the
//! stated safety factor), then every `(d, ℓ, ε)` of the disjoint `VALIDATION` cells (fresh
//! streams) must pass the one-sided binomial test of `p ≤ Cε` at level `α/(#tests)`
//! (Bonferroni), α = [`check_alpha`] (the check's share of the suite's 1%). The log–log slope of the pooled validation frequency against `ε` must be
//! `1 ± SLOPE_TOL` (`ε` spans two orders of magnitude).
//!
//! Statistic: the largest empirical constant `p̂/ε` over validation tests, printed next to `C`;
//! the decision is the binomial tests (a `p̂/ε` slightly above `C` can be binomial noise).
//!
//! Sabotage: on the validation cells the threshold is multiplied by 30 (a bound with the wrong
//! constant in the angle); the frequencies then exceed `Cε` and saturate, so the binomial tests
//! reject and the slope drops.

use super::common::{line, markers};
use crate::framework::{
    binomial_upper_critical, check_alpha, loglog_fit, CheckConfig, CheckRecord, Figure, Side,
    SlopeFit,
};
use fedmix::linalg::random_orthonormal;
use fedmix::prec::{max_nan, min_nan};
use fedmix::seed_streams::{child_seed, stream, Purpose};

/// `ε` grid (two orders of magnitude).
const EPSILONS: [f64; 7] = [0.3, 0.14, 0.065, 0.03, 0.014, 0.0065, 0.003];
/// Safety factor applied to the calibrated constant.
const SAFETY: f64 = 2.0;
/// Tolerance of the slope of the frequency in `ε` (predicted 1).
const SLOPE_TOL: f64 = 0.15;
/// Threshold multiplier of the sabotaged check.
const SABOTAGE_FACTOR: f64 = 30.0;
/// Seed tag of this check.
const SEED_TAG: u64 = 14_000;

/// The threshold `ε / (√ℓ (√d + √(2 log(2/ε))))`.
fn threshold(eps: f64, d: usize, ell: usize) -> f64 {
    eps / ((ell as f64).sqrt() * ((d as f64).sqrt() + (2.0 * (2.0 / eps).ln()).sqrt()))
}

/// Counts of `σ_min(UᵀQ) < threshold(ε)` for every `ε` over `trials` draws.
fn counts(d: usize, ell: usize, trials: usize, seed: u64, factor: f64) -> Vec<u64> {
    let mut rng = stream(seed, Purpose::Subspace, 0);
    let u = random_orthonormal(d, ell, &mut rng).expect("ℓ ≤ d");
    let th: Vec<f64> = EPSILONS
        .iter()
        .map(|&e| factor * threshold(e, d, ell))
        .collect();
    let mut c = vec![0u64; EPSILONS.len()];
    for _ in 0..trials {
        let q = random_orthonormal(d, ell, &mut rng).expect("ℓ ≤ d");
        let s = u
            .tr_mul(&q)
            .singular_values()
            .iter()
            .copied()
            .fold(f64::INFINITY, min_nan);
        for (ci, &t) in c.iter_mut().zip(&th) {
            // Counted unless provably not an event: a NaN angle counts against the bound.
            if !(s >= t) {
                *ci += 1;
            }
        }
    }
    c
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let calibration: Vec<(usize, usize)> =
        cfg.pick(vec![(20, 2), (80, 6)], vec![(20, 2), (80, 6), (300, 3)]);
    let validation: Vec<(usize, usize)> = cfg.pick(
        vec![(10, 1), (40, 4), (100, 10), (200, 2)],
        vec![(10, 1), (40, 4), (100, 10), (200, 2), (30, 30), (500, 8)],
    );
    let trials = cfg.pick(4_000, 40_000);
    let cal_counts: Vec<Vec<u64>> = calibration
        .iter()
        .enumerate()
        .map(|(i, &(d, l))| counts(d, l, trials, child_seed(cfg.seed, SEED_TAG + i as u64), 1.0))
        .collect();
    let c_hat = cal_counts
        .iter()
        .flat_map(|c| {
            c.iter()
                .zip(EPSILONS)
                .map(|(&n, e)| n as f64 / trials as f64 / e)
        })
        .fold(0.0, max_nan);
    let c = SAFETY * c_hat;
    let factor = if cfg.sabotage { SABOTAGE_FACTOR } else { 1.0 };
    let tests = validation.len() * EPSILONS.len();
    let alpha_test = check_alpha() / tests as f64;
    let mut worst_ratio = 0.0f64;
    let mut rejected = Vec::new();
    let mut pooled = vec![0u64; EPSILONS.len()];
    let mut series = Vec::new();
    for (vi, &(d, l)) in validation.iter().enumerate() {
        let seed = child_seed(cfg.seed, SEED_TAG + 100 + vi as u64);
        let cn = counts(d, l, trials, seed, factor);
        let mut pts = Vec::new();
        for (ei, (&n, &e)) in cn.iter().zip(&EPSILONS).enumerate() {
            let crit = binomial_upper_critical(trials as u64, c * e, alpha_test);
            let p_hat = n as f64 / trials as f64;
            worst_ratio = max_nan(worst_ratio, p_hat / e);
            if n > crit {
                rejected.push(format!(
                    "(d={d}, ℓ={l}, ε={e}): {n}/{trials} > critical {crit}"
                ));
            }
            pooled[ei] += n;
            if n > 0 {
                pts.push((e, p_hat));
            }
        }
        series.push(markers(format!("validation d={d}, ℓ={l}"), pts));
    }
    let pooled_freq: Vec<f64> = pooled
        .iter()
        .map(|&n| n.max(1) as f64 / (trials * validation.len()) as f64)
        .collect();
    let slope = SlopeFit {
        parameter: "ε (pooled validation frequency)".into(),
        slope: loglog_fit(&EPSILONS, &pooled_freq).0,
        predicted: 1.0,
        tolerance: SLOPE_TOL,
        side: Side::Both,
        design: crate::framework::Design::of(&EPSILONS, true),
    };
    let passed = rejected.is_empty() && slope.ok();
    series.push(line(
        format!("C·ε, C = {c:.3}"),
        EPSILONS.iter().map(|&e| (e, c * e)).collect(),
    ));
    CheckRecord {
        name: "lemma14_random_subspace_angle".into(),
        claim: "P[σ_min(UᵀQ) < ε/(√ℓ(√d + √(2 log(2/ε))))] ≤ C·ε for one C".into(),
        source: "SXY22 Lemma 14 (App. G)".into(),
        statistic: worst_ratio,
        bound: c,
        constant: Some(c),
        slopes: vec![slope],
        constants: Vec::new(),
        passed,
        inconclusive: None,
        details: vec![
            format!("ε ∈ {EPSILONS:?}; {trials} draws per (d, ℓ) cell, each draw tested against every ε"),
            format!("calibration cells (d, ℓ) {calibration:?} (seeds child_seed(seed, {SEED_TAG} + i)): largest p̂/ε = {c_hat:.3}, C = {SAFETY} × that = {c:.3}"),
            format!("validation cells (d, ℓ) {validation:?} (seeds child_seed(seed, {} + i)): {tests} one-sided binomial tests of p ≤ Cε at α = {:.2e}/{tests} (Bonferroni; α = 1% / #checks, the binomial tests' false-failure probability; the slope test's tolerance has no stated α)", SEED_TAG + 100, check_alpha()),
            format!("statistic = largest validation p̂/ε (decision by the binomial tests): rejected {}", if rejected.is_empty() { "none".to_string() } else { rejected.join("; ") }),
            format!("pooled validation frequencies {:?}", pooled_freq.iter().map(|f| format!("{f:.2e}")).collect::<Vec<_>>()),
        ],
        figure: Some(Figure {
            title: "Lemma 14: P[σ_min(UᵀQ) below the threshold] vs ε".into(),
            x_label: "ε".into(),
            y_label: "empirical probability".into(),
            log_x: true,
            log_y: true,
            series,
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn threshold_is_the_lemmas_by_hand() {
        // 0.1 / (√9 (√16 + √(2 ln 20))) (Python, math.log).
        let v = super::threshold(0.1, 16, 9);
        assert!((v / 0.005_169_764_602_840_908 - 1.0).abs() < 1e-12, "{v}");
    }
}
