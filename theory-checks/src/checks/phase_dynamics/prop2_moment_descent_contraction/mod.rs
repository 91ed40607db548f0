//! SXY22 Proposition 2 (stated in App. D.2, proved in App. D.5): one moment-descent step of an
//! anchor (Phase 1 pseudocode, steps 9–15). With `g = Σ_j(θ*_j − θ_t)`, `δ_t = max_l ‖θ*_l − θ_t‖`,
//! `ξ₁ = √(d log N/m) + (d/m) log³N`, `ξ₂ = √(k log N/ℓ) + (k/ℓ) log³N` (natural logs):
//!
//! - eq. 19: `|σ̂²_t − ‖g‖²| ≤ C (δ_t² + σ²)(ξ₁/p_j + ξ₂)`;
//! - eq. 20 ⇒ eq. 21: if `‖g‖² ≥ C (δ_t² + σ²)(ξ₁/p_j + ξ₂)` then
//!   `‖Σ_j^{1/2}(θ*_j − θ_{t+1})‖² ≤ (1 − α²/(8β²)) ‖Σ_j^{1/2}(θ*_j − θ_t)‖²`.
//!
//! Setup (faithful step): `m` fresh two-sample clients form `Y = (1/m) Σ ε(x₁,y₁,θ)ε(x₂,y₂,θ)ᵀ`
//! ([`subspace_matrix`], first-two pairing); `Û` = its top-k left singular vectors by direct SVD
//! (the large-sample, converged limit of Algorithm 3 — `T₁ → ∞`); each anchor forms eq. 2's
//! `A = (1/ℓ) Σ (Ûᵀε_j)(Ûᵀε̃_j)ᵀ` from `2ℓ` fresh samples, runs `T₂ = 100` power-iteration steps on
//! `AAᵀ`, fixes the sign of `β̂` by `β̂ᵀÛᵀḡ ≥ 0`, sets `σ̂² = σ₁(A)` and steps
//! `θ_{t+1} = θ_t + (ασ̂/(2β²)) Ûβ̂` (the decisions documented in `fedmix::algorithms::fedmd`:
//! `σ̂² = σ₁(A)`, the quantity eq. 19 compares with `‖g‖²`, and the sign that makes `Ûβ̂` point
//! along `g`, which the singular vector alone does not fix; the unit test below pins this step
//! to `run_fedmd`'s). Covariances: `Σ_j = I` (α = β = 1) and diagonal `Σ_j` with entries in
//! `[α, β] = [0.5, 1.5]`, both ends attained; the step uses these stated α, β.
//!
//! Constants. The statement has one existential `C` for both eq. 19 and eq. 20. It is
//! calibrated on eq. 19 only: the largest `|σ̂² − ‖g‖²| / ((δ²+σ²)(ξ₁/p_j+ξ₂))` over the
//! calibration steps. Over these `ℓ` the eq. 19 ratio rises with `ℓ` (ξ₂'s `(k/ℓ)log³N` term
//! dominates the shape until `ℓ ≈ k log⁵N`), so the calibration reaches the largest `(m, ℓ)`
//! of the grid ([`TOP_UNITS`] independent instances there per covariance type) and the
//! validation points lie below it, on a disjoint grid whose `ℓ` spans two orders of
//! magnitude. The unit of the eq. 19 test is an instance (its own `θ*`, `Σ_j`, data and
//! `unit_starts` starts; its statistic is its largest ratio) — steps of one instance share
//! its `Û` and anchor samples and are not exchangeable, instances are. The test fails when at
//! least [`EXCEEDANCES`] of the [`VALIDATION_UNITS`] validation instances of a covariance type
//! exceed `C`. If a validation instance's statistic is stochastically no larger than a top
//! instance's (the premise that the ratio rises with `ℓ` on this grid), coupling each with a
//! top instance makes the `R_c + R_v` statistics exchangeable, and then the `j` largest all
//! fall among the validation ones with probability `C(R_v, j)/C(R_c + R_v, j)`
//! ([`exceedance_false_failure`]); for `R_c = 16`, `R_v = 12`, `j = 8` that is 1.6·10⁻⁴ per
//! covariance type, within the check's α over the two. A fixed safety factor on one instance
//! per point (`C = 2 ×` the calibration maximum, each step a unit) failed a correct
//! implementation at 1 of 27 master seeds: one instance's maximum at the top point was 2.16
//! times another's.
//! that same `C` defines the eq. 20 region, where eq. 21's explicit factor `1 − α²/(8β²)` is
//! checked exactly on every start of both grids that lands in it. Where the region is reached
//! by chance only, a seed whose calibrated `C` is large leaves few such starts, so the region
//! test draws its own after calibration: starts from the same law on the validation
//! instances, kept for the anchors where eq. 20 holds (decidable before the step), up to
//! [`REGION_TARGET`] steps per point. Fewer than [`MIN_REGION_STEPS`] per covariance type —
//! a `C` so large that the region is empty at every validation point — makes the check
//! inconclusive, not failed. Observed: with ξ's `log³N` terms the region is empty for
//! `ℓ ≲ 100` — eq. 20 then asks for `‖Σ(θ*−θ)‖² > δ² + σ²` — so the contraction is exercised
//! at the large-ℓ points.
//!
//! The check composes the step itself (so that it can vary `ℓ`, `Û` and `η`); that this is the
//! library's step is part of the check: on a small instance where the two must agree exactly
//! ([`library_step_deviation`]) the composed step equals `run_fedmd`'s to
//! [`LIBRARY_STEP_TOL`] — otherwise a wrong step size, sign rule or iteration count in
//! `run_fedmd` would go unseen here.
//!
//! Statistic: the largest `ratio / (1 − α²/(8β²))` over starts in the eq. 20 region (pass: ≤ 1).
//! Sabotage: the step `η = 3ασ̂/β²` (six times too long) — the ratio becomes ≈ 4 for `Σ = I`.

