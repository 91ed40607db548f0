//! Every algorithm, listed once: the parameter group it reads ([`AlgorithmParams`], one variant
//! per [`AlgorithmKind`]), where its Phase 2 configuration is, how it is built from its checked
//! parameters, whether it takes randomness from files (`--init`, `--anchors`, `--q0`,
//! `--power-start`, `--participation`) and why its draws cannot be exported where they cannot.
//! Its public name, keys and documentation are its entry in `algorithm_kinds!`
//! ([`crate::params::kind`]), below this layer; its parameter group and the values it runs with
//! are declared in its own file.

use super::cfl::{Cfl, CflConfig};
use super::fedavg::{FedAvg, FedAvgParams};
use super::fedsoft::{FedSoft, FedSoftConfig};
use super::ifca::{Ifca, IfcaConfig, IfcaOfficial, IfcaOfficialConfig};
use super::local::{Local, LocalParams};
use super::one_shot::{OneShot, OneShotParams};
use super::oracle_labels::{OracleLabels, OracleLabelsParams};
use super::sr_fca::{SrFca, SrfcaConfig};
use super::two_phase::{Phase2Only, TwoPhase};
use crate::engine::contract::{Algorithm, LiveRun, RunOutput, WithRandomness};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::groups::Keyed;
use crate::params::key_table::KeyTable;
use crate::params::ParamGuard;
use crate::params::{AlgorithmKind, Phase2Config, Phase2OnlyParams, TwoPhaseParams, Valid};
use nalgebra::DMatrix;

/// `Some(boxed)` for an algorithm that takes randomness from files, `None` otherwise (the
/// constructor is then not expanded, so it need not implement [`WithRandomness`]).
macro_rules! supplied_arm {
    (no $alg:block) => {
        None
    };
    (yes $alg:block) => {
        Some(Box::new($alg) as Box<dyn WithRandomness>)
    };
}

/// `Some(reason)` where a draw cannot be exported, `None` otherwise.
macro_rules! reason {
    () => {
        None
    };
    ($why:literal) => {
        Some($why)
    };
}

