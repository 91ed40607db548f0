//! SXY22 Lemma 6 (App. D.5): an anchor client of cluster `j` with `2ℓ` fresh samples
//! and a fixed orthonormal `Û ∈ R^{d×k}` (independent of those samples) forms the `k × k` matrix
//! `A = (1/ℓ) Σ_{i≤ℓ} (Ûᵀε(x_i, y_i, θ))(Ûᵀε(x̃_i, ỹ_i, θ))ᵀ` (eq. 2); with
//! `E A = ÛᵀΣ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_jÛ`, w.p. `≥ 1 − 3N⁻¹⁰`,
//! `‖A − E A‖₂ ≤ C (‖θ*_j − θ‖² + σ²) ξ₂`, `ξ₂ = √(k log N / ℓ) + (k/ℓ) log³ N`.
//!
//! Setup: data from [`super::common::Mixture`] (`θ*_j ~ N(0, I/d)`), the anchor in cluster 0,
//! `Û` a uniformly random frame (`fedmix::linalg::random_orthonormal`) or one containing the
//! direction of `Σ_0(θ*_0 − θ)` (the frame Phase 1 aims at), the moments from
//! `fedmix::algorithms::fedmd::residual_moments` on the anchor's first `ℓ` and next `ℓ` samples
//! (the faithful variant's `x` and `x̃`). `N = 2ℓ`. Series vary `k`, `d`, `σ`, `θ` (origin, far,
//! next to `θ*_0`), `Σ_j` and `Û`.
//!
//! As for Lemma 3, the constant is universal over `αI ⪯ Σ_j ⪯ βI` (`α = 0.5`, `β = 2`) but its
//! value depends on the instance (random instances spread the ratio over a factor ≈ 5: the
//! moments of `Ûᵀε` grow with `Σ_0` and with the alignment of `Û` and `Σ_0(θ*_0 − θ)`).
//! Decision: calibration includes the class's extreme (`Σ_j = βI`, `Û ∋ Σ_0(θ*_0 − θ)`).
//!
//! Statistic per cell: the `QUANTILE`-quantile over replicates of `‖A − E A‖₂`, divided by the
//! shape `(‖θ*_j − θ‖² + σ²) ξ₂`. One constant, calibrated on the calibration series (safety
//! factor `SAFETY`), must hold on the validation series (`ℓ` spanning two orders of
//! magnitude); the slope of the quantile in `ℓ` on each validation series must be
//! `−½ ± SLOPE_TOL`. As for Lemma 3, `ξ₂`'s `(k/ℓ) log³ N` term dominates on the whole grid, so
//! calibration covers the same range of `ℓ/k` as validation.
//!
//! **Unbiasedness of the practical statistic** (SXY22 App. C: the anchor reuses its local data,
//! without saying how its samples are paired; our decision, documented in
//! `fedmix::algorithms::fedmd`: `A` is the all-pairs U-statistic
//! `U = (SSᵀ − Σ_j ε_jε_jᵀ)/(n(n − 1))` projected onto `Û`, `A = Ûᵀ U Û`): every ordered pair of
//! distinct samples has cross moment `Σ_0(θ*_0 − θ)(θ*_0 − θ)ᵀΣ_0`, so `E A` is the same as for
//! eq. 2 at every `n ≥ 2`. The sweep above composes eq. 2 from `residual_moments`; here `A`
//! comes from the library's `fedmix::algorithms::fedmd::pair_moments` with `Pairing::AllPairs`
//! (the factors `a, b` with `U = abᵀ` that the practical anchor step projects,
//! `A = (Ûᵀa)(Ûᵀb)ᵀ`) for
//! [`UNBIASED_ANCHORS`] independent anchors of cluster 0 per replicate with sizes cycling
//! through [`UNBIASED_SIZES`] (`Σ_0 = βI`, `θ` far from the centres), [`UNBIASED_REPS`]
//! independent replicates of the anchors' mean `tr A`. Its variance is known exactly
//! ([`pair_trace_moments`] with `P = Û`), so the test is Chebyshev's: the mean of the
//! replicates must lie within `1/√α` standard deviations of `tr E A`, a false-failure
//! probability ≤ α = [`check_alpha`] (the check's share of the suite's 1 %; the sweep's
//! calibrated constant has no stated α) whatever the (heavy-tailed, at `n = 2`) distribution of
//! `tr A`. Power: an `n²` normalisation scales the expectation by the mean of `(n − 1)/n`,
//! ≈ 0.68 here, 60 standard deviations below at held-out master seeds 1001..1020 (critical
//! value ≈ 46); the check asserts the shift is at least `1/√α + 1.645` (power ≥ 95 % against
//! that bug, by the CLT on the replicates' mean) and the details print it. The variance formula against
//! simulation: over held-out seeds 1001..1100 the pooled replicate variance was 1.06 × the
//! exact one (the details print the ratio per run).
//!
//! Instances: at the full profile each validation series is drawn `instances` times (its own
//! `θ*`, `Σ_0`, `Û` and data); the constant must hold on every instance's cells and the slope
//! test is on the mean of the instances' slopes (their per-`ℓ` geometric mean), so that the
//! test's noise is not dominated by which instance one seed happens to draw.
//!
//! Sabotage: the predicted exponent in `ℓ` is `−1`.

