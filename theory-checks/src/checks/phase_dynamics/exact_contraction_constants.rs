//! The constants the model fixes, measured on the library's own runs and compared two-sidedly
//! with their exact values for the instance. The papers' rate bounds (GCYR20 Theorem 1, SXY22
//! Lemma 7 / Theorem 2, SXY22 Prop. 2) hold for any contraction at least as fast as stated, so
//! a step off by a constant factor passes them; for mixed linear regression with the data at
//! hand the first-order per-round contraction is not open but a function of the instance:
//!
//! - **IFCA option I** (GCYR20 Algorithm 2, line 14: `θ_j ← θ_j − (γ/m) Σ_{i∈S_j} ∇F_i(θ_j)`, `m`
//!   the participants; `F_i(θ) = ‖y_i − φ_iθ‖²/(2n_i)`): with every client's choice equal to its
//!   true cluster the round is affine in `θ_j` with linear part
//!   `A_j = I − (γ/m) Σ_{i∈S_j} Ĝ_i`, `Ĝ_i = φ_iᵀφ_i/n_i` the client's empirical Gram matrix;
//! - **IFCA option II** (line 15, LocalUpdate lines 18–20, τ local steps of size γ):
//!   `A_j = (1/|S_j|) Σ_{i∈S_j} (I − γĜ_i)^τ`;
//! - **SXY22 Phase 2** (§4.2, Lemma 1 eq. 12 with `K_j = (1/N) φ_{I_j}ᵀ P_{I_j} φ_{I_j}`): since
//!   `φ_iᵀ (I − ηφ_iφ_iᵀ/n_i)^l φ_i = n_i Ĝ_i (I − ηĜ_i)^l`, `A_j = I − ηK_j` with
//!   `ηK_j = Σ_{i∈S_j} (n_i/N)(I − (I − ηĜ_i)^s)` for FedAvg with `s` local steps and
//!   `ηK_j = Σ_{i∈S_j} (n_i/N)(I − (I + ηĜ_i)⁻¹)` for FedProx.
//!
//! Every `A_j` is symmetric, built here from the `d × d` Gram matrices alone (not from
//! `fedmix::algorithms::lemma1` or `fedmix::metrics`). The tested quantity is the per-round
//! log-contraction `q_j = −ln ρ(A_j)` (`ρ` the spectral radius; `q ≈ η λ_min` for a small step,
//! so a step error of a factor `c` scales `q` by ≈ `c`). It is measured on a library run (the
//! library's multi-round driver with its own cluster choices) as
//! `q̂ = −ln(‖δ_{t₀+W}‖/‖δ_{t₀}‖)/W`, `δ_t = θ_{t+1} − θ_t` (the affine part cancels:
//! `δ_{t+1} = A_j δ_t`). The start is `θ*_j` plus `R_START · Δ` along the slowest eigenvector of
//! `A_j`, so the run measures the spectral radius rather than a faster mode.
//!
//! Interval (deterministic, from the neglected terms): split `δ_{t₀} = a + b` with `a` in the
//! eigenspace of eigenvalues of modulus `ρ` and `c = ‖a‖/‖δ_{t₀}‖`; for symmetric `A`,
//! `ρ^{2W} c² ≤ ‖A^W δ_{t₀}‖²/‖δ_{t₀}‖² ≤ ρ^{2W}`, hence `1 ≤ q̂/q ≤ 1 + ln(1/c)/(W q)`,
//! widened by [`ROUNDING`] on both sides for floating point. `c` is computed from the exact
//! eigenvectors. A correct implementation fails only through rounding (α = 0 up to it); the
//! linear regime is a guard: every round's choices must equal the true labels (else the map is
//! not `A_j` and the check fails).
//!
//! - **SXY22 Phase 1 σ̂** (Algorithm 1 lines 11–13: `σ̂² = σ₁(A)`, step `ασ̂/(2β²)` along
//!   `Ûβ̂`): to first order `E A = ÛᵀΣ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_jÛ`, so `σ̂ → ‖Σ_j(θ*_j − θ)‖` and
//!   one step moves the anchor by `α‖Σ_j(θ*_j − θ)‖/(2β²)` (Prop. 2's eq. 19 is the finite-sample
//!   version). Tested quantity: the mean over the anchors of one library Phase 1 iteration
//!   (`run_fedmd`) of `‖θ_{i,1} − θ_0‖ / (α‖Σ_j(θ*_j − θ_0)‖/(2β²))` (`Σ_j = I` here), exact
//!   value 1. Interval (statistical): the prediction interval
//!   `1 ± t_{19, 1−α/2} · sd · √(1 + 1/20)` with the SD [`PHASE1_SD`] of that mean over the
//!   held-out master seeds 1001..=1020 and α = 1 % / #checks (the check's whole false-failure
//!   budget: the other parts are deterministic); the held-out mean [`PHASE1_HELD_OUT_MEAN`]
//!   shows the finite-sample bias is small against the interval.
//!
//! Statistic: the largest `max(ratio/hi, lo/ratio)` over the tests (≤ 1 inside its interval);
//! pass: every test within its interval (a NaN ratio fails) and the linear-regime guard holds.
//! Sabotage: the exact values are computed with the step × 1.25 (a wrong constant), which
//! every part must reject.

