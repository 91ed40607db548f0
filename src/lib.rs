//! # fedmix
//!
//! A reference implementation of clustered federated learning for mixed linear regression:
//! the two-phase algorithm of Su, Xu and Yang (NeurIPS 2022), IFCA, SR-FCA and baselines,
//! with every lemma-level bound of those papers checked empirically in the `theory-checks`
//! crate. Doc comments cite the papers by section, equation, algorithm and lemma: SXY22 (Su,
//! Xu, Yang, NeurIPS 2022, main text and appendix), IFCA (Ghosh, Chung, Yin, Ramchandran,
//! NeurIPS 2020), SR-FCA (Vardhan, Ghosh, Mazumdar, TMLR 2024) and SXY21 (Su, Xu, Yang, the
//! source of SXY22's γ, κ and `P_i`). Every choice the papers leave open, or where the code
//! departs from them, is marked "Decision" in the docs here, with its reason.
//!
//! Layout: [`federation`] (validated data model), [`synthetic`] (seeded settings of SXY22
//! App. C.1–C.3, IFCA §6.1 and the IFCA / SR-FCA authors' code), [`metrics`] (SXY22 eq. 6
//! distance, misclustering, losses, the constants of SXY22 §4.2 and Theorem 2), [`io`]
//! (numpy-readable files), [`rng`] (named seed streams), [`prec`] (named tolerances), [`error`]
//! (typed errors).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::float_cmp)]

pub mod algorithms;
pub mod error;
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
