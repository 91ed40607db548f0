//! Property: `fedmix validate` cannot be fooled by a broken candidate. For random small
//! federations (the library's `sxy-balanced` generator) and every algorithm `validate` takes,
//! the reference's own trajectory (iterates, NaN-padded where a round has fewer models, and
//! labels, `-1` for unassigned) passes, and corrupting any single entry is rejected in exactly
//! the round it is in:
//!
//! - one model entry set to NaN, +inf or −inf (any round): that round fails, its bad entry and
//!   worst model/coordinate name the corrupted entry;
//! - one entry of the last round changed by a relative 1e-6 (by ten times the round's tolerance
//!   when 1e-6 of the entry is within it, e.g. an entry of 0): the last round fails, its worst
//!   model/coordinate name the entry;
//! - one client's label in one round changed to another valid one (another model of the round,
//!   or `-1`): that round fails, naming that client.
//!
//! Every corruption leaves every other round passing: the reported failing round is the
//! corrupted one. Each case runs the untouched candidate and the five corruptions, so
//! `CASES` cases per algorithm (on average: each case draws its algorithm) make `6 × CASES`
//! comparisons.

use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::randomness::Randomness;
use fedmix::io::Dataset;
use fedmix::params::AlgorithmKind;
use fedmix::prec::amax_nan;
use fedmix::runner::{prepare, tolerance, Prepared};
use fedmix::synthetic::generate_named;
use fedmix::validate::{BadEntry, Candidate, Side, Tolerance, ValidationReport};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;

/// Cases per algorithm (each: one reference run, six comparisons, each rerunning it).
const CASES: u32 = 64;

/// A small federation: `(seed, d, clients, samples, k, rounds)`.
type Shape = (u64, usize, usize, usize, usize, usize);

fn federation() -> impl Strategy<Value = Shape> {
    (
        0u64..1000,
        2usize..=4,
        8usize..=14,
        20usize..=28,
        2usize..=3,
        2usize..=4,
    )
}

/// Keys that keep each algorithm's run to a few rounds and make the ones whose number of models
/// varies (CFL splits, SR-FCA merges) vary it early.
fn keys(kind: AlgorithmKind, rounds: usize) -> Vec<(String, String)> {
    let r = rounds.to_string();
    let pairs: Vec<(&str, &str)> = match kind {
        AlgorithmKind::Local => vec![],
        AlgorithmKind::Ifca => vec![("rounds", &r), ("restarts", "1")],
        AlgorithmKind::IfcaOfficial => vec![
            ("ifca_official_inits", "1"),
            ("ifca_official_lrs", "[0.05]"),
            ("ifca_official_iterations", &r),
        ],
        AlgorithmKind::SrFca => vec![
            ("srfca_refine_steps", "2"),
            ("srfca_refine_rounds", "1"),
            ("srfca_local_iterations", "3"),
            // Size 2 can leave clients unassigned (label -1); size 1 never does.
            ("srfca_size", if rounds % 2 == 0 { "2" } else { "1" }),
        ],
        AlgorithmKind::Cfl => vec![
            ("rounds", &r),
            ("cfl_warmup_rounds", "0"),
            ("cfl_eps1", "1e9"),
            ("cfl_eps2", "1e-12"),
        ],
        _ => vec![("rounds", &r)],
    };
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The reference run and its own trajectory as a candidate would write it.
struct Trajectory {
    prep: Prepared,
    /// C order `rounds × K_max × d`, NaN-padded.
    iterates: Vec<f64>,
    shape: [usize; 3],
    /// C order `rounds × M`, `-1` for unassigned.
    labels: Vec<i64>,
    /// Models of each round.
    models: Vec<usize>,
}

/// `None` when the reference itself refuses this federation (a typed error, e.g. too few
/// anchor candidates for two-phase): the case is rejected, not counted.
fn reference(kind: AlgorithmKind, shape: Shape) -> Option<Trajectory> {
    let (seed, d, clients, samples, k, rounds) = shape;
    let data = [
        ("d", d),
        ("clients", clients),
        ("samples", samples),
        ("k", k),
    ];
    let sets: Vec<(String, String)> = data
        .iter()
        .map(|(key, v)| (key.to_string(), v.to_string()))
        .collect();
    let ds = Dataset::from(generate_named("sxy-balanced", seed, &sets).ok()?);
    let params = AlgorithmParams::from_sources(kind, None, &keys(kind, rounds)).ok()?;
    let prep = prepare(
        params,
        std::sync::Arc::new(ds),
        seed,
        Randomness::default(),
        false,
    )
    .ok()?;
    let (_, rec) = prep.run(true).ok()?;
    let k_max = rec.iterates.iter().map(|m| m.ncols()).max()?;
    let iterates: Vec<f64> = rec
        .iterates
        .iter()
        .flat_map(|m| {
            let pad = (k_max - m.ncols()) * d;
            m.as_slice()
                .iter()
                .copied()
                .chain(std::iter::repeat_n(f64::NAN, pad))
        })
        .collect();
    assert_eq!(
        rec.labels.len(),
        rec.iterates.len(),
        "{kind}: labels every round"
    );
    let labels = rec
        .labels
        .iter()
        .flatten()
        .map(|&l| match l == fedmix::metrics::UNASSIGNED {
            true => -1,
            false => l as i64,
        })
        .collect();
    Some(Trajectory {
        shape: [rec.iterates.len(), k_max, d],
        models: rec.iterates.iter().map(|m| m.ncols()).collect(),
        prep,
        iterates,
        labels,
    })
}

impl Trajectory {
    fn validate(&self, iterates: &[f64], labels: &[i64], tol: Tolerance) -> ValidationReport {
        let m = self.prep.dataset().train.num_clients();
        let candidate = Candidate {
            iterates,
            shape: &self.shape,
            labels: Some((labels, &[self.shape[0], m])),
        };
        self.prep
            .validate(&candidate, tol)
            .expect("the candidate has the reference's shape")
    }

    /// Flat index of (round, model, coordinate).
    fn at(&self, t: usize, j: usize, c: usize) -> usize {
        (t * self.shape[1] + j) * self.shape[2] + c
    }

    /// A (model, coordinate) of a model round `t` has, from two indices.
    fn pick(&self, t: usize, j: Index, c: Index) -> (usize, usize) {
        (j.index(self.models[t]), c.index(self.shape[2]))
    }
}

/// Only round `t` (0-based) fails, and it is the first failure.
fn only_round_fails(rep: &ValidationReport, t: usize) -> Result<(), TestCaseError> {
    prop_assert!(!rep.passed);
    prop_assert_eq!(rep.first_failure, Some(t + 1));
    let failing: Vec<usize> = rep
        .rounds
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.round)
        .collect();
    prop_assert_eq!(failing, vec![t + 1]);
    Ok(())
}

