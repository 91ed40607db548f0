//! SXY22 Proposition 1 (subspace estimation, App. D.1, proof in App. D.4): with `Û` the
//! top-`k` left singular subspace of the Phase 1 subspace matrix `Y` at a fixed `θ`, w.p.
//! `≥ 1 − N⁻¹⁰`, for every cluster `j`,
//! `‖(I − ÛÛᵀ) Σ_j(θ*_j − θ)‖² ≤ C (δ² + σ²) ξ₁ / p_j`, `ξ₁ = √(d log N/m) + (d/m) log³ N`,
//! `δ = max_j ‖θ*_j − θ‖`. (The paper runs `T₁ ≳ k log(Nd)` orthogonal-iteration steps; this
//! check takes the exact top-k subspace — `fedmix::linalg::top_k_left_singular`, the practical
//! variant's direct SVD — so that only the statistical part of the claim is tested.)
//!
//! Setup as in Lemma 3 (`k = 3`, [`super::common::Mixture`], `m` clients with one pair each,
//! `N = 2m`). `Y` is `fedmix::algorithms::fedmd::subspace_matrix` (first-two pairing), computed
//! for a whole line of `θ`s at once: along `θ(t) = base − t u` the residuals are affine in `t`,
//! so `Y(θ(t)) = P₀ + tP₁ + t²P₂` (checked against the library on one replicate per series, to
//! `IDENTITY_RTOL`). Kinds of `θ`:
//! - **generic** (the origin, far away, or midway between `θ*_1` and `θ*_2`): `θ` does not depend on `m`; the residual
//!   decays like `1/m` once `λ_k(E Y)` clears the noise of `Y` (Davis–Kahan regime), more slowly
//!   before that (slopes reported in the details, not tested);
//! - **critical**: the family `θ = θ*_0 − t u` with `t` chosen per `m` so that
//!   `p_0‖Σ_0(θ*_0 − θ)‖² = κ (δ² + σ²) √(d/m)` for `κ` on a geometric ladder from ¼ to 4
//!   (`KAPPA_LADDER`; larger `κ` are resolved and contribute nothing but move `θ` far away): cluster 0's signal is swept across the noise level of `Y`, the gap-free
//!   situation the proposition is about. A critical cell keeps the `θ` with the largest ratio —
//!   a finite stand-in for the sup over `θ`, where the bound should be attained. (A single `κ`
//!   near the noise level is not enough: how much of the signal `Û` catches then changes with
//!   `m`, and the observed slope wandered between −0.45 and −1.1 across seeds.)
//!
//! Statistic per cell: the `QUANTILE`-quantile over replicates of
//! `max_j p_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖²` (the same data for every `θ` of a cell), divided by
//! `(δ² + σ²) ξ₁`. One constant, calibrated on balanced-`p` series (safety `SAFETY`) that include
//! the class's extreme `Σ_j = βI` (as in Lemma 3: the constant is universal over
//! `αI ⪯ Σ_j ⪯ βI`, its value instance-dependent), must hold on the validation series: random
//! `Σ_j = diag(U[0.5, 2])`, other `d` and `σ`, and a highly unbalanced
//! `p = (0.005, 0.4975, 0.4975)` with `θ = (θ*_1 + θ*_2)/2` (the rare cluster typically the
//! farthest); `m` spans two orders of magnitude or more.
//!
//! Slope: on the critical validation series, the statistic divided by `(δ² + σ²)` (which moves
//! a little with the selected `θ`: undivided, the observed slope wandered down to −0.76) against
//! `m` over `m/d ∈ [30, 3000]`. The proposition is an upper bound, so the test is one-sided:
//! the residual must fall at least like `m^{−½}` — slope `≤ −½ + tol` (a steeper fall agrees
//! with the bound; rejecting it would test a tightness the proposition does not claim). The
//! series is drawn as independent instances (`design`), each fitted on its own; the tested
//! slope is their mean and `tol = t_{n−1, 1−α'} · s/√n` from the SD `s` of the `n` instances'
//! slopes of this run ([`mean_tolerance`], a one-sample t-test), `α'` = half the check's α
//! shared among the slope series. (A fixed two-sided tolerance of 0.15 on one instance failed
//! a correct implementation at 3 of 27 master seeds, each time on the steep side.) (`ξ₁` itself is steeper there, ≈ −0.61
//! for `d = 6`, because its `(d/m) log³ N` term dominates on any feasible grid; it is reported.)
//! Regime (observed): the slope is tested on critical families with uniform `p` only. On a
//! rarer critical cluster the sup over the family does not follow a clean `m⁻½` on feasible
//! grids — `p_0 = 0.2` (full profile): −0.72 over `m/d ∈ [30, 3000]`, −0.36 over
//! `[300, 30000]`; `p_0 = 0.005`: −0.80 over `[30, 3000]` — although the one constant still
//! holds there (ratios ≤ half of `C`). That series stays in the constant's grid, its slope is
//! reported only. (The critical displacement `t ∝ (√(d/m)/p_0)^{1/2}` is comparable to the
//! cluster separation at small `m` when `p_0` is small; the cause of the flattening at large `m`
//! was not pinned down.)