use super::support::{child, fmt_list};
use crate::framework::{
    check_alpha, outcome, prediction_tolerance, CheckConfig, CheckRecord, ConstantTest, Figure,
    Guard, Series,
};
use fedmix::algorithms::fedmd::run_fedmd;
use fedmix::algorithms::fedx_clustering::run_phase2;
use fedmix::algorithms::ifca::algorithm::run_restart;
use fedmix::algorithms::ifca::IfcaParams;
use fedmix::engine::recorder::Recorder;
use fedmix::federation::Federation;
use fedmix::params::{
    FedMdParams, IfcaOption, LocalSolver, Pairing, Phase1Variant, Phase2Params, SubspaceMethod,
};
use fedmix::prec::max_nan;
use fedmix::synthetic::generate_named;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// Rounding slack of the deterministic intervals (relative, on `q̂/q`). The rounding error of
/// `δ_t` is ~1e-16‖θ‖ against `‖δ_t‖ ≥ 1e-7` at the end of the window, i.e. ≤ 1e-8 relative.
pub const ROUNDING: f64 = 1e-6;
/// Start offset along the slowest eigenvector, in units of the separation Δ (inside the basin
/// where every client chooses its own cluster: the guard checks it).
pub const R_START: f64 = 0.1;
/// Rounds before the window (the subdominant modes decay meanwhile) and the window length.
const BURN_IN: usize = 10;
/// Target total log-contraction over the window: `W = ⌈WINDOW_DECAY / q⌉` rounds (capped).
const WINDOW_DECAY: f64 = 10.0;
/// Largest window.
const MAX_WINDOW: usize = 2000;
/// The scale of a planted error that every part must detect (the sabotage plants it).
pub const PLANTED: f64 = 1.25;

/// SD of the Phase 1 statistic (mean step-length ratio over the anchors of one iteration) over
/// the held-out master seeds 1001..=1020 (`phase1_held_out` below, run once; quick profile).
pub const PHASE1_SD: f64 = 0.026046;
/// Mean of the Phase 1 statistic over the same held-out seeds (exact value 1).
pub const PHASE1_HELD_OUT_MEAN: f64 = 0.999726;
/// Held-out seeds behind [`PHASE1_SD`].
pub const PHASE1_SD_SEEDS: usize = 20;

/// One deterministic part: an algorithm whose round is affine with linear part `A_j`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    /// IFCA option I with server step γ (library `step`).
    IfcaGradient,
    /// IFCA option II with τ local steps of size γ.
    IfcaModel { tau: usize },
    /// SXY22 Phase 2, FedAvg with `s` local steps.
    Fedavg { s: usize },
    /// SXY22 Phase 2, FedProx.
    Fedprox,
}