/// Declares every algorithm from one list: its variant (named as [`AlgorithmKind`]'s) and the
/// checked group it holds; `phase2`: its Phase 2 configuration; `rows`: the trace rows a run
/// records, where known beforehand; `build`: the algorithm from its
/// parameters `params`, the given initial models `init` and the data's noise scale
/// `data_sigma`; `files`: whether it takes randomness from files (built with `init = None`);
/// `not_exportable`: which of its draws `--export-randomness` cannot write.
macro_rules! algorithms {
    ($($(#[doc = $doc:literal])* $variant:ident($group:ty)
        phase2: |$p2:ident| $phase2:expr,
        rows: |$rp:ident| $rows:expr,
        build: |$params:ident, $init:pat_param, $sigma:pat_param| $build:expr,
        files: $files:ident $(, not_exportable: $why:literal)?;)*) => {
        /// The parameters of one algorithm, by kind, each group checked ([`Valid`]).
        #[derive(Clone, Debug, PartialEq)]
        pub enum AlgorithmParams {
            $($(#[doc = $doc])* $variant(Valid<$group>),)*
        }

        impl AlgorithmParams {
            /// Which algorithm.
            pub fn kind(&self) -> AlgorithmKind {
                match self {
                    $(Self::$variant(_) => AlgorithmKind::$variant,)*
                }
            }

            /// The typed group of `kind` from a parsed key table, range-checked.
            pub(crate) fn from_table(kind: AlgorithmKind, t: &KeyTable) -> Result<Self> {
                Ok(match kind {
                    $(AlgorithmKind::$variant => Self::$variant(<$group>::from_keys(t).check()?),)*
                })
            }

            /// The key table of these parameters (the inverse of [`Self::from_table`]): the
            /// algorithm's keys from its group, every other key at its default.
            pub(crate) fn key_table(&self) -> KeyTable {
                let mut t = KeyTable::default();
                match self {
                    $(Self::$variant(p) => p.put_keys(&mut t),)*
                }
                t
            }

            /// Phase 2's configuration (step rule, local steps, solver, rounds), for the
            /// algorithms whose rounds are Phase 2's (every algorithm but `ifca-official` and
            /// `local`).
            pub fn phase2_config(&self) -> Option<Phase2Config> {
                match self {
                    $(Self::$variant($p2) => $phase2,)*
                }
            }

            /// How many trace rows a run records, where that is known before it runs (a
            /// progress bar's total): one per Phase 1 iteration and per round, plus a start row
            /// where the algorithm records its start as a Phase 1 row (`one-shot`'s clustering,
            /// SR-FCA's ONE_SHOT); `None` where the rows depend on the run (`ifca-official`
            /// reports the run its grid selects, `local` has no rounds).
            pub fn planned_rows(&self) -> Option<usize> {
                match self {
                    $(Self::$variant($rp) => $rows,)*
                }
            }
        }

        /// The algorithm of `params`, with initial models `init` (where the algorithm starts
        /// from models; `two-phase` takes the `1 × d` Phase 1 start) and, for
        /// `ifca-official`, the data's noise scale `data_sigma` (its success rule uses σ).
        pub fn build(
            params: &AlgorithmParams,
            init: Option<DMatrix<f64>>,
            data_sigma: Option<f64>,
        ) -> Box<dyn Algorithm> {
            match params.clone() {
                $(AlgorithmParams::$variant($params) => {
                    let $init = init;
                    let $sigma = data_sigma;
                    Box::new($build)
                })*
            }
        }

        /// The algorithms that take randomness from files (built without initial models).
        #[allow(unused_variables)]
        fn with_randomness(
            params: &AlgorithmParams,
            data_sigma: Option<f64>,
        ) -> Option<Box<dyn WithRandomness>> {
            match params.clone() {
                $(AlgorithmParams::$variant($params) => supplied_arm!($files {
                    let $init: Option<DMatrix<f64>> = None;
                    let $sigma = data_sigma;
                    $build
                }),)*
            }
        }

        /// Why algorithm `kind`'s randomness cannot be exported yet (a draw that is not
        /// suppliable).
        fn not_exportable(kind: AlgorithmKind) -> Option<&'static str> {
            match kind {
                $(AlgorithmKind::$variant => reason!($($why)?),)*
            }
        }
    };
}

algorithms! {
    /// `two-phase`: SXY22 Phase 1 and Phase 2.
    TwoPhase(TwoPhaseParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase1.iterations + p.phase2.rounds),
        build: |params, init, _| TwoPhase { params, init }, files: yes;
    /// `phase2`: SXY22 Phase 2 alone.
    Phase2(Phase2OnlyParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, init, _| Phase2Only { params, init, oracle: false }, files: yes;
    /// `oracle`: SXY22 Phase 2 from `θ*`.
    Oracle(Phase2OnlyParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, _, _| Phase2Only { params, init: None, oracle: true }, files: no;
    /// `ifca`: IFCA Algorithm 2.
    Ifca(IfcaConfig)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, init, _| Ifca { params, init }, files: yes;
    /// `ifca-official`: the IFCA authors' released protocol.
    IfcaOfficial(IfcaOfficialConfig)
        phase2: |_p| None,
        rows: |_p| None,
        build: |params, _, data_sigma| IfcaOfficial { params, data_sigma }, files: yes;
    /// `fedavg`: one model.
    Fedavg(FedAvgParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, _, _| FedAvg { params }, files: yes;
    /// `local`: per-client estimates.
    Local(LocalParams)
        phase2: |_p| None,
        rows: |_p| None,
        build: |params, _, _| Local { params }, files: no;
    /// `one-shot`: local estimates, k-means, Phase 2 within the clusters.
    OneShot(OneShotParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(1 + p.phase2.rounds),
        build: |params, _, _| OneShot { params }, files: no, not_exportable: "its k-means++ seeding";
    /// `oracle-labels`: Phase 2 with the true labels fixed.
    OracleLabels(OracleLabelsParams)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, _, _| OracleLabels { params }, files: no;
    /// `sr-fca`: SRFCA Algorithms 1–4.
    SrFca(SrfcaConfig)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(1 + p.refine_steps * (p.refine_rounds + 1)),
        build: |params, _, _| SrFca { params }, files: no;
    /// `cfl`: Sattler et al.'s clustered FL.
    Cfl(CflConfig)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, _, _| Cfl { params }, files: no, not_exportable: "its initial model";
    /// `fedsoft`: FedSoft (Ruan & Joe-Wong 2022).
    FedSoft(FedSoftConfig)
        phase2: |p| Some(p.phase2),
        rows: |p| Some(p.phase2.rounds),
        build: |params, init, _| FedSoft { params, init }, files: yes,
        not_exportable: "the personal models' common start w₀";
}

/// Reject a file algorithm `kind` does not use (it would be silently ignored).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming the flag.
pub fn check_accepted(kind: AlgorithmKind, given: &Randomness) -> Result<()> {
    let ok = kind.randomness();
    match given.kinds().into_iter().find(|(k, _)| !ok.contains(k)) {
        Some((k, path)) => Err(FedmixError::invalid(
            &format!("--{k}"),
            path.display(),
            if ok.is_empty() {
                format!("algorithm `{kind}` takes no randomness from files")
            } else {
                format!(
                    "algorithm `{kind}` does not use it (it takes: {})",
                    ok.iter()
                        .map(|k| format!("--{k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        )),
        None => Ok(()),
    }
}

/// An algorithm bound to its supplied randomness (what `--anchors` etc. build).
struct Bound {
    alg: Box<dyn WithRandomness>,
    given: Randomness,
}

impl Algorithm for Bound {
    fn kind(&self) -> AlgorithmKind {
        self.alg.kind()
    }
    fn run(&self, fed: &Federation, seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        self.alg.run_with(fed, seed, &self.given, rec)
    }
    fn live(
        &self,
        fed: &Federation,
        seed: u64,
        rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        self.alg.live_with(fed, seed, &self.given, rec)
    }
}

/// [`build`] with randomness from files, taking from `given` what the algorithm supplies.
///
/// # Errors
/// A file the algorithm does not use ([`check_accepted`]).
pub fn build_with(
    params: &AlgorithmParams,
    given: Randomness,
    data_sigma: Option<f64>,
) -> Result<Box<dyn Algorithm>> {
    check_accepted(params.kind(), &given)?;
    Ok(match with_randomness(params, data_sigma) {
        Some(alg) => Box::new(Bound { alg, given }),
        None => build(params, None, data_sigma),
    })
}

/// Everything algorithm `kind` would draw on `fed` with `seed`, `given` taking precedence
/// (what `--export-randomness` writes). Algorithms that draw nothing give an empty set.
///
/// # Errors
/// As the algorithm's checks; [`FedmixError::InvalidParameter`] naming
/// `--export-randomness` for the algorithms in which some draw is not suppliable yet.
pub fn resolve(
    params: &AlgorithmParams,
    fed: &Federation,
    seed: u64,
    given: &Randomness,
    data_sigma: Option<f64>,
) -> Result<Randomness> {
    let kind = params.kind();
    check_accepted(kind, given)?;
    if let Some(what) = not_exportable(kind) {
        return Err(FedmixError::invalid(
            "--export-randomness",
            kind,
            format!("not supported for `{kind}` yet ({what} cannot be supplied from a file)"),
        ));
    }
    match with_randomness(params, data_sigma) {
        Some(alg) => alg.resolve(fed, seed, given),
        None => Ok(Randomness::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::randomness::{AnchorsFile, Supplied};
    use crate::params::Phase1Variant;
    use crate::params::{check_applicable, keys_of, KeyTable};
    use crate::synthetic::{generate_named, sets};

    // The key lists (`keys_of`) are exactly what parsing refuses for an algorithm, so they must
    // never omit a key the algorithm reads: every algorithm is run with every key outside its
    // list changed to a valid non-default value, and its typed parameters and its final models
    // and labels must be bit-identical. (A typed group may still hold a field its algorithm
    // ignores, e.g. the oracle's `init_scale`; parsing never sets it from an unlisted key.)
    // (`KEYS` agrees with the key table's fields; a key the
    // lists name is a real key.)
    /// A valid value of `key` that differs from the base configuration below (its declared
    /// example).
    fn other_value(key: &str) -> &'static str {
        crate::params::KEY_SPECS
            .iter()
            .find(|s| s.name == key)
            .map_or_else(|| panic!("no key `{key}`"), |s| s.example)
    }

    const BASE: &[(&str, &str)] = &[
        ("rounds", "5"),
        ("ifca_official_iterations", "5"),
        ("ifca_official_inits", "3"),
        ("srfca_refine_rounds", "10"),
        ("kmeans_max_iter", "20"),
    ];

    #[test]
    fn keys_agree_with_the_configuration_fields() {
        let json = serde_json::to_value(KeyTable::default()).unwrap();
        let fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut declared: Vec<&str> = crate::params::KEYS.to_vec();
        let mut serialised = fields.clone();
        declared.sort_unstable();
        serialised.sort_unstable();
        assert_eq!(declared, serialised);
        for kind in AlgorithmKind::ALL {
            for key in keys_of(kind) {
                assert!(crate::params::KEYS.contains(&key), "{kind}: {key}");
            }
        }
        // Every key is read by at least one algorithm.
        for key in crate::params::KEYS {
            assert!(
                AlgorithmKind::ALL.iter().any(|&k| keys_of(k).contains(key)),
                "{key} is read by no algorithm"
            );
        }
    }

    #[test]
    fn keys_outside_an_algorithms_list_do_not_change_its_result() {
        let fed = generate_named(
            "sxy-balanced",
            3,
            &sets(&[("d", "6"), ("clients", "24"), ("samples", "20"), ("k", "2")]),
        )
        .unwrap()
        .train;
        let base = KeyTable::from_sources(None, &sets(BASE)).unwrap();
        let mut checked = 0;
        for kind in AlgorithmKind::ALL {
            let run = |cfg: &KeyTable| {
                let params = AlgorithmParams::from_table(kind, cfg).unwrap();
                let alg = build(&params, None, Some(0.3));
                alg.run(&fed, 11, &mut Recorder::quiet())
                    .map(|o| {
                        (
                            o.theta_hat.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                            o.labels,
                        )
                    })
                    .map_err(|e| e.to_string())
            };
            let reference = run(&base);
            assert!(reference.is_ok(), "{kind}: {reference:?}");
            let reads = keys_of(kind);
            for key in crate::params::KEYS.iter().filter(|k| !reads.contains(k)) {
                let mut s = sets(BASE);
                s.retain(|(k, _)| k != key);
                s.push((key.to_string(), other_value(key).to_string()));
                let cfg = KeyTable::from_sources(None, &s)
                    .unwrap_or_else(|e| panic!("{key} = {}: {e}", other_value(key)));
                assert_ne!(cfg, base, "{key}: the test value equals the base");
                assert_eq!(
                    run(&cfg),
                    reference,
                    "{kind} reads `{key}` but does not list it"
                );
                assert!(check_applicable(kind, [(*key, "1".to_string())]).is_err());
                checked += 1;
            }
            assert!(check_applicable(kind, reads.iter().map(|k| (*k, "1".to_string()))).is_ok());
        }
        assert!(checked > 300, "{checked}");
    }

    #[test]
    fn unused_files_are_refused() {
        let given = Randomness {
            anchors: Some(Supplied {
                source: "a.json".into(),
                value: AnchorsFile {
                    variant: Phase1Variant::Practical,
                    anchors: vec![],
                    client_sets: None,
                },
            }),
            ..Randomness::default()
        };
        assert!(check_accepted(AlgorithmKind::TwoPhase, &given).is_ok());
        assert!(check_accepted(AlgorithmKind::Ifca, &given).is_err());
        assert!(check_accepted(AlgorithmKind::Local, &given).is_err());
        assert_eq!(AlgorithmKind::Phase2.randomness(), &["init"]);
    }

    /// `files: yes` in the list is exactly the algorithms whose declaration takes randomness
    /// from files (`algorithm_kinds!`'s `randomness`).
    #[test]
    fn files_agree_with_the_declared_randomness() {
        for kind in AlgorithmKind::ALL {
            let p = AlgorithmParams::default_for(kind);
            assert_eq!(
                with_randomness(&p, None).is_some(),
                !kind.randomness().is_empty(),
                "{kind}"
            );
        }
    }

    #[test]
    fn every_kind_builds_the_algorithm_that_reports_it() {
        for kind in AlgorithmKind::ALL {
            let p = AlgorithmParams::default_for(kind);
            assert_eq!(build(&p, None, None).kind(), kind);
            assert_eq!(
                build_with(&p, Randomness::default(), None).unwrap().kind(),
                kind
            );
        }
    }
}
