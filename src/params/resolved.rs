//! Parameters resolved against a federation (linfa's validated parameters): what the baseline
//! algorithms run with once `k`, the step and σ are known. Each is built once from its
//! checked key group ([`super::baselines`]) and the data, with a typed error naming the key.

use super::baselines::{
    CflConfig, FedSoftConfig, IfcaConfig, IfcaOfficialConfig, IfcaOption, InitDist, SrfcaConfig,
    SrfcaDist,
};
use super::key_table::resolve_k;
#[cfg(test)]
use super::key_table::KeyTable;
use super::phase2::Phase2Params;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use serde::Serialize;

/// Validated IFCA parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IfcaParams {
    /// Number of models `k` (1 ≤ k ≤ M).
    pub k: usize,
    /// Option I or II.
    pub option: IfcaOption,
    /// Step size `γ` (option I: the PS step; option II: the local step).
    pub step: f64,
    /// Option II's local solver (`eta = γ`, `local_steps = τ`) and the number of rounds `T`.
    pub local: Phase2Params,
    /// Fraction of clients per round, in (0, 1].
    pub participation: f64,
    /// Restarts `R ≥ 1`.
    pub restarts: usize,
    /// Initialisation law and scale.
    pub init: InitDist,
    /// Scale of the initialisation.
    pub init_scale: f64,
}

impl IfcaParams {
    /// Resolve and validate against a federation.
    ///
    /// # Errors
    /// Range errors (`KeyTable::check_ifca`), k unknown or `k > M`, option II with `γ ≥ 1`
    /// ([`FedmixError::StepTooLarge`]).
    #[cfg(test)]
    pub(crate) fn from_config(cfg: &KeyTable, fed: &Federation) -> Result<Self> {
        Self::resolve(&*cfg.group::<IfcaConfig>()?, fed)
    }

    /// Resolve validated parameters against a federation (`k`, the step).
    ///
    /// # Errors
    /// k unknown or `k > M`, option II with `γ ≥ 1` ([`FedmixError::StepTooLarge`]).
    pub fn resolve(c: &IfcaConfig, fed: &Federation) -> Result<Self> {
        let k = resolve_k(c.k, fed)?;
        let local = c.phase2.resolve(fed);
        if !(local.eta.is_finite() && local.eta > 0.0) {
            return Err(FedmixError::invalid(
                "eta",
                local.eta,
                "must be finite and > 0",
            ));
        }
        if c.option == IfcaOption::Model {
            local.check(fed)?;
        }
        Ok(Self {
            k,
            option: c.option,
            step: local.eta,
            local,
            participation: c.participation,
            restarts: c.restarts,
            init: c.init,
            init_scale: c.init_scale,
        })
    }
}

/// The official protocol's success factor: success when `min_dist < 0.6 σ (+ offset)`.
pub const OFFICIAL_THRESHOLD_FACTOR: f64 = 0.6;

/// Validated parameters of the official protocol.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfficialParams {
    /// Number of models (the data's k).
    pub k: usize,
    /// Learning-rate grid, in the official loop order.
    pub lrs: Vec<f64>,
    /// Init seeds (official `train_seed ∈ range(10)`).
    pub inits: usize,
    /// Iterations per run (official `num_epochs = 300`).
    pub iterations: usize,
    /// σ of the success rule (official `noise_scale`).
    pub sigma: f64,
    /// Where σ came from.
    pub sigma_source: String,
    /// Offset added to the threshold (0.001 in the r–noise sweeps, 0 in the m–n sweeps).
    pub offset: f64,
    /// `0.6 σ + offset`.
    pub threshold: f64,
}

impl OfficialParams {
    /// Resolve against a federation. σ: `ifca_official_sigma`, else the generator's σ of the
    /// data (`data_sigma`), else an error (estimating σ would not be the official rule).
    ///
    /// Decision: the official code defines learning-rate grids only for k = 2
    /// (`run_p2_*.py`: `[1.0, 0.1, 0.01]`) and k = 4 (`run_p4_*.py`: `[2.0, 1.0, 0.5]`); other k
    /// need an explicit `ifca_official_lrs`.
    ///
    /// # Errors
    /// Range errors, missing θ* or σ, k without a default grid.
    #[cfg(test)]
    pub(crate) fn from_config(
        cfg: &KeyTable,
        fed: &Federation,
        data_sigma: Option<f64>,
    ) -> Result<Self> {
        Self::resolve(&*cfg.group::<IfcaOfficialConfig>()?, fed, data_sigma)
    }