use super::common::{
    moment_shape, pair_trace_moments, spectral_norm, Mixture, ThetaAt, Unbiasedness, UNBIASED_SIZES,
};
use super::sweep::{
    cov_name, instance_cell_seed, instance_model_seed, series_slopes, sweep_constant,
    sweep_figure_series, SweepCell, EXTREME, RANDOM_DIAG,
};
use crate::framework::{check_alpha, outcome, quantile, CheckConfig, CheckRecord, Figure, Guard};
use fedmix::algorithms::fedmd::{pair_moments, residual_moments};
use fedmix::linalg::random_orthonormal;
use fedmix::params::Pairing;
use fedmix::seed_streams::{child_seed, stream, Purpose};
use nalgebra::{DMatrix, DVector};

/// Quantile level over replicates.
const QUANTILE: f64 = 0.9;
/// Safety factor applied to the calibrated constant.
const SAFETY: f64 = 2.0;
/// Tolerance of the slope in `ℓ` (predicted −½).
const SLOPE_TOL: f64 = 0.15;
/// Seed tag of this check.
const SEED_TAG: u64 = 6_000;

/// Instances (`θ*`, `Σ_j`, `Û`) per validation series, the slope being the mean of theirs:
/// 1 (quick), 4 (full). Decision, measured (full profile, master seeds 1–20, one instance):
/// the per-seed SD of the `k = 2, d = 20` series' slope was 0.029 (one run's 95 % half-width
/// 0.057), most of it from the instance drawn, not from the replicates; four instances halve it.
fn instances(cfg: &CheckConfig) -> usize {
    cfg.pick(1, 4)
}

struct SeriesSpec {
    k: usize,
    d: usize,
    sigma: f64,
    theta: ThetaAt,
    cov: (f64, f64),
    /// `Û` contains the direction of `Σ_0(θ*_0 − θ)` (else uniformly random).
    aligned: bool,
    ratios: Vec<usize>,
    calibration: bool,
}

impl SeriesSpec {
    fn name(&self) -> String {
        let cov = cov_name(self.cov);
        let u = if self.aligned {
            "Û∋Σv"
        } else {
            "Û random"
        };
        format!(
            "k={} d={} σ={} θ {:?} {cov} {u}",
            self.k, self.d, self.sigma, self.theta
        )
    }
}

