//! Parameter types of the baselines (IFCA's aggregation option and init law, SR-FCA's distance)
//! and the limits of partial participation.

use super::phase2::Phase2Config;
use crate::error::{FedmixError, Result};
use serde::{Deserialize, Serialize};

/// Rounds per restart that get distinct sampling streams (`2²⁴`).
pub const MAX_ROUNDS: usize = 1 << 24;

/// Restarts that get distinct sampling streams (`2¹⁶`; stream indices have 40 bits).
pub const MAX_RESTARTS: usize = 1 << 16;

/// Check `fraction ∈ (0, 1]` and that `rounds`/`restarts` fit the stream layout.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming `participation`, `rounds` or `restarts`.
pub fn check_participation(fraction: f64, rounds: usize, restarts: usize) -> Result<()> {
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(FedmixError::invalid(
            "participation",
            fraction,
            "must be in (0, 1]",
        ));
    }
    if rounds >= MAX_ROUNDS {
        return Err(FedmixError::invalid(
            "rounds",
            rounds,
            format!("must be < {MAX_ROUNDS}"),
        ));
    }
    if restarts == 0 || restarts > MAX_RESTARTS {
        return Err(FedmixError::invalid(
            "restarts",
            restarts,
            format!("must be in 1..={MAX_RESTARTS}"),
        ));
    }
    Ok(())
}

/// IFCA's aggregation option (public names `gradient`, `model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IfcaOption {
    /// Option I: gradient averaging (Algorithm 2 lines 9, 14).
    Gradient,
    /// Option II: model averaging after `τ` local steps (lines 11, 15).
    Model,
}

/// Law of IFCA's random initialisation (public names `gaussian`, `bernoulli`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitDist {
    /// `θ_j ~ N(0, init_scale² I_d / d)` (the init of the other algorithms).
    Gaussian,
    /// `θ_j = init_scale · Bernoulli(0.5)^d` coordinate-wise (IFCA §6.1: "randomly initialize
    /// θ_j^(0) according to an independent coordinate-wise Bernoulli distribution").
    Bernoulli,
}

/// SR-FCA's distance (public names `l2`, `cross-loss`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SrfcaDist {
    /// `‖w − w'‖₂` (the paper's theory).
    L2,
    /// Cross-cluster loss `½(f_i(w_j) + f_j(w_i))` (SRFCA Definition 5.1).
    CrossLoss,
}

/// Validated parameters of the local baseline (`local`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LocalParams {
    /// Ridge `λ ≥ 0` of the local estimate (0 = min-norm least squares).
    pub ridge: f64,
}

/// Validated parameters of `one-shot` (local estimates, k-means, Phase 2 within the clusters).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OneShotParams {
    /// Number of clusters; `None` = the data's.
    pub k: Option<usize>,
    /// The local estimates.
    pub local: LocalParams,
    /// Seeded k-means++ starts (≥ 1).
    pub kmeans_inits: usize,
    /// Lloyd iterations per start.
    pub kmeans_max_iter: usize,
    /// Phase 2 within the clusters.
    pub phase2: Phase2Config,
}

/// Validated parameters of `oracle-labels` (Phase 2 from `θ*` with the true labels fixed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OracleLabelsParams {
    /// Phase 2.
    pub phase2: Phase2Config,
}

/// Validated parameters of vanilla FedAvg / FedProx with one model (`fedavg`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FedAvgParams {
    /// Scale of the random start `θ₀ ~ N(0, init_scale² I_d / d)`.
    pub init_scale: f64,
    /// Fraction of clients per round, in (0, 1].
    pub participation: f64,
    /// The local solver, step and rounds (Phase 2's, with one model).
    pub phase2: Phase2Config,
}

