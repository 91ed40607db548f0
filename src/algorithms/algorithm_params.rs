//! One algorithm's parameters, typed (linfa's validated parameters, one group per algorithm,
//! declared with the algorithm and listed in [`super::registry`]):
//! what the registry builds an algorithm from, what a run records in `summary.json` and what an
//! experiment cell stores. Written as keys (`--set key=value`, TOML), parsed and range-checked
//! once by [`AlgorithmParams::from_sources`]; a key the algorithm does not read is refused with
//! the algorithm's name.
//!
//! The textual form of a value is its keys: [`AlgorithmParams::keys`] gives the keys the
//! algorithm reads with their values, and the serialised form is the same map plus
//! `"algorithm"` (round trip exact; a test checks it for every kind).

use super::registry::AlgorithmParams;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::key_table::KeyTable;
use crate::params::{check_applicable, keys_of};
use crate::params::{AlgorithmKind, IfcaOption, Phase2Params, StepRule};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

impl AlgorithmParams {
    /// Algorithm `kind` with every key at its default.
    pub fn default_for(kind: AlgorithmKind) -> Self {
        Self::from_table(kind, &KeyTable::default()).expect("the defaults are in range")
    }

    /// Parse the keys of an optional TOML text and `key=value` overrides (overrides win) for
    /// algorithm `kind`.
    ///
    /// # Errors
    /// [`FedmixError::Malformed`] for TOML syntax errors, unknown keys (with the nearest key)
    /// and wrong types, naming the key and, in a file, its line;
    /// [`FedmixError::InvalidParameter`] for a value out of range or a key `kind` does not read.
    pub fn from_sources(
        kind: AlgorithmKind,
        toml_text: Option<(&std::path::Path, &str)>,
        sets: &[(String, String)],
    ) -> Result<Self> {
        Self::from_table(kind, &KeyTable::from_sources_for(kind, toml_text, sets)?)
    }

    /// Parse a TOML table of keys for algorithm `kind`, ignoring known keys that `kind` does not
    /// read (an experiment's settings shared by several series; the experiment checks that some
    /// series reads each). `origin` names the table in errors.
    ///
    /// # Errors
    /// As [`AlgorithmParams::from_sources`], except that inapplicable keys pass.
    pub fn from_shared_table(
        kind: AlgorithmKind,
        mut table: toml::Table,
        origin: &str,
    ) -> Result<Self> {
        crate::params::check_known(table.keys().map(String::as_str), origin)?;
        // Only `kind`'s keys shape its parameters, so that they read back from their keys.
        let reads = keys_of(kind);
        table.retain(|k, _| reads.contains(&k));
        let keys: KeyTable =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| FedmixError::Malformed {
                    path: origin.into(),
                    message: e.to_string().replace('\n', " "),
                })?;
        keys.check()?;
        Self::from_table(kind, &keys)
    }

    /// Parse the keys map of algorithm `kind` (the serialised form, without `"algorithm"`).
    ///
    /// # Errors
    /// [`FedmixError::Malformed`] for unknown keys or wrong types (`origin` names the source),
    /// [`FedmixError::InvalidParameter`] for a value out of range or a key `kind` does not read.
    pub fn from_keys(kind: AlgorithmKind, keys: &Map<String, Value>, origin: &str) -> Result<Self> {
        crate::params::check_known(keys.keys().map(String::as_str), origin)?;
        check_applicable(kind, keys.iter().map(|(k, v)| (k.as_str(), v.to_string())))?;
        let table: KeyTable = serde_json::from_value(Value::Object(keys.clone())).map_err(|e| {
            FedmixError::Malformed {
                path: origin.into(),
                message: e.to_string(),
            }
        })?;
        table.check()?;
        Self::from_table(kind, &table)
    }

    /// The keys this algorithm reads ([`keys_of`]) with their values (`null` where unset and
    /// defaulted from the data), sorted by key.
    pub fn keys(&self) -> Map<String, Value> {
        let all = serde_json::to_value(self.key_table()).unwrap_or_default();
        keys_of(self.kind())
            .into_iter()
            .map(|k| (k.to_string(), all.get(k).cloned().unwrap_or(Value::Null)))
            .collect()
    }

    /// These parameters with Phase 2's step fixed to `phase2.eta`, the value [`Self::phase2`]
    /// resolved on the data: an algorithm built from them reads that `η` instead of evaluating
    /// SXY22 §4.2's default rule `η = γ / max_i ‖φ_i‖²/n_i` a second time — the same number,
    /// so nothing the run computes changes. Unchanged where the algorithm has no Phase 2 step,
    /// or where the resolved `η` is not a valid `eta` (degenerate data: the algorithm then
    /// reports its own error, as without this).
    pub fn with_step_of(&self, phase2: &Phase2Params) -> Self {
        if self.phase2_config().is_none() {
            return self.clone();
        }
        let mut t = self.key_table();
        t.eta = Some(phase2.eta);
        Self::from_table(self.kind(), &t).unwrap_or_else(|_| self.clone())
    }

    /// Phase 2's parameters resolved against `fed` (`η` from its rule): the algorithm's own
    /// where it has a Phase 2 ([`Self::phase2_config`]), the defaults' otherwise (for the data
    /// constants a summary reports).
    pub fn phase2(&self, fed: &Federation) -> Phase2Params {
        self.phase2_config().unwrap_or_default().resolve(fed)
    }

    /// Whether the step `η` is set by the default rule (`eta` unset) in an algorithm that
    /// reads `eta`.
    pub fn eta_from_rule(&self) -> bool {
        keys_of(self.kind()).contains(&"eta")
            && matches!(
                self.phase2_config().map(|c| c.step),
                Some(StepRule::Gamma(_))
            )
    }

    /// IFCA's option (`ifca` only).
    pub fn ifca_option(&self) -> Option<IfcaOption> {
        match self {
            Self::Ifca(p) => Some(p.option),
            _ => None,
        }
    }
}