use super::support::{child, random_unit, Mixture};
use crate::framework::{check_alpha, outcome, CheckConfig, CheckRecord, Figure, Guard, Series};
use fedmix::algorithms::fedmd::{residual_moments, run_fedmd, subspace_matrix};
use fedmix::engine::recorder::Recorder;
use fedmix::federation::Federation;
use fedmix::linalg::{power_iteration, top_k_left_singular};
use fedmix::params::{FedMdParams, Pairing, Phase1Variant, SubspaceMethod};
use fedmix::prec::{max_nan, min_nan};
use fedmix::seed_streams::{stream, Purpose};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

mod anchor_step;
pub use anchor_step::{anchor_step, library_step_deviation, AnchorStep, LIBRARY_STEP_TOL};

/// Instances per covariance type at the top `(m, ℓ)` of the calibration (eq. 19's `R_c`).
pub const TOP_UNITS: usize = 16;
/// Validation instances per covariance type, spread evenly over the validation points (eq.
/// 19's `R_v`).
pub const VALIDATION_UNITS: usize = 12;
/// Validation instances of one covariance type above `C` that fail eq. 19's test (`j`).
pub const EXCEEDANCES: usize = 8;
/// Fewest steps of the region test (drawn inside the eq. 20 region after calibration, see
/// `region_point`) for each covariance type; fewer makes the check inconclusive. The region
/// is empty at small ℓ — the `(k/ℓ) log³N` term of ξ₂ makes the eq. 20 threshold exceed
/// `δ² + σ²` there — so the steps come from the validation points where it is not.
pub const MIN_REGION_STEPS: usize = 20;
/// Region-test steps sought per validation point (a start contributes one step per anchor
/// whose cluster's region it lies in, up to `ANCHORS`).
pub const REGION_TARGET: usize = 60;
/// Starts drawn at most per validation point for the region test.
pub const REGION_DRAWS: usize = 2000;
/// Power-iteration steps `T₂`.
const T2: usize = 100;
const K: usize = 3;
const D: usize = 8;
const SIGMA: f64 = 0.1;
/// Anchors per grid point (two per cluster).
const ANCHORS: usize = 6;
/// Diagonal covariance range `[α, β]`.
const DIAG: (f64, f64) = (0.5, 1.5);

#[derive(Clone, Copy, Debug)]
struct GridPoint {
    m: usize,
    ell: usize,
    diagonal: bool,
}

