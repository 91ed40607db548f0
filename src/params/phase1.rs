//! Phase 1 (SXY22 §4.1, FedMD on anchor clients) parameters: the variant, the sample pairing
//! and subspace method of the practical variant (SXY22 App. C), and the resolved parameters
//! with their data-independent checks.

use crate::error::{FedmixError, Result};
use serde::{Deserialize, Serialize};

/// Phase 1 variant (public names `practical`, `faithful`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase1Variant {
    /// SXY22 App. C: data reuse, all clients with `n_i ≥ 2` in the subspace step, direct SVD.
    Practical,
    /// SXY22 Algorithm 1 as analysed: fresh client sets `S_t`, fresh `2ℓ` anchor samples.
    Faithful,
}

/// How a client turns its samples into a cross-moment estimate (practical variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairing {
    /// Unbiased U-statistic over all ordered pairs of distinct samples (default; the decision
    /// and its measurements are in the module doc).
    AllPairs,
    /// Mean of the first half times mean of the second half.
    Halves,
    /// The first two samples only.
    FirstTwo,
}

/// How `Û` is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubspaceMethod {
    /// Form `Y` and take its top-k left singular vectors (SXY22 App. C).
    Svd,
    /// Federated orthogonal iteration (Algorithm 3) with `t1` steps.
    OrthogonalIteration,
}

/// Validated Phase 1 parameters (names as in `--set`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedMdParams {
    /// Variant.
    pub variant: Phase1Variant,
    /// Number of clusters k.
    pub k: usize,
    /// `n_H`: number of anchors.
    pub anchors: usize,
    /// `T`: moment-descent iterations.
    pub iterations: usize,
    /// `T₁`: orthogonal-iteration steps (even).
    pub t1: usize,
    /// `T₂`: power-iteration steps.
    pub t2: usize,
    /// `m`: fresh clients per iteration (faithful).
    pub m: usize,
    /// `ℓ`: fresh sample pairs per anchor per iteration (faithful).
    pub ell: usize,
    /// `ε`: stopping threshold `σ̂ ≤ εΔ` (Theorem 1: ε < 1/4).
    pub epsilon: f64,
    /// `Δ`: separation used by the stopping rule and the `Δ/2` linking (from `θ*` when `None`).
    pub separation: Option<f64>,
    /// `α`: lower covariance bound.
    pub alpha: f64,
    /// `β`: upper covariance bound.
    pub beta: f64,
    /// Pairing of samples (practical).
    pub pairing: Pairing,
    /// Subspace method (practical; the faithful variant always uses orthogonal iteration).
    pub subspace: SubspaceMethod,
    /// Minimum `n_i` of an anchor in the practical variant (default `5k`).
    pub anchor_min_samples: usize,
}

impl FedMdParams {
    /// Check the parameters themselves (ranges independent of the data).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the parameter.
    pub fn check(&self) -> Result<()> {
        if self.k == 0 {
            return Err(FedmixError::invalid("k", 0, "must be ≥ 1"));
        }
        if self.anchors < self.k {
            return Err(FedmixError::invalid(
                "anchors",
                self.anchors,
                format!("need at least k = {} anchors", self.k),
            ));
        }
        let needs_t1 = self.variant == Phase1Variant::Faithful
            || self.subspace == SubspaceMethod::OrthogonalIteration;
        if needs_t1 && (self.t1 == 0 || self.t1 % 2 == 1) {
            return Err(FedmixError::invalid("t1", self.t1, "must be even and ≥ 2"));
        }
        if self.t2 == 0 {
            return Err(FedmixError::invalid("t2", 0, "must be ≥ 1"));
        }
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(FedmixError::invalid(
                "epsilon",
                self.epsilon,
                "must be finite and ≥ 0",
            ));
        }
        if !(self.alpha > 0.0 && self.beta >= self.alpha && self.beta.is_finite()) {
            return Err(FedmixError::invalid(
                "alpha",
                self.alpha,
                format!("need 0 < alpha ≤ beta (beta = {})", self.beta),
            ));
        }
        if let Some(s) = self.separation {
            if !(s.is_finite() && s > 0.0) {
                return Err(FedmixError::invalid(
                    "separation",
                    s,
                    "must be finite and > 0",
                ));
            }
        }
        if self.variant == Phase1Variant::Faithful && (self.m == 0 || self.ell == 0) {
            return Err(FedmixError::invalid(
                "m",
                self.m,
                "m and ell must be ≥ 1 in the faithful variant",
            ));
        }
        Ok(())
    }
}