//! Instances: the slope series are drawn several times (`design`); the constant must hold on
//! every instance's cells, the slope test is on the mean of the instances' slopes.
//!
//! Sabotage: the `1/p_j` factor is dropped (statistic `max_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖²`), an
//! honest perturbation of the bound: calibrated on balanced `p` it absorbs a factor 3, but on the
//! unbalanced validation series the rare cluster (`p_0 = 0.005`, about `0.005 m` clients, signal
//! `p_0‖Σ_0(θ*_0 − θ)‖²` below the noise of `Y` on the whole grid) is not in `Û`, and its whole
//! `‖Σ_0(θ*_0 − θ)‖² ≈ δ²` remains — several times `C (δ² + σ²) ξ₁` once `ξ₁ < 1`
//! (`m ≥ 1000 d`).

use super::common::{moment_shape, phase1_federation, phase1_matrix, slope_fit, xi, Mixture};
use super::sweep::{
    cov_name, geometric_means, instance_cell_seed, instance_model_seed, sweep_constant,
    sweep_figure_series, SweepCell, EXTREME, RANDOM_DIAG,
};
use crate::framework::{
    check_alpha, mean_tolerance, quantile, CheckConfig, CheckRecord, Figure, Side,
};
use fedmix::federation::Federation;
use fedmix::linalg::top_k_left_singular;
use fedmix::prec::{amax_nan, max_nan, IDENTITY_RTOL};
use fedmix::seed_streams::child_seed;
use nalgebra::{DMatrix, DVector};

/// Quantile level over replicates.
const QUANTILE: f64 = 0.9;
/// Safety factor applied to the calibrated constant.
const SAFETY: f64 = 2.0;
/// Signals of the critical cluster relative to `(δ² + σ²)√(d/m)`: a ladder across the noise
/// level of `Y`; a critical cell keeps the worst.
const KAPPA_LADDER: [f64; 9] = [0.25, 0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0];
/// Seed tag of this check.
const SEED_TAG: u64 = 1_100;

/// `(instances, replicates per cell)` of a series. The critical balanced validation series (the
/// slope tests) are drawn 10 times at the quick profile with 20 replicates per cell and 30
/// times at the full profile with 50 (each instance its own `θ*`, `Σ_j` and data), and their
/// slope is the mean of the instances' slopes; every other series is one instance with `reps`
/// replicates. Decision, measured (full profile, master seeds 1–20): one run's 95 % half-width
/// of the slope with one instance of 200 replicates was 0.114 (`d = 6`) and 0.052 (`d = 12`),
/// of which the replicates explain ≈ 0.025 — the rest is the instance, so instances, not
/// replicates, narrow it. The one-sided t-test needs `n` instances for its own SD: 10 is the
/// fewest whose `t_{n−1}` quantile at the check's α (≈ 6.4 at `n = 10`) leaves power against
/// an exponent 0.25 too slow.
fn design(cfg: &CheckConfig, spec: &SeriesSpec, reps: usize) -> (usize, usize) {
    let slope_series = spec.kind == Kind::Critical && spec.p == BALANCED && !spec.calibration;
    match (slope_series, cfg.profile) {
        (true, crate::framework::Profile::Quick) => (10, reps / 2),
        (true, crate::framework::Profile::Full) => (30, reps / 4),
        (false, _) => (1, reps),
    }
}

const K: usize = 3;
const BALANCED: &[f64] = &[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
const UNBALANCED: &[f64] = &[0.005, 0.4975, 0.4975];
/// Moderately skewed `p` with the critical cluster the rarest.
const SKEWED: &[f64] = &[0.2, 0.3, 0.5];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `θ = 0`.
    Origin,
    /// `θ` at distance 3 from the origin.
    Far,
    /// `θ = θ*_0 − t u` at the critical signal level.
    Critical,
    /// `θ = (θ*_1 + θ*_2)/2`: clusters 1 and 2 symmetric about `θ`, cluster 0 in a generic
    /// direction and (typically) the farthest.
    Between,
}

