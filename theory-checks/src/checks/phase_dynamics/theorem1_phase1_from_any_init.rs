//! SXY22 Theorem 1 (eq. 4–5): Phase 1 (FedMD) from **any** start `‖θ₀‖ ≤ R` reaches
//! `sup_{i∈H} ‖θ_{i,T} − θ*_{z_i}‖ ≤ εΔ` after `T = O(1)` iterations (eq. 4), and with
//! `n_H ≥ log N / p_min` anchors the `Δ/2` linking gives `d(θ̂, θ*) ≤ εΔ` (eq. 5, eq. 6's
//! bottleneck distance), w.p. `≥ 1 − O(n_H T/N¹⁰)`, ε ∈ (0, 1/4).
//!
//! Regime (stated): practical variant (SXY22 App. C: data reuse, all-pairs U-statistic, direct
//! SVD) with plenty of data — k = 3, d = 5, `θ*_j = (Δ/√2)e_j` (Δ = 1), σ = 0.1, 150 clients
//! with `n_i = 60` and 30 anchor candidates with `n_i = 200` (labels `i mod k`),
//! `n_H = ⌈log N / p_min⌉` anchors among the candidates, `T = 8` iterations (fixed: the
//! "O(1)"), `T₂ = 100`, `Σ_j = I` (α = β = 1).
//!
//! Observed outside this regime (reported, not hidden): with k = 3, d = 8, 150 clients × 20
//! samples and Gaussian `θ*`, the anchors stall at up to 0.31Δ and 26 of 36 trials fail — the
//! subspace step cannot resolve the last `εΔ` of an anchor's residual when the other clusters'
//! residuals (`δ ≈ Δ`) dominate the noise of `Y` (Prop. 1's `(δ² + σ²) ξ₁ / p_j`); the theory's
//! remedy is more data (`m ≥ p_min⁻² Ω̃(d)` with a constant growing like `ε⁻⁴`). With `T = 5`
//! instead of 8 one random start already misses ε = 0.2.
//! Stopping threshold `ε_stop = 0.1`; the claim is checked at `ε = 2ε_stop/α = 0.2 < 1/4`, the
//! accuracy the proof of Theorem 1 (App. D.3) delivers from the stopping rule.
//!
//! Starts, `R = 2 max_j ‖θ*_j‖`: adversarial — `0`, `−θ*_1`, the midpoint of `θ*_1, θ*_2`,
//! the centroid of the `θ*`, `θ*_1` itself (one cluster already solved), `R·u` with
//! `u ⊥ span θ*` (far and orthogonal), `±R θ*_1/‖θ*_1‖` (far along / against a centre) — and
//! random starts uniform in the ball of radius R. Each (start, data seed) pair is one trial; a
//! trial fails if eq. 4 or eq. 5 fails or Phase 1 finds fewer than k clusters.
//!
//! Test: we claim a per-trial failure probability ≤ [`CLAIMED_FAILURE`] and reject at level
//! α = [`check_alpha`] (the check's share of the suite's 1% false-failure probability) when the
//! failure count exceeds [`binomial_upper_critical`]. Statistic: failures;
//! bound: the critical count. Sabotage: `T = 0` iterations.

use super::support::{child, random_unit, simplex_centres, Mixture};
use crate::framework::{
    binomial_upper_critical, check_alpha, CheckConfig, CheckRecord, Figure, Series,
};
use fedmix::algorithms::fedmd::run_fedmd;
use fedmix::engine::recorder::Recorder;
use fedmix::metrics::{bottleneck_distance, separation};
use fedmix::params::{FedMdParams, Pairing, Phase1Variant, SubspaceMethod};
use fedmix::prec::max_nan;
use fedmix::seed_streams::{stream, Purpose};
use nalgebra::{DMatrix, DVector};

/// ε of the claim (Theorem 1: ε ∈ (0, 1/4)).
pub const EPSILON: f64 = 0.2;
/// The algorithm's stopping threshold `ε_stop = εα/2` (α = 1).
pub const EPSILON_STOP: f64 = 0.1;
/// Claimed per-trial failure probability.
pub const CLAIMED_FAILURE: f64 = 0.05;
/// Phase 1 iterations `T`.
pub const ITERATIONS: usize = 8;
const K: usize = 3;
const D: usize = 5;
const CLIENTS: usize = 150;
const SAMPLES: usize = 60;
const SIGMA: f64 = 0.1;
const DELTA: f64 = 1.0;
const CANDIDATES: usize = 30;
const CANDIDATE_SAMPLES: usize = 200;

