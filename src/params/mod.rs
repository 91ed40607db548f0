//! Parameters, the layer every algorithm reads from and none writes to: the algorithm names
//! ([`AlgorithmKind`]), the run configuration as written in `--set` / TOML ([`RunConfig`]),
//! and the typed parameters of each phase and baseline with their range checks, each error
//! naming the key, and
//! the baselines' parameters resolved against a federation ([`resolved`]).

pub mod baseline_checks;
pub mod baselines;
pub mod keys;
pub mod kind;
pub mod phase1;
pub mod phase2;
pub mod resolved;
pub mod run_config;

pub use baselines::*;
pub use keys::{check_applicable, check_known, keys_of, unknown_key, KEYS};
pub use kind::AlgorithmKind;
pub use phase1::*;
pub use phase2::*;
pub use resolved::*;
pub use run_config::*;
