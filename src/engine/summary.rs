//! What each algorithm reports about its own run, typed: a [`RunSummary`] of named parts,
//! written to `summary.json` beside the facts every run shares
//! ([`crate::runner::Prepared::summary`]). Each part's type is declared in its algorithm's own
//! file (`IfcaSummary` in `algorithms/ifca/restarts.rs`, `CflSummary` in `algorithms/cfl.rs`,
//! …); its field names are the JSON keys.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

/// A training loss as summaries write it: the value, or `"diverged"` when it is not finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossOrDiverged(pub f64);

impl Serialize for LossOrDiverged {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0.is_finite() {
            true => s.serialize_f64(self.0),
            false => s.serialize_str("diverged"),
        }
    }
}

/// What an algorithm reports about its run: the top-level keys it adds to `summary.json`
/// (`phase1`/`phase2`, `ifca`, `sr_fca`, …), each holding a typed part that the algorithm
/// builds. Open: an algorithm adds its parts with [`RunSummary::with`] and needs no variant
/// here; a typed reader takes a part back by key and type ([`RunSummary::get`]).
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    parts: Vec<(&'static str, Arc<dyn SummaryPart>)>,
}

/// A part of a [`RunSummary`]: any serialisable value (its JSON is the key's value).
pub trait SummaryPart: Debug + Send + Sync + 'static {
    /// The part as JSON.
    fn to_value(&self) -> Value;
    /// The part, for [`RunSummary::get`]'s downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Serialize + Debug + Send + Sync + 'static> SummaryPart for T {
    fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl RunSummary {
    /// A summary without parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// This summary with `part` under `key` (replacing a part of the same key).
    pub fn with<T: SummaryPart>(mut self, key: &'static str, part: T) -> Self {
        self.parts.retain(|(k, _)| *k != key);
        self.parts.push((key, Arc::new(part)));
        self
    }

    /// The part under `key`, if there is one of type `T`.
    pub fn get<T: 'static>(&self, key: &str) -> Option<&T> {
        self.parts
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, part)| part.as_any().downcast_ref::<T>())
    }

    /// The keys this summary adds to `summary.json`.
    pub fn to_map(&self) -> Map<String, Value> {
        self.parts
            .iter()
            .map(|(k, part)| (k.to_string(), part.to_value()))
            .collect()
    }
}

/// Equal when the JSON written is equal, text for text (so a float differs by its bits, the
/// shortest round-trip representation naming each).
impl PartialEq for RunSummary {
    fn eq(&self, other: &Self) -> bool {
        let text = |s: &Self| serde_json::to_string(&s.to_map()).unwrap_or_default();
        text(self) == text(other)
    }
}

impl Serialize for RunSummary {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Phase2Params;
    use serde_json::json;

    /// A part of another type (an algorithm's own summary struct).
    #[derive(Debug, PartialEq, Serialize)]
    struct Note {
        text: &'static str,
    }

    #[test]
    fn a_non_finite_loss_is_written_as_diverged() {
        let v = |x: f64| serde_json::to_value(LossOrDiverged(x)).unwrap();
        assert_eq!(v(1.5), json!(1.5));
        assert_eq!(v(f64::INFINITY), json!("diverged"));
        assert_eq!(v(f64::NAN), json!("diverged"));
    }

    #[test]
    fn each_part_adds_its_own_top_level_key() {
        let p2 = Phase2Params {
            eta: 0.1,
            local_steps: 5,
            local_solver: crate::params::LocalSolver::Fedavg,
            rounds: 3,
        };
        let keys = |s: &RunSummary| s.to_map().keys().cloned().collect::<Vec<_>>();
        let phase2 = RunSummary::new().with("phase2", p2);
        assert_eq!(keys(&phase2), ["phase2"]);
        let labels = phase2.clone().with("labels", "fixed to the true labels");
        assert_eq!(keys(&labels), ["labels", "phase2"]);
        let note = Note { text: "min-norm" };
        assert_eq!(keys(&RunSummary::new().with("local", note)), ["local"]);
        // Parts read back by key and type; the wrong type or key gives nothing.
        assert_eq!(labels.get::<Phase2Params>("phase2"), Some(&p2));
        assert_eq!(labels.get::<Note>("phase2"), None);
        assert_eq!(labels.get::<Phase2Params>("ifca"), None);
        // A key set twice keeps the last part.
        let twice = phase2
            .clone()
            .with("phase2", Phase2Params { rounds: 4, ..p2 });
        assert_eq!(
            twice.get::<Phase2Params>("phase2").map(|p| p.rounds),
            Some(4)
        );
        // Equality is the written JSON's: the same parts are equal, another value is not.
        assert_eq!(phase2, RunSummary::new().with("phase2", p2));
        assert_ne!(phase2, twice);
        assert_ne!(
            RunSummary::new().with("x", 0.0),
            RunSummary::new().with("x", -0.0)
        );
    }
}
