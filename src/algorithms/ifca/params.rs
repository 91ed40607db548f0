//! IFCA's parameters (Ghosh et al. 2020, Algorithm 2) and the official protocol's: the groups
//! read from their keys, and the values they run with once `k`, the step and σ are resolved
//! against the data, with a typed error naming the key.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
#[cfg(test)]
use crate::params::KeyTable;
use crate::params::{resolve_k, IfcaOption, InitDist, Phase2Config, Phase2Params};
use serde::Serialize;

/// The official protocol's success factor: success when `min_dist < 0.6 σ (+ offset)`.
pub const OFFICIAL_THRESHOLD_FACTOR: f64 = 0.6;

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

crate::params::groups::bind_keys! {
    IfcaConfig {
        k: k,
        option: ifca_option,
        participation: participation,
        restarts: restarts,
        init: ifca_init,
        init_scale: init_scale,
        replicate_batch: replicate_batch;
        phase2: Phase2Config
    }
    IfcaOfficialConfig {
        k: k,
        lrs: ifca_official_lrs,
        inits: ifca_official_inits,
        iterations: ifca_official_iterations,
        sigma: ifca_official_sigma,
        offset: ifca_official_offset,
        replicate_batch: replicate_batch
    }
}

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