#[derive(Clone, Copy, Debug)]
struct Obs {
    /// `|σ̂² − ‖g‖²| / shape`.
    eq19: f64,
    /// `‖g‖² / shape`.
    margin: f64,
    /// Contraction ratio of `‖Σ^{1/2}(θ* − θ)‖²`.
    ratio: f64,
    /// `1 − α²/(8β²)`.
    bound: f64,
    diagonal: bool,
    ell: usize,
}

/// Whether a step is inside eq. 20's region `‖Σ(θ* − θ)‖² ≥ C·shape` (`margin ≥ c`).
fn in_region(o: &Obs, c: f64) -> bool {
    o.margin >= c
}

/// Steps of one covariance class (`diagonal`: random diagonal `Σ`; otherwise `Σ = I`) inside
/// eq. 20's region.
fn region_steps(obs: &[Obs], c: f64, diagonal: bool) -> usize {
    obs.iter()
        .filter(|o| o.diagonal == diagonal && in_region(o, c))
        .count()
}

fn xi(dim: f64, count: f64, log_n: f64) -> f64 {
    (dim * log_n / count).sqrt() + dim / count * log_n.powi(3)
}

/// A start: half near a random centre at a log-uniform radius in `[0.05, 3]Δ`, half uniform
/// in the ball of radius `2 max_j ‖θ*_j‖`.
fn start(mix: &Mixture, sep: f64, rng: &mut fedmix::seed_streams::Rng, s: usize) -> DVector<f64> {
    let d = mix.d();
    let dir = random_unit(d, rng);
    if s % 2 == 0 {
        let j = rng.random_range(0..mix.k());
        let r = sep * 10f64.powf(rng.random_range((0.05f64).log10()..(3.0f64).log10()));
        mix.theta_star.column(j) + dir * r
    } else {
        let big = (0..mix.k())
            .map(|j| mix.theta_star.column(j).norm())
            .fold(0.0, max_nan);
        dir * (2.0 * big * rng.random::<f64>().powf(1.0 / d as f64))
    }
}

/// Prop. 2's explicit contraction factor `1 − α²/(8β²)` of `‖Σ^{1/2}(θ* − θ)‖²` per
/// moment-descent step, for `αI ⪯ Σ_j ⪯ βI` (SXY22 Prop. 2, eq. 21).
fn contraction_bound(alpha: f64, beta: f64) -> f64 {
    1.0 - alpha * alpha / (8.0 * beta * beta)
}

/// `P(the j largest of R_c + R_v exchangeable statistics are all among the R_v) =
/// C(R_v, j)/C(R_c + R_v, j)`: the false-failure probability of failing when at least `j`
/// validation statistics exceed the largest calibration one.
pub fn exceedance_false_failure(r_c: usize, r_v: usize, j: usize) -> f64 {
    if j > r_v {
        return 0.0; // fewer validation statistics than j: the event is impossible
    }
    (0..j)
        .map(|i| (r_v - i) as f64 / (r_c + r_v - i) as f64)
        .product()
}

/// Starts per eq. 19 unit (an instance) at the top and validation points.
fn unit_starts(cfg: &CheckConfig) -> usize {
    cfg.pick(8, 15)
}

/// One grid point's instance: the mixture, the federation (`m` two-sample clients, then
/// [`ANCHORS`] anchors with `2ℓ` samples), and what the bounds need.
struct Instance {
    gp: GridPoint,
    mix: Mixture,
    fed: Federation,
    labels: Vec<usize>,
    set: Vec<usize>,
    alpha: f64,
    beta: f64,
    /// `ξ₁/p_j + ξ₂`.
    xi_sum: f64,
    sep: f64,
    eta_scale: f64,
    seed: u64,
}

impl Instance {
    fn new(cfg: &CheckConfig, gp: GridPoint, idx: u64) -> Self {
        let seed = child(cfg.seed, 21, idx);
        let mut mix = Mixture::gaussian(D, K, 1.0, SIGMA, seed);
        let (alpha, beta) = if gp.diagonal { DIAG } else { (1.0, 1.0) };
        if gp.diagonal {
            mix = mix.with_diagonal_covariance(alpha, beta, seed);
        }
        let labels: Vec<usize> = (0..gp.m + ANCHORS).map(|i| i % K).collect();
        let mut sizes = vec![2; gp.m];
        sizes.extend(std::iter::repeat_n(2 * gp.ell, ANCHORS));
        let fed = mix.federation(&labels, &sizes, seed);
        let log_n = (fed.total_samples() as f64).ln();
        let p_j = 1.0 / K as f64;
        let xi_sum = xi(D as f64, gp.m as f64, log_n) / p_j + xi(K as f64, gp.ell as f64, log_n);
        let sep = fedmix::metrics::separation(&mix.theta_star);
        Self {
            gp,
            mix,
            fed,
            labels,
            set: (0..gp.m).collect(),
            alpha,
            beta,
            xi_sum,
            sep,
            eta_scale: if cfg.sabotage { 3.0 } else { 0.5 },
            seed,
        }
    }