struct SeriesSpec {
    d: usize,
    sigma: f64,
    p: &'static [f64],
    kind: Kind,
    cov: (f64, f64),
    ratios: Vec<usize>,
    calibration: bool,
}

impl SeriesSpec {
    fn name(&self) -> String {
        let p = if self.p == UNBALANCED {
            "p=(.005,.4975,.4975)"
        } else if self.p == SKEWED {
            "p=(.2,.3,.5)"
        } else {
            "p uniform"
        };
        let cov = cov_name(self.cov);
        format!("d={} σ={} {p} θ {:?} {cov}", self.d, self.sigma, self.kind)
    }
}

#[rustfmt::skip]
fn specs(cfg: &CheckConfig) -> Vec<SeriesSpec> {
    let s = |d, sigma, p, kind, cov, ratios, calibration| SeriesSpec { d, sigma, p, kind, cov, ratios: <[usize]>::to_vec(ratios), calibration };
    let mut v = vec![
        s(6, 0.3, BALANCED, Kind::Critical, EXTREME, &[10, 100, 1000][..], true),
        s(5, 0.3, BALANCED, Kind::Origin, EXTREME, &[10, 100, 1000, 3000][..], true),
        s(8, 0.5, BALANCED, Kind::Critical, RANDOM_DIAG, &[30, 300][..], true),
        s(6, 0.1, BALANCED, Kind::Critical, RANDOM_DIAG, &[30, 100, 300, 1000, 3000][..], false),
        s(10, 0.5, UNBALANCED, Kind::Between, RANDOM_DIAG, &[10, 100, 1000, 3000][..], false),
        s(8, 1.0, BALANCED, Kind::Far, RANDOM_DIAG, &[10, 100, 1000][..], false),
    ];
    if cfg.profile == crate::framework::Profile::Full {
        v.push(s(12, 0.5, BALANCED, Kind::Critical, RANDOM_DIAG, &[30, 300, 3000][..], false));
        // Critical family on a rarer cluster (p_0 = 0.2): constant tested, slope only reported.
        v.push(s(5, 0.2, SKEWED, Kind::Critical, RANDOM_DIAG, &[30, 100, 300, 1000, 3000][..], false));
    }
    if cfg.profile == crate::framework::Profile::Full {
        for spec in v.iter_mut().filter(|s| !s.calibration) {
            spec.ratios = super::common::dense_ratios(&spec.ratios);
        }
    }
    v
}

/// The `θ` family of a series at `m` clients: `θ(t) = base − t u` for `t` in the returned list
/// (`[0]` for generic kinds; one `t` per `KAPPA_LADDER` entry for the critical kind).
fn family(mix: &Mixture, kind: Kind, m: usize) -> (DVector<f64>, DVector<f64>, Vec<f64>) {
    let d = mix.d();
    let unit = DVector::from_fn(d, |i, _| if i % 2 == 0 { 1.0 } else { -1.0 }).normalize();
    let base = match kind {
        Kind::Origin => DVector::zeros(d),
        Kind::Far => &unit * 3.0,
        Kind::Between => (mix.theta_star.column(1) + mix.theta_star.column(2)) * 0.5,
        Kind::Critical => mix.theta_star.column(0).clone_owned(),
    };
    let ts = if kind == Kind::Critical {
        let scale = mix.delta(&base).powi(2) + mix.sigma * mix.sigma;
        let su = unit.component_mul(&mix.cov.column(0)).norm_squared();
        KAPPA_LADDER
            .iter()
            .map(|kappa| (kappa * scale * (d as f64 / m as f64).sqrt() / (mix.p[0] * su)).sqrt())
            .collect()
    } else {
        vec![0.0]
    };
    (base, unit, ts)
}

