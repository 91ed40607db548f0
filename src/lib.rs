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
//! Layers, lowest first (no module imports from a layer above its own; `tests/layering.rs`
//! enforces it and `docs/ARCHITECTURE.md` draws it): foundation ([`error`], [`prec`] named
//! tolerances, [`seed_streams`] named seed streams) → numerics ([`linalg`]) → data ([`federation`],
//! [`synthetic`] seeded settings of SXY22 App. C.1–C.3, IFCA §6.1 and the authors' code, [`io`])
//! → measures ([`metrics`]: SXY22 eq. 6 distance, misclustering, the constants of SXY22 §4.2
//! and Theorem 2) → parameters ([`params`]) → round engine ([`engine`]: client passes, local
//! updates, participation, supplied randomness, the trace and the algorithm contract) →
//! algorithms ([`algorithms`], one file per paper algorithm, [`algorithms::registry`] on top) →
//! evaluation ([`output`], [`validate`], [`runner`]: one run as every front end performs it) → the
//! `fedmix` CLI. The experiment runner and the
//! theory checks live in the `theory-checks` crate above all of it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::float_cmp)]
// Tolerance tests are written `!(x <= tol)` (fail unless provably within), never `x > tol`,
// which a NaN passes; the lint would rewrite the first into the second.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod algorithms;
pub mod engine;
pub mod error;
pub mod federation;
pub mod io;
pub mod linalg;
pub mod metrics;
pub mod output;
pub mod params;
pub mod prec;
pub mod prelude;
pub mod progress;
pub mod runner;
pub mod seed_streams;
pub mod synthetic;
pub mod validate;