    /// eq. 20's `(δ_t² + σ²)(ξ₁/p_j + ξ₂)` at `θ`.
    fn shape(&self, theta: &DVector<f64>) -> f64 {
        let delta = (0..K)
            .map(|l| (self.mix.theta_star.column(l) - theta).norm())
            .fold(0.0, max_nan);
        (delta * delta + SIGMA * SIGMA) * self.xi_sum
    }

    /// `‖Σ_j(θ*_j − θ)‖² / shape` for the anchor `a`'s cluster `j`: eq. 20 holds iff `≥ C`.
    fn margin(&self, theta: &DVector<f64>, a: usize) -> f64 {
        let j = self.labels[self.gp.m + a];
        let err = self.mix.theta_star.column(j) - theta;
        self.mix.cov_apply(j, &err).norm_squared() / self.shape(theta)
    }

    /// Whether eq. 20 can hold at all here: `‖Σ(θ*_j − θ)‖² ≤ β²δ²`, so the margin is below
    /// `β²/(ξ₁/p_j + ξ₂)` everywhere and the region is empty when that is `≤ C`.
    fn region_possible(&self, c: f64) -> bool {
        self.beta * self.beta / self.xi_sum > c
    }

    /// One moment-descent step of each anchor in `anchors` from `θ` (one `Û` for all, a fresh
    /// power-iteration start per anchor drawn from `rng`).
    fn observe(
        &self,
        theta: &DVector<f64>,
        anchors: impl Iterator<Item = usize>,
        rng: &mut fedmix::seed_streams::Rng,
    ) -> Vec<Obs> {
        let y = subspace_matrix(&self.fed, &self.set, theta, Pairing::FirstTwo);
        let u_hat = top_k_left_singular(&y, K).expect("k ≤ d");
        let shape = self.shape(theta);
        let bound = contraction_bound(self.alpha, self.beta);
        anchors
            .map(|a| {
                let client = self.gp.m + a;
                let j = self.labels[client];
                let v0 = DVector::from_fn(K, |_, _| rng.sample::<f64, _>(StandardNormal));
                let step = anchor_step(
                    &self.fed,
                    client,
                    theta,
                    &u_hat,
                    self.gp.ell,
                    (self.alpha, self.beta),
                    self.eta_scale,
                    &v0,
                );
                let err0 = self.mix.theta_star.column(j) - theta;
                let err1 = self.mix.theta_star.column(j) - &step.theta_next;
                let g_sq = self.mix.cov_apply(j, &err0).norm_squared();
                Obs {
                    eq19: (step.sigma_hat_sq - g_sq).abs() / shape,
                    margin: g_sq / shape,
                    ratio: self.mix.cov_norm_sq(j, &err1) / self.mix.cov_norm_sq(j, &err0),
                    bound,
                    diagonal: self.gp.diagonal,
                    ell: self.gp.ell,
                }
            })
            .collect()
    }
}

fn eval_point(cfg: &CheckConfig, gp: GridPoint, idx: u64, starts: usize) -> Vec<Obs> {
    let inst = Instance::new(cfg, gp, idx);
    let mut rng = stream(inst.seed, Purpose::Init, 0);
    let mut out = Vec::new();
    for s in 0..starts {
        let theta = start(&inst.mix, inst.sep, &mut rng, s);
        out.extend(inst.observe(&theta, 0..ANCHORS, &mut rng));
    }
    out
}