impl Part {
    fn name(&self) -> String {
        match self {
            Part::IfcaGradient => "IFCA option I".into(),
            Part::IfcaModel { tau } => format!("IFCA option II (τ = {tau})"),
            Part::Fedavg { s } => format!("Phase 2 FedAvg (s = {s})"),
            Part::Fedprox => "Phase 2 FedProx".into(),
        }
    }
    fn beside(&self) -> &'static str {
        match self {
            Part::IfcaGradient | Part::IfcaModel { .. } => {
                "GCYR20 Theorem 1 (ifca_theorem1_contraction); Algorithm 2 lines 14–15"
            }
            Part::Fedavg { .. } | Part::Fedprox => {
                "SXY22 Lemma 1 eq. 12 and Lemma 7 (theorem2_phase2_contraction)"
            }
        }
    }
}

/// The instance: the library's generator (`sxy-balanced` with overrides), k = 3 clusters
/// assigned `i mod 3`, d = 6, 24 clients of log-normal sizes in [12, 120], diagonal
/// covariances with entries in [0.5, 2], σ = 0.3, `‖θ*_j‖ ≈ 4`.
fn instance(seed: u64) -> Option<Federation> {
    balanced(
        seed,
        &[
            ("k", "3"),
            ("d", "6"),
            ("clients", "24"),
            ("samples", "40"),
            ("sizes", "lognormal"),
            ("size_min", "12"),
            ("size_max", "120"),
            ("labels", "modulo"),
            ("covariance", "diagonal"),
            ("cov_min", "0.5"),
            ("cov_max", "2"),
            ("sigma", "0.3"),
            ("r", "4"),
        ],
    )
}

/// The training federation of `sxy-balanced` at `seed` with the data overrides `sets`.
fn balanced(seed: u64, sets: &[(&str, &str)]) -> Option<Federation> {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    generate_named("sxy-balanced", seed, &sets)
        .ok()
        .map(|d| d.train)
}

/// `Ĝ_i = φ_iᵀφ_i / n_i` (`d × d`) of every client.
fn grams(fed: &Federation) -> Vec<DMatrix<f64>> {
    (0..fed.num_clients())
        .map(|i| {
            let x = fed.x(i);
            x * x.transpose() / fed.n(i) as f64
        })
        .collect()
}

/// `(I − ηĜ)^s`.
fn step_power(g: &DMatrix<f64>, eta: f64, s: usize) -> DMatrix<f64> {
    let d = g.nrows();
    let step = DMatrix::identity(d, d) - g * eta;
    (0..s).fold(DMatrix::identity(d, d), |acc, _| acc * &step)
}

/// The exact linear part `A_j` of one round of `part` with step `eta` for cluster `j` (module
/// docs), from the Gram matrices.
fn exact_map(part: Part, fed: &Federation, g: &[DMatrix<f64>], eta: f64, j: usize) -> DMatrix<f64> {
    let d = fed.d();
    let id = DMatrix::<f64>::identity(d, d);
    let labels = fed.labels().expect("synthetic data have labels");
    let members: Vec<usize> = (0..fed.num_clients()).filter(|&i| labels[i] == j).collect();
    let n_total = fed.total_samples() as f64;
    let m = fed.num_clients() as f64;
    let mut sum = DMatrix::<f64>::zeros(d, d);
    for &i in &members {
        let share = fed.n(i) as f64 / n_total;
        sum += match part {
            Part::IfcaGradient => &g[i] * (eta / m),
            Part::IfcaModel { tau } => step_power(&g[i], eta, tau) / members.len() as f64,
            Part::Fedavg { s } => (&id - step_power(&g[i], eta, s)) * share,
            Part::Fedprox => {
                let inv = (&id + &g[i] * eta)
                    .try_inverse()
                    .expect("I + ηĜ is positive definite");
                (&id - inv) * share
            }
        };
    }
    match part {
        Part::IfcaModel { .. } => sum,
        _ => id - sum,
    }
}