impl Serialize for AlgorithmParams {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = Map::new();
        m.insert(
            "algorithm".into(),
            Value::String(self.kind().as_str().into()),
        );
        m.extend(self.keys());
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for AlgorithmParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error;
        let mut m = Map::<String, Value>::deserialize(d)?;
        let kind = match m.remove("algorithm") {
            Some(Value::String(name)) => AlgorithmKind::parse(&name).map_err(D::Error::custom)?,
            _ => return Err(D::Error::missing_field("algorithm")),
        };
        Self::from_keys(kind, &m, "algorithm parameters").map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse `pairs` as `--set` keys of `kind`, and check that the value reads back from its
    /// serialised form.
    fn parsed_round_trip(kind: AlgorithmKind, pairs: &[(&str, &str)]) -> AlgorithmParams {
        let sets = crate::synthetic::sets(pairs);
        let p = AlgorithmParams::from_sources(kind, None, &sets).unwrap();
        let text = serde_json::to_string(&p).unwrap();
        let back: AlgorithmParams = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p, "{kind}: {text}");
        p
    }

    /// The serialised form is the keys plus `"algorithm"`, and reads back to the same value,
    /// for every kind at its defaults and with keys set.
    #[test]
    fn keys_round_trip_for_every_kind() {
        for kind in AlgorithmKind::ALL {
            let d = parsed_round_trip(kind, &[]);
            assert_eq!(d, AlgorithmParams::default_for(kind));
            assert_eq!(d.kind(), kind);
            let keys: Vec<String> = d.keys().keys().cloned().collect();
            let mut listed: Vec<String> = keys_of(kind).into_iter().map(String::from).collect();
            listed.sort_unstable();
            assert_eq!(keys, listed, "{kind}");
        }
        let p = parsed_round_trip(
            AlgorithmKind::TwoPhase,
            &[("eta", "0.05"), ("anchors", "12"), ("local_steps", "3")],
        );
        assert_eq!(p.keys()["anchors"], 12);
        assert_eq!(p.keys()["eta"], 0.05);
        assert!(!p.eta_from_rule());
        let p = parsed_round_trip(
            AlgorithmKind::Ifca,
            &[("ifca_option", "gradient"), ("restarts", "4"), ("k", "2")],
        );
        assert_eq!(p.ifca_option(), Some(IfcaOption::Gradient));
    }

    /// `with_step_of` fixes `eta` to the resolved step and changes no other key: for every
    /// kind with a Phase 2 step, the default rule's `η` on a federation becomes `eta`, the
    /// parameters resolve to the same `Phase2Params` bit for bit, and the keys differ only in
    /// `eta` (and `eta_gamma`, which a fixed `eta` overrides); a kind without one is unchanged.
    #[test]
    fn the_step_fixed_once_is_the_rules_step() {
        let fed = crate::synthetic::train_federation("sxy-balanced", 2, &[("clients", "20")]);
        for kind in AlgorithmKind::ALL {
            let p = AlgorithmParams::default_for(kind);
            let resolved = p.phase2(&fed);
            let pinned = p.with_step_of(&resolved);
            let Some(config) = pinned.phase2_config() else {
                assert_eq!(pinned, p, "{kind}");
                continue;
            };
            assert!(
                p.eta_from_rule() || !keys_of(kind).contains(&"eta"),
                "{kind}"
            );
            assert_eq!(config.step, StepRule::Fixed(resolved.eta), "{kind}");
            let again = pinned.phase2(&fed);
            assert_eq!(again.eta.to_bits(), resolved.eta.to_bits(), "{kind}");
            assert_eq!(again, resolved, "{kind}");
            let (mut a, mut b) = (p.keys(), pinned.keys());
            for k in ["eta", "eta_gamma"] {
                a.remove(k);
                b.remove(k);
            }
            assert_eq!(a, b, "{kind}");
        }
        // An explicit `eta` stays as given.
        let p = parsed_round_trip(AlgorithmKind::Ifca, &[("eta", "0.05")]);
        assert_eq!(p.with_step_of(&p.phase2(&fed)), p);
    }

    /// A serialised value with a key its algorithm does not read, or without its algorithm,
    /// does not parse.
    #[test]
    fn foreign_keys_and_missing_algorithm_are_refused() {
        let e = serde_json::from_str::<AlgorithmParams>(r#"{"algorithm":"ifca","anchors":5}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("anchors") && e.contains("ifca"), "{e}");
        assert!(serde_json::from_str::<AlgorithmParams>(r#"{"rounds":5}"#).is_err());
        let e = serde_json::from_str::<AlgorithmParams>(r#"{"algorithm":"fedavg","rounds":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rounds") || e.contains("invalid type"), "{e}");
    }
}
