//! Phase 2 (SXY22 §4.2, FedX + clustering) parameters: the local solver, the step size `η`
//! and local steps `s`, checked against a federation (γ < 1, SXY22 §4.2).

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::{self, checked_gamma, kappa_fedavg, kappa_fedprox};
use serde::{Deserialize, Serialize};

/// Local solver of Phase 2 (public names `fedavg`, `fedprox`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalSolver {
    /// `s` local gradient steps.
    Fedavg,
    /// Exact proximal step.
    Fedprox,
}

/// Validated Phase 2 parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase2Params {
    /// Step size `η > 0` (γ = η max_i ‖φ_i‖²/n_i must be < 1).
    pub eta: f64,
    /// Local steps `s ≥ 1` (FedAvg; FedProx ignores it).
    pub local_steps: usize,
    /// Local solver.
    pub local_solver: LocalSolver,
    /// Rounds `T'`.
    pub rounds: usize,
}

impl Phase2Params {
    /// Validate against a federation: `η > 0` finite, `s ≥ 1`, `γ < 1`. Returns `(γ, κ)`.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`], [`FedmixError::StepTooLarge`].
    pub fn check(&self, fed: &Federation) -> Result<(f64, f64)> {
        if self.local_steps == 0 {
            return Err(FedmixError::invalid("local_steps", 0, "must be ≥ 1"));
        }
        let gamma = checked_gamma(fed, self.eta)?;
        let kappa = match self.local_solver {
            LocalSolver::Fedavg => kappa_fedavg(gamma, self.local_steps),
            LocalSolver::Fedprox => kappa_fedprox(gamma),
        };
        Ok((gamma, kappa))
    }
}

/// Phase 2's step as configured: a fixed `η`, or the rule `η = γ / max_i ‖φ_i‖²/n_i` that
/// reaches the target `γ` on the data at hand (SXY22 §4.2 requires `γ < 1`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepRule {
    /// `η` as given (`eta`).
    Fixed(f64),
    /// `η = γ / max_i ‖φ_i‖²/n_i` with this `γ` (`eta_gamma`).
    Gamma(f64),
}

/// Phase 2's parameters before the data is known (`eta` / `eta_gamma`, `local_steps`,
/// `local_solver`, `rounds`); [`Phase2Config::resolve`] fixes `η` against a federation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase2Config {
    /// The step.
    pub step: StepRule,
    /// Local steps `s ≥ 1` (FedAvg; FedProx ignores it).
    pub local_steps: usize,
    /// Local solver.
    pub local_solver: LocalSolver,
    /// Rounds `T'`.
    pub rounds: usize,
}

impl Phase2Config {
    /// The parameters with `η` resolved against `fed`.
    pub fn resolve(&self, fed: &Federation) -> Phase2Params {
        let eta = match self.step {
            StepRule::Fixed(eta) => eta,
            StepRule::Gamma(gamma) => {
                let (g1, _) = metrics::gamma(fed, 1.0);
                gamma / g1
            }
        };
        Phase2Params {
            eta,
            local_steps: self.local_steps,
            local_solver: self.local_solver,
            rounds: self.rounds,
        }
    }
}
