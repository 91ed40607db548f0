use super::*;
use crate::error::FedmixError;
use crate::params::LocalSolver;
use std::path::Path;

#[test]
fn identical_passes_and_a_scaled_step_is_diagnosed() {
    let init = DMatrix::from_column_slice(2, 2, &[0.0, 0.0, 1.0, 1.0]);
    let r1 = DMatrix::from_column_slice(2, 2, &[0.1, 0.0, 1.0, 1.2]);
    let r2 = DMatrix::from_column_slice(2, 2, &[0.15, 0.0, 1.0, 1.3]);
    let flat: Vec<f64> = [&r1, &r2]
        .iter()
        .flat_map(|m| m.as_slice().to_vec())
        .collect();
    let tol = Tolerance {
        rtol: 1e-10,
        atol: 0.0,
    };
    let ok = compare(
        Some(&init),
        &[r1.clone(), r2.clone()],
        None,
        &flat,
        &[2, 2, 2],
        None,
        tol,
    )
    .unwrap();
    assert!(ok.passed && ok.first_failure.is_none());
    // One round only, against a two-round reference: the error names both counts.
    let short = compare(
        None,
        &[r1.clone(), r2.clone()],
        None,
        &flat[..4],
        &[1, 2, 2],
        None,
        tol,
    );
    assert!(matches!(
        short,
        Err(FedmixError::RoundsMismatch {
            candidate: 1,
            reference: 2
        })
    ));
    assert!(short.unwrap_err().to_string().contains("--set rounds=1"));
    // Candidate moves model 0 three times as far in round 1.
    let c1 = DMatrix::from_column_slice(2, 2, &[0.3, 0.0, 1.0, 1.2]);
    let flat: Vec<f64> = [&c1, &r2]
        .iter()
        .flat_map(|m| m.as_slice().to_vec())
        .collect();
    let bad = compare(Some(&init), &[r1, r2], None, &flat, &[2, 2, 2], None, tol).unwrap();
    assert_eq!(bad.first_failure, Some(1));
    let diag = bad.diagnosis.unwrap();
    assert!(
        diag.contains("model 0") && diag.contains("ratio 3.0000"),
        "{diag}"
    );
    assert!(!diag.contains("twice"), "3× is not a factor-2 hint: {diag}");
}

/// A step twice the reference's is named as such, and each update rule's diagnosis names
/// its own update (IFCA's participants average, Phase 2's n_i/N weights), not another's.
#[test]
fn the_diagnosis_names_a_factor_two_and_the_reference_rule() {
    let init = DMatrix::from_column_slice(2, 1, &[0.0, 0.0]);
    let r1 = DMatrix::from_column_slice(2, 1, &[0.1, 0.2]);
    let c1 = DMatrix::from_column_slice(2, 1, &[0.2, 0.4]);
    let reference = Reference {
        init: Some(&init),
        iterates: std::slice::from_ref(&r1),
        labels: None,
    };
    let candidate = Candidate {
        iterates: c1.as_slice(),
        shape: &[1, 1, 2],
        labels: None,
    };
    let tol = Tolerance {
        rtol: 1e-12,
        atol: 0.0,
    };
    let diag = |rule: UpdateRule| {
        compare_under(&rule, &reference, &candidate, tol)
            .unwrap()
            .diagnosis
            .unwrap()
    };
    let ifca = diag(UpdateRule::IfcaGradient { step: 0.1 });
    assert!(
        ifca.contains("ratio 2.0000") && ifca.contains("twice"),
        "{ifca}"
    );
    assert!(
        ifca.contains("option I") && ifca.contains("|M_t|"),
        "{ifca}"
    );
    assert!(!ifca.contains("n_i/N"), "Phase 2 advice for IFCA: {ifca}");
    let p2 = diag(UpdateRule::Phase2 {
        eta: 0.1,
        local_steps: 5,
        local_solver: LocalSolver::Fedprox,
    });
    assert!(p2.contains("n_i/N") && p2.contains("FedProx"), "{p2}");
    let model = diag(UpdateRule::IfcaModel {
        step: 0.1,
        local_steps: 3,
    });
    assert!(
        model.contains("option II") && model.contains("τ = 3"),
        "{model}"
    );
}

