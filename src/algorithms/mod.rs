//! The algorithms, one file per paper algorithm.
//!
//! - [`fedmd`]: SXY22 Phase 1 (Algorithm 1), both variants.
//! - [`orthogonal_iteration`]: SXY22 Algorithm 3 (federated orthogonal iteration).
//! - [`fedx_clustering`]: SXY22 Phase 2 (FedAvg/FedProx + clustering, Algorithm 2).
//! - [`lemma1`]: SXY22 Lemma 1 closed form (eq. 11/12).
//! - [`two_phase`]: the full pipeline and the `Algorithm` implementations.

pub mod fedmd;
pub mod fedx_clustering;
pub mod lemma1;
pub mod orthogonal_iteration;
pub mod two_phase;
