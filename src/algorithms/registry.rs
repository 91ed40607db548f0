//! Every algorithm by kind: construction from its typed [`AlgorithmParams`], and binding to randomness
//! supplied from files (`--init`, `--anchors`, `--q0`, `--power-start`, `--participation`).

use super::fedavg::FedAvg;
use super::fedsoft::FedSoft;
use super::ifca::{Ifca, IfcaOfficial};
use super::two_phase::{Phase2Only, TwoPhase};
use super::{cfl, local, one_shot, oracle_labels, sr_fca};
use crate::engine::contract::{Algorithm, LiveRun, RunOutput, WithRandomness};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{AlgorithmKind, AlgorithmParams};
use nalgebra::DMatrix;

/// The algorithm of `params`, with initial models `init` (where the algorithm starts from
/// models; `two-phase` takes the `1 × d` Phase 1 start) and, for `ifca-official`, the data's
/// noise scale `data_sigma` (its success rule uses σ).
pub fn build(
    params: &AlgorithmParams,
    init: Option<DMatrix<f64>>,
    data_sigma: Option<f64>,
) -> Box<dyn Algorithm> {
    match params.clone() {
        AlgorithmParams::TwoPhase(params) => Box::new(TwoPhase { params, init }),
        AlgorithmParams::Phase2(params) => Box::new(Phase2Only {
            params,
            init,
            oracle: false,
        }),
        AlgorithmParams::Oracle(params) => Box::new(Phase2Only {
            params,
            init: None,
            oracle: true,
        }),
        AlgorithmParams::Ifca(params) => Box::new(Ifca { params, init }),
        AlgorithmParams::IfcaOfficial(params) => Box::new(IfcaOfficial { params, data_sigma }),
        AlgorithmParams::Fedavg(params) => Box::new(FedAvg { params }),
        AlgorithmParams::Local(params) => Box::new(local::Local { params }),
        AlgorithmParams::OneShot(params) => Box::new(one_shot::OneShot { params }),
        AlgorithmParams::OracleLabels(params) => Box::new(oracle_labels::OracleLabels { params }),
        AlgorithmParams::SrFca(params) => Box::new(sr_fca::SrFca { params }),
        AlgorithmParams::Cfl(params) => Box::new(cfl::Cfl { params }),
        AlgorithmParams::FedSoft(params) => Box::new(FedSoft { params, init }),
    }
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

/// The algorithms that take randomness from files.
fn with_randomness(
    params: &AlgorithmParams,
    data_sigma: Option<f64>,
) -> Option<Box<dyn WithRandomness>> {
    Some(match params.clone() {
        AlgorithmParams::TwoPhase(params) => Box::new(TwoPhase { params, init: None }),
        AlgorithmParams::Phase2(params) => Box::new(Phase2Only {
            params,
            init: None,
            oracle: false,
        }),
        AlgorithmParams::Ifca(params) => Box::new(Ifca { params, init: None }),
        AlgorithmParams::Fedavg(params) => Box::new(FedAvg { params }),
        AlgorithmParams::IfcaOfficial(params) => Box::new(IfcaOfficial { params, data_sigma }),
        AlgorithmParams::FedSoft(params) => Box::new(FedSoft { params, init: None }),
        _ => return None,
    })
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

/// Why algorithm `kind`'s randomness cannot be exported yet (a draw that is not suppliable).
fn not_exportable(kind: AlgorithmKind) -> Option<&'static str> {
    match kind {
        AlgorithmKind::OneShot => Some("its k-means++ seeding"),
        AlgorithmKind::Cfl => Some("its initial model"),
        AlgorithmKind::FedSoft => Some("the personal models' common start w₀"),
        _ => None,
    }
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
