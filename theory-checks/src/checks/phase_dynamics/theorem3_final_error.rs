//! SXY22 Theorem 3 (eq. 18): Phase 1 with `T = Θ(1)` iterations from any `‖θ₀‖ ≤ R`, then
//! Phase 2 with `T' = Θ(κ/(sηρ) log(Δ/ν))` rounds, ends with
//! `d(θ̂, θ*) ≲ (σκ/ρ) ν log(e/ν)`, where (eq. 10)
//! `ν = (1/N) Σ_i n_i p_e(n_i) + C_ν √(dk log k (χ²(n)+1)/M)`, `p_e(n) = 4k exp(−c_e n (1 ∧ Δ²/σ²)²)`.
//!
//! Stated constants of ν: `c_e` = [`NU_C_PE`] and `C_ν` = [`NU_C_VC`], the values (rounded
//! down, resp. up) that the `lemma10_misclustering_probability` (c = 0.086) and
//! `eq32_vc_clustering_deviation` (C = 0.81) checks calibrate at the default seed 20221. Rounds:
//! `T' = ⌈`[`ROUNDS_FACTOR`]` · κ/(sηρ) · ln(Δ/ν)⌉`.
//!
//! Setup: the full two-phase algorithm ([`TwoPhase::run_detailed`]: practical Phase 1 with
//! `T = 10`, `n_H = ⌈log N / p_min⌉` anchors, then Phase 2 FedAvg with s = 5 and the step
//! `γ = 0.25`), k = 2, d = 5, `θ*_j = (Δ/√2)e_j` (Δ = 1), `Σ = I`, `n_i = 100`, cluster 0 =
//! the first ρM clients, θ₀ random (`N(0, I/d)`).
//!
//! Check: the ratio `d(θ̂, θ*) / ((σκ/ρ) ν log(e/ν))` is bounded by one constant — calibrated
//! on three (σ, M, ρ) points × [`safety`], validated on sweeps of σ (three orders of magnitude, common random numbers),
//! M (two orders) and ρ, and on one point with cluster-dependent client sizes
//! ([`SEPARATED_SIZES`]: `ρ = min_j N_j/N = 1/21` against a client share of ½) — and the
//! log–log slope of the final error on σ is the bound's exponent 1 ± [`slope_tolerance`]. Sabotage: the σ factor is dropped from the bound (predicted
//! exponent 0).
//!
//! The σ-sweep stays at σ ≤ 0.3Δ. Theorem 3 assumes the conditions of Theorem 1, whose Phase 1
//! must bring every anchor within εΔ (ε < ¼) of its centre so that the Δ/2 rule separates the
//! clusters (SXY22 §3, Theorem 1, eq. 4); by Prop. 2 (eq. 20) a moment-descent step only makes
//! progress while `‖Σ_j(θ*_j − θ_t)‖² ≳ (δ_t² + σ²)(ξ₁/p_j + ξ₂)`, so the sample sizes hidden
//! in eq. 3's Ω̃ grow with (σ/(εΔ))⁴. At the fixed n_i = 100 of this check that fails near
//! σ = Δ: the anchors of the two clusters come within Δ/2 of one another and Phase 1 returns a
//! single component (a typed error; the run has no estimate). Measured over master seeds
//! 2001..2040 at M = 100, ρ = ½: Phase 1 failed in 0/40 runs at σ ∈ {0.2, 0.3, 0.5}Δ, 1/40 at
//! 0.7Δ and 6/40 at Δ — a point outside the theorem's premise, not a bound violation.

use super::support::{child, simplex_centres, Mixture};
use crate::framework::{
    calibrate_then_validate, check_alpha, loglog_fit, prediction_tolerance, CheckConfig,
    CheckRecord, Design, Figure, Series, Side, SlopeFit,
};
use fedmix::algorithms::two_phase::TwoPhase;
use fedmix::engine::recorder::Recorder;
use fedmix::metrics::{bottleneck_distance, chi2, gamma, kappa_fedavg, rho};
use fedmix::params::{ParamGuard, StepRule, TwoPhaseParams};
use fedmix::prec::{max_nan, min_nan};

