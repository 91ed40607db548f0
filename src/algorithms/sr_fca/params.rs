//! SR-FCA's parameters (Ghosh et al., SRFCA Algorithms 1–4): the group read from its keys, and
//! the values it runs with once the step is resolved against the data.

use crate::error::Result;
use crate::federation::Federation;
use crate::params::{Phase2Config, SrfcaDist};
use serde::Serialize;

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

crate::params::groups::bind_keys! {
    SrfcaConfig {
        lambda: srfca_lambda,
        lambda_quantile: srfca_lambda_quantile,
        size: srfca_size,
        beta: srfca_beta,
        refine_steps: srfca_refine_steps,
        local_iterations: srfca_local_iterations,
        refine_rounds: srfca_refine_rounds,
        dist: srfca_dist,
        diameter: srfca_diameter;
        phase2: Phase2Config
    }
}

crate::params::valid::resolved_params! {
    /// Validated SR-FCA parameters.
    #[derive(Clone, Debug, PartialEq, Serialize)]
    pub struct SrfcaParams {
        /// Threshold `λ` (`None`: quantile rule).
        lambda: Option<f64>,
        /// Quantile `q` of the ONE_SHOT distances used when `λ` is unset.
        lambda_quantile: f64,
        /// Size parameter `t` (clients).
        size: usize,
        /// Trimming level `β ∈ [0, 1/2)`.
        beta: f64,
        /// REFINE steps `R`.
        refine_steps: usize,
        /// ONE_SHOT local GD steps (`None`: exact min-norm least squares).
        local_iterations: Option<usize>,
        /// TrimmedMeanGD steps `T`.
        refine_rounds: usize,
        /// Distance.
        dist: SrfcaDist,
        /// Diameter `D` of `W` (`None`: `R^d`).
        diameter: Option<f64>,
        /// Step size `η`.
        eta: f64,
    }
}

impl SrfcaParams {
    /// Resolve and validate against a federation.
    ///
    /// # Errors
    /// Range errors; `γ ≥ 1` for the local/refine step ([`crate::error::FedmixError::StepTooLarge`]).
    pub fn resolve(c: &crate::params::Valid<SrfcaConfig>, fed: &Federation) -> Result<Self> {
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
