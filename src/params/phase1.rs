//! Phase 1 (SXY22 §4.1, FedMD on anchor clients) parameters: the variant, the sample pairing
//! and subspace method of the practical variant (SXY22 App. C), and the resolved parameters
//! with their data-independent checks.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
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

/// Phase 1's parameters as configured, before the data is known (the keys `phase1_variant`,
/// `phase1_iterations`, `anchors`, `anchor_min_samples`, `epsilon`, `separation`, `alpha`,
/// `beta`, `pairing`, `subspace`, `t1`, `t2`, `m`, `ell`); [`Phase1Config::resolve`] fills the
/// data-dependent defaults.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase1Config {
    /// Variant.
    pub variant: Phase1Variant,
    /// Iterations `T`.
    pub iterations: usize,
    /// Anchors `n_H`; `None` = `min(⌈k ln N⌉, eligible)` (practical) or `⌈k ln N⌉` (faithful).
    pub anchors: Option<usize>,
    /// Minimum `n_i` of a practical-variant anchor; `None` = `5k`.
    pub anchor_min_samples: Option<usize>,
    /// Stopping threshold `ε`.
    pub epsilon: f64,
    /// Separation `Δ`; `None` = from `θ*`.
    pub separation: Option<f64>,
    /// `α`.
    pub alpha: f64,
    /// `β`.
    pub beta: f64,
    /// Sample pairing of the practical variant.
    pub pairing: Pairing,
    /// Subspace method of the practical variant.
    pub subspace: SubspaceMethod,
    /// Orthogonal-iteration steps `T₁`.
    pub t1: usize,
    /// Power-iteration steps `T₂`.
    pub t2: usize,
    /// Fresh clients per iteration (faithful); `None` = all available split over `T`.
    pub m: Option<usize>,
    /// Fresh sample pairs per anchor per iteration (faithful); `None` = the most the anchors allow.
    pub ell: Option<usize>,
}

impl Phase1Config {
    /// The parameters for `k` clusters on `fed`, defaults filled from the data.
    pub fn resolve(&self, k: usize, fed: &Federation) -> FedMdParams {
        let min_samples = self.anchor_min_samples.unwrap_or(5 * k);
        let t = self.iterations.max(1);
        let (anchors, ell, m) = match self.variant {
            Phase1Variant::Practical => {
                let eligible = (0..fed.num_clients())
                    .filter(|&i| fed.n(i) >= min_samples.max(2))
                    .count();
                let default = ((k as f64) * (fed.total_samples() as f64).ln()).ceil() as usize;
                (
                    self.anchors.unwrap_or(default.min(eligible).max(k)),
                    self.ell.unwrap_or(1),
                    self.m.unwrap_or(1),
                )
            }
            Phase1Variant::Faithful => {
                let anchors = self
                    .anchors
                    .unwrap_or(((k as f64) * (fed.total_samples() as f64).ln()).ceil() as usize);
                let mut sizes = fed.sizes();
                sizes.sort_unstable_by(|a, b| b.cmp(a));
                let nth = sizes.get(anchors.saturating_sub(1)).copied().unwrap_or(0);
                let ell = self.ell.unwrap_or((nth / (2 * t)).max(1));
                let pool = (0..fed.num_clients())
                    .filter(|&i| fed.n(i) >= 2)
                    .count()
                    .saturating_sub(anchors);
                (anchors, ell, self.m.unwrap_or((pool / t).max(1)))
            }
        };
        FedMdParams {
            variant: self.variant,
            k,
            anchors,
            iterations: self.iterations,
            t1: self.t1,
            t2: self.t2,
            m,
            ell,
            epsilon: self.epsilon,
            separation: self.separation,
            alpha: self.alpha,
            beta: self.beta,
            pairing: self.pairing,
            subspace: self.subspace,
            anchor_min_samples: min_samples,
        }
    }
}

/// Parameters of the two-phase algorithm (`two-phase`): Phase 1, Phase 2, the number of
/// clusters and the scale of the common random start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TwoPhaseParams {
    /// Number of clusters; `None` = the data's.
    pub k: Option<usize>,
    /// Phase 1.
    pub phase1: Phase1Config,
    /// Phase 2.
    pub phase2: super::phase2::Phase2Config,
    /// Scale of the random start `θ₀ ~ N(0, init_scale² I_d / d)`.
    pub init_scale: f64,
}

/// Parameters of Phase 2 run alone (`phase2`, `oracle`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase2OnlyParams {
    /// Number of clusters; `None` = the data's.
    pub k: Option<usize>,
    /// Phase 2.
    pub phase2: super::phase2::Phase2Config,
    /// Scale of the random start (`phase2`; the oracle starts at `θ*`).
    pub init_scale: f64,
}