/// `c_e` of `p_e` in eq. 10 (stated; from the Lemma 10 check's calibration).
pub const NU_C_PE: f64 = 0.08;
/// `C_ν` of eq. 10's uniform-deviation term (stated; from the eq. 32 check's calibration).
pub const NU_C_VC: f64 = 1.0;
/// `T' = ROUNDS_FACTOR · κ/(sηρ) · ln(Δ/ν)`.
pub const ROUNDS_FACTOR: f64 = 10.0;
/// Phase 2 step: `η = ETA_GAMMA / max_i ‖φ_i‖²/n_i` (γ = 0.25 ⇒ κ ≈ 1.64 for s = 5).
pub const ETA_GAMMA: f64 = 0.25;
/// Mean and sample SD of `ln(worst validation ratio / largest calibration ratio)` across the
/// [`SLOPE_SD_SEEDS`] held-out master seeds 1001..1020 (quick profile; the ratio ranged
/// 0.54..1.70; the full profile's held-out seeds gave mean 0.138, SD 0.319, the same range, so
/// one value serves both). Every point is one run, and its error is dominated by least-squares noise
/// (relative SD ≈ 0.3 for a χ-like norm in d = 5), so the ratio of a maximum over 13 points to
/// a maximum over 3 points varies by a factor of about 1.4 (e^0.32) from seed to seed.
pub const LOG_RATIO_MEAN: f64 = 0.135;
/// See [`LOG_RATIO_MEAN`].
pub const LOG_RATIO_SD: f64 = 0.324;

/// Safety factor on the calibrated constant, derived from the seed-to-seed variability of the
/// worst-validation / calibration ratio: `exp(mean + one-sided prediction tolerance)` of its
/// logarithm at half the check's α ([`prediction_tolerance`]). (At a factor of 2 — not derived
/// — the constant test failed at master seed 6: the M = 10 point's ratio was 2.08 × the
/// calibration maximum.)
pub fn safety() -> f64 {
    (LOG_RATIO_MEAN
        + prediction_tolerance(LOG_RATIO_SD, SLOPE_SD_SEEDS, check_alpha() / 2.0, false))
    .exp()
}
/// Sample SD of the fitted σ-slope across the [`SLOPE_SD_SEEDS`] held-out master seeds
/// 1001..1020 (disjoint from the seeds the check is judged on), per profile, each measured at
/// its own profile's σ grid: quick 2.7e−6 (mean 0.9999996); full 5.71e−6 (mean 0.9999992,
/// range 1 − 1.04e−5 … 1 + 1.21e−5; 2026-11-26, commit 27af560). The σ-sweep uses common
/// random numbers (every σ the same features, standard-normal noise draws scaled by σ, and
/// algorithmic randomness): while the clustering is exact and Phase 2 has converged, the final
/// estimate is `θ* + σ·v` for one vector v, so the exponent is 1 up to the unconverged
/// remainder. Misclustering that grows with σ, a T′ too short to reach the fixed point, or an
/// error term that does not scale with the noise moves it. (With an independent federation per
/// σ, as before, the slope's SD was 0.052 — the draw-to-draw spread of a χ-like norm in d = 5 —
/// and the test could not tell exponent 1 from 1.25: it rejected that alternative at 65 % of
/// master seeds 1..20.) The full profile once used the quick SD; its tolerance was then 2.1×
/// too tight and master seed 15 failed at slope 1 + 1.55e−5.
pub const SLOPE_SD: [f64; 2] = [2.7e-6, 5.71e-6];
/// Number of held-out seeds behind [`SLOPE_SD`].
pub const SLOPE_SD_SEEDS: usize = 20;

/// The held-out SD of the σ-slope at the run's profile.
fn slope_sd(cfg: &CheckConfig) -> f64 {
    cfg.pick(SLOPE_SD[0], SLOPE_SD[1])
}

