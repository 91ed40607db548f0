//! Parameters, the layer every algorithm reads from and none writes to: the algorithm names
//! ([`AlgorithmKind`]), each algorithm's typed parameters ([`AlgorithmParams`], one group per
//! algorithm, parsed once from the `--set` / TOML keys with errors naming the key), the typed
//! parameters of each phase and baseline with their range checks, and the baselines'
//! parameters resolved against a federation ([`resolved`]). The key syntax itself — every key
//! with its default and meaning, parsed from TOML with the file's line in errors — is
//! [`key_table::KeyTable`]: the reference of the keys, which no algorithm or public function
//! takes (parse keys with [`AlgorithmParams::from_sources`]).

pub mod algorithm;
pub mod baselines;
pub mod groups;
pub mod key_decl;
pub mod key_table;
pub mod keys;
pub mod kind;
pub mod phase1;
pub mod phase2;
pub mod resolved;
pub mod valid;

pub use algorithm::AlgorithmParams;
pub use baselines::*;
pub use groups::paper_preset;
pub use key_decl::{KeyGroup, KeySpec};
#[cfg(test)]
pub(crate) use key_table::KeyTable;
pub use key_table::{resolve_k, DEFAULT_ETA_GAMMA, KEYS, KEY_SPECS};
pub use keys::{
    algorithms_markdown, check_applicable, check_known, keys_help, keys_markdown, keys_of, readers,
    unknown_key,
};
pub use kind::{AlgorithmKind, Reads, RoundRule};
pub use phase1::*;
pub use phase2::*;
pub use resolved::*;
pub use valid::{ParamGuard, Valid};
