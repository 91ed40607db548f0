//! One-step (teacher-forced) validation (`fedmix validate --one-step`) on the golden federation
//! (`tests/data/golden/`: `sxy-balanced`, d = 8, M = 30, k = 3):
//! - every covered algorithm's own trajectory passes, bit for bit (the step reproduces the
//!   run's round from the same models, participants included); the others are refused with a
//!   typed error before anything runs;
//! - a correct candidate that breaks one choice differently at round `t` and continues
//!   consistently from it fails trajectory mode from round `t` on, one-step mode at round `t`
//!   only;
//! - a candidate with twice the step fails trajectory mode from round 1 with one diagnosis, and
//!   one-step mode at every round with the same one (factor 2.000).

mod common;

use common::{golden, prepared};
use fedmix::algorithms::fedx_clustering::phase2_round_fused;
use fedmix::error::FedmixError;
use fedmix::io::Dataset;
use fedmix::params::AlgorithmKind;
use fedmix::runner::{tolerance, Prepared};
use fedmix::validate::{Candidate, Mode, ValidationReport};
use nalgebra::DMatrix;
use std::path::Path;
use std::sync::Arc;

/// A trajectory as a candidate gives it: C-order `rounds × k × d` models, `rounds × M` labels.
struct Trajectory {
    models: Vec<f64>,
    shape: Vec<usize>,
    labels: Vec<i64>,
    label_shape: Vec<usize>,
}

impl Trajectory {
    fn new(models: &[DMatrix<f64>], labels: &[Vec<usize>]) -> Self {
        let (d, k) = models[0].shape();
        Self {
            models: models.iter().flat_map(|m| m.as_slice().to_vec()).collect(),
            shape: vec![models.len(), k, d],
            labels: labels.iter().flatten().map(|&l| l as i64).collect(),
            label_shape: vec![labels.len(), labels[0].len()],
        }
    }

    fn of_run(prep: &Prepared) -> Self {
        let (_, rec) = prep.run(true).unwrap();
        Self::new(&rec.iterates, &rec.labels)
    }

    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            iterates: &self.models,
            shape: &self.shape,
            labels: Some((&self.labels, &self.label_shape)),
        }
    }
}

fn check(prep: &Prepared, c: &Trajectory, mode: Mode) -> ValidationReport {
    let tol = tolerance(1e-9, 0.0).unwrap();
    prep.validate_as(mode, &c.candidate(), tol).unwrap()
}

fn failing(r: &ValidationReport) -> Vec<usize> {
    r.rounds.iter().filter(|r| !r.ok).map(|r| r.round).collect()
}