#[rustfmt::skip]
fn specs(cfg: &CheckConfig) -> Vec<SeriesSpec> {
    let s = |k, d, sigma, theta, cov, aligned, ratios, calibration| SeriesSpec { k, d, sigma, theta, cov, aligned, ratios: <[usize]>::to_vec(ratios), calibration };
    let mut v = vec![
        s(2, 6, 0.3, ThetaAt::Origin, EXTREME, true, &[10, 100, 1000, 3000][..], true),
        s(5, 12, 1.0, ThetaAt::Far, EXTREME, true, &[10, 100][..], true),
        s(3, 8, 0.1, ThetaAt::Origin, EXTREME, true, &[10, 100, 1000][..], true),
        s(4, 10, 0.3, ThetaAt::Near, RANDOM_DIAG, false, &[10, 100][..], true),
        s(3, 8, 0.1, ThetaAt::Origin, RANDOM_DIAG, false, &[30, 300, 3000][..], false),
        s(4, 10, 1.0, ThetaAt::Near, RANDOM_DIAG, true, &[10, 100, 1000][..], false),
        s(2, 20, 0.5, ThetaAt::Far, RANDOM_DIAG, true, &[10, 100, 1000][..], false),
    ];
    if cfg.profile == crate::framework::Profile::Full {
        v.push(s(8, 30, 0.3, ThetaAt::Far, RANDOM_DIAG, false, &[10, 100, 1000][..], false));
        v.push(s(3, 20, 0.5, ThetaAt::Near, EXTREME, true, &[10, 100, 1000, 3000][..], true));
    }
    if cfg.profile == crate::framework::Profile::Full {
        for spec in v.iter_mut().filter(|s| !s.calibration) {
            spec.ratios = super::common::dense_ratios(&spec.ratios);
        }
    }
    v
}

/// A `d × k` frame: uniformly random, or (aligned) with first column `g/‖g‖`.
fn frame(d: usize, k: usize, g: &DVector<f64>, aligned: bool, seed: u64) -> DMatrix<f64> {
    let random = random_orthonormal(d, k, &mut stream(seed, Purpose::Subspace, 0)).expect("k ≤ d");
    if !aligned || g.norm() == 0.0 {
        return random;
    }
    let mut m = random;
    m.set_column(0, g);
    fedmix::linalg::orthonormalize(m)
}

/// `A` of one replicate (eq. 2, faithful variant).
fn anchor_matrix(
    mix: &Mixture,
    u_hat: &DMatrix<f64>,
    ell: usize,
    theta: &DVector<f64>,
    seed: u64,
    rep: u64,
) -> DMatrix<f64> {
    let fed = mix.federation(&[2 * ell], Some(vec![0]), seed, rep);
    let e1 = residual_moments(&fed, 0, theta, 0..ell);
    let e2 = residual_moments(&fed, 0, theta, ell..2 * ell);
    u_hat.tr_mul(&e1) * u_hat.tr_mul(&e2).transpose() / ell as f64
}

/// Anchors per replicate of the unbiasedness test.
pub const UNBIASED_ANCHORS: usize = 8_000;
/// Replicates of the unbiasedness test.
pub const UNBIASED_REPS: usize = 20;