/// Spectral radius, the eigenvectors of modulus `ρ` (columns) and the second largest modulus.
fn spectrum(a: &DMatrix<f64>) -> (f64, DMatrix<f64>, f64) {
    let sym = (a + a.transpose()) * 0.5;
    let e = SymmetricEigen::new(sym);
    let rho = e.eigenvalues.iter().map(|v| v.abs()).fold(0.0, max_nan);
    let top: Vec<usize> = (0..e.eigenvalues.len())
        .filter(|&l| e.eigenvalues[l].abs() >= rho * (1.0 - 1e-9))
        .collect();
    let second = (0..e.eigenvalues.len())
        .filter(|l| !top.contains(l))
        .map(|l| e.eigenvalues[l].abs())
        .fold(0.0, max_nan);
    let cols: Vec<DVector<f64>> = top
        .iter()
        .map(|&l| e.eigenvectors.column(l).clone_owned())
        .collect();
    (rho, DMatrix::from_columns(&cols), second)
}

/// The library step of `part` for this instance: a fixed fraction of the stability limit.
fn step_of(part: Part, fed: &Federation, g: &[DMatrix<f64>]) -> f64 {
    let (curv, _) = fed.max_curvature();
    match part {
        Part::IfcaGradient => {
            // γ = 1/max_j λ_max(Σ_{i∈S_j} Ĝ_i / m): every cluster's map has eigenvalues in
            // [0, 1), the slowest at 1 − γλ_min.
            let labels = fed.labels().expect("labels");
            let m = fed.num_clients() as f64;
            let lmax = (0..3)
                .map(|j| {
                    let h = (0..fed.num_clients())
                        .filter(|&i| labels[i] == j)
                        .fold(DMatrix::zeros(fed.d(), fed.d()), |acc, i| acc + &g[i] / m);
                    SymmetricEigen::new(h).eigenvalues.max()
                })
                .fold(0.0, max_nan);
            1.0 / lmax
        }
        Part::IfcaModel { .. } | Part::Fedavg { .. } => 0.5 / curv,
        Part::Fedprox => 0.9 / curv,
    }
}

/// One part's measurement on a library run: per cluster `(q̂, q, c, W)`, and whether every
/// round's choices were the true labels.
struct Measured {
    per_cluster: Vec<(f64, f64, f64, usize)>,
    guard: bool,
    path: Vec<f64>,
}

fn measure(part: Part, fed: &Federation, planted: f64) -> Option<Measured> {
    let g = grams(fed);
    let eta = step_of(part, fed, &g);
    let ts = fed.theta_star()?.clone();
    let k = ts.ncols();
    let delta = fedmix::metrics::separation(&ts);
    let maps: Vec<DMatrix<f64>> = (0..k)
        .map(|j| exact_map(part, fed, &g, eta * planted, j))
        .collect();
    // The run's own maps (the step the library is given) fix the start and the window.
    let true_maps: Vec<DMatrix<f64>> = (0..k).map(|j| exact_map(part, fed, &g, eta, j)).collect();
    let specs: Vec<(f64, DMatrix<f64>, f64)> = true_maps.iter().map(spectrum).collect();
    // Each cluster's window decays its δ by e^{−WINDOW_DECAY}: long enough for the rate, short
    // enough that δ stays far above rounding (a faster cluster gets a shorter window).
    let windows: Vec<usize> = specs
        .iter()
        .map(|s| ((WINDOW_DECAY / -s.0.ln()).ceil() as usize).clamp(1, MAX_WINDOW))
        .collect();
    let rounds = BURN_IN + windows.iter().copied().max().unwrap_or(1) + 1;
    let mut theta0 = ts.clone();
    for (j, s) in specs.iter().enumerate() {
        let v = s.1.column(0);
        let mut col = theta0.column_mut(j);
        col.axpy(R_START * delta, &v, 1.0);
    }
    // Metrics on: a recorder that skips them keeps no iterates.
    let mut rec = Recorder::new(true);
    let run = match part {
        Part::IfcaGradient | Part::IfcaModel { .. } => {
            let (option, tau) = match part {
                Part::IfcaModel { tau } => (IfcaOption::Model, tau),
                _ => (IfcaOption::Gradient, 1),
            };
            let local = Phase2Params {
                eta,
                local_steps: tau,
                local_solver: LocalSolver::Fedavg,
                rounds,
            };
            let p = IfcaParams::at_step(k, option, local).ok()?;
            run_restart(fed, &p, &theta0, 0, 0, &mut rec).map(|_| ())
        }
        Part::Fedavg { .. } | Part::Fedprox => {
            let (solver, s) = match part {
                Part::Fedavg { s } => (LocalSolver::Fedavg, s),
                _ => (LocalSolver::Fedprox, 1),
            };
            let p = Phase2Params {
                eta,
                local_steps: s,
                local_solver: solver,
                rounds,
            };
            run_phase2(fed, &theta0, &p, None, &mut rec).map(|_| ())
        }
    };
    run.ok()?;
    let truth = fed.labels()?;
    let guard = rec.labels.len() == rounds && rec.labels.iter().all(|l| l == truth);
    let mut iterates = vec![theta0];
    iterates.extend(rec.iterates);
    let step_norm = |t: usize, j: usize| (iterates[t + 1].column(j) - iterates[t].column(j)).norm();
    let per_cluster = (0..k)
        .map(|j| {
            let (_, top, _) = &specs[j];
            let w = windows[j];
            let d0: DVector<f64> = iterates[BURN_IN + 1].column(j) - iterates[BURN_IN].column(j);
            let c = (top.transpose() * &d0).norm() / d0.norm();
            let q_hat = -(step_norm(BURN_IN + w, j) / step_norm(BURN_IN, j)).ln() / w as f64;
            let q_exact = -spectrum(&maps[j]).0.ln();
            (q_hat, q_exact, c, w)
        })
        .collect();
    let path = (0..rounds - 1).map(|t| step_norm(t, 0)).collect();
    Some(Measured {
        per_cluster,
        guard,
        path,
    })
}

