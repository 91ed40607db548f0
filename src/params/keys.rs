//! The run keys: every key of the run configuration, the keys each algorithm reads, and the
//! errors for a key that is unknown or that the chosen algorithm would ignore.

use super::key_decl::KeyGroup;
use super::key_table::{KeyTable, KEYS, KEY_SPECS};
use super::kind::AlgorithmKind;
use crate::error::{FedmixError, Result};

/// The keys of `group`, in declaration order.
fn group(group: KeyGroup) -> impl Iterator<Item = &'static str> {
    KEY_SPECS
        .iter()
        .filter(move |s| s.group == group)
        .map(|s| s.name)
}

/// The run keys algorithm `kind` reads (every other key would be silently ignored by it): the
/// keys of SXY22's Phase 2 for the algorithms with a Phase 2, Phase 1's for `two-phase` (the
/// groups of [`KEY_SPECS`]), then the algorithm's own, in the order `fedmix validate`'s
/// reference line and the Python `keys()` list them.
pub fn keys_of(kind: AlgorithmKind) -> Vec<&'static str> {
    let reads = kind.reads();
    group(KeyGroup::Phase2)
        .filter(|_| reads.phase2)
        .chain(group(KeyGroup::Phase1).filter(|_| reads.phase1))
        .chain(reads.own.iter().copied())
        .collect()
}

/// The algorithms that read `key` ([`keys_of`]), in [`AlgorithmKind::ALL`] order.
pub fn readers(key: &str) -> Vec<AlgorithmKind> {
    AlgorithmKind::ALL
        .into_iter()
        .filter(|&k| keys_of(k).contains(&key))
        .collect()
}

/// Every key's default as JSON text (`null`: unset, set by a rule from the data).
fn default_texts() -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(KeyTable::default()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The algorithms' reference as a Markdown table, one row per [`AlgorithmKind`] from its one
/// declaration: name, description, the keys it reads, the randomness files it takes, whether
/// its Python `Session` steps live, and its one step (`validate --one-step`) or why it has
/// none. The table of `docs/algorithms.md`, which a test keeps equal to it.
pub fn algorithms_markdown() -> String {
    let mut out = String::from(
        "| algorithm | what it is | keys it reads | randomness files | `Session` | one step |\n\
         |---|---|---|---|---|---|\n",
    );
    let cell = |t: &str| {
        t.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|")
    };
    for kind in AlgorithmKind::ALL {
        let reads = kind.reads();
        let mut keys: Vec<String> = Vec::new();
        if reads.phase1 {
            keys.push("Phase 1's".into());
        }
        if reads.phase2 {
            keys.push("Phase 2's".into());
        }
        keys.extend(reads.own.iter().map(|k| format!("`{k}`")));
        let randomness: Vec<String> = kind
            .randomness()
            .iter()
            .map(|r| format!("`--{r}`"))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            kind.as_str(),
            cell(kind.doc()),
            if keys.is_empty() {
                "—".into()
            } else {
                keys.join(", ")
            },
            if randomness.is_empty() {
                "—".into()
            } else {
                randomness.join(", ")
            },
            if kind.live_session() {
                "live"
            } else {
                "replayed"
            },
            kind.one_step_refusal()
                .map_or_else(|| "yes".into(), |r| format!("no: {}", cell(r))),
        ));
    }
    out
}

/// The keys' reference as a Markdown table (key, type, default, the algorithms that read it,
/// the first paragraph of its doc comment): the table of `docs/keys.md`, which a test keeps
/// equal to it.
pub fn keys_markdown() -> String {
    let defaults = default_texts();
    let mut out =
        String::from("| key | type | default | read by | meaning |\n|---|---|---|---|---|\n");
    for spec in KEY_SPECS {
        let default = defaults
            .get(spec.name)
            .map_or_else(String::new, |v| v.to_string());
        let cell = |t: &str| t.replace('|', "\\|");
        let read_by: Vec<&str> = readers(spec.name).iter().map(|k| k.as_str()).collect();
        out.push_str(&format!(
            "| `{}` | `{}` | `{}` | {} | {} |\n",
            spec.name,
            cell(spec.ty),
            cell(&default),
            read_by.join(", "),
            cell(&spec.summary()),
        ));
    }
    out
}