#[test]
fn label_disagreement_is_reported() {
    let init = DMatrix::zeros(1, 2);
    let r1 = DMatrix::from_column_slice(1, 2, &[1.0, 2.0]);
    let tol = Tolerance {
        rtol: 1e-12,
        atol: 0.0,
    };
    let rep = compare(
        Some(&init),
        std::slice::from_ref(&r1),
        Some(&[vec![0, 1, 1]]),
        r1.as_slice(),
        &[1, 2, 1],
        Some((&[0, 0, 1], &[1, 3])),
        tol,
    )
    .unwrap();
    assert_eq!(rep.rounds[0].label_disagreements, Some(vec![1]));
    assert!(rep.diagnosis.unwrap().contains("clients 1"));
    let wrong_shape = compare(
        Some(&init),
        std::slice::from_ref(&r1),
        None,
        r1.as_slice(),
        &[1, 1, 2],
        None,
        tol,
    );
    assert!(wrong_shape.is_err());
}

/// One-step mode judges each round from the candidate's own previous models: a wrong
/// round fails alone (the next, computed correctly from it, passes), a NaN fails its round
/// and the next is reported as starting from non-finite models.
#[test]
fn one_step_judges_each_round_from_the_candidates_models() {
    let halve = |_: usize, th: &DMatrix<f64>| Ok((th * 0.5, vec![0usize; 2]));
    let start = DMatrix::from_column_slice(2, 1, &[1.0, 2.0]);
    let flat = [
        0.5,
        1.0,
        0.3,
        0.5,
        0.15,
        0.25,
        f64::NAN,
        0.0,
        1.0,
        1.0,
        0.5,
        0.5,
    ];
    let labels = [0i64; 12];
    let cand = Candidate {
        iterates: &flat,
        shape: &[6, 1, 2],
        labels: Some((&labels, &[6, 2])),
    };
    let rep = compare_one_step(&UpdateRule::Other, &start, (6, 2), &halve, &cand, tight()).unwrap();
    let failing: Vec<usize> = rep.failures.iter().map(|f| f.round).collect();
    assert_eq!(failing, vec![2, 4, 5]);
    assert_eq!(rep.mode, Mode::OneStep);
    assert!(
        rep.failures[2].diagnosis.contains("no step to run"),
        "{:?}",
        rep.failures
    );
    let summary = rep.summary.unwrap();
    assert_eq!(
        summary,
        "round 2: the update (same choices, another move); round 4: a NaN or infinite \
         entry; round 5: a start that is not finite (the candidate's previous round); the \
         other 3 round(s) match"
    );
    // Another number of rounds or a label out of range: typed errors.
    let short = Candidate {
        iterates: &flat[..4],
        shape: &[2, 1, 2],
        labels: None,
    };
    assert!(matches!(
        compare_one_step(&UpdateRule::Other, &start, (6, 2), &halve, &short, tight()),
        Err(FedmixError::RoundsMismatch {
            candidate: 2,
            reference: 6
        })
    ));
    assert_eq!(rounds_text(&[2, 5, 6, 7, 9]), "rounds 2, 5–7, 9");
    assert_eq!(rounds_text(&[3]), "round 3");
}

fn tight() -> Tolerance {
    Tolerance {
        rtol: 1e-9,
        atol: 0.0,
    }
}

/// Two rounds of two 2-dimensional models, and the candidate equal to it (C order).
fn two_rounds() -> (Vec<DMatrix<f64>>, Vec<f64>) {
    let r1 = DMatrix::from_column_slice(2, 2, &[0.1, -0.2, 1.0, 1.2]);
    let r2 = DMatrix::from_column_slice(2, 2, &[0.15, -0.1, 1.0, 1.3]);
    let flat = [&r1, &r2]
        .iter()
        .flat_map(|m| m.as_slice().to_vec())
        .collect();
    (vec![r1, r2], flat)
}

/// A NaN anywhere in the candidate fails its round (and only it), with the deviation NaN
/// and the worst entry at the first NaN; an all-NaN candidate fails every round.
#[test]
fn a_nan_in_the_candidate_fails_its_round() {
    let (reference, flat) = two_rounds();
    for i in 0..flat.len() {
        let mut c = flat.clone();
        c[i] = f64::NAN;
        let rep = compare(None, &reference, None, &c, &[2, 2, 2], None, tight()).unwrap();
        let (t, j, x) = (i / 4, (i % 4) / 2, i % 2);
        assert!(!rep.passed, "NaN at {i} passed");
        assert_eq!(rep.first_failure, Some(t + 1));
        let r = &rep.rounds[t];
        assert!(!r.ok && r.max_abs_deviation.is_nan() && r.max_rel_deviation.is_nan());
        assert_eq!((r.worst_model, r.worst_coordinate), (j, x));
        assert_eq!(
            r.bad_entry,
            Some(BadEntry::NonFinite {
                side: Side::Candidate,
                model: j,
                coordinate: x,
                value: "NaN".into()
            })
        );
        assert!(rep.rounds[1 - t].ok, "the other round is untouched");
        assert!(rep.diagnosis.unwrap().contains("is NaN"));
    }
    let all = vec![f64::NAN; flat.len()];
    let rep = compare(None, &reference, None, &all, &[2, 2, 2], None, tight()).unwrap();
    assert!(rep.rounds.iter().all(|r| !r.ok && r.worst_model == 0));
    // Loose tolerances do not change it.
    let loose = Tolerance {
        rtol: 1e300,
        atol: 1e300,
    };
    let rep = compare(None, &reference, None, &all, &[2, 2, 2], None, loose).unwrap();
    assert!(!rep.passed);
}

