//! Every algorithm by kind: construction from a [`RunConfig`], and binding to randomness
//! supplied from files (`--init`, `--anchors`, `--q0`, `--power-start`, `--participation`).

use super::fedavg::FedAvg;
use super::ifca::{Ifca, IfcaOfficial};
use super::two_phase::{Phase2Only, TwoPhase};
use super::{cfl, local, one_shot, oracle_labels, sr_fca};
use crate::engine::contract::{Algorithm, RunOutput, WithRandomness};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{AlgorithmKind, RunConfig};
use nalgebra::DMatrix;

/// The algorithm `kind` with configuration `cfg`, initial models `init` (where the algorithm
/// starts from models; `two-phase` takes the `1 × d` Phase 1 start) and, for `ifca-official`,
/// the data's noise scale `data_sigma` (its success rule uses σ). Algorithms on typed
/// parameters get them validated here, once.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming a key out of range.
pub fn build(
    kind: AlgorithmKind,
    cfg: &RunConfig,
    init: Option<DMatrix<f64>>,
    data_sigma: Option<f64>,
) -> Result<Box<dyn Algorithm>> {
    Ok(match kind {
        AlgorithmKind::TwoPhase => Box::new(TwoPhase {
            params: cfg.two_phase(),
            init,
        }),
        AlgorithmKind::Phase2 => Box::new(Phase2Only {
            params: cfg.phase2_only(),
            init,
            oracle: false,
        }),
        AlgorithmKind::Oracle => Box::new(Phase2Only {
            params: cfg.phase2_only(),
            init: None,
            oracle: true,
        }),
        AlgorithmKind::Ifca => Box::new(Ifca {
            params: cfg.ifca()?,
            init,
        }),
        AlgorithmKind::IfcaOfficial => Box::new(IfcaOfficial {
            params: cfg.ifca_official()?,
            data_sigma,
        }),
        AlgorithmKind::Fedavg => Box::new(FedAvg {
            params: cfg.fedavg()?,
        }),
        AlgorithmKind::Local => Box::new(local::Local {
            params: cfg.local()?,
        }),
        AlgorithmKind::OneShot => Box::new(one_shot::OneShot {
            params: cfg.one_shot()?,
        }),
        AlgorithmKind::OracleLabels => Box::new(oracle_labels::OracleLabels {
            params: cfg.oracle_labels(),
        }),
        AlgorithmKind::SrFca => Box::new(sr_fca::SrFca {
            params: cfg.srfca()?,
        }),
        AlgorithmKind::Cfl => Box::new(cfl::Cfl { params: cfg.cfl()? }),
    })
}

/// [`build`] for a public name (as written in a file or on the command line).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming `algorithm` and listing the names.
pub fn by_name(
    name: &str,
    cfg: &RunConfig,
    init: Option<DMatrix<f64>>,
    data_sigma: Option<f64>,
) -> Result<Box<dyn Algorithm>> {
    build(AlgorithmKind::parse(name)?, cfg, init, data_sigma)
}

/// The kinds of randomness algorithm `kind` can take from files (flag names).
pub fn accepted(kind: AlgorithmKind) -> &'static [&'static str] {
    match kind {
        AlgorithmKind::TwoPhase => &["init", "anchors", "q0", "power-start"],
        AlgorithmKind::Phase2 => &["init"],
        AlgorithmKind::Ifca | AlgorithmKind::Fedavg => &["init", "participation"],
        AlgorithmKind::IfcaOfficial => &["init"],
        _ => &[],
    }
}

/// Reject a file algorithm `kind` does not use (it would be silently ignored).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming the flag.
pub fn check_accepted(kind: AlgorithmKind, given: &Randomness) -> Result<()> {
    let ok = accepted(kind);
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
}

/// The algorithms that take randomness from files.
fn with_randomness(
    kind: AlgorithmKind,
    cfg: &RunConfig,
    data_sigma: Option<f64>,
) -> Result<Option<Box<dyn WithRandomness>>> {
    Ok(Some(match kind {
        AlgorithmKind::TwoPhase => Box::new(TwoPhase {
            params: cfg.two_phase(),
            init: None,
        }),
        AlgorithmKind::Phase2 => Box::new(Phase2Only {
            params: cfg.phase2_only(),
            init: None,
            oracle: false,
        }),
        AlgorithmKind::Ifca => Box::new(Ifca {
            params: cfg.ifca()?,
            init: None,
        }),
        AlgorithmKind::Fedavg => Box::new(FedAvg {
            params: cfg.fedavg()?,
        }),
        AlgorithmKind::IfcaOfficial => Box::new(IfcaOfficial {
            params: cfg.ifca_official()?,
            data_sigma,
        }),
        _ => return Ok(None),
    }))
}

/// [`build`] with randomness from files: algorithm `kind`, taking from `given` what it
/// supplies.
///
/// # Errors
/// A file the algorithm does not use ([`check_accepted`]).
pub fn by_name_with(
    kind: AlgorithmKind,
    cfg: &RunConfig,
    given: Randomness,
    data_sigma: Option<f64>,
) -> Result<Box<dyn Algorithm>> {
    let alg = build(kind, cfg, None, data_sigma)?;
    check_accepted(kind, &given)?;
    Ok(match with_randomness(kind, cfg, data_sigma)? {
        Some(alg) => Box::new(Bound { alg, given }),
        None => alg,
    })
}

/// Why algorithm `kind`'s randomness cannot be exported yet (a draw that is not suppliable).
fn not_exportable(kind: AlgorithmKind) -> Option<&'static str> {
    match kind {
        AlgorithmKind::OneShot => Some("its k-means++ seeding"),
        AlgorithmKind::Cfl => Some("its initial model"),
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
    kind: AlgorithmKind,
    cfg: &RunConfig,
    fed: &Federation,
    seed: u64,
    given: &Randomness,
    data_sigma: Option<f64>,
) -> Result<Randomness> {
    check_accepted(kind, given)?;
    if let Some(what) = not_exportable(kind) {
        return Err(FedmixError::invalid(
            "--export-randomness",
            kind,
            format!("not supported for `{kind}` yet ({what} cannot be supplied from a file)"),
        ));
    }
    match with_randomness(kind, cfg, data_sigma)? {
        Some(alg) => alg.resolve(fed, seed, given),
        None => Ok(Randomness::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::randomness::{AnchorsFile, Supplied};
    use crate::params::Phase1Variant;

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
        assert_eq!(accepted(AlgorithmKind::Phase2), &["init"]);
    }

    #[test]
    fn every_kind_builds_the_algorithm_that_reports_it() {
        let cfg = RunConfig::default();
        for kind in AlgorithmKind::ALL {
            assert_eq!(build(kind, &cfg, None, None).unwrap().kind(), kind);
            assert_eq!(
                by_name(kind.as_str(), &cfg, None, None).unwrap().kind(),
                kind
            );
        }
        assert!(by_name("two_phase", &cfg, None, None).is_err());
    }
}