/// The keys' reference as text (the CLI's `fedmix run --help`): each key with its default and
/// the first paragraph of its doc comment.
pub fn keys_help() -> String {
    let defaults = default_texts();
    let mut out = String::from(
        "Run keys (--set KEY=VALUE or --config FILE; default in brackets, null = set by a rule \
         from the data; `fedmix run --algorithm A --set KEY=…` refuses a key A does not read):\n",
    );
    for spec in KEY_SPECS {
        let default = defaults
            .get(spec.name)
            .map_or_else(String::new, |v| v.to_string());
        out.push_str(&format!(
            "  {} [{default}]\n      {}\n",
            spec.name,
            spec.summary()
        ));
    }
    out
}

/// Refuse a key algorithm `kind` does not read, naming the algorithm and its keys (unknown keys
/// pass here; [`crate::algorithms::AlgorithmParams::from_sources`] refuses them).
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

/// Parse a `--set` value as a TOML value (number, bool, string…), falling back to a string.
/// The 1-based line on which top-level key `key` is assigned in TOML `text` (`key = …`,
/// optionally quoted), if it is.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let l = line.trim_start();
            let rest = l
                .strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn toml_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
}

impl KeyTable {
    /// [`KeyTable::from_sources`] for algorithm `kind`: a key it does not read is refused
    /// ([`check_applicable`]) instead of being silently ignored.
    ///
    /// # Errors
    /// As [`KeyTable::from_sources`]; [`FedmixError::InvalidParameter`] for an inapplicable key.
    pub(crate) fn from_sources_for(
        kind: AlgorithmKind,
        toml_text: Option<(&std::path::Path, &str)>,
        sets: &[(String, String)],
    ) -> Result<Self> {
        let cfg = Self::from_sources(toml_text, sets)?;
        let mut keys: Vec<(&str, String)> = Vec::new();
        let table = toml_text.and_then(|(_, text)| toml::from_str::<toml::Table>(text).ok());
        if let Some(t) = &table {
            keys.extend(t.iter().map(|(k, v)| (k.as_str(), v.to_string())));
        }
        keys.extend(sets.iter().map(|(k, v)| (k.as_str(), v.clone())));
        check_applicable(kind, keys)?;
        Ok(cfg)
    }