/// ±inf fails; a non-finite reference entry fails its round even when the candidate has
/// the same value or the scale `max|θ_ref| = inf` would make any deviation "relative" zero.
#[test]
fn infinities_and_a_non_finite_reference_fail() {
    let (reference, flat) = two_rounds();
    for v in [f64::INFINITY, f64::NEG_INFINITY] {
        let mut c = flat.clone();
        c[5] = v;
        let rep = compare(None, &reference, None, &c, &[2, 2, 2], None, tight()).unwrap();
        assert_eq!(rep.first_failure, Some(2));
        assert_eq!(
            (rep.rounds[1].worst_model, rep.rounds[1].worst_coordinate),
            (0, 1)
        );
    }
    for v in [f64::NAN, f64::INFINITY] {
        let mut bad_ref = reference.clone();
        bad_ref[0][(1, 1)] = v;
        let mut same = flat.clone();
        same[3] = v;
        for c in [&flat, &same] {
            let rep = compare(None, &bad_ref, None, c, &[2, 2, 2], None, tight()).unwrap();
            assert_eq!(rep.first_failure, Some(1), "reference {v} passed");
            assert!(matches!(
                rep.rounds[0].bad_entry,
                Some(BadEntry::NonFinite {
                    model: 1,
                    coordinate: 1,
                    ..
                })
            ));
        }
    }
}

/// Rounds with fewer models (SR-FCA merges, CFL splits): the candidate's extra slots must be
/// NaN padding; the untouched padded trajectory passes, a value in a padding slot fails.
#[test]
fn padding_slots_must_be_nan() {
    let r1 = DMatrix::from_column_slice(2, 1, &[0.5, 0.25]);
    let r2 = DMatrix::from_column_slice(2, 2, &[0.5, 0.3, -1.0, 2.0]);
    let padded = vec![0.5, 0.25, f64::NAN, f64::NAN, 0.5, 0.3, -1.0, 2.0];
    let reference = [r1, r2];
    let rep = compare(None, &reference, None, &padded, &[2, 2, 2], None, tight()).unwrap();
    assert!(rep.passed, "{rep:?}");
    assert_eq!(rep.rounds[0].models, 1);
    let mut c = padded.clone();
    c[3] = 0.0;
    let rep = compare(None, &reference, None, &c, &[2, 2, 2], None, tight()).unwrap();
    assert_eq!(rep.first_failure, Some(1));
    assert!(matches!(
        rep.rounds[0].bad_entry,
        Some(BadEntry::BeyondModels {
            model: 1,
            coordinate: 1,
            models: 1,
            ..
        })
    ));
    // A shorter model axis reads as NaN padding: round 1 (one model on both sides) passes,
    // round 2 fails on the model count (the candidate keeps one model, the reference two).
    let short = [0.5, 0.25, 0.5, 0.3];
    let rep = compare(None, &reference, None, &short, &[2, 1, 2], None, tight()).unwrap();
    assert!(rep.rounds[0].ok && !rep.rounds[1].ok, "{rep:?}");
    assert_eq!(rep.rounds[1].candidate_models, 1);
    assert!(rep
        .diagnosis
        .unwrap()
        .starts_with("round 2: the candidate has 1 model(s), the reference 2"));
    // A failure in a round with a new model is diagnosed without a move to compare.
    let mut c = padded;
    c[6] = -1.5;
    let rep = compare(None, &reference, None, &c, &[2, 2, 2], None, tight()).unwrap();
    assert!(rep.diagnosis.unwrap().contains("new in this round"));
}