/// `Y(θ(t)) = P₀ + t P₁ + t² P₂` along `θ(t) = base − t u`: the residuals `y − ⟨x, θ(t)⟩ =
/// r₀ + t w` are affine in `t` (`r₀ = y − ⟨x, base⟩`, `w = ⟨x, u⟩`), so one pass over the data
/// serves the whole family (first-two pairing, as [`super::common::phase1_matrix_fast`]).
fn family_parts(fed: &Federation, base: &DVector<f64>, u: &DVector<f64>) -> [DMatrix<f64>; 3] {
    let x = fed.features();
    let (d, m) = (fed.d(), fed.num_clients());
    let r0 = fed.responses() - x.tr_mul(base);
    let w = x.tr_mul(u);
    let col = |v: &DVector<f64>, off: usize| {
        DMatrix::from_fn(d, m, |i, c| x[(i, 2 * c + off)] * v[2 * c + off])
    };
    let (a0, a1, b0, b1) = (col(&r0, 0), col(&w, 0), col(&r0, 1), col(&w, 1));
    let mf = m as f64;
    [
        &a0 * b0.transpose() / mf,
        (&a0 * b1.transpose() + &a1 * b0.transpose()) / mf,
        &a1 * b1.transpose() / mf,
    ]
}

/// `p_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖²` for every `j` (without `p_j` when `weighted` is false).
fn residuals(mix: &Mixture, u_hat: &DMatrix<f64>, theta: &DVector<f64>, weighted: bool) -> f64 {
    (0..K)
        .map(|j| {
            let g = mix.mean_moment(j, theta);
            let r = (&g - u_hat * u_hat.tr_mul(&g)).norm_squared();
            if weighted {
                mix.p[j] * r
            } else {
                r
            }
        })
        .fold(0.0, max_nan)
}

