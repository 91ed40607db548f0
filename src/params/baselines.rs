//! Parameter types of the baselines (IFCA's aggregation option and init law, SR-FCA's distance)
//! and the limits of partial participation.

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
