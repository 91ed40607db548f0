//! The run keys: every key of the run configuration, the keys each algorithm reads, and the
//! errors for a key that is unknown or that the chosen algorithm would ignore.

use super::kind::AlgorithmKind;
use crate::error::{FedmixError, Result};

/// Every run key, in the declaration order of [`super::key_table::KeyTable`]'s fields (a test checks they
/// agree).
pub const KEYS: &[&str] = &[
    "eta",
    "eta_gamma",
    "local_steps",
    "local_solver",
    "rounds",
    "phase1_variant",
    "phase1_iterations",
    "anchors",
    "anchor_min_samples",
    "epsilon",
    "separation",
    "alpha",
    "beta",
    "pairing",
    "subspace",
    "t1",
    "t2",
    "m",
    "ell",
    "init_scale",
    "k",
    "restarts",
    "participation",
    "replicate_batch",
    "ifca_option",
    "ifca_init",
    "ifca_official_inits",
    "ifca_official_lrs",
    "ifca_official_iterations",
    "ifca_official_sigma",
    "ifca_official_offset",
    "local_ridge",
    "kmeans_inits",
    "kmeans_max_iter",
    "srfca_lambda",
    "srfca_lambda_quantile",
    "srfca_size",
    "srfca_beta",
    "srfca_refine_steps",
    "srfca_local_iterations",
    "srfca_refine_rounds",
    "srfca_dist",
    "srfca_diameter",
    "cfl_eps1",
    "cfl_eps2",
    "cfl_gamma_max",
    "cfl_warmup_rounds",
];

/// Keys of SXY22 Phase 2's step (§4.2): `η` or its γ rule, `s`, the local solver, rounds.
const PHASE2_KEYS: &[&str] = &["eta", "eta_gamma", "local_steps", "local_solver", "rounds"];

/// Keys of SXY22 Phase 1 (§4.1, App. C).
const PHASE1_KEYS: &[&str] = &[
    "phase1_variant",
    "phase1_iterations",
    "anchors",
    "anchor_min_samples",
    "epsilon",
    "separation",
    "alpha",
    "beta",
    "pairing",
    "subspace",
    "t1",
    "t2",
    "m",
    "ell",
];

/// The run keys algorithm `kind` reads (every other key would be silently ignored by it).
pub fn keys_of(kind: AlgorithmKind) -> Vec<&'static str> {
    let own: &[&str] = match kind {
        AlgorithmKind::TwoPhase => &["init_scale", "k"],
        AlgorithmKind::Phase2 => &["init_scale", "k"],
        AlgorithmKind::Oracle => &["k"],
        AlgorithmKind::Ifca => &[
            "ifca_option",
            "ifca_init",
            "init_scale",
            "participation",
            "replicate_batch",
            "k",
            "restarts",
        ],
        AlgorithmKind::IfcaOfficial => &[
            "ifca_official_inits",
            "ifca_official_lrs",
            "ifca_official_iterations",
            "ifca_official_sigma",
            "ifca_official_offset",
            "replicate_batch",
            "k",
        ],
        AlgorithmKind::Fedavg => &["init_scale", "participation"],
        AlgorithmKind::Local => &["local_ridge"],
        AlgorithmKind::OneShot => &["kmeans_inits", "kmeans_max_iter", "local_ridge", "k"],
        AlgorithmKind::OracleLabels => &[],
        // SR-FCA's TrimmedMeanGD step is Phase 2's η (SRFCA Algorithm 3); it has its own rounds.
        AlgorithmKind::SrFca => &[
            "eta",
            "eta_gamma",
            "srfca_lambda",
            "srfca_lambda_quantile",
            "srfca_size",
            "srfca_beta",
            "srfca_refine_steps",
            "srfca_local_iterations",
            "srfca_refine_rounds",
            "srfca_dist",
            "srfca_diameter",
        ],
        AlgorithmKind::Cfl => &[
            "init_scale",
            "cfl_eps1",
            "cfl_eps2",
            "cfl_gamma_max",
            "cfl_warmup_rounds",
        ],
    };
    let phase2: &[&str] = match kind {
        AlgorithmKind::Local | AlgorithmKind::IfcaOfficial | AlgorithmKind::SrFca => &[],
        _ => PHASE2_KEYS,
    };
    let phase1: &[&str] = match kind {
        AlgorithmKind::TwoPhase => PHASE1_KEYS,
        _ => &[],
    };
    phase2.iter().chain(phase1).chain(own).copied().collect()
}

/// Refuse a key algorithm `kind` does not read, naming the algorithm and its keys (unknown keys
/// pass here; [`super::AlgorithmParams::from_sources`] refuses them).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming the first such key, with the value given for it.
pub fn check_applicable<'a>(
    kind: AlgorithmKind,
    keys: impl IntoIterator<Item = (&'a str, String)>,
) -> Result<()> {
    let ok = keys_of(kind);
    for (key, value) in keys {
        if !ok.contains(&key) && KEYS.contains(&key) {
            let mut list = ok.clone();
            list.sort_unstable();
            return Err(FedmixError::invalid(
                key,
                value,
                format!(
                    "algorithm `{kind}` does not use it (its keys: {})",
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.join(", ")
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// Edit distance between two keys (Levenshtein, on chars).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The error for a key that is not a run key: the nearest run key when one is close, or the
/// place a data parameter belongs.
pub fn unknown_key(name: &str, origin: &str) -> FedmixError {
    let data = crate::synthetic::PARAMETERS.iter().any(|(p, _)| *p == name);
    let nearest = KEYS
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .min()
        .filter(|(d, k)| *d <= 2.max(k.len() / 4));
    let hint = if data {
        format!(
            "`{name}` is a data parameter, not a run key: give it with `--setting NAME --set \
             {name}=…` or to `fedmix generate` (a dataset read with --data is fixed)"
        )
    } else if let Some((_, k)) = nearest {
        format!("did you mean `{k}`?")
    } else {
        format!("the run keys are {}", KEYS.join(", "))
    };
    FedmixError::UnknownKey {
        name: name.to_string(),
        origin: origin.to_string(),
        hint,
    }
}

/// Refuse the first key of `keys` that is not a run key ([`unknown_key`]).
///
/// # Errors
/// [`FedmixError::UnknownKey`].
pub fn check_known<'a>(keys: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<()> {
    match keys.into_iter().find(|k| !KEYS.contains(k)) {
        Some(k) => Err(unknown_key(k, origin)),
        None => Ok(()),
    }
}
