//! IFCA's parameters (Ghosh et al. 2020, Algorithm 2) and the official protocol's: the groups
//! read from their keys, and the values they run with once `k`, the step and σ are resolved
//! against the data, with a typed error naming the key.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
#[cfg(test)]
use crate::params::KeyTable;
use crate::params::{
    resolve_k, IfcaOption, InitDist, ParamGuard, Phase2Config, Phase2Params, StepRule, Valid,
};
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

crate::params::valid::resolved_params! {
    /// Validated IFCA parameters: from a checked [`IfcaConfig`] and the data
    /// ([`IfcaParams::resolve`]), or at a chosen step ([`IfcaParams::at_step`]). They are read,
    /// never edited: a step changed after the checks does not compile.
    ///
    /// ```compile_fail,E0616
    /// use fedmix::algorithms::ifca::IfcaParams;
    /// use fedmix::params::{IfcaOption, LocalSolver, Phase2Params};
    /// let local = Phase2Params { eta: 0.1, local_steps: 1, local_solver: LocalSolver::Fedavg, rounds: 1 };
    /// let mut p = IfcaParams::at_step(2, IfcaOption::Gradient, local).unwrap();
    /// p.step = f64::NAN;
    /// ```
    #[derive(Clone, Debug, PartialEq, Serialize)]
    pub struct IfcaParams {
        /// Number of models `k` (1 ≤ k ≤ M).
        k: usize,
        /// Option I or II.
        option: IfcaOption,
        /// Step size `γ` (option I: the PS step; option II: the local step).
        step: f64,
        /// Option II's local solver (`eta = γ`, `local_steps = τ`) and the number of rounds `T`.
        local: Phase2Params,
        /// Fraction of clients per round, in (0, 1].
        participation: f64,
        /// Restarts `R ≥ 1`.
        restarts: usize,
        /// Initialisation law and scale.
        init: InitDist,
        /// Scale of the initialisation.
        init_scale: f64,
    }
}

impl IfcaParams {
    /// The parameters of IFCA rounds at a chosen step, for lemma-level use (IFCA Theorem 1
    /// fixes `γ` itself): `k` models, option I or II with `local` (`local.eta` is the step),
    /// every client taking part, one start, the Gaussian init at scale 1. Every value passes
    /// its key's range check ([`IfcaConfig`]'s); unlike [`IfcaParams::resolve`] there is no
    /// data, so option II's `γ < 1` is not checked.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key out of range (`k = 0`, a step that is
    /// not finite and positive, `local_steps = 0`, …).
    pub fn at_step(k: usize, option: IfcaOption, local: Phase2Params) -> Result<Self> {
        let c = IfcaConfig {
            k: Some(k),
            option,
            phase2: Phase2Config {
                step: StepRule::Fixed(local.eta),
                local_steps: local.local_steps,
                local_solver: local.local_solver,
                rounds: local.rounds,
            },
            participation: 1.0,
            restarts: 1,
            init: InitDist::Gaussian,
            init_scale: 1.0,
            ..IfcaConfig::default()
        }
        .check()?;
        Ok(Self::of(&c, k, local))
    }

    /// The parameters of a checked group with `k` and Phase 2's step resolved.
    fn of(c: &IfcaConfig, k: usize, local: Phase2Params) -> Self {
        Self {
            k,
            option: c.option,
            step: local.eta,
            local,
            participation: c.participation,
            restarts: c.restarts,
            init: c.init,
            init_scale: c.init_scale,
        }
    }

    /// Resolve and validate against a federation.
    ///
    /// # Errors
    /// Range errors (`KeyTable::check_ifca`), k unknown or `k > M`, option II with `γ ≥ 1`
    /// ([`FedmixError::StepTooLarge`]).
    #[cfg(test)]
    pub(crate) fn from_config(cfg: &KeyTable, fed: &Federation) -> Result<Self> {
        Self::resolve(&cfg.group::<IfcaConfig>()?, fed)
    }

    /// Resolve validated parameters against a federation (`k`, the step).
    ///
    /// # Errors
    /// k unknown or `k > M`, option II with `γ ≥ 1` ([`FedmixError::StepTooLarge`]).
    pub fn resolve(c: &Valid<IfcaConfig>, fed: &Federation) -> Result<Self> {
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
        Ok(Self::of(c, k, local))
    }
}

crate::params::valid::resolved_params! {
    /// Validated parameters of the official protocol.
    #[derive(Clone, Debug, PartialEq, Serialize)]
    pub struct OfficialParams {
        /// Number of models (the data's k).
        k: usize,
        /// Learning-rate grid, in the official loop order.
        lrs: Vec<f64>,
        /// Init seeds (official `train_seed ∈ range(10)`).
        inits: usize,
        /// Iterations per run (official `num_epochs = 300`).
        iterations: usize,
        /// σ of the success rule (official `noise_scale`).
        sigma: f64,
        /// Where σ came from.
        sigma_source: String,
        /// Offset added to the threshold (0.001 in the r–noise sweeps, 0 in the m–n sweeps).
        offset: f64,
        /// `0.6 σ + offset`.
        threshold: f64,
    }
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
        Self::resolve(&cfg.group::<IfcaOfficialConfig>()?, fed, data_sigma)
    }

    /// Resolve validated parameters against a federation (`k`, the grid, σ).
    ///
    /// # Errors
    /// Missing θ* or σ, k without a default grid.
    pub fn resolve(
        cfg: &Valid<IfcaOfficialConfig>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::LocalSolver;

    fn local(eta: f64, local_steps: usize) -> Phase2Params {
        Phase2Params {
            eta,
            local_steps,
            local_solver: LocalSolver::Fedavg,
            rounds: 3,
        }
    }

    /// IFCA rounds at a chosen step take the step as given and every other value at IFCA's
    /// single-run setting; out-of-range values are typed errors naming their key.
    #[test]
    fn a_chosen_step_is_checked_like_its_keys() {
        let p = IfcaParams::at_step(3, IfcaOption::Model, local(0.25, 2)).unwrap();
        assert_eq!((p.k(), p.option(), p.step()), (3, IfcaOption::Model, 0.25));
        assert_eq!(p.local(), local(0.25, 2));
        assert_eq!((p.participation(), p.restarts()), (1.0, 1));
        assert_eq!((p.init(), p.init_scale()), (InitDist::Gaussian, 1.0));
        let named = |r: Result<IfcaParams>| match r {
            Err(FedmixError::InvalidParameter { name, .. }) => name,
            other => panic!("expected a typed error, got {other:?}"),
        };
        for bad in [f64::NAN, f64::INFINITY, 0.0, -0.1] {
            let r = IfcaParams::at_step(2, IfcaOption::Gradient, local(bad, 1));
            assert_eq!(named(r), "eta", "step {bad}");
        }
        assert_eq!(
            named(IfcaParams::at_step(0, IfcaOption::Gradient, local(0.1, 1))),
            "k"
        );
        assert_eq!(
            named(IfcaParams::at_step(2, IfcaOption::Model, local(0.1, 0))),
            "local_steps"
        );
    }
}