/// Tolerance on the slope of the final error on σ (SXY22 Theorem 3, eq. 18: exponent 1 in σ):
/// the two-sided prediction interval [`prediction_tolerance`] from [`SLOPE_SD`] at half the
/// check's share [`check_alpha`] of the suite's false-failure probability (the other half goes
/// to the constant test, [`safety`]).
pub fn slope_tolerance(cfg: &CheckConfig) -> f64 {
    prediction_tolerance(slope_sd(cfg), SLOPE_SD_SEEDS, check_alpha() / 2.0, true)
}
const K: usize = 2;
const D: usize = 5;
const SAMPLES: usize = 100;
const LOCAL_STEPS: usize = 5;
const PHASE1_ITERATIONS: usize = 10;
const DELTA: f64 = 1.0;

#[derive(Clone, Copy, Debug)]
struct Setting {
    sigma: f64,
    m: usize,
    /// Cluster 0's share of the clients (the first `ρM`); after [`measure`], `ρ = min_j N_j/N`.
    rho: f64,
    /// `n_i` of cluster 0's and of cluster 1's clients.
    sizes: [usize; 2],
}

/// The sample-vs-client point: `M = `[`SEPARATED_M`] clients, half in each cluster (client
/// share ½, so `n_H = ⌈log N / p_min⌉` and Phase 1 see balanced clusters), cluster 0's with
/// `n_i = 20`, cluster 1's with 400, so `ρ = min_j N_j/N = 1/21` — 10.5× below the client share.
/// Theorem 3's bound and `T′` are in `ρ` (SXY22 Theorem 2, `ρ = min_j N_j/N`, through Lemma 7's
/// `λ_min(K_j) ≳ αsN_j/(κN)`: Phase 2 weights client i by `n_i/N`); a `ρ` computed over clients
/// would make the bound 10.5× smaller and `T′` 10.5× shorter here. (At `n_i = 20` the stated
/// `p_e` is vacuous, `4k e^{−0.08·20} > 1`, so `ν` counts all of cluster 0: the point tests the
/// shape's `1/ρ` and `T′`, not `p_e`.)
pub const SEPARATED_SIZES: [usize; 2] = [20, 400];
/// Clients at the sample-vs-client point.
pub const SEPARATED_M: usize = 40;

#[derive(Clone, Debug)]
struct Outcome {
    st: Setting,
    error: f64,
    shape: f64,
    nu: f64,
    kappa: f64,
    rounds: usize,
    secs: f64,
    /// Why the run has no estimate (then `error` is ∞).
    failure: Option<String>,
}

/// ν of eq. 10 with the stated constants.
fn nu(sizes: &[usize], sigma: f64) -> f64 {
    let n_total: f64 = sizes.iter().map(|&n| n as f64).sum();
    let f = (1.0f64).min(DELTA * DELTA / (sigma * sigma)).powi(2);
    let pe = |n: usize| (4.0 * K as f64 * (-NU_C_PE * n as f64 * f).exp()).min(1.0);
    let first: f64 = sizes.iter().map(|&n| n as f64 * pe(n)).sum::<f64>() / n_total;
    let (d, k, m) = (D as f64, K as f64, sizes.len() as f64);
    first + NU_C_VC * (d * k * k.ln() * (chi2(sizes) + 1.0) / m).sqrt()
}

/// The smaller cluster's share of `m` clients when cluster 0 has `m0` of them.
fn p_min(m: usize, m0: usize) -> f64 {
    (m0.min(m - m0)) as f64 / m as f64
}

/// Theorem 3's final-error shape `σ κ/ρ · ν log(e/ν)` (SXY22 Theorem 3, eq. 18).
fn shape(sigma: f64, kappa: f64, rho: f64, nu: f64) -> f64 {
    sigma * kappa / rho * nu * (std::f64::consts::E / nu).ln()
}