/// The named starts of one data seed (adversarial first, then `random` uniform in the ball).
fn starts(ts: &DMatrix<f64>, random: usize, seed: u64) -> Vec<(String, DVector<f64>)> {
    let r = 2.0 * (0..K).map(|j| ts.column(j).norm()).fold(0.0, max_nan);
    let c0 = ts.column(0).clone_owned();
    let c1 = ts.column(1).clone_owned();
    let mut rng = stream(seed, Purpose::Init, 0);
    // u ⊥ span θ*: project a random vector off the span, normalise.
    let q = fedmix::linalg::orthonormalize(ts.clone());
    let v = random_unit(D, &mut rng);
    let u = (&v - &q * q.tr_mul(&v)).normalize();
    let mut out = vec![
        ("zero".to_string(), DVector::zeros(D)),
        ("−θ*_1".into(), -&c0),
        ("midpoint θ*_1,θ*_2".into(), (&c0 + &c1) / 2.0),
        ("centroid".into(), ts.column_mean()),
        ("at θ*_1".into(), c0.clone()),
        ("R·(⊥ span θ*)".into(), &u * r),
        ("R·θ*_1/‖θ*_1‖".into(), c0.normalize() * r),
        ("−R·θ*_1/‖θ*_1‖".into(), c0.normalize() * -r),
    ];
    for s in 0..random {
        let radius = r * rand::RngExt::random::<f64>(&mut rng).powf(1.0 / D as f64);
        out.push((format!("random {s}"), random_unit(D, &mut rng) * radius));
    }
    out
}

struct Trial {
    name: String,
    sup_error: f64,
    phase1_distance: f64,
    ok: bool,
    path: Vec<f64>,
}

fn trial(
    fed: &fedmix::federation::Federation,
    theta0: &DVector<f64>,
    seed: u64,
    iters: usize,
) -> (f64, f64, Vec<f64>) {
    let ts = fed.theta_star().expect("synthetic");
    let sep = separation(ts);
    let n = fed.total_samples() as f64;
    let anchors = (n.ln() * K as f64).ceil() as usize;
    let p = FedMdParams {
        variant: Phase1Variant::Practical,
        k: K,
        anchors: anchors.min(CANDIDATES),
        iterations: iters,
        t1: 2,
        t2: 100,
        m: 1,
        ell: 1,
        epsilon: EPSILON_STOP,
        separation: None,
        alpha: 1.0,
        beta: 1.0,
        pairing: Pairing::AllPairs,
        subspace: SubspaceMethod::Svd,
        anchor_min_samples: CANDIDATE_SAMPLES,
    };
    let labels = fed.labels().expect("synthetic");
    let start_err = start_error(theta0, ts);
    let mut rec = Recorder::quiet();
    match run_fedmd(fed, &p, theta0, seed, &mut rec) {
        Ok(out) => {
            let sup = out
                .anchors
                .iter()
                .enumerate()
                .map(|(a, &i)| (out.anchor_models.column(a) - ts.column(labels[i])).norm())
                .fold(0.0, max_nan);
            let dist = bottleneck_distance(&out.theta_hat, ts).map_or(f64::INFINITY, |a| a.value);
            let mut path = vec![start_err / sep];
            path.extend(rec.rows.iter().filter_map(|r| r.distance.map(|x| x / sep)));
            (sup / sep, dist / sep, path)
        }
        Err(_) => {
            let sup = (0..K)
                .map(|j| (theta0 - ts.column(j)).norm())
                .fold(0.0, max_nan);
            (sup / sep, f64::INFINITY, vec![start_err / sep])
        }
    }
}

/// The start's error as the anchors' is measured: its largest distance to a centre (every
/// anchor starts at `θ₀`, whatever its cluster).
fn start_error(theta0: &DVector<f64>, ts: &DMatrix<f64>) -> f64 {
    ts.column_iter()
        .map(|c| (theta0 - c).norm())
        .fold(0.0, max_nan)
}

