//! Parameters, the layer every algorithm reads from and none writes to: the algorithm names and
//! what each reads ([`AlgorithmKind`]), every `--set` / TOML key declared once with its range
//! check, the way a typed group is bound to its keys (`bind_keys!` in [`groups`], invoked next to
//! each group's declaration: SXY22's Phase 1 and Phase 2 groups here, each baseline's group in
//! its algorithm's file), SXY22's phases' typed parameters ([`phase1`], [`phase2`]) and the
//! baselines' key types ([`baselines`]). The key syntax itself — every key with its default and
//! meaning, parsed from TOML with the file's line in errors — is [`key_table::KeyTable`]: the
//! reference of the keys, which no public function takes (parse keys with
//! [`crate::algorithms::AlgorithmParams::from_sources`], which holds one algorithm's checked
//! group).

pub mod baselines;
pub mod groups;
pub mod key_decl;
pub mod key_table;
pub mod keys;
pub mod kind;
pub mod phase1;
pub mod phase2;
pub mod valid;

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
pub use valid::{ParamGuard, Valid};
