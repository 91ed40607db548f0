//! A run stepped round by round ([`Prepared::session`]) is the run: on the golden federation
//! (`tests/data/golden/`: `sxy-balanced`, d = 8, M = 30, k = 3), for every algorithm whose
//! rounds are one executor loop, stepping to the end gives the trace, the iterates, the labels,
//! the output and the summary of [`Prepared::run`] bit for bit; between rounds the session's
//! state is that round's models and labels; the algorithms that run only to completion have
//! no session, as their declaration says.

mod common;

use common::{golden, prepared};
use fedmix::params::{keys_of, AlgorithmKind};
use fedmix::runner::{Prepared, Provenance};
use nalgebra::DMatrix;

fn bits(m: &DMatrix<f64>) -> (usize, usize, Vec<u64>) {
    (
        m.nrows(),
        m.ncols(),
        m.iter().map(|v| v.to_bits()).collect(),
    )
}

/// Step `prep` to its end, checking the state after every round against the recorder, then
/// compare everything with `prep.run`.
fn stepped_equals_run(prep: &Prepared, name: &str) {
    let (out, rec) = prep.run(true).unwrap();
    let mut s = prep
        .session()
        .unwrap()
        .unwrap_or_else(|| panic!("{name}: no session"));
    let before = s.recorder().rows.len();
    // The live state's round count at the start: 0, or the rows recorded before it where the
    // algorithm numbers its rounds by trace row (SR-FCA after ONE_SHOT).
    let first = s.round().expect("running");
    let mut rounds = 0;
    while s.advance().unwrap() {
        rounds += 1;
        // Between rounds: the live state is the round just recorded.
        let r = s.recorder();
        let (models, labels) = s.state().expect("running");
        assert_eq!(
            bits(models),
            bits(r.iterates.last().unwrap()),
            "{name}: round {rounds}"
        );
        assert_eq!(
            labels,
            r.labels.last().map(Vec::as_slice),
            "{name}: round {rounds}"
        );
        assert_eq!(s.round(), Some(first + rounds), "{name}");
        assert_eq!(r.rows.len(), before + rounds, "{name}: one row per round");
    }
    assert!(rounds > 0, "{name}: no round ran");
    assert!(!s.advance().unwrap(), "{name}: nothing runs after the stop");
    let sr = s.recorder();
    let json = |v: &dyn Text| v.text();
    assert_eq!(json(&sr.rows), json(&rec.rows), "{name}: trace");
    assert_eq!(sr.iterates.len(), rec.iterates.len(), "{name}");
    for (a, b) in sr.iterates.iter().zip(&rec.iterates) {
        assert_eq!(bits(a), bits(b), "{name}: iterates");
    }
    assert_eq!(sr.labels, rec.labels, "{name}: iterate labels");
    assert_eq!(sr.iterate_rounds, rec.iterate_rounds, "{name}");
    let so = s.output().expect("stopped");
    assert_eq!(bits(&so.theta_hat), bits(&out.theta_hat), "{name}: θ̂");
    assert_eq!(so.labels, out.labels, "{name}: labels");
    assert_eq!(so.termination, out.termination, "{name}");
    let prov = Provenance::default();
    assert_eq!(
        prep.summary(so, sr, &prov),
        prep.summary(&out, &rec, &prov),
        "{name}: summary"
    );
}

/// JSON text of a serializable value (floats in shortest round-trip form, so equal text is
/// equal bits; NaN becomes `null` on both sides).
trait Text {
    fn text(&self) -> String;
}

impl<T: serde::Serialize> Text for T {
    fn text(&self) -> String {
        serde_json::to_string(self).unwrap()
    }
}