fn check(kind: AlgorithmKind, shape: Shape, picks: [Index; 8]) -> Result<(), TestCaseError> {
    let traj = reference(kind, shape);
    prop_assume!(traj.is_some());
    let traj = traj.unwrap();
    let tol = tolerance(1e-9, 0.0).unwrap();
    let (rounds, d) = (traj.shape[0], traj.shape[2]);
    // The untouched trajectory passes.
    let rep = traj.validate(&traj.iterates, &traj.labels, tol);
    prop_assert!(
        rep.passed,
        "{kind}: own trajectory fails: {:?}",
        rep.diagnosis
    );
    prop_assert!(rep.rounds.iter().all(|r| r.bad_entry.is_none()));
    // One non-finite entry fails its round, and names it.
    let t = picks[0].index(rounds);
    let (j, c) = traj.pick(t, picks[1], picks[2]);
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut it = traj.iterates.clone();
        it[traj.at(t, j, c)] = v;
        let rep = traj.validate(&it, &traj.labels, tol);
        only_round_fails(&rep, t)?;
        let r = &rep.rounds[t];
        prop_assert_eq!((r.worst_model, r.worst_coordinate), (j, c));
        let named = matches!(
            &r.bad_entry,
            Some(BadEntry::NonFinite { side: Side::Candidate, model, coordinate, .. })
                if (*model, *coordinate) == (j, c)
        );
        prop_assert!(named, "{kind}: {v} at ({t}, {j}, {c}): {:?}", r.bad_entry);
    }
    // A small change of one entry of the last round.
    let last = rounds - 1;
    let (j, c) = traj.pick(last, picks[3], picks[4]);
    let i = traj.at(last, j, c);
    let x = traj.iterates[i];
    let lo = last * traj.shape[1] * d;
    let scale = amax_nan(&traj.iterates[lo..lo + traj.models[last] * d]);
    let round_tol = tol.atol + tol.rtol * scale;
    let delta = (1e-6 * x.abs())
        .max(10.0 * round_tol)
        .max(f64::MIN_POSITIVE);
    let mut it = traj.iterates.clone();
    it[i] = x + delta;
    let rep = traj.validate(&it, &traj.labels, tol);
    only_round_fails(&rep, last)?;
    let r = &rep.rounds[last];
    prop_assert_eq!((r.worst_model, r.worst_coordinate), (j, c));
    prop_assert!(r.bad_entry.is_none() && r.max_abs_deviation > 0.0);
    // One label changed to another valid one (another model of the round, or -1).
    let m = traj.prep.dataset().train.num_clients();
    let t = picks[5].index(rounds);
    let client = picks[6].index(m);
    let was = traj.labels[t * m + client];
    let others: Vec<i64> = (-1..traj.models[t] as i64).filter(|&l| l != was).collect();
    let mut labels = traj.labels.clone();
    labels[t * m + client] = others[picks[7].index(others.len())];
    let rep = traj.validate(&traj.iterates, &labels, tol);
    only_round_fails(&rep, t)?;
    prop_assert_eq!(
        rep.rounds[t].label_disagreements.as_deref(),
        Some(&[client][..])
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // CASES per algorithm on average: each case draws the algorithm, so a new entry of
        // `algorithm_kinds!` is covered without a line here.
        cases: CASES * AlgorithmKind::ALL.len() as u32,
        // Integration tests have no lib.rs for the default persistence to find.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/validate_props.txt",
        ))),
        ..ProptestConfig::default()
    })]
    /// The property on every algorithm `validate` takes (`AlgorithmKind::ALL`, what
    /// `--algorithm` parses).
    #[test]
    fn every_algorithm(
        kind in proptest::sample::select(AlgorithmKind::ALL.to_vec()),
        shape in federation(),
        picks in any::<[Index; 8]>(),
    ) {
        check(kind, shape, picks)?;
    }
}