    /// Resolve validated parameters against a federation (`k`, the grid, σ).
    ///
    /// # Errors
    /// Missing θ* or σ, k without a default grid.
    pub fn resolve(
        cfg: &IfcaOfficialConfig,
        fed: &Federation,
        data_sigma: Option<f64>,
    ) -> Result<Self> {
        let k = resolve_k(cfg.k, fed)?;
        fed.require_theta_star("ifca-official's min_dist")?;
        let lrs = match (&cfg.lrs, k) {
            (Some(l), _) => l.clone(),
            (None, 2) => vec![1.0, 0.1, 0.01],
            (None, 4) => vec![2.0, 1.0, 0.5],
            (None, _) => {
                return Err(FedmixError::invalid(
                    "ifca_official_lrs",
                    "(default)",
                    format!("the official code defines grids only for k = 2 and k = 4 (k = {k}); set ifca_official_lrs"),
                ))
            }
        };
        let (sigma, sigma_source) = match (cfg.sigma, data_sigma) {
            (Some(s), _) => (s, "ifca_official_sigma"),
            (None, Some(s)) => (s, "the data's generator sigma"),
            (None, None) => {
                return Err(FedmixError::Missing {
                    what: "σ for the official success rule (set ifca_official_sigma)".into(),
                })
            }
        };
        Ok(Self {
            k,
            lrs,
            inits: cfg.inits,
            iterations: cfg.iterations,
            sigma,
            sigma_source: sigma_source.into(),
            offset: cfg.offset,
            threshold: OFFICIAL_THRESHOLD_FACTOR * sigma + cfg.offset,
        })
    }
}

/// Validated CFL parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CflParams {
    /// Local solver, step and rounds.
    pub local: Phase2Params,
    /// `ε₁`: split only when the cluster's mean update is below it.
    pub eps1: f64,
    /// `ε₂`: split only when some client's update exceeds it.
    pub eps2: f64,
    /// `γ_max`: accept a split when `√((1 − α_max^cross)/2) > γ_max`.
    pub gamma_max: f64,
    /// No split before this round.
    pub warmup_rounds: usize,
}

impl CflParams {
    /// Resolve against a federation (the step).
    ///
    /// # Errors
    /// `γ ≥ 1` for the local step ([`FedmixError::StepTooLarge`]).
    pub fn resolve(c: &CflConfig, fed: &Federation) -> Result<Self> {
        let local = c.phase2.resolve(fed);
        local.check(fed)?;
        Ok(Self {
            local,
            eps1: c.eps1,
            eps2: c.eps2,
            gamma_max: c.gamma_max,
            warmup_rounds: c.warmup_rounds,
        })
    }
}

/// Validated FedSoft parameters (Ruan & Joe-Wong 2022), resolved against a federation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FedSoftParams {
    /// Number of clusters `k` (1 ≤ k ≤ M).
    pub k: usize,
    /// Proximal weight `λ ≥ 0`.
    pub lambda: f64,
    /// Smoother `σ ∈ (0, 1)`.
    pub smoother: f64,
    /// Importance estimation every `τ` rounds.
    pub interval: usize,
    /// Local step size `η` (γ = η max_i ‖φ_i‖²/n_i < 1).
    pub eta: f64,
    /// Local gradient steps `s ≥ 1` per round.
    pub local_steps: usize,
    /// Rounds `T`.
    pub rounds: usize,
    /// Scale of the random starts `N(0, init_scale² I_d/d)`.
    pub init_scale: f64,
}

impl FedSoftParams {
    /// Resolve against a federation (`k`, the step).
    ///
    /// # Errors
    /// `k` unknown or `k > M`; `γ ≥ 1` for the local step ([`FedmixError::StepTooLarge`]).
    pub fn resolve(c: &FedSoftConfig, fed: &Federation) -> Result<Self> {
        let k = resolve_k(c.k, fed)?;
        let local = c.phase2.resolve(fed);
        local.check(fed)?;
        Ok(Self {
            k,
            lambda: c.lambda,
            smoother: c.smoother,
            interval: c.interval,
            eta: local.eta,
            local_steps: local.local_steps,
            rounds: local.rounds,
            init_scale: c.init_scale,
        })
    }
}

/// Validated SR-FCA parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SrfcaParams {
    /// Threshold `λ` (`None`: quantile rule).
    pub lambda: Option<f64>,
    /// Quantile `q` of the ONE_SHOT distances used when `λ` is unset.
    pub lambda_quantile: f64,
    /// Size parameter `t` (clients).
    pub size: usize,
    /// Trimming level `β ∈ [0, 1/2)`.
    pub beta: f64,
    /// REFINE steps `R`.
    pub refine_steps: usize,
    /// ONE_SHOT local GD steps (`None`: exact min-norm least squares).
    pub local_iterations: Option<usize>,
    /// TrimmedMeanGD steps `T`.
    pub refine_rounds: usize,
    /// Distance.
    pub dist: SrfcaDist,
    /// Diameter `D` of `W` (`None`: `R^d`).
    pub diameter: Option<f64>,
    /// Step size `η`.
    pub eta: f64,
}

impl SrfcaParams {
    /// Resolve and validate against a federation.
    ///
    /// # Errors
    /// Range errors; `γ ≥ 1` for the local/refine step ([`FedmixError::StepTooLarge`]).
    pub fn resolve(c: &SrfcaConfig, fed: &Federation) -> Result<Self> {
        let p2 = c.phase2.resolve(fed);
        p2.check(fed)?;
        Ok(Self {
            lambda: c.lambda,
            lambda_quantile: c.lambda_quantile,
            size: c.size,
            beta: c.beta,
            refine_steps: c.refine_steps,
            local_iterations: c.local_iterations,
            refine_rounds: c.refine_rounds,
            dist: c.dist,
            diameter: c.diameter,
            eta: p2.eta,
        })
    }
}