/// eq. 21's test inside eq. 20's region, drawn after `C` is calibrated: starts from the law of
/// [`start`] (a fresh stream), kept for the anchors whose margin is `≥ C` — the region is
/// known before stepping, so no step is spent outside it — until [`REGION_TARGET`] steps or
/// [`REGION_DRAWS`] starts. Empty where the region is (see [`Instance::region_possible`]).
fn region_point(cfg: &CheckConfig, gp: GridPoint, idx: u64, c: f64) -> Vec<Obs> {
    let inst = Instance::new(cfg, gp, idx);
    let mut out = Vec::new();
    if !inst.region_possible(c) {
        return out;
    }
    let mut rng = stream(inst.seed, Purpose::Init, 1);
    for s in 0..REGION_DRAWS {
        if out.len() >= REGION_TARGET {
            break;
        }
        let theta = start(&inst.mix, inst.sep, &mut rng, s);
        let inside: Vec<usize> = (0..ANCHORS)
            .filter(|&a| inst.margin(&theta, a) >= c)
            .collect();
        if !inside.is_empty() {
            out.extend(inst.observe(&theta, inside.into_iter(), &mut rng));
        }
    }
    out
}

fn grid(pairs: &[(usize, usize)]) -> Vec<GridPoint> {
    pairs
        .iter()
        .flat_map(|&(m, ell)| [false, true].map(|diagonal| GridPoint { m, ell, diagonal }))
        .collect()
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let calib = grid(&cfg.pick(
        vec![(3000, 25), (9000, 300)],
        vec![(3000, 25), (9000, 300), (30000, 100)],
    ));
    let (top_m, top_ell) = cfg.pick((24000, 3000), (90000, 10000));
    let valid = grid(&cfg.pick(
        vec![(1500, 10), (6000, 100), (18000, 1000)],
        vec![(1500, 10), (6000, 100), (18000, 1000), (60000, 3000)],
    ));
    let starts = cfg.pick(30, 120);
    // Calibration: one instance per lower point, TOP_UNITS per covariance type at the top.
    let mut cal: Vec<Obs> = calib
        .iter()
        .enumerate()
        .flat_map(|(i, &gp)| eval_point(cfg, gp, i as u64, starts))
        .collect();
    for u in 0..TOP_UNITS {
        for diagonal in [false, true] {
            let gp = GridPoint {
                m: top_m,
                ell: top_ell,
                diagonal,
            };
            let idx = 100 + 2 * u as u64 + u64::from(diagonal);
            cal.extend(eval_point(cfg, gp, idx, unit_starts(cfg)));
        }
    }
    let c = cal.iter().map(|o| o.eq19).fold(0.0, max_nan);
    // NaN, not a vacuous pass, when the calibration is degenerate (no positive finite ratio).
    let c = if c > 0.0 && c.is_finite() {
        c
    } else {
        f64::NAN
    };
    // Validation: VALIDATION_UNITS instances per covariance type over the validation points;
    // each unit's statistic is its largest ratio.
    let per_point = VALIDATION_UNITS / (valid.len() / 2);
    // The validation instances per covariance type actually drawn (R_v of the count rule).
    let r_v = per_point * (valid.len() / 2);
    let mut val = Vec::new();
    let mut exceed = [0usize; 2];
    for (i, &gp) in valid.iter().enumerate() {
        for u in 0..per_point {
            let obs = eval_point(cfg, gp, 1000 + (i * per_point + u) as u64, unit_starts(cfg));
            let unit_max = obs.iter().map(|o| o.eq19).fold(0.0, max_nan);
            // NaN counts as an exceedance.
            exceed[usize::from(gp.diagonal)] += usize::from(!(unit_max <= c));
            val.extend(obs);
        }
    }
    let worst19 = val.iter().map(|o| o.eq19).fold(0.0, max_nan);
    let eq19_alpha = 2.0 * exceedance_false_failure(TOP_UNITS, r_v, EXCEEDANCES);
    let eq19_holds = exceed.iter().all(|&e| e < EXCEEDANCES) && c.is_finite();
    // The region test: drawn inside eq. 20's region of the calibrated C, on fresh instances
    // at the validation points and the top point (fresh starts).
    let top = grid(&[(top_m, top_ell)]);
    let region_val: Vec<Obs> = valid
        .iter()
        .chain(&top)
        .enumerate()
        .flat_map(|(i, &gp)| region_point(cfg, gp, 5000 + i as u64, c))
        .collect();
    let in_c_region = |o: &&Obs| in_region(o, c);
    let all: Vec<&Obs> = cal.iter().chain(val.iter()).chain(&region_val).collect();
    let region: Vec<&Obs> = all.iter().copied().filter(in_c_region).collect();
    let worst21 = region.iter().map(|o| o.ratio / o.bound).fold(0.0, max_nan);
    let val_fraction = val.iter().filter(in_c_region).count() as f64 / val.len() as f64;
    let region_test_steps = |diag: bool| region_steps(&region_val, c, diag);
    let guards = [
        Guard::new(
            format!(
                "≥ {MIN_REGION_STEPS} region-test steps with Σ = I (got {})",
                region_test_steps(false)
            ),
            region_test_steps(false) >= MIN_REGION_STEPS,
        ),
        Guard::new(
            format!(
                "≥ {MIN_REGION_STEPS} region-test steps with diagonal Σ (got {})",
                region_test_steps(true)
            ),
            region_test_steps(true) >= MIN_REGION_STEPS,
        ),
    ];
    let region_by_ell = |o: &[Obs]| {
        let mut ells: Vec<usize> = o.iter().map(|x| x.ell).collect();
        ells.sort_unstable();
        ells.dedup();
        ells.iter()
            .map(|&l| {
                let at: Vec<&Obs> = o.iter().filter(|x| x.ell == l).collect();
                let inside = at.iter().filter(|x| x.margin >= c).count();
                format!("ℓ={l}: {inside}/{}", at.len())
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let max_ratio = |diag: bool| {
        region
            .iter()
            .filter(|o| o.diagonal == diag)
            .map(|o| o.ratio)
            .fold(0.0, max_nan)
    };
    let outside_worst = all
        .iter()
        .filter(|o| !in_c_region(o))
        .map(|o| o.ratio)
        .fold(0.0, max_nan);
    // Observed trend of the eq. 19 ratio in ℓ (information: ξ₂'s (k/ℓ)log³N term dominates
    // the shape at these ℓ, so the ratio rises like √ℓ while the true error falls like 1/√ℓ).
    let per_ell = |o: &[Obs]| {
        let mut ells: Vec<usize> = o.iter().map(|x| x.ell).collect();
        ells.sort_unstable();
        ells.dedup();
        ells.iter()
            .map(|&l| {
                let w = o
                    .iter()
                    .filter(|x| x.ell == l)
                    .map(|x| x.eq19)
                    .fold(0.0, max_nan);
                format!("ℓ={l}: {w:.3e}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lib_dev = library_step_deviation();
    let (passed, inconclusive) = outcome(
        worst21 <= 1.0 && eq19_holds && lib_dev < LIBRARY_STEP_TOL,
        &guards,
    );
    let points = |diag: bool, inside: bool| -> Vec<(f64, f64)> {
        all.iter()
            .filter(|o| o.diagonal == diag && in_c_region(o) == inside)
            .map(|o| (o.margin / c, o.ratio))
            .collect()
    };
    let xs: Vec<f64> = all.iter().map(|o| o.margin / c).collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, min_nan),
        xs.iter().copied().fold(0.0, max_nan),
    );
    let b_id = contraction_bound(1.0, 1.0);
    let b_diag = contraction_bound(DIAG.0, DIAG.1);
    CheckRecord {
        name: "prop2_moment_descent_contraction".into(),
        claim: "one moment-descent step contracts ‖Σ^{1/2}(θ*−θ)‖² by ≤ 1 − α²/(8β²) wherever eq. 20 holds; |σ̂² − ‖Σ(θ*−θ)‖²| ≤ C(δ²+σ²)(ξ₁/p+ξ₂)".into(),
        source: "SXY22 Prop. 2, eq. 19–21 (App. D.5)".into(),
        statistic: worst21,
        bound: 1.0,
        constant: Some(c),
        slopes: Vec::new(),
        constants: Vec::new(),
        passed,
        inconclusive,
        details: vec![
            format!("k = {K}, d = {D}, σ = {SIGMA}, θ*_j ~ N(0, I/d); {ANCHORS} anchors (2 per cluster) per grid point; {starts} starts per point (half near a centre at radius 0.05–3Δ, half uniform in the ball of radius 2 max‖θ*_j‖); Σ_j = I and diagonal Σ_j ∈ [{}, {}]", DIAG.0, DIAG.1),
            format!("calibration (m, ℓ): {:?} (one instance each, {starts} starts) and the top ({top_m}, {top_ell}) ({TOP_UNITS} instances per covariance type, {} starts each); validation (m, ℓ): {:?} ({per_point} instances each per covariance type, {} starts each; ℓ spans 2 orders); each with both covariances; seeds child(seed, 21, index)", calib.iter().filter(|g| !g.diagonal).map(|g| (g.m, g.ell)).collect::<Vec<_>>(), unit_starts(cfg), valid.iter().filter(|g| !g.diagonal).map(|g| (g.m, g.ell)).collect::<Vec<_>>(), unit_starts(cfg)),
            format!("eq. 19: C = {c:.4e} (largest calibration ratio); validation instances above C: {} of {r_v} with Σ = I, {} of {r_v} diagonal (fail at ≥ {EXCEEDANCES}; false-failure probability 2 × C({r_v}, {EXCEEDANCES})/C({}, {EXCEEDANCES}) = {eq19_alpha:.2e} ≤ α = {:.2e} if a validation instance's largest ratio is stochastically no larger than a top instance's); worst validation ratio {worst19:.4e}", exceed[0], exceed[1], TOP_UNITS + r_v, check_alpha()),
            format!("eq. 19 worst ratio by ℓ — calibration: {}; validation: {}", per_ell(&cal), per_ell(&val)),
            format!("eq. 20 region (‖Σ(θ*−θ)‖² ≥ C·shape): {} of {} steps; fraction of the validation grid's steps {val_fraction:.3}; region test (starts drawn after calibration, kept where eq. 20 holds, ≤ {REGION_TARGET} steps from ≤ {REGION_DRAWS} starts per validation point): Σ = I {}, diagonal {} steps (need ≥ {MIN_REGION_STEPS} each, else inconclusive)", region.len(), all.len(), region_test_steps(false), region_test_steps(true)),
            format!("steps in the eq. 20 region by ℓ — calibration: {}; validation: {}; region test: {}", region_by_ell(&cal), region_by_ell(&val), region_by_ell(&region_val)),
            format!("eq. 21 in region: max ratio {:.4} (Σ = I, bound {b_id:.4}); {:.4} (diagonal, bound {b_diag:.4}); statistic = max ratio/bound", max_ratio(false), max_ratio(true)),
            format!("outside the region (no claim): max ratio {outside_worst:.4}"),
            format!("composed step vs run_fedmd's one-step update (two-sample clients, first-two pairing): max deviation {lib_dev:.1e} (< {LIBRARY_STEP_TOL:e} required)"),
            if cfg.sabotage { "SABOTAGED: step η = 3ασ̂/β²".into() } else { "step η = ασ̂/(2β²)".into() },
        ],
        figure: Some(Figure {
            title: "Prop. 2: per-step contraction vs the eq. 20 margin".into(),
            x_label: "‖Σ(θ*−θ)‖² / (C (δ²+σ²)(ξ₁/p+ξ₂))".into(),
            y_label: "‖Σ^½(θ*−θ_{t+1})‖² / ‖Σ^½(θ*−θ_t)‖²".into(),
            log_x: true,
            log_y: false,
            series: vec![
                Series { label: "eq. 20 holds, Σ = I".into(), points: points(false, true), line: false },
                Series { label: "eq. 20 holds, diagonal Σ".into(), points: points(true, true), line: false },
                Series { label: "eq. 20 fails (no claim)".into(), points: [points(false, false), points(true, false)].concat(), line: false },
                Series { label: format!("1 − α²/(8β²) = {b_id:.3}, Σ = I"), points: vec![(x0, b_id), (x1, b_id)], line: true },
                Series { label: format!("1 − α²/(8β²) = {b_diag:.3}, diagonal Σ"), points: vec![(x0, b_diag), (x1, b_diag)], line: true },
                Series { label: format!("eq. 20 threshold (C = {c:.2e})"), points: vec![(1.0, 0.0), (1.0, 1.0)], line: true },
            ],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_steps_count_one_class_inside_the_region() {
        let obs = |margin, diagonal| Obs {
            eq19: 0.0,
            margin,
            ratio: 0.5,
            bound: 0.9,
            diagonal,
            ell: 10,
        };
        let all = [
            obs(3.0, true),
            obs(1.0, true),
            obs(2.0, true),
            obs(5.0, false),
            obs(0.5, false),
        ];
        // c = 2: margins 3 and 2 (diagonal), 5 (Σ = I).
        assert_eq!(region_steps(&all, 2.0, true), 2);
        assert_eq!(region_steps(&all, 2.0, false), 1);
        assert_eq!(region_steps(&all, 6.0, false), 0);
    }

    #[test]
    fn starts_follow_their_documented_law() {
        let mix = Mixture::gaussian(D, K, 1.0, SIGMA, 3);
        let sep = fedmix::metrics::separation(&mix.theta_star);
        let big = (0..K)
            .map(|j| mix.theta_star.column(j).norm())
            .fold(0.0, max_nan);
        let mut rng = stream(3, Purpose::Init, 0);
        let (mut near_min, mut near_max, mut far_max) = (f64::INFINITY, 0.0f64, 0.0f64);
        let mut far_outer = 0;
        for s in 0..400 {
            let theta = start(&mix, sep, &mut rng, s);
            if s % 2 == 0 {
                // Within [0.05, 3]·Δ of some centre (the nearest may be another one, closer).
                let nearest = (0..K)
                    .map(|j| (&theta - mix.theta_star.column(j)).norm())
                    .fold(f64::INFINITY, min_nan);
                assert!(nearest <= 3.0 * sep * (1.0 + 1e-12), "{nearest} vs {sep}");
                near_min = min_nan(near_min, nearest);
                near_max = max_nan(near_max, nearest);
            } else {
                assert!(theta.norm() <= 2.0 * big * (1.0 + 1e-12));
                far_max = max_nan(far_max, theta.norm());
                far_outer += usize::from(theta.norm() > big);
            }
        }
        // Half the radius or more: U^{1/8} > ½, probability 1 − 2⁻⁸ = 0.996 per draw (199.2 of
        // 200 expected; fewer than 180 has probability < 10⁻¹⁵). A radius law U^8 instead of
        // U^{1/8} would give ≈ 17.
        assert!(
            far_outer >= 180,
            "{far_outer} of 200 far starts beyond half the radius"
        );
        // Uniform in the ball of radius 2·max‖θ*_j‖: radius 2·big·U^{1/d}; 200 draws in d = 8
        // exceed 1.5·big unless every U^{1/8} < 3/4 (probability 0.1^200).
        assert!(far_max > 1.5 * big, "{far_max} vs {big}");
        // Log-uniform radii over [0.05, 3]Δ: 200 draws reach both ends' neighbourhoods.
        assert!(
            near_min < 0.1 * sep && near_max > 1.0 * sep,
            "{near_min} {near_max}"
        );
    }

    #[test]
    fn exceedance_false_failure_is_the_hypergeometric_tail_and_within_alpha() {
        // C(12, 8)/C(28, 8) = 495/3108105 (binomial coefficients by hand); C(2, 1)/C(4, 1) = ½.
        let p = exceedance_false_failure(16, 12, 8);
        assert!((p / (495.0 / 3_108_105.0) - 1.0).abs() < 1e-12, "{p}");
        assert!((exceedance_false_failure(2, 2, 1) - 0.5).abs() < 1e-15);
        assert_eq!(exceedance_false_failure(16, 3, 8), 0.0);
        // Both covariance types together stay within the check's share of the suite's α.
        assert!(2.0 * p <= crate::framework::check_alpha());
    }

    #[test]
    fn the_contraction_bound_is_prop2s_by_hand() {
        // 1 − 1/8, 1 − 0.25/32 (both exact in binary), and 1 − 0.25/18 = 71/72 for DIAG.
        assert_eq!(contraction_bound(1.0, 1.0).to_bits(), 0.875f64.to_bits());
        assert_eq!(
            contraction_bound(0.5, 2.0).to_bits(),
            0.992_187_5f64.to_bits()
        );
        assert!((contraction_bound(DIAG.0, DIAG.1) - 71.0 / 72.0).abs() < 1e-15);
    }
}
