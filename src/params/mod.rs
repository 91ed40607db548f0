//! Parameters, the layer every algorithm reads from and none writes to: the algorithm names
//! ([`AlgorithmKind`]), each algorithm's typed parameters ([`AlgorithmParams`], one group per
//! algorithm, parsed once from the `--set` / TOML keys with errors naming the key), the typed
//! parameters of each phase and baseline with their range checks, and the baselines'
//! parameters resolved against a federation ([`resolved`]). The key syntax itself — every key
//! with its default and meaning, parsed from TOML with the file's line in errors — is
//! [`key_table::KeyTable`]: the reference of the keys, which no algorithm or public function
//! takes (parse keys with [`AlgorithmParams::from_sources`]).

pub mod algorithm;
mod baseline_checks;
pub mod baselines;
pub mod key_table;
pub mod keys;
pub mod kind;
pub mod phase1;
pub mod phase2;
pub mod resolved;

pub use algorithm::AlgorithmParams;
pub use baselines::*;
#[cfg(test)]
pub(crate) use key_table::KeyTable;
pub use key_table::{paper_preset, resolve_k, DEFAULT_ETA_GAMMA};
pub use keys::{check_applicable, check_known, keys_of, unknown_key, KEYS};
pub use kind::AlgorithmKind;
pub use phase1::*;
pub use phase2::*;
pub use resolved::*;
