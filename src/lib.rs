//! # fedmix
//!
//! A reference implementation of clustered federated learning for mixed linear regression:
//! the two-phase algorithm of Su, Xu and Yang (NeurIPS 2022), IFCA, SR-FCA and baselines,
//! with every lemma-level bound of those papers checked empirically in the `theory-checks`
//! crate. The mathematics is specified in `SPEC.md` (shipped in the repository's shared
//! folder); every decision the papers leave open is marked "Decision" in the docs here.
//!
//! Layout: [`federation`] (validated data model), [`synthetic`] (seeded settings of SPEC
//! §1.1), [`metrics`] (SPEC §6), [`io`] (numpy-readable files), [`rng`] (named seed streams),
//! [`prec`] (named tolerances), [`error`] (typed errors).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::float_cmp)]

pub mod algorithms;
pub mod error;
pub mod experiment;
pub mod federation;
pub mod io;
pub mod linalg;
pub mod metrics;
pub mod output;
pub mod prec;
pub mod prelude;
pub mod randomness;
pub mod rng;
pub mod run;
pub mod synthetic;
pub mod validate;