fn measure(cfg: &CheckConfig, st: Setting, idx: u64) -> Outcome {
    let seed = child(cfg.seed, 28, idx);
    let ts = simplex_centres(D, K, DELTA);
    let mix = Mixture::with_theta(ts.clone(), st.sigma);
    let m0 = ((st.rho * st.m as f64).round() as usize).max(1);
    let labels: Vec<usize> = (0..st.m).map(|i| usize::from(i >= m0)).collect();
    let sizes: Vec<usize> = labels.iter().map(|&z| st.sizes[z]).collect();
    let fed = mix.federation(&labels, &sizes, seed);
    let rho = rho(&sizes, &labels, K);
    let nu = nu(&sizes, st.sigma);
    let started = std::time::Instant::now();
    let mut params = TwoPhaseParams {
        k: Some(K),
        ..TwoPhaseParams::default()
    };
    params.phase2.step = StepRule::Gamma(ETA_GAMMA);
    params.phase2.local_steps = LOCAL_STEPS;
    params.phase1.iterations = PHASE1_ITERATIONS;
    let n = fed.total_samples() as f64;
    let p_min = p_min(st.m, m0);
    params.phase1.anchors = Some(((n.ln() / p_min).ceil() as usize).min(st.m));
    let p2 = params.phase2.resolve(&fed);
    let (g, _) = gamma(&fed, p2.eta);
    let kappa = kappa_fedavg(g, LOCAL_STEPS);
    let rounds = (ROUNDS_FACTOR * kappa / (LOCAL_STEPS as f64 * p2.eta * rho)
        * (DELTA / nu).ln().max(1.0))
    .ceil() as usize;
    params.phase2.rounds = rounds;
    let alg = TwoPhase {
        params: params.check().expect("the check's constants are in range"),
        init: None,
    };
    let (error, failure) = match alg.run_detailed(&fed, seed, &mut Recorder::quiet()) {
        Ok((out, _)) => match bottleneck_distance(&out.theta_hat, &ts) {
            Ok(a) => (a.value, None),
            Err(e) => (f64::INFINITY, Some(e.to_string())),
        },
        Err(e) => (f64::INFINITY, Some(e.to_string())),
    };
    let sigma_factor = if cfg.sabotage { 1.0 } else { st.sigma };
    Outcome {
        st: Setting { rho, ..st },
        error,
        shape: shape(sigma_factor, kappa, rho, nu),
        nu,
        kappa,
        rounds,
        secs: started.elapsed().as_secs_f64(),
        failure,
    }
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let calib = [
        Setting {
            sigma: 0.01,
            m: 60,
            rho: 0.5,
            sizes: [SAMPLES; 2],
        },
        Setting {
            sigma: 0.1,
            m: 15,
            rho: 0.5,
            sizes: [SAMPLES; 2],
        },
        Setting {
            sigma: 0.05,
            m: 100,
            rho: 0.3,
            sizes: [SAMPLES; 2],
        },
    ];
    let sig_grid: Vec<f64> = cfg.pick(
        vec![0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3],
        vec![
            0.0001, 0.0003, 0.001, 0.002, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3,
        ],
    );
    let m_grid: Vec<usize> = cfg.pick(vec![10, 100, 1000], vec![10, 30, 100, 300, 1000, 3000]);
    let rho_grid: Vec<f64> = cfg.pick(vec![0.5, 0.2], vec![0.5, 0.35, 0.2, 0.1]);
    let run_all = |v: Vec<Setting>, base: u64| -> Vec<Outcome> {
        v.into_iter()
            .enumerate()
            .map(|(i, st)| measure(cfg, st, base + i as u64))
            .collect()
    };
    let cal = run_all(calib.to_vec(), 0);
    // Common random numbers: every σ of the sweep sees the same features, noise draws (scaled
    // by σ) and algorithmic randomness, so the slope measures how the error scales with σ, not
    // the draw-to-draw spread of a χ-like norm in d = 5.
    let sig: Vec<Outcome> = sig_grid
        .iter()
        .map(|&sigma| {
            let st = Setting {
                sigma,
                m: 100,
                rho: 0.5,
                sizes: [SAMPLES; 2],
            };
            measure(cfg, st, 100)
        })
        .collect();
    let mm = run_all(
        m_grid
            .iter()
            .map(|&m| Setting {
                sigma: 0.1,
                m,
                rho: 0.5,
                sizes: [SAMPLES; 2],
            })
            .collect(),
        200,
    );
    let rr = run_all(
        rho_grid
            .iter()
            .map(|&rho| Setting {
                sigma: 0.1,
                m: 200,
                rho,
                sizes: [SAMPLES; 2],
            })
            .collect(),
        300,
    );
    // Sample-vs-client point (validation only; the calibration and the sweeps are unchanged).
    let separated = measure(
        cfg,
        Setting {
            sigma: 0.1,
            m: SEPARATED_M,
            rho: 0.5,
            sizes: SEPARATED_SIZES,
        },
        400,
    );
    let val: Vec<&Outcome> = sig
        .iter()
        .chain(&mm)
        .chain(&rr)
        .chain(std::iter::once(&separated))
        .collect();
    let pair = |o: &Outcome| (o.error, o.shape);
    let (c, worst) = calibrate_then_validate(
        &cal.iter().map(pair).collect::<Vec<_>>(),
        &val.iter().map(|o| pair(o)).collect::<Vec<_>>(),
        safety(),
    );
    let (slope, _) = loglog_fit(
        &sig.iter().map(|o| o.st.sigma).collect::<Vec<_>>(),
        &sig.iter().map(|o| o.error).collect::<Vec<_>>(),
    );
    let slopes = vec![SlopeFit {
        parameter: "σ (final error; M = 100, ρ = 0.5)".into(),
        slope,
        predicted: if cfg.sabotage { 0.0 } else { 1.0 },
        tolerance: slope_tolerance(cfg),
        side: Side::Both,
        design: Design::of(&sig.iter().map(|o| o.st.sigma).collect::<Vec<_>>(), true),
    }];
    let passed = worst <= c && slopes.iter().all(SlopeFit::ok);
    let row = |o: &Outcome| {
        format!(
            "(σ={}, M={}, ρ={:.2}): error {:.3e}, ν = {:.3e}, κ = {:.3}, T' = {}, ratio {:.3e} ({:.2} s){}",
            o.st.sigma, o.st.m, o.st.rho, o.error, o.nu, o.kappa, o.rounds, o.error / o.shape, o.secs,
            o.failure.as_ref().map_or(String::new(), |e| format!(" — run failed: {e}"))
        )
    };
    let all: Vec<&Outcome> = cal.iter().chain(val.iter().copied()).collect();
    let xs: Vec<f64> = all.iter().map(|o| o.shape).collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, min_nan),
        xs.iter().copied().fold(0.0, max_nan),
    );
    let pts = |v: &[Outcome]| v.iter().map(|o| (o.shape, o.error)).collect::<Vec<_>>();
    CheckRecord {
        name: "theorem3_final_error".into(),
        claim: "two-phase final error d(θ̂, θ*) ≤ C (σκ/ρ) ν log(e/ν) with one C across σ, M, ρ; ∝ σ".into(),
        source: "SXY22 Theorem 3, eq. 18 (ν: eq. 10)".into(),
        statistic: worst,
        bound: c,
        constant: Some(c),
        slopes,
        constants: Vec::new(),
        passed,
        inconclusive: None,
        details: vec![
            format!("k = {K}, d = {D}, Δ = {DELTA}, Σ = I, n_i = {SAMPLES}, cluster 0 = first ρM clients; two-phase: practical Phase 1 (T = {PHASE1_ITERATIONS}, n_H = ⌈log N / p_min⌉), Phase 2 FedAvg s = {LOCAL_STEPS}, γ = {ETA_GAMMA}, T' = ⌈{ROUNDS_FACTOR} κ/(sηρ) ln(Δ/ν)⌉; seeds child(seed, 28, ·)"),
            format!("ν (eq. 10) with stated c_e = {NU_C_PE}, C_ν = {NU_C_VC}"),
            format!("σ-sweep with common random numbers (one federation and one algorithmic seed, noise scaled by σ), up to 0.3Δ: Theorem 3 assumes Theorem 1's Phase 1 premise (anchors within Δ/4), which fails near σ = Δ at n_i = {SAMPLES} (Phase 1 merged the clusters in 6/40 runs at σ = Δ, 0/40 at σ ≤ 0.5Δ; seeds 2001..2040)"),
            format!("slope tolerance {:.2e} = t_(19, 1−α/4) × SD × √(1 + 1/20), SD = {:.3e} of the σ-slope over {SLOPE_SD_SEEDS} held-out master seeds 1001..1020 at this profile (a prediction interval for a new seed; SXY22 Theorem 3, eq. 18: exponent 1 in σ)", slope_tolerance(cfg), slope_sd(cfg)),
            format!("safety factor {:.3} = exp({LOG_RATIO_MEAN} + t_(19, 1−α/2) × {LOG_RATIO_SD} × √(1 + 1/20)): one-sided prediction bound of ln(worst validation ratio / max calibration ratio) over the same held-out seeds", safety()),
            format!("false-failure probability of the check: α = {:.2e} (1% / #checks), half to the slope test, half to the constant test", check_alpha()),
            format!("C = max calibration ratio × {:.3} = {c:.4e}; worst validation ratio {worst:.4e}", safety()),
            format!("calibration: {}", cal.iter().map(row).collect::<Vec<_>>().join("; ")),
            format!("validation σ-sweep: {}", sig.iter().map(row).collect::<Vec<_>>().join("; ")),
            format!("validation M-sweep: {}", mm.iter().map(row).collect::<Vec<_>>().join("; ")),
            format!("validation ρ-sweep: {}", rr.iter().map(row).collect::<Vec<_>>().join("; ")),
            format!("validation sample-vs-client point (first M/2 clients × n_i = {}, the others × {}; ρ = min_j N_j/N = {:.4} vs client share p_min = 0.5): {}", SEPARATED_SIZES[0], SEPARATED_SIZES[1], separated.st.rho, row(&separated)),
            if cfg.sabotage { "SABOTAGED: σ dropped from the bound".into() } else { "bound (σκ/ρ) ν log(e/ν)".into() },
        ],
        figure: Some(Figure {
            title: "Theorem 3: final error vs (σκ/ρ) ν log(e/ν)".into(),
            x_label: "(σκ/ρ) ν log(e/ν)".into(),
            y_label: "d(θ̂, θ*)".into(),
            log_x: true,
            log_y: true,
            series: vec![
                Series { label: "σ-sweep".into(), points: pts(&sig), line: false },
                Series { label: "M-sweep".into(), points: pts(&mm), line: false },
                Series { label: "ρ-sweep".into(), points: pts(&rr), line: false },
                Series { label: "sample-vs-client (ρ ≠ p_min)".into(), points: pts(std::slice::from_ref(&separated)), line: false },
                Series { label: "calibration".into(), points: pts(&cal), line: false },
                Series { label: format!("C × bound, C = {c:.3e}"), points: vec![(x0, c * x0), (x1, c * x1)], line: true },
            ],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::phase_dynamics::support::assert_t_reference;

    #[test]
    fn safety_and_slope_tolerance_by_reference() {
        // Student-t quantiles with 19 degrees of freedom (20 held-out seeds) at the check's α.
        assert_t_reference(safety(), 4.719060632223905);
        assert_t_reference(
            slope_tolerance(&CheckConfig::quick(1)),
            1.264879841589636e-05,
        );
        let full = CheckConfig::full(1);
        assert_t_reference(slope_tolerance(&full), 2.674986627954378e-05);
    }

    #[test]
    fn p_min_is_the_smaller_clusters_share() {
        // m = 15 at ρ = 0.5: m0 = round(7.5) = 8, so the smaller cluster has 7.
        assert_eq!(p_min(15, 8).to_bits(), (7.0f64 / 15.0).to_bits());
        assert_eq!(p_min(100, 30).to_bits(), 0.3f64.to_bits());
    }

    #[test]
    fn nu_and_the_shape_by_hand() {
        // Sizes 10, 30, 100 at σ = 0.5 (factor 1): P_e(n) = min(1, 4k e^(−0.08 n)) = 1,
        // 8e^(−2.4), 8e^(−8); χ² = 3·11000/140² − 1; ν = Σ n P_e(n)/N + √(dk ln k (χ²+1)/M)
        // (Python, math.exp/log).
        assert!((nu(&[10, 30, 100], 0.5) / 2.201_198_608_291_522 - 1.0).abs() < 1e-12);
        // 0.5 · 3/0.25 · 0.05 ln(e/0.05).
        assert!((shape(0.5, 3.0, 0.25, 0.05) / 1.198_719_682_066_197_4 - 1.0).abs() < 1e-12);
    }
}
