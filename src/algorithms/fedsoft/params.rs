//! FedSoft's parameters (Ruan & Joe-Wong, AAAI 2022): the group read from its keys, and the
//! values it runs with once `k` and the step are resolved against the data.

use crate::error::Result;
use crate::federation::Federation;
use crate::params::{resolve_k, Phase2Config};
use serde::Serialize;

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

crate::params::groups::bind_keys! {
    FedSoftConfig {
        k: k,
        init_scale: init_scale,
        lambda: fedsoft_lambda,
        smoother: fedsoft_smoother,
        interval: fedsoft_interval;
        phase2: Phase2Config
    }
}

crate::params::valid::resolved_params! {
    /// Validated FedSoft parameters (Ruan & Joe-Wong 2022), resolved against a federation.
    #[derive(Clone, Copy, Debug, PartialEq, Serialize)]
    pub struct FedSoftParams {
        /// Number of clusters `k` (1 ≤ k ≤ M).
        k: usize,
        /// Proximal weight `λ ≥ 0`.
        lambda: f64,
        /// Smoother `σ ∈ (0, 1)`.
        smoother: f64,
        /// Importance estimation every `τ` rounds.
        interval: usize,
        /// Local step size `η` (γ = η max_i ‖φ_i‖²/n_i < 1).
        eta: f64,
        /// Local gradient steps `s ≥ 1` per round.
        local_steps: usize,
        /// Rounds `T`.
        rounds: usize,
        /// Scale of the random starts `N(0, init_scale² I_d/d)`.
        init_scale: f64,
    }
}

impl FedSoftParams {
    /// Resolve against a federation (`k`, the step).
    ///
    /// # Errors
    /// `k` unknown or `k > M`; `γ ≥ 1` for the local step ([`crate::error::FedmixError::StepTooLarge`]).
    pub fn resolve(c: &crate::params::Valid<FedSoftConfig>, fed: &Federation) -> Result<Self> {
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