/// The unbiasedness test of the practical all-pairs `A`: `k = 2`, `d = 6`, `σ = 0.3`, `θ` far,
/// `Σ_j = βI`, `Û` containing `Σ_0(θ*_0 − θ)` (model and `Û` from `child_seed(seed, SEED_TAG +
/// 800)`, data from `child_seed(seed, SEED_TAG + 801)`, replicate r = stream index r). Returns
/// the test of `E` (anchors' mean `tr A`) and the `z` an `n²` normalisation would have in
/// expectation.
fn practical_unbiasedness(cfg: &CheckConfig) -> (Unbiasedness, f64) {
    let (k, d) = (2, 6);
    let model_seed = child_seed(cfg.seed, SEED_TAG + 800);
    let mix = Mixture::draw(d, &[0.5, 0.5], 1.0, EXTREME, 0.3, model_seed);
    let theta = ThetaAt::Far.theta(&mix);
    let u_hat = frame(d, k, &mix.mean_moment(0, &theta), true, model_seed);
    let sizes: Vec<usize> = (0..UNBIASED_ANCHORS)
        .map(|i| UNBIASED_SIZES[i % UNBIASED_SIZES.len()])
        .collect();
    let anchors = sizes.len() as f64;
    let moments: Vec<(f64, f64)> = sizes
        .iter()
        .map(|&n| pair_trace_moments(&mix, 0, &theta, &u_hat, n))
        .collect();
    let expected = moments[0].0;
    let variance = moments.iter().map(|m| m.1).sum::<f64>() / (anchors * anchors);
    let seed = child_seed(cfg.seed, SEED_TAG + 801);
    let means: Vec<f64> = (0..UNBIASED_REPS as u64)
        .map(|r| {
            let fed = mix.federation(&sizes, Some(vec![0; sizes.len()]), seed, r);
            let total: f64 = (0..sizes.len())
                .map(|i| {
                    let e = residual_moments(&fed, i, &theta, 0..fed.n(i));
                    let (a, b) = pair_moments(&e, Pairing::AllPairs);
                    (u_hat.tr_mul(&a) * u_hat.tr_mul(&b).transpose()).trace()
                })
                .sum();
            total / anchors
        })
        .collect();
    let bias = sizes.iter().map(|&n| 1.0 / n as f64).sum::<f64>() / anchors * expected;
    let shift = bias / (variance / UNBIASED_REPS as f64).sqrt();
    (
        Unbiasedness::test(&means, expected, variance, check_alpha()),
        shift,
    )
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let reps = cfg.pick(30, 100);
    let specs = specs(cfg);
    let mut cells = Vec::new();
    let mut cell_id = 0u64;
    for (si, spec) in specs.iter().enumerate() {
        let series_seed = child_seed(cfg.seed, SEED_TAG + 900 + si as u64);
        let instances = if spec.calibration { 1 } else { instances(cfg) };
        for instance in 0..instances {
            let model_seed = instance_model_seed(series_seed, instance);
            let p = vec![1.0 / spec.k as f64; spec.k];
            let mix = Mixture::draw(spec.d, &p, 1.0, spec.cov, spec.sigma, model_seed);
            let theta = spec.theta.theta(&mix);
            let u_hat = frame(
                spec.d,
                spec.k,
                &mix.mean_moment(0, &theta),
                spec.aligned,
                model_seed,
            );
            let g = u_hat.tr_mul(&mix.mean_moment(0, &theta));
            let ea = &g * g.transpose();
            let delta2 = (mix.theta_star.column(0) - &theta).norm_squared();
            for (ri, &ratio) in spec.ratios.iter().enumerate() {
                let ell = spec.k * ratio;
                let seed =
                    instance_cell_seed(cfg.seed, SEED_TAG, &mut cell_id, model_seed, instance, ri);
                let devs: Vec<f64> = (0..reps as u64)
                    .map(|r| {
                        spectral_norm(&(anchor_matrix(&mix, &u_hat, ell, &theta, seed, r) - &ea))
                    })
                    .collect();
                cells.push(SweepCell {
                    series: spec.name(),
                    calibration: spec.calibration,
                    x: ell as f64,
                    stat: quantile(&devs, QUANTILE),
                    shape: moment_shape(delta2, spec.sigma, spec.k, ell),
                    instance,
                });
            }
        }
    }
    let (c, worst) = sweep_constant(&cells, SAFETY);
    let predicted = if cfg.sabotage { -1.0 } else { -0.5 };
    let validation: Vec<&SeriesSpec> = specs.iter().filter(|s| !s.calibration).collect();
    let names: Vec<String> = validation.iter().map(|s| s.name()).collect();
    let slopes = series_slopes(&cells, &names, "ℓ", predicted, SLOPE_TOL);
    let (unbiased, n2_shift) = practical_unbiasedness(cfg);
    let (passed, inconclusive) = outcome(
        worst <= c && slopes.iter().all(|s| s.ok()) && unbiased.ok(),
        &[Guard::new(
            "the unbiasedness test has power ≥ 0.95 against the 1/n² normalisation",
            unbiased.has_power_against(n2_shift),
        )],
    );
    let names: Vec<String> = validation.iter().map(|s| s.name()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ratios: Vec<String> = cells
        .iter()
        .map(|c| format!("{:.3}", c.stat / c.shape))
        .collect();
    CheckRecord {
        name: "lemma6_anchor_matrix_concentration".into(),
        claim: "‖A − E A‖₂ ≤ C (‖θ* − θ‖² + σ²) ξ₂, ξ₂ = √(k log N/ℓ) + (k/ℓ) log³ N, for the anchor's k × k matrix with a fixed Û".into(),
        source: "SXY22 Lemma 6 (App. D.5), eq. 2".into(),
        statistic: worst,
        bound: c,
        constant: Some(c),
        slopes,
        constants: Vec::new(),
        passed,
        inconclusive,
        details: vec![
            format!("anchor in cluster 0 of a uniform k-mixture, θ*_j ~ N(0, I/d), Σ_j = βI = 2I or diag(U[0.5, 2]) and Û random or containing Σ_0(θ*_0 − θ), as named; 2ℓ samples per replicate; N = 2ℓ; {reps} replicates per cell, statistic = {QUANTILE}-quantile of ‖A − E A‖₂ / ((‖θ*_0 − θ‖² + σ²) ξ₂); {} instance(s) per validation series (the slope is fitted on the geometric mean over instances at each ℓ, i.e. it is the mean of the instances' slopes; the constant is judged on every instance's cells; the figure shows instance 0)", instances(cfg)),
            format!("series (ℓ = k × ratio): {}", specs.iter().map(|s| format!("[{}{}: ratios {:?}]", s.name(), if s.calibration { ", calibration" } else { "" }, s.ratios)).collect::<Vec<_>>().join(" ")),
            format!("seeds: model and Û of series s from child_seed(seed, {} + s) (instance i ≥ 1: child_seed of that with i), cell c from child_seed(seed, {SEED_TAG} + c) (instance i ≥ 1: child_seed(instance seed, 1000 + point index)), replicate r = stream index r", SEED_TAG + 900),
            format!("C = {SAFETY} × max calibration ratio = {c:.4}; worst validation ratio {worst:.4}; slope of the quantile in ℓ per validation series, predicted {predicted} ± {SLOPE_TOL}"),
            format!("ratios statistic/shape in cell order: {} (the (k/ℓ) log³ N term dominates ξ₂ on the whole grid)", ratios.join(", ")),
            format!("unbiasedness of the practical all-pairs A (pair_moments, Pairing::AllPairs, projected on Û): k = 2, d = 6, Σ_0 = 2I, σ = 0.3, θ far, Û ∋ Σ_0(θ*_0 − θ); {UNBIASED_ANCHORS} anchors of cluster 0 with sizes {UNBIASED_SIZES:?} cycled, {UNBIASED_REPS} replicates of their mean tr A; mean / tr E A = {:.4}; |z| = {:.3} vs Chebyshev 1/√α = {:.1}, α = {:.2e} (1% / #checks); replicate SD / exact SD = {:.3}; an n² normalisation would give |z| ≈ {n2_shift:.1} (asserted ≥ 1/√α + 1.645: power ≥ 95 % against it)", unbiased.ratio, unbiased.z.abs(), unbiased.critical, check_alpha(), unbiased.sd_ratio),
        ],
        figure: Some(Figure {
            title: "Lemma 6: ‖A − E A‖ vs ℓ".into(),
            x_label: "ℓ (anchor sample pairs)".into(),
            y_label: format!("{QUANTILE}-quantile of ‖A − E A‖₂"),
            log_x: true,
            log_y: true,
            series: sweep_figure_series(&cells, c, &name_refs),
        }),
    }
}