/// A trial succeeds when both its worst anchor's error and Phase 1's output are within
/// [`EPSILON`] of θ* (SXY22 Theorem 1: every anchor reaches the ε-ball).
fn trial_ok(sup_error: f64, phase1_distance: f64) -> bool {
    sup_error <= EPSILON && phase1_distance <= EPSILON
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let data_seeds = cfg.pick(2, 10);
    let random = cfg.pick(2, 12);
    let iters = if cfg.sabotage { 0 } else { ITERATIONS };
    let mut trials = Vec::new();
    for s in 0..data_seeds {
        let seed = child(cfg.seed, 22, s as u64);
        let ts = simplex_centres(D, K, DELTA);
        let mix = Mixture::with_theta(ts, SIGMA);
        let m = CLIENTS + CANDIDATES;
        let labels: Vec<usize> = (0..m).map(|i| i % K).collect();
        let mut sizes = vec![SAMPLES; CLIENTS];
        sizes.extend(std::iter::repeat_n(CANDIDATE_SAMPLES, CANDIDATES));
        let fed = mix.federation(&labels, &sizes, seed);
        for (name, theta0) in starts(&mix.theta_star, random, seed) {
            let (sup, dist, path) = trial(&fed, &theta0, seed, iters);
            trials.push(Trial {
                name,
                sup_error: sup,
                phase1_distance: dist,
                ok: trial_ok(sup, dist),
                path,
            });
        }
    }
    let n = trials.len() as u64;
    let failures = trials.iter().filter(|t| !t.ok).count() as u64;
    let critical = binomial_upper_critical(n, CLAIMED_FAILURE, check_alpha());
    let worst_sup = trials.iter().map(|t| t.sup_error).fold(0.0, max_nan);
    let worst_dist = trials.iter().map(|t| t.phase1_distance).fold(0.0, max_nan);
    let failed_names: Vec<String> = trials
        .iter()
        .filter(|t| !t.ok)
        .map(|t| t.name.clone())
        .collect();
    let shown = [
        "zero",
        "−θ*_1",
        "R·(⊥ span θ*)",
        "−R·θ*_1/‖θ*_1‖",
        "random 0",
    ];
    let mut series: Vec<Series> = shown
        .iter()
        .filter_map(|name| trials.iter().find(|t| t.name == *name))
        .map(|t| Series {
            label: t.name.clone(),
            points: t
                .path
                .iter()
                .enumerate()
                .map(|(i, &e)| (i as f64, e.max(1e-6)))
                .collect(),
            line: false,
        })
        .collect();
    series.push(Series {
        label: format!("ε = {EPSILON}"),
        points: vec![(0.0, EPSILON), (ITERATIONS as f64, EPSILON)],
        line: true,
    });
    CheckRecord {
        name: "theorem1_phase1_from_any_init".into(),
        claim: "from every ‖θ₀‖ ≤ R, after T = O(1) iterations sup_i ‖θ_{i,T} − θ*_{z_i}‖ ≤ εΔ and d(θ̂, θ*) ≤ εΔ after Δ/2 linking".into(),
        source: "SXY22 Theorem 1, eq. 4–6 (App. D.3)".into(),
        statistic: failures as f64,
        bound: critical as f64,
        constant: None,
        slopes: Vec::new(),
        constants: Vec::new(),
        passed: failures <= critical,
        inconclusive: None,
        details: vec![
            format!("k = {K}, d = {D}, σ = {SIGMA}, θ*_j = (Δ/√2)e_j, Δ = {DELTA}; {CLIENTS} clients × {SAMPLES} samples + {CANDIDATES} anchor candidates × {CANDIDATE_SAMPLES}; labels i mod k; practical FedMD (all-pairs, SVD), n_H = ⌈log N / p_min⌉, T = {iters}, ε_stop = {EPSILON_STOP}, claim ε = {EPSILON}"),
            format!("{data_seeds} data seeds (child(seed, 22, s)) × {} starts (8 adversarial + {random} uniform in the ball of radius R = 2 max‖θ*_j‖) = {n} trials", 8 + random),
            format!("failures {failures} of {n}; binomial test of P[failure] ≤ {CLAIMED_FAILURE} at α = {:.2e} (the check's false-failure probability, 1% / #checks): reject above {critical}", check_alpha()),
            format!("worst sup_i ‖θ_(i,T) − θ*_(z_i)‖/Δ = {worst_sup:.4}; worst d(θ̂, θ*)/Δ = {worst_dist:.4}"),
            format!("failing starts: {failed_names:?}"),
            if cfg.sabotage { "SABOTAGED: T = 0 iterations".into() } else { format!("T = {ITERATIONS}") },
        ],
        figure: Some(Figure {
            title: "Theorem 1: max anchor error / Δ per Phase 1 iteration (first data seed)".into(),
            x_label: "iteration t".into(),
            y_label: "sup_i ‖θ_(i,t) − θ*_(z_i)‖ / Δ".into(),
            log_x: false,
            log_y: true,
            series,
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_start_error_is_the_largest_distance_to_a_centre() {
        // Centres (0, 0), (3, 0), (0, 4); θ₀ = (1, 1): distances √2, √5, √10.
        let ts = nalgebra::DMatrix::from_column_slice(2, 3, &[0.0, 0.0, 3.0, 0.0, 0.0, 4.0]);
        let theta0 = nalgebra::DVector::from_column_slice(&[1.0, 1.0]);
        let e = super::start_error(&theta0, &ts);
        assert!((e - 10f64.sqrt()).abs() < 1e-15, "{e}");
    }

    #[test]
    fn a_trial_needs_both_the_anchors_and_the_output_within_epsilon() {
        let (inside, outside) = (super::EPSILON / 2.0, super::EPSILON * 2.0);
        assert!(super::trial_ok(inside, inside));
        assert!(super::trial_ok(super::EPSILON, super::EPSILON));
        assert!(!super::trial_ok(inside, outside));
        assert!(!super::trial_ok(outside, inside));
    }
}
