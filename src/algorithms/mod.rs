//! The algorithms, one file per paper algorithm.
//!
//! - [`fedmd`]: SXY22 Phase 1 (Algorithm 1), both variants.
//! - [`orthogonal_iteration`]: SXY22 Algorithm 3 (federated orthogonal iteration).
//! - [`fedx_clustering`]: SXY22 Phase 2 (FedAvg/FedProx + clustering, Algorithm 2).
//! - [`lemma1`]: SXY22 Lemma 1 closed form (eq. 11/12).
//! - [`two_phase`]: the full pipeline and the `Algorithm` implementations.
//! - [`crate::engine::client_pass`]: the one client pass every round is made of, batched over replicates
//!   (restarts, learning-rate grids, several runs over the same data) — identical results.
//!
//! Baselines (those of SXY22 App. C, IFCA §6 and SR-FCA §5): [`ifca`] (IFCA Algorithm 2,
//! options I/II, and the official-code mode), [`fedavg`] (vanilla FedAvg/FedProx), [`local`]
//! (per-client least squares / ridge), [`one_shot`] (local ERM + [`kmeans`] + FedAvg in
//! clusters), [`oracle_labels`], [`sr_fca`] (SRFCA Algorithms 1–4), [`cfl`] (Sattler et al.),
//! [`fedsoft`] (Ruan & Joe-Wong 2022: soft clustering with personal models), with
//! [`crate::engine::participation`] sampling.

pub mod algorithm_params;
pub mod cfl;
pub mod fedavg;
pub mod fedmd;
pub mod fedsoft;
pub mod fedx_clustering;
pub mod ifca;
pub mod kmeans;
pub mod lemma1;
pub mod local;
pub mod one_shot;
pub mod one_step;
pub mod oracle_labels;
pub mod orthogonal_iteration;
pub mod registry;
pub mod sr_fca;
pub mod two_phase;

pub use registry::AlgorithmParams;