/// Validated parameters of CFL (Sattler et al.; `cfl`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CflConfig {
    /// Scale of the random start.
    pub init_scale: f64,
    /// Local solver, step and rounds.
    pub phase2: Phase2Config,
    /// `ε₁ > 0`: split only when the cluster's mean update is below it.
    pub eps1: f64,
    /// `ε₂ > 0`: split only when some client's update exceeds it.
    pub eps2: f64,
    /// `γ_max ∈ [0, 1)`.
    pub gamma_max: f64,
    /// No split before this round.
    pub warmup_rounds: usize,
}

/// Validated parameters of FedSoft (`fedsoft`; Ruan & Joe-Wong 2022) before the data is known.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FedSoftConfig {
    /// Number of clusters; `None` = the data's `k`.
    pub k: Option<usize>,
    /// Scale of the random starts (cluster models and the personal models' common start).
    pub init_scale: f64,
    /// Proximal weight `λ ≥ 0`.
    pub lambda: f64,
    /// Smoother `σ ∈ (0, 1)`: the importance weight of a cluster no sample chose.
    pub smoother: f64,
    /// Importance estimation every `τ ≥ 1` rounds.
    pub interval: usize,
    /// The local step `η` (or its γ rule), local steps `s` and rounds (its local solver is
    /// always gradient steps: `local_solver` is not a FedSoft key).
    pub phase2: Phase2Config,
}

/// Validated parameters of SR-FCA (`sr-fca`; SRFCA Algorithms 1–4) before the data is known.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SrfcaConfig {
    /// Threshold `λ > 0` (`None`: the quantile rule).
    pub lambda: Option<f64>,
    /// Quantile `q ∈ (0, 1]` of the ONE_SHOT distances used when `λ` is unset.
    pub lambda_quantile: f64,
    /// Size parameter `t ≥ 1` (clients).
    pub size: usize,
    /// Trimming level `β ∈ [0, 1/2)`.
    pub beta: f64,
    /// REFINE steps `R ≥ 1`.
    pub refine_steps: usize,
    /// ONE_SHOT local GD steps (`None`: exact min-norm least squares).
    pub local_iterations: Option<usize>,
    /// TrimmedMeanGD steps `T ≥ 1`.
    pub refine_rounds: usize,
    /// Distance.
    pub dist: SrfcaDist,
    /// Diameter `D > 0` of `W` (`None`: `R^d`).
    pub diameter: Option<f64>,
    /// The step (Phase 2's `η` or its γ rule; its other fields only enter the `γ < 1` check).
    pub phase2: Phase2Config,
}

/// Validated parameters of IFCA (`ifca`; IFCA Algorithm 2) before the data is known.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct IfcaConfig {
    /// Number of models; `None` = the data's `k`.
    pub k: Option<usize>,
    /// Option I (gradient averaging) or II (model averaging).
    pub option: IfcaOption,
    /// The step (option I: the PS step γ; option II: the local step), `τ` and rounds `T`.
    pub phase2: Phase2Config,
    /// Fraction of clients per round, in (0, 1].
    pub participation: f64,
    /// Restarts `R ≥ 1`.
    pub restarts: usize,
    /// Initialisation law.
    pub init: InitDist,
    /// Scale of the initialisation.
    pub init_scale: f64,
    /// Restarts advanced together in one pass over the data (results do not depend on it).
    pub replicate_batch: usize,
}

/// Validated parameters of the IFCA authors' released protocol (`ifca-official`) before the
/// data is known.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IfcaOfficialConfig {
    /// Number of models; `None` = the data's `k`.
    pub k: Option<usize>,
    /// Learning-rate grid (`None`: the official grid for k = 2 or 4).
    pub lrs: Option<Vec<f64>>,
    /// Init seeds per data seed (≥ 1).
    pub inits: usize,
    /// Iterations per run.
    pub iterations: usize,
    /// σ of the success rule (`None`: the data's generator σ).
    pub sigma: Option<f64>,
    /// Threshold offset (≥ 0).
    pub offset: f64,
    /// Runs advanced together in one pass over the data (results do not depend on it).
    pub replicate_batch: usize,
}