#[test]
fn every_live_algorithm_steps_to_the_run_bit_for_bit() {
    let (ds, t0) = golden();
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<DMatrix<f64>>);
    let cases: Vec<Case> = vec![
        (
            "phase2",
            vec![("rounds", "12"), ("local_steps", "5")],
            Some(t0.clone()),
        ),
        (
            "phase2",
            vec![("rounds", "8"), ("local_solver", "fedprox")],
            Some(t0.clone()),
        ),
        ("oracle", vec![("rounds", "10")], None),
        ("oracle-labels", vec![("rounds", "10")], None),
        ("one-shot", vec![("rounds", "10")], None),
        (
            "fedavg",
            vec![("rounds", "15"), ("participation", "0.5")],
            None,
        ),
        ("cfl", vec![("rounds", "30")], None),
        // One restart from given models; three restarts (chosen among them in the session's
        // constructor) with half the clients per round.
        ("ifca", vec![("rounds", "10")], Some(t0.clone())),
        (
            "ifca",
            vec![("rounds", "8"), ("restarts", "3"), ("participation", "0.5")],
            None,
        ),
        ("sr-fca", vec![], None),
        (
            "fedsoft",
            vec![("rounds", "12"), ("fedsoft_interval", "3")],
            Some(t0.clone()),
        ),
        (
            "two-phase",
            vec![
                ("phase1_iterations", "4"),
                ("anchors", "6"),
                ("anchor_min_samples", "8"),
                ("rounds", "8"),
            ],
            None,
        ),
    ];
    // Every live algorithm has a case here.
    for k in AlgorithmKind::ALL.into_iter().filter(|k| k.live_session()) {
        assert!(
            cases.iter().any(|c| c.0 == k.as_str()),
            "{k}: live, no case"
        );
    }
    for (kind, sets, init) in cases {
        let prep = prepared(&ds, kind, &sets, init.as_ref());
        stepped_equals_run(&prep, &format!("{kind} {sets:?}"));
    }
}

#[test]
fn two_phase_records_phase1_before_its_first_round() {
    let (ds, _) = golden();
    let sets = [
        ("phase1_iterations", "4"),
        ("anchors", "6"),
        ("anchor_min_samples", "8"),
        ("rounds", "3"),
    ];
    let prep = prepared(&ds, "two-phase", &sets, None);
    let s = prep.session().unwrap().expect("live");
    let rows = &s.recorder().rows;
    assert!(!rows.is_empty(), "Phase 1 rows are recorded at the start");
    assert!(rows.iter().all(|r| r.phase.as_str() == "phase1"));
    assert_eq!(s.round(), Some(0));
}

/// The declaration's `live` (`AlgorithmKind::live_session`, which `docs/algorithms.md` and
/// Python's `describe` print) is what each algorithm's `Prepared::session` does: a session for
/// every live algorithm, none for those that run only to completion; and the planned rows
/// (`Prepared::planned_rows`, a progress bar's total, declared with each algorithm in
/// `algorithms::registry`) are the rows the run records, known beforehand for every algorithm
/// but the two whose rows depend on the run.
#[test]
fn each_algorithm_has_a_session_and_planned_rows_exactly_as_declared() {
    let (ds, _) = golden();
    // Small budgets where the algorithm reads the key (a two-phase session runs Phase 1).
    let small = [
        ("rounds", "3"),
        ("phase1_iterations", "4"),
        ("anchors", "6"),
        ("anchor_min_samples", "8"),
    ];
    for kind in AlgorithmKind::ALL {
        let reads = keys_of(kind);
        let sets: Vec<(&str, &str)> = small
            .iter()
            .copied()
            .filter(|(k, _)| reads.contains(k))
            .collect();
        let prep = prepared(&ds, kind.as_str(), &sets, None);
        let live = prep.session().unwrap().is_some();
        assert_eq!(live, kind.live_session(), "{kind}");
        // `ifca-official` reports the run its grid selects (its rows end where that run
        // diverged); `local` has no rounds.
        let unknown = matches!(kind, AlgorithmKind::IfcaOfficial | AlgorithmKind::Local);
        assert_eq!(prep.planned_rows().is_none(), unknown, "{kind}");
        if let Some(n) = prep.planned_rows() {
            let (_, rec) = prep.run(false).unwrap();
            assert_eq!(n, rec.rows.len(), "{kind}: planned rows");
        }
    }
}