    /// Build from an optional TOML text and `key=value` overrides (overrides win).
    ///
    /// # Errors
    /// [`FedmixError::Malformed`] for TOML syntax errors, unknown keys and wrong types (the
    /// message names the key), [`FedmixError::InvalidParameter`] for out-of-range values.
    pub(crate) fn from_sources(
        toml_text: Option<(&std::path::Path, &str)>,
        sets: &[(String, String)],
    ) -> Result<Self> {
        let origin = toml_text.map_or_else(
            || std::path::PathBuf::from("--set"),
            |(p, _)| p.to_path_buf(),
        );
        let mut table: toml::Table = match toml_text {
            Some((path, text)) => toml::from_str(text).map_err(|e| FedmixError::Malformed {
                path: path.into(),
                message: e.to_string().replace('\n', " "),
            })?,
            None => toml::Table::new(),
        };
        // Where a key of the file stands, for the errors that name it.
        let at = |key: &str| -> String {
            match toml_text.and_then(|(p, text)| Some((p, key_line(text, key)?))) {
                Some((p, line)) => format!("{} line {line}", p.display()),
                None => origin.display().to_string(),
            }
        };
        for key in table.keys() {
            check_known(std::iter::once(key.as_str()), &at(key))?;
        }
        check_known(sets.iter().map(|(k, _)| k.as_str()), "--set")?;
        let from_file: Vec<String> = table
            .keys()
            .filter(|k| !sets.iter().any(|(s, _)| s == *k))
            .cloned()
            .collect();
        for (k, v) in sets {
            table.insert(k.clone(), toml_value(v));
        }
        let cfg: KeyTable = table.try_into().map_err(|e: toml::de::Error| {
            let message = e.to_string().replace('\n', " ");
            // A wrong type names its key ("… in `eta`"): point at the key's line in the file.
            let key = message
                .rsplit_once("in `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(k, _)| k.to_string());
            let path = match key {
                Some(k) if from_file.contains(&k) => std::path::PathBuf::from(at(&k)),
                Some(_) => std::path::PathBuf::from("--set"),
                None => origin.clone(),
            };
            FedmixError::Malformed { path, message }
        })?;
        cfg.check()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Errors about a key of a configuration file name the file and the key's line; a value
    /// overridden with `--set` is blamed on `--set`.
    #[test]
    fn file_errors_name_the_line_of_the_key() {
        let p = Path::new("c.toml");
        let err = |text: &str, sets: &[(String, String)]| {
            KeyTable::from_sources(Some((p, text)), sets)
                .unwrap_err()
                .to_string()
        };
        let e = err("rounds = 5\n\neta = \"fast\"\n", &[]);
        assert!(e.contains("c.toml line 3") && e.contains("eta"), "{e}");
        let e = err("rounds = 5\n  local_step = 3\n", &[]);
        assert!(
            e.contains("c.toml line 2") && e.contains("local_steps"),
            "{e}"
        );
        let e = err(
            "eta = 0.1\n",
            &[("local_steps".to_string(), "x".to_string())],
        );
        assert!(e.starts_with("--set") && !e.contains("line"), "{e}");
        assert_eq!(key_line("# eta = 1\n\"eta\" = 2\n", "eta"), Some(2));
        assert_eq!(key_line("etas = 1\n", "eta"), None);
    }

    /// The head of `docs/keys.md`, above the derived table.
    const KEYS_DOC_HEAD: &str = "# Run keys\n\n\
        Every `--set` / TOML key of `fedmix run` and `validate` (and keyword of the Python \
        `fedmix.run`), generated from the keys' one declaration (`src/params/key_table.rs`); \
        a unit test of `src/params/keys.rs` keeps this file equal to it (run it with \
        `FEDMIX_WRITE_KEYS_DOC=1` to rewrite the file after changing a key). A default `null` \
        is set by a rule from the data (see the key's doc comment).\n\n";

    const ALGORITHMS_DOC_HEAD: &str = "# Algorithms\n\n\
        Every `--algorithm` value (and `algorithm` of the Python `fedmix.run`, `Session`, \
        `validate`), generated from the algorithms' one declaration (`algorithm_kinds!` in \
        `src/params/kind.rs`); a unit test of `src/params/keys.rs` keeps this file equal to it \
        (run it with `FEDMIX_WRITE_KEYS_DOC=1` to rewrite it). \"Phase 2's\" and \"Phase 1's\" \
        stand for SXY22's key groups ([keys.md](keys.md)); the randomness files are \
        [validating.md](validating.md)'s; a *live* `Session` runs each round in the library when \
        stepped, a *replayed* one performs the whole run and replays it; *one step* is \
        `fedmix validate --one-step` (`mode=\"one-step\"` in Python). Python: \
        `fedmix.describe(name)` returns the same facts.\n\n";

    /// `docs/algorithms.md` is the table derived from the declaration.
    #[test]
    fn the_algorithms_doc_is_the_derived_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/algorithms.md");
        let want = format!("{ALGORITHMS_DOC_HEAD}{}", algorithms_markdown());
        if std::env::var_os("FEDMIX_WRITE_KEYS_DOC").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/algorithms.md differs from algorithms_markdown()"
        );
        assert_eq!(want.matches("\n| `").count(), AlgorithmKind::ALL.len());
    }

    /// `docs/keys.md` is the table derived from the declaration.
    #[test]
    fn the_keys_doc_is_the_derived_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/keys.md");
        let want = format!("{KEYS_DOC_HEAD}{}", keys_markdown());
        if std::env::var_os("FEDMIX_WRITE_KEYS_DOC").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(have == want, "docs/keys.md differs from keys_markdown()");
        assert_eq!(want.matches("\n| `").count(), KEYS.len());
    }

    /// Every declared example value parses, passes its range check and differs from the
    /// default; every key is read by some algorithm.
    #[test]
    fn every_key_an_algorithm_declares_it_reads_is_a_run_key_once() {
        for kind in AlgorithmKind::ALL {
            let keys = keys_of(kind);
            for key in &keys {
                assert!(KEYS.contains(key), "{kind} reads undeclared key {key}");
            }
            let mut unique = keys.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), keys.len(), "{kind} lists a key twice");
        }
    }

    #[test]
    fn every_example_is_a_valid_other_value() {
        for spec in KEY_SPECS {
            let sets = vec![(spec.name.to_string(), spec.example.to_string())];
            let t = KeyTable::from_sources(None, &sets)
                .unwrap_or_else(|e| panic!("{} = {}: {e}", spec.name, spec.example));
            assert_ne!(t, KeyTable::default(), "{}", spec.name);
            assert!(!readers(spec.name).is_empty(), "{}", spec.name);
            assert!(!spec.summary().is_empty(), "{}", spec.name);
        }
    }
}
