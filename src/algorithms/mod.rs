//! The algorithms, one file per paper algorithm.
//!
//! - [`fedmd`]: SXY22 Phase 1 (Algorithm 1), both variants.
//! - [`orthogonal_iteration`]: SXY22 Algorithm 3 (federated orthogonal iteration).
//! - [`fedx_clustering`]: SXY22 Phase 2 (FedAvg/FedProx + clustering, Algorithm 2).
//! - [`lemma1`]: SXY22 Lemma 1 closed form (eq. 11/12).
//! - [`two_phase`]: the full pipeline and the `Algorithm` implementations.
//!
//! Baselines (SPEC §5): [`ifca`] (IFCA Algorithm 2, options I/II, and the official-code mode),
//! [`fedavg`] (vanilla FedAvg/FedProx), [`local`] (per-client least squares / ridge),
//! [`one_shot`] (local ERM + [`kmeans`] + FedAvg in clusters), [`oracle_labels`], [`sr_fca`]
//! (SRFCA Algorithms 1–4), [`cfl`] (Sattler et al.), with [`participation`] sampling.

pub mod cfl;
pub mod fedavg;
pub mod fedmd;
pub mod fedx_clustering;
pub mod ifca;
pub mod kmeans;
pub mod lemma1;
pub mod local;
pub mod one_shot;
pub mod oracle_labels;
pub mod orthogonal_iteration;
pub mod participation;
pub mod sr_fca;
pub mod two_phase;

/// Data-independent range checks of every baseline field of the run configuration (called by
/// [`two_phase::RunConfig::check`]).
///
/// # Errors
/// [`crate::error::FedmixError::InvalidParameter`] naming the field.
pub fn check_baseline_config(cfg: &two_phase::RunConfig) -> crate::error::Result<()> {
    ifca::check_config(cfg)?;
    one_shot::check_config(cfg)?;
    sr_fca::check_config(cfg)?;
    cfl::check_config(cfg)
}