/// A candidate with more clusters than the reference (SR-FCA's ONE_SHOT kept 4 clusters
/// where the reference has 1): each such round fails, diagnosed by the model counts, and the
/// other rounds are judged as usual; its labels may name its own models (a disagreement).
/// An empty model axis, another `d` or another number of rounds stay errors.
#[test]
fn another_number_of_models_fails_its_round() {
    let r1 = DMatrix::from_column_slice(2, 1, &[0.5, 0.25]);
    let r2 = DMatrix::from_column_slice(2, 1, &[0.5, 0.3]);
    let reference = [r1, r2];
    let ref_labels = vec![vec![0, 0, 0], vec![0, 0, 0]];
    // Round 1: four models; round 2: the reference's one model, the other slots NaN.
    let mut wide = vec![f64::NAN; 2 * 4 * 2];
    wide[..8].copy_from_slice(&[0.5, 0.25, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    wide[8..10].copy_from_slice(&[0.5, 0.3]);
    let labels = [0, 3, 2, 0, 0, 0];
    let rep = compare(
        None,
        &reference,
        Some(&ref_labels),
        &wide,
        &[2, 4, 2],
        Some((&labels, &[2, 3])),
        tight(),
    )
    .unwrap();
    assert!(
        !rep.passed && !rep.rounds[0].ok && rep.rounds[1].ok,
        "{rep:?}"
    );
    assert_eq!(
        (rep.rounds[0].candidate_models, rep.rounds[0].models),
        (4, 1)
    );
    assert_eq!(rep.rounds[0].label_disagreements, Some(vec![1, 2]));
    let diagnosis = rep.diagnosis.unwrap();
    assert!(
        diagnosis.starts_with("round 1: the candidate has 4 model(s), the reference 1"),
        "{diagnosis}"
    );
    // A NaN-only extra slot is padding: the round passes.
    let mut padded = wide.clone();
    padded[2..8].fill(f64::NAN);
    let rep = compare(None, &reference, None, &padded, &[2, 4, 2], None, tight()).unwrap();
    assert!(rep.passed, "{rep:?}");
    // A label beyond both the reference's models and the candidate's axis is an error.
    let bad = [0, 4, 0, 0, 0, 0];
    let err = compare(
        None,
        &reference,
        Some(&ref_labels),
        &wide,
        &[2, 4, 2],
        Some((&bad, &[2, 3])),
        tight(),
    );
    assert!(matches!(
        err,
        Err(FedmixError::CandidateLabelOutOfRange {
            label: 4,
            models: 1,
            slots: 4,
            ..
        })
    ));
    // Malformed: no model slot, another d, another number of rounds.
    for (values, shape) in [
        (&wide[..0], [2, 0, 2]),
        (&wide[..12], [2, 2, 3]),
        (&wide[..8], [1, 4, 2]),
    ] {
        // (the last is told as another number of rounds)
        let e = compare(None, &reference, None, values, &shape, None, tight());
        assert!(
            matches!(
                e,
                Err(FedmixError::DimensionMismatch { .. } | FedmixError::RoundsMismatch { .. })
            ),
            "{shape:?}: {e:?}"
        );
    }
}

/// Float labels are taken only when every entry is an integer; labels outside `-1..k_t` are
/// an error, and `-1` (unassigned) is a label like any other.
#[test]
fn labels_are_integers_within_the_round_models() {
    let src = Path::new("<labels>");
    assert_eq!(
        labels_from_f64(src, &[2, 2], &[0.0, 1.0, -1.0, 2.0]).unwrap(),
        vec![0, 1, -1, 2]
    );
    for (i, v) in [(3, f64::NAN), (0, 1.5), (2, f64::INFINITY), (1, 1e19)] {
        let mut data = [0.0, 1.0, 1.0, 0.0];
        data[i] = v;
        match labels_from_f64(src, &[2, 2], &data) {
            Err(FedmixError::LabelNotInteger { round, client, .. }) => {
                assert_eq!((round, client), (i / 2 + 1, i % 2), "{v}")
            }
            other => panic!("{v}: {other:?}"),
        }
    }
    let (reference, flat) = two_rounds();
    let ref_labels = [vec![0, 1, crate::metrics::UNASSIGNED], vec![1, 1, 0]];
    let run = |labels: &[i64]| {
        compare(
            None,
            &reference,
            Some(&ref_labels),
            &flat,
            &[2, 2, 2],
            Some((labels, &[2, 3])),
            tight(),
        )
    };
    assert!(run(&[0, 1, -1, 1, 1, 0]).unwrap().passed);
    let rep = run(&[0, 1, 0, 1, 1, 0]).unwrap();
    assert_eq!(rep.rounds[0].label_disagreements, Some(vec![2]));
    for (i, label) in [(4, 2), (1, -2), (5, i64::MAX)] {
        let mut l = [0, 1, -1, 1, 1, 0];
        l[i] = label;
        match run(&l) {
            Err(FedmixError::CandidateLabelOutOfRange {
                round,
                client,
                models: 2,
                ..
            }) => assert_eq!((round, client), (i / 3 + 1, i % 3)),
            other => panic!("{label}: {other:?}"),
        }
    }
}