/// Of two `(statistic, shape)` pairs, the one with the larger `statistic/shape` (the first on
/// a tie): folding a family with it keeps the sup over θ of the ratio.
fn larger_ratio(best: (f64, f64), c: (f64, f64)) -> (f64, f64) {
    if c.0 / c.1 > best.0 / best.1 {
        c
    } else {
        best
    }
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let reps = cfg.pick(40, 200);
    let specs = specs(cfg);
    let mut cells = Vec::new();
    let mut cell_id = 0u64;
    let mut fast_dev = 0.0f64;
    for (si, spec) in specs.iter().enumerate() {
        let series_seed = child_seed(cfg.seed, SEED_TAG + 900 + si as u64);
        let (instances, reps) = design(cfg, spec, reps);
        for instance in 0..instances {
            let model_seed = instance_model_seed(series_seed, instance);
            let mix = Mixture::draw(spec.d, spec.p, 1.0, spec.cov, spec.sigma, model_seed);
            for (ri, &ratio) in spec.ratios.iter().enumerate() {
                let m = spec.d * ratio;
                let (base, u, ts) = family(&mix, spec.kind, m);
                let thetas: Vec<DVector<f64>> = ts.iter().map(|&t| &base - &u * t).collect();
                let seed =
                    instance_cell_seed(cfg.seed, SEED_TAG, &mut cell_id, model_seed, instance, ri);
                // stats[t][r]: replicate r at θ number t (the same data for every θ).
                let mut stats = vec![Vec::with_capacity(reps); thetas.len()];
                for r in 0..reps as u64 {
                    let fed = phase1_federation(&mix, m, seed, r);
                    let parts = family_parts(&fed, &base, &u);
                    if r == 0 && ri == 0 && instance == 0 {
                        // The family's Y against the library's subspace_matrix at the last θ.
                        let (t, theta) = (ts[ts.len() - 1], &thetas[thetas.len() - 1]);
                        let reference = phase1_matrix(&fed, theta);
                        let y = &parts[0] + &parts[1] * t + &parts[2] * (t * t);
                        fast_dev =
                            max_nan(fast_dev, amax_nan(&(y - &reference)) / reference.amax());
                    }
                    for ((theta, &t), st) in thetas.iter().zip(&ts).zip(stats.iter_mut()) {
                        let y = &parts[0] + &parts[1] * t + &parts[2] * (t * t);
                        let u_hat = top_k_left_singular(&y, K).expect("k ≤ d");
                        st.push(residuals(&mix, &u_hat, theta, !cfg.sabotage));
                    }
                }
                // The cell keeps the θ of the family with the largest ratio (a sup over θ).
                let (stat, shape) = thetas
                    .iter()
                    .zip(&stats)
                    .map(|(theta, st)| {
                        let shape = moment_shape(mix.delta(theta).powi(2), spec.sigma, spec.d, m);
                        (quantile(st, QUANTILE), shape)
                    })
                    .fold((0.0, 1.0), larger_ratio);
                cells.push(SweepCell {
                    series: spec.name(),
                    calibration: spec.calibration,
                    x: m as f64,
                    stat,
                    shape,
                    instance,
                });
            }
        }
    }
    let (c, worst) = sweep_constant(&cells, SAFETY);
    let validation: Vec<&SeriesSpec> = specs.iter().filter(|s| !s.calibration).collect();
    let mut xi_slopes = Vec::new();
    let slope_series: Vec<&&SeriesSpec> = validation
        .iter()
        .filter(|s| s.kind == Kind::Critical && s.p == BALANCED)
        .collect();
    let slope_alpha = check_alpha() / 2.0 / slope_series.len() as f64;
    let mut instance_slopes = Vec::new();
    let slopes: Vec<_> = slope_series
        .iter()
        .map(|s| {
            // The statistic over (δ² + σ²) (which moves with the chosen θ) against m, fitted per
            // instance; the slope of ξ₁ itself on the same cells is reported.
            let stat_pts = |instance: usize| -> Vec<(f64, f64)> {
                cells
                    .iter()
                    .filter(|c| c.series == s.name() && c.instance == instance)
                    .map(|c| (c.x, c.stat * xi(s.d, c.x as usize, 2 * c.x as usize) / c.shape))
                    .collect()
            };
            let xi_pts: Vec<(f64, f64)> = stat_pts(0)
                .iter()
                .map(|&(m, _)| (m, xi(s.d, m as usize, 2 * m as usize)))
                .collect();
            xi_slopes.push(format!(
                "{}: {:.3}",
                s.name(),
                slope_fit("m", &xi_pts, 0.0, 0.0).slope
            ));
            let n = design(cfg, s, reps).0;
            let per: Vec<f64> = (0..n)
                .map(|i| slope_fit("m", &stat_pts(i), -0.5, 0.0).slope)
                .collect();
            let mean = per.iter().sum::<f64>() / n as f64;
            let sd = (per.iter().map(|b| (b - mean).powi(2)).sum::<f64>()
                / (n as f64 - 1.0))
                .sqrt();
            let tol = mean_tolerance(sd, n, slope_alpha);
            instance_slopes.push(format!(
                "{}: mean {mean:.4}, SD {sd:.4} over {n} instances, tolerance t_({}, 1−α') × SD/√{n} = {tol:.4}; per instance {:?}",
                s.name(),
                n - 1,
                per.iter().map(|b| format!("{b:.3}")).collect::<Vec<_>>()
            ));
            let mut fit = slope_fit(
                &format!("m ({}; statistic/(δ²+σ²))", s.name()),
                &stat_pts(0),
                -0.5,
                tol,
            );
            fit.slope = mean;
            fit.side = Side::AtMost;
            fit
        })
        .collect();
    let generic_slopes: Vec<String> = specs
        .iter()
        .filter(|s| s.kind != Kind::Critical || s.p != BALANCED)
        .map(|s| {
            let pts = geometric_means(cells.iter().filter(|c| c.series == s.name()).map(|c| {
                (
                    c.x,
                    c.stat * xi(s.d, c.x as usize, 2 * c.x as usize) / c.shape,
                )
            }));
            format!("{}: {:.3}", s.name(), slope_fit("m", &pts, -1.0, 0.0).slope)
        })
        .collect();
    let passed = worst <= c && slopes.iter().all(|s| s.ok()) && fast_dev <= IDENTITY_RTOL;
    let names: Vec<String> = validation.iter().map(|s| s.name()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ratios: Vec<String> = cells
        .iter()
        .map(|c| format!("{:.3}", c.stat / c.shape))
        .collect();
    let stat_def = if cfg.sabotage {
        "max_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖² (SABOTAGED: 1/p_j dropped)"
    } else {
        "max_j p_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖²"
    };
    CheckRecord {
        name: "prop1_subspace_projection".into(),
        claim: "‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖² ≤ C (δ² + σ²) ξ₁ / p_j for every cluster j, Û the top-k subspace of Y".into(),
        source: "SXY22 Proposition 1 (App. D.4)".into(),
        statistic: worst,
        bound: c,
        constant: Some(c),
        slopes,
        constants: Vec::new(),
        passed,
        inconclusive: None,
        details: vec![
            format!("k = 3, θ*_j ~ N(0, I/d), Σ_j = βI = 2I or diag(U[0.5, 2]) as named; m clients with one pair each, labels ~ p; N = 2m; Û = top-3 left singular vectors of Y (exact SVD); {reps} replicates per cell (other series; the slope series below)"),
            format!("statistic per cell = {QUANTILE}-quantile of {stat_def}, divided by (δ² + σ²) ξ₁; critical θ: p_0‖Σ_0(θ*_0 − θ)‖² = κ (δ² + σ²) √(d/m), κ ∈ {KAPPA_LADDER:?}, worst κ kept per cell"),
            format!("series (m = d × ratio): {}", specs.iter().map(|s| format!("[{}{}: ratios {:?}]", s.name(), if s.calibration { ", calibration" } else { "" }, s.ratios)).collect::<Vec<_>>().join(" ")),
            format!("seeds: model of series s from child_seed(seed, {} + s) (instance i ≥ 1: child_seed of that with i), cell c from child_seed(seed, {SEED_TAG} + c) (instance i ≥ 1: child_seed(instance seed, 1000 + point index)), replicate r = stream index r", SEED_TAG + 900),
            format!("critical balanced validation series (the slope tests): {} instances × {} replicates per cell; the tested slope is the mean of the instances' slopes, one-sided (Prop. 1 is an upper bound): ≤ −0.5 + t_(n−1, 1−α') × SD/√n, SD of the instances' slopes in this run, α' = α/2/{} = {slope_alpha:.2e}; the constant is judged on every instance's cells; the figure shows instance 0", design(cfg, &specs[3], reps).0, design(cfg, &specs[3], reps).1, slope_series.len()),
            format!("slopes of statistic/(δ² + σ²) in m: {}", instance_slopes.join("; ")),
            format!("C = {SAFETY} × max calibration ratio = {c:.4}; worst validation ratio {worst:.4}; the slope of ξ₁ itself on the slope series' cells: {}", xi_slopes.join("; ")),
            format!("untested slopes of statistic/(δ² + σ²) in m (generic θ: −1 only once λ_k(E Y) clears the noise; critical family on a rarer cluster, see the module doc): {}", generic_slopes.join("; ")),
            format!("ratios statistic/shape in cell order: {}", ratios.join(", ")),
            format!("Y by the fast path (one product of all residual moments); on the first replicate of each series' first cell it matches fedmix::algorithms::fedmd::subspace_matrix to {fast_dev:.1e} relative (allowance {IDENTITY_RTOL:e})"),
        ],
        figure: Some(Figure {
            title: "Prop. 1: projection residual of Σ_j(θ*_j − θ) vs m".into(),
            x_label: "m (clients, one pair each)".into(),
            y_label: format!("{QUANTILE}-quantile of max_j p_j ‖(I − ÛÛᵀ)Σ_j(θ*_j − θ)‖²"),
            log_x: true,
            log_y: true,
            series: sweep_figure_series(&cells, c, &name_refs),
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn critical_thetas_sit_at_the_documented_signal_levels() {
        // θ(t) = θ*_0 − t u must satisfy p_0‖Σ_0(θ*_0 − θ(t))‖² = κ (δ² + σ²) √(d/m), one t per
        // κ of the ladder (d = 6, m = 600: √(d/m) = 0.1).
        use super::{family, Kind, Mixture, BALANCED, KAPPA_LADDER, RANDOM_DIAG};
        let mix = Mixture::draw(6, BALANCED, 1.0, RANDOM_DIAG, 0.3, 7);
        let (base, unit, ts) = family(&mix, Kind::Critical, 600);
        assert_eq!(ts.len(), KAPPA_LADDER.len());
        let scale = mix.delta(&base).powi(2) + 0.09;
        for (t, kappa) in ts.iter().zip(KAPPA_LADDER) {
            let theta = &base - &unit * *t;
            let gap = mix.theta_star.column(0) - &theta;
            let signal = mix.p[0] * gap.component_mul(&mix.cov.column(0)).norm_squared();
            let want = kappa * scale * 0.1;
            assert!(
                (signal / want - 1.0).abs() < 1e-12,
                "κ = {kappa}: {signal} vs {want}"
            );
        }
    }

    #[test]
    fn the_cell_keeps_the_largest_ratio() {
        // Ratios 0.5, 0.75, 2 and 1.5: the sup is (2, 1), whatever the order.
        let pairs = [(1.0, 2.0), (3.0, 4.0), (2.0, 1.0), (3.0, 2.0)];
        for rot in 0..pairs.len() {
            let mut p = pairs.to_vec();
            p.rotate_left(rot);
            let best = p.into_iter().fold((0.0, 1.0), super::larger_ratio);
            assert_eq!(
                (best.0.to_bits(), best.1.to_bits()),
                (2f64.to_bits(), 1f64.to_bits())
            );
        }
    }
}