/// The deterministic interval of `q̂/q` for a window of `w` rounds, rate `q` and top-mode
/// fraction `c` (module docs).
fn deterministic_interval(q: f64, c: f64, w: usize) -> (f64, f64) {
    (
        1.0 - ROUNDING,
        1.0 + (1.0 / c).ln() / (w as f64 * q) + ROUNDING,
    )
}

/// The Phase 1 instance: `sxy-balanced` with k = 3, d = 6, 24 clients of 400 samples
/// (`i mod 3`), Σ_j = I, σ = 0.1, `θ*_j ~ N(0, 4²I/d)`.
fn phase1_instance(seed: u64) -> Option<Federation> {
    balanced(
        seed,
        &[
            ("k", "3"),
            ("d", "6"),
            ("clients", "24"),
            ("samples", "400"),
            ("labels", "modulo"),
            ("sigma", "0.1"),
            ("r", "4"),
        ],
    )
}

/// Phase 1 (α = β = 1 for Σ_j = I): the mean over 12 anchors of one `run_fedmd` iteration's
/// step length over `α‖θ*_{z_i} − θ_0‖/(2β²)` (computed with the step constant × `planted`),
/// from `θ_0 = (2/√d)(1, −1, 1, …)`; `None` when the run fails.
pub fn phase1_statistic(seed: u64, planted: f64) -> Option<f64> {
    let fed = phase1_instance(seed)?;
    let (alpha, beta) = (1.0, 1.0);
    let p = FedMdParams {
        variant: Phase1Variant::Practical,
        k: 3,
        anchors: 12,
        iterations: 1,
        t1: 2,
        t2: 100,
        m: 1,
        ell: 1,
        epsilon: 0.0,
        // Tiny Δ: no two anchors are linked, so the k-component rule cannot fail.
        separation: Some(1e-9),
        alpha,
        beta,
        pairing: Pairing::AllPairs,
        subspace: SubspaceMethod::Svd,
        anchor_min_samples: 2,
    };
    // A start away from the origin (norm 2, alternating signs), so that the residual
    // moments `(y − ⟨φ, θ⟩)φ` depend on θ.
    let theta0 = DVector::from_fn(fed.d(), |r, _| {
        let sign = if r % 2 == 0 { 1.0 } else { -1.0 };
        2.0 * sign / (fed.d() as f64).sqrt()
    });
    let out = run_fedmd(&fed, &p, &theta0, seed, &mut Recorder::quiet()).ok()?;
    let ts = fed.theta_star()?;
    let labels = fed.labels()?;
    let ratios: Vec<f64> = out
        .anchors
        .iter()
        .enumerate()
        .map(|(a, &i)| {
            let moved = (out.anchor_models.column(a) - &theta0).norm();
            let exact =
                planted * alpha * (ts.column(labels[i]) - &theta0).norm() / (2.0 * beta * beta);
            moved / exact
        })
        .collect();
    Some(ratios.iter().sum::<f64>() / ratios.len() as f64)
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let planted = if cfg.sabotage { PLANTED } else { 1.0 };
    let parts = [
        Part::IfcaGradient,
        Part::IfcaModel { tau: 3 },
        Part::Fedavg { s: 1 },
        Part::Fedavg { s: 5 },
        Part::Fedprox,
    ];
    let instances = cfg.pick(1, 3);
    let mut constants = Vec::new();
    let mut details = Vec::new();
    // A failed generator or library run is a fault (a fail); choices off the true labels leave
    // the linear regime the exact constants describe (a guard: inconclusive).
    let mut runs_ok = true;
    let mut regime = Vec::new();
    let mut series = Vec::new();
    for inst in 0..instances {
        let seed = child(cfg.seed, 71, inst as u64);
        let Some(fed) = instance(seed) else {
            runs_ok = false;
            details.push(format!("instance {inst}: the generator failed"));
            continue;
        };
        for part in parts {
            let Some(m) = measure(part, &fed, planted) else {
                runs_ok = false;
                details.push(format!("{}: the library run failed", part.name()));
                continue;
            };
            if !m.guard {
                regime.push(format!("{} (instance {inst})", part.name()));
            }
            if inst == 0 {
                series.push(Series {
                    label: format!("{} ‖θ_(t+1) − θ_t‖, cluster 0", part.name()),
                    points: m
                        .path
                        .iter()
                        .enumerate()
                        .map(|(t, &v)| (t as f64, v.max(1e-300)))
                        .collect(),
                    line: false,
                });
            }
            for (j, &(q_hat, q, c, w)) in m.per_cluster.iter().enumerate() {
                let (lo, hi) = deterministic_interval(q, c, w);
                constants.push(ConstantTest {
                    quantity: format!("{} −ln ρ(A_{j}) per round (instance {inst})", part.name()),
                    beside: part.beside().into(),
                    measured: q_hat,
                    exact: q,
                    lo,
                    hi,
                    alpha: None,
                    interval: format!("deterministic: −ln(‖δ_(t0+W)‖/‖δ_t0‖)/W over W = {w} rounds after {BURN_IN}; top-mode fraction c = {c:.6}; 1 ≤ q̂/q ≤ 1 + ln(1/c)/(Wq), ± {ROUNDING:.0e} rounding"),
                });
            }
            if !m.guard {
                details.push(format!(
                    "{} (instance {inst}): a round's choices differ from the true labels — not the linear regime",
                    part.name()
                ));
            }
        }
    }
    // Phase 1.
    let alpha = check_alpha();
    let tol = prediction_tolerance(PHASE1_SD, PHASE1_SD_SEEDS, alpha, true);
    let p1 = phase1_statistic(child(cfg.seed, 72, 0), 1.0).map(|s| s / planted);
    constants.push(ConstantTest {
        quantity: "Phase 1 step length / (α‖Σ_j(θ*_j − θ_0)‖/(2β²)), mean over 12 anchors".into(),
        beside: "SXY22 Prop. 2 eq. 19 and eq. 21 (prop2_moment_descent_contraction)".into(),
        measured: p1.unwrap_or(f64::NAN),
        exact: 1.0,
        lo: 1.0 - tol,
        hi: 1.0 + tol,
        alpha: Some(alpha),
        interval: format!("prediction interval 1 ± t_(19, 1−α/2) × {PHASE1_SD:.4} × √(1 + 1/20) = 1 ± {tol:.4}; SD over held-out master seeds 1001..=1020 (mean there {PHASE1_HELD_OUT_MEAN:.4})"),
    });
    // How far outside its interval each ratio lies (≤ 1: inside; NaN propagates).
    let worst = constants
        .iter()
        .map(|c| max_nan(c.ratio() / c.hi, c.lo / c.ratio()))
        .fold(0.0, max_nan);
    let all_ok = constants.iter().all(ConstantTest::ok);
    let (passed, inconclusive) = outcome(
        runs_ok && all_ok,
        &[Guard::new(
            format!(
                "every round's choices are the true labels (not so in: {})",
                regime.join(", ")
            ),
            regime.is_empty(),
        )],
    );
    details.insert(
        0,
        format!(
            "{} constant tests ({} failing); IFCA I step 1/max_j λ_max(Σ_(i∈S_j) Ĝ_i/M), IFCA II and FedAvg η = 0.5/max_i ‖φ_i‖²/n_i, FedProx η = 0.9/max_i ‖φ_i‖²/n_i; instance: sxy-balanced k = 3, d = 6, M = 24 (i mod 3), log-normal n_i ∈ [12, 120], diagonal Σ_j ∈ [0.5, 2], σ = 0.3, r = 4; start θ*_j + {R_START}Δ along A_j's slowest eigenvector",
            constants.len(),
            constants.iter().filter(|c| !c.ok()).count()
        ),
    );
    details.push(format!(
        "measured/exact ratios: {}",
        fmt_list(
            &constants
                .iter()
                .map(ConstantTest::ratio)
                .collect::<Vec<_>>()
        )
    ));
    details.push(format!("false-failure probability: α = {alpha:.2e} (1% / #checks), all of it on the Phase 1 part; the deterministic parts fail a correct implementation only through rounding beyond {ROUNDING:.0e}"));
    CheckRecord {
        name: "exact_contraction_constants".into(),
        claim: "the measured per-round contraction of IFCA I/II and Phase 2 (FedAvg, FedProx) and Phase 1's step equal their exact first-order values for the instance".into(),
        source: "GCYR20 Algorithm 2; SXY22 §4.2, Lemma 1 eq. 12, Lemma 7; SXY22 Algorithm 1, Prop. 2".into(),
        statistic: worst,
        bound: 1.0,
        constant: None,
        slopes: Vec::new(),
        constants,
        passed,
        inconclusive,
        details,
        figure: Some(Figure {
            title: "Exact contraction: ‖θ_(t+1) − θ_t‖ on the library's runs".into(),
            x_label: "round".into(),
            y_label: "‖θ_(t+1) − θ_t‖".into(),
            log_x: false,
            log_y: true,
            series,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact maps by hand on a 1-d client: Ĝ = g, option I `1 − γg/m`, option II
    /// `(1 − γg)^τ`, FedAvg `1 − (n/N)(1 − (1 − ηg)^s)`, FedProx `1 − (n/N)(1 − 1/(1 + ηg))`.
    #[test]
    fn one_dimensional_maps_by_hand() {
        let g = DMatrix::from_element(1, 1, 2.0);
        assert!((step_power(&g, 0.1, 3)[(0, 0)] - 0.8f64.powi(3)).abs() < 1e-15);
    }

    #[test]
    fn the_interval_is_exact_for_a_pure_top_mode() {
        let (lo, hi) = deterministic_interval(0.1, 1.0, 50);
        assert!((lo - (1.0 - ROUNDING)).abs() < 1e-15 && (hi - (1.0 + ROUNDING)).abs() < 1e-15);
        let (_, hi) = deterministic_interval(0.1, 0.5, 50);
        assert!((hi - 1.0 - 2f64.ln() / 5.0 - ROUNDING).abs() < 1e-12);
    }

    /// Held-out SD of the Phase 1 statistic (seeds 1001..=1020): run once to set
    /// [`PHASE1_SD`] and [`PHASE1_HELD_OUT_MEAN`].
    #[test]
    #[ignore = "calibration of PHASE1_SD on held-out seeds; prints the values"]
    fn phase1_held_out() {
        let v: Vec<f64> = (1001..=1020)
            .map(|s| phase1_statistic(child(s, 72, 0), 1.0).expect("run"))
            .collect();
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        println!("PHASE1 held-out: mean {m:.6} sd {sd:.6} values {v:?}");
    }
}