#[test]
fn every_covered_algorithm_passes_on_its_own_trajectory_and_the_others_are_refused() {
    let (ds, theta0) = golden();
    /// Algorithm, keys, starts from `theta0.npy`.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: &[Case<'_>] = &[
        (
            "phase2",
            &[("eta", "0.05"), ("local_steps", "5"), ("rounds", "8")],
            true,
        ),
        (
            "phase2",
            &[
                ("eta", "0.05"),
                ("local_solver", "fedprox"),
                ("rounds", "8"),
            ],
            true,
        ),
        (
            "two-phase",
            &[
                ("eta", "0.05"),
                ("phase1_iterations", "4"),
                ("anchors", "6"),
                ("anchor_min_samples", "8"),
                ("rounds", "8"),
            ],
            false,
        ),
        ("oracle", &[("eta", "0.05"), ("rounds", "8")], false),
        ("oracle-labels", &[("eta", "0.05"), ("rounds", "8")], false),
        (
            "ifca",
            &[
                ("eta", "0.05"),
                ("ifca_option", "gradient"),
                ("restarts", "1"),
                ("rounds", "8"),
            ],
            true,
        ),
        (
            "ifca",
            &[
                ("eta", "0.05"),
                ("ifca_option", "model"),
                ("local_steps", "5"),
                ("restarts", "1"),
                ("rounds", "8"),
            ],
            true,
        ),
        // The chosen restart's start and its participants of every round.
        (
            "ifca",
            &[
                ("eta", "0.05"),
                ("restarts", "3"),
                ("participation", "0.5"),
                ("rounds", "8"),
            ],
            false,
        ),
        (
            "ifca-official",
            &[
                ("ifca_official_inits", "2"),
                ("ifca_official_lrs", "[0.05, 0.1]"),
                ("ifca_official_iterations", "8"),
            ],
            false,
        ),
        (
            "fedavg",
            &[("eta", "0.05"), ("participation", "0.5"), ("rounds", "8")],
            false,
        ),
        (
            "fedavg",
            &[
                ("eta", "0.05"),
                ("local_solver", "fedprox"),
                ("rounds", "8"),
            ],
            false,
        ),
    ];
    // Every algorithm with a one step has a case here.
    for k in AlgorithmKind::ALL {
        if k.one_step_refusal().is_none() {
            assert!(
                cases.iter().any(|c| c.0 == k.as_str()),
                "{k}: a one step, no case"
            );
        }
    }
    for (kind, sets, init) in cases {
        let prep = prepared(&ds, kind, sets, init.then_some(&theta0));
        let own = Trajectory::of_run(&prep);
        let rep = check(&prep, &own, Mode::OneStep);
        assert!(rep.passed, "{kind} {sets:?}: {:?}", rep.summary);
        // Bit for bit: the step is the run's own round.
        assert!(
            rep.rounds.iter().all(|r| r.max_abs_deviation == 0.0),
            "{kind} {sets:?}"
        );
        assert_eq!(rep.mode, Mode::OneStep);
    }
    // Every algorithm its declaration says has no one step (`AlgorithmKind::one_step_refusal`).
    let refused: Vec<&str> = AlgorithmKind::ALL
        .into_iter()
        .filter(|k| k.one_step_refusal().is_some())
        .map(AlgorithmKind::as_str)
        .collect();
    assert!(refused.len() >= 5, "{refused:?}");
    for kind in refused {
        let prep = prepared(&ds, kind, &[], None);
        let c = Trajectory::new(
            std::slice::from_ref(&theta0),
            &[vec![0; ds.train.num_clients()]],
        );
        let tol = tolerance(1e-9, 0.0).unwrap();
        match prep.validate_one_step(&c.candidate(), tol) {
            Err(e @ FedmixError::OneStepUnsupported { .. }) => {
                assert!(e.to_string().contains(kind), "{e}")
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
}

/// The Phase 2 round (FedAvg, s = 1, η = 0.05) of the golden case `phase2-fedavg-s1`.
fn phase2_s1(ds: &Arc<Dataset>, theta0: &DMatrix<f64>, eta: &str) -> Prepared {
    prepared(
        ds,
        "phase2",
        &[("eta", eta), ("local_steps", "1"), ("rounds", "12")],
        Some(theta0),
    )
}

/// A correct implementation that breaks one choice differently: the reference's trajectory up
/// to round `t − 1`, then round `t` with client `c`'s label moved to the next cluster, then the
/// reference's round function from there on.
fn one_choice_flipped(
    ds: &Dataset,
    prep: &Prepared,
    theta0: &DMatrix<f64>,
    t: usize,
    c: usize,
) -> Trajectory {
    let fed = &ds.train;
    let p = prep.params.phase2(fed);
    let (mut theta, mut models, mut labels) = (theta0.clone(), Vec::new(), Vec::new());
    for round in 1..=p.rounds {
        let (mut next, mut l) = phase2_round_fused(fed, &theta, &p, None, None);
        if round == t {
            l[c] = (l[c] + 1) % theta.ncols();
            next = phase2_round_fused(fed, &theta, &p, None, Some(&l)).0;
        }
        theta = next;
        models.push(theta.clone());
        labels.push(l);
    }
    Trajectory::new(&models, &labels)
}

#[test]
fn a_choice_broken_differently_fails_one_step_at_its_round_only() {
    let (ds, theta0) = golden();
    let prep = phase2_s1(&ds, &theta0, "0.05");
    let (t, c) = (3, 4);
    let cand = one_choice_flipped(&ds, &prep, &theta0, t, c);
    let traj = check(&prep, &cand, Mode::Trajectory);
    assert_eq!(traj.first_failure, Some(t));
    assert_eq!(failing(&traj), (t..=12).collect::<Vec<_>>());
    assert_eq!(
        traj.failures.len(),
        1,
        "trajectory mode diagnoses its first failure only"
    );
    let one = check(&prep, &cand, Mode::OneStep);
    assert_eq!(failing(&one), vec![t], "{:?}", one.summary);
    assert_eq!(one.rounds[t - 1].label_disagreements, Some(vec![c]));
    let diag = &one.failures[0].diagnosis;
    assert!(
        diag.contains("chose another cluster") && diag.contains("clients 4"),
        "{diag}"
    );
    let summary = one.summary.unwrap();
    assert!(
        summary.starts_with("round 3: a different cluster choice"),
        "{summary}"
    );
    assert!(summary.contains("the other 11 round(s) match"), "{summary}");
}

#[test]
fn a_step_twice_the_references_fails_one_step_at_every_round_with_one_diagnosis() {
    let (ds, theta0) = golden();
    let prep = phase2_s1(&ds, &theta0, "0.05");
    let cand = Trajectory::of_run(&phase2_s1(&ds, &theta0, "0.1"));
    let traj = check(&prep, &cand, Mode::Trajectory);
    assert_eq!(traj.first_failure, Some(1));
    assert!(traj.diagnosis.unwrap().contains("ratio 2.0000"));
    let one = check(&prep, &cand, Mode::OneStep);
    assert_eq!(failing(&one), (1..=12).collect::<Vec<_>>());
    for f in &one.failures {
        assert!(
            f.diagnosis.contains("ratio 2.0000") && f.diagnosis.contains("twice"),
            "{}",
            f.diagnosis
        );
    }
    let summary = one.summary.unwrap();
    assert_eq!(
        summary,
        "rounds 1–12 all differ by the factor 2.000 in the step: a step twice the reference's"
    );
}

/// `fedmix validate --one-step`: the reference's own saved trajectory passes (exit 0); an
/// algorithm without a one-step round is refused with a one-line error (exit 2).
#[test]
fn the_cli_runs_one_step_and_refuses_what_it_cannot_step() {
    use std::process::Command;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let data = root.join("dataset");
    let out = std::env::temp_dir().join(format!("fedmix-one-step-{}", std::process::id()));
    let fedmix = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fedmix"))
            .args(args)
            .arg("--quiet")
            .output()
            .unwrap()
    };
    let (data, out_s) = (data.to_str().unwrap(), out.to_str().unwrap());
    let common = ["--data", data, "--algorithm", "ifca", "--seed", "5"];
    let sets = ["--set", "participation=0.5", "--set", "rounds=6"];
    let run = fedmix(
        &[
            &["run"][..],
            &common,
            &sets,
            &["--save-iterates", "--out", out_s],
        ]
        .concat(),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let iterates = out.join("iterates.npy");
    let labels = out.join("iterate_labels.npy");
    let candidate = [
        "--iterates",
        iterates.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ];
    let v = fedmix(
        &[
            &["validate"][..],
            &common,
            &sets,
            &candidate,
            &["--one-step"],
        ]
        .concat(),
    );
    let text = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{text}");
    assert!(text.contains("mode: one-step"), "{text}");
    let refused = fedmix(&[
        "validate",
        "--data",
        data,
        "--algorithm",
        "cfl",
        "--iterates",
        iterates.to_str().unwrap(),
        "--one-step",
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--one-step is not available for `cfl`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
