//! `validate --one-step`: every round of the candidate judged from the candidate's own models
//! after the round before (one reference round from that state), so a deviation does not
//! propagate, and the causes summarized over all failing rounds.

use super::diagnosis::{clients_text, entry_text, factor_name, move_text};
use super::*;
use crate::error::Result;
use nalgebra::DMatrix;

/// One-step (teacher-forced) comparison: for every round `t`, the reference's round `t` run by
/// `step` from the candidate's own models after round `t − 1` (`start`, the common `θ_0`, for
/// round 1) against the candidate's models after round `t`, by the tolerance rule of
/// [`compare_under`]; the labels are compared when the candidate gives them (the reference's
/// are those its step chose from the candidate's models). Every failing round is diagnosed
/// (`failures`), and `summary` says what they have in common.
///
/// A round whose starting models (the candidate's previous round) hold a NaN or infinite entry
/// is not run: it fails, and is reported as starting from non-finite models.
///
/// # Errors
/// The step's errors; [`FedmixError::RoundsMismatch`](crate::error::FedmixError::RoundsMismatch) or [`FedmixError::DimensionMismatch`](crate::error::FedmixError::DimensionMismatch) when the candidate is
/// not `rounds × K_c × d` (`d` and `rounds` those of the reference, `K_c ≥ 1`) or its labels not
/// `rounds × clients`; [`FedmixError::CandidateLabelOutOfRange`](crate::error::FedmixError::CandidateLabelOutOfRange) for a label outside
/// `-1..max(k, K_c)`.
///
/// Decision: a round after one where the candidate has more models than the reference's `k`
/// starts from the candidate's first `k` (the step has `k` models); its extra models failed
/// their own round.
pub fn compare_one_step(
    rule: &UpdateRule,
    start: &DMatrix<f64>,
    (rounds, clients): (usize, usize),
    step: StepFn<'_>,
    candidate: &Candidate<'_>,
    tol: Tolerance,
) -> Result<ValidationReport> {
    let (d, k) = start.shape();
    let cand = candidate_models(candidate.iterates, candidate.shape, [rounds, k, d])?;
    if let Some((c, shape)) = candidate.labels {
        check_label_shape(shape, c.len(), rounds, clients)?;
        let slots = cand.first().map_or(0, DMatrix::ncols);
        check_label_range(c, clients, slots, |_| k)?;
    }
    let mut reports = Vec::with_capacity(rounds);
    let mut failures = Vec::new();
    let mut causes: Vec<(usize, Cause)> = Vec::new();
    for t in 0..rounds {
        let prev = match t {
            0 => start.clone(),
            _ => cand[t - 1].columns(0, k).clone_owned(),
        };
        let finite = prev.iter().all(|v| v.is_finite());
        let (reference, ref_labels) = match finite {
            true => step(t + 1, &prev)?,
            false => (DMatrix::from_element(d, k, f64::NAN), Vec::new()),
        };
        let disagreements = candidate.labels.filter(|_| finite).map(|(c, _)| {
            (0..clients)
                .filter(|&i| ref_labels.get(i).map(|&l| label_i64(l)) != Some(c[t * clients + i]))
                .collect::<Vec<usize>>()
        });
        let r = round_report(t, &reference, &cand[t], disagreements, tol);
        if !r.ok {
            let (cause, diagnosis) = match finite {
                false => (
                    Cause::StartNotFinite,
                    format!(
                        "round {}: the candidate's models after round {t} hold a NaN or infinite \
                         entry, so there is no step to run from them (round {t} fails on it)",
                        r.round
                    ),
                ),
                true => diagnose_step(&prev, &reference, &cand[t], &r, rule),
            };
            causes.push((r.round, cause));
            failures.push(RoundDiagnosis {
                round: r.round,
                diagnosis,
            });
        }
        reports.push(r);
    }
    let first_failure = failures.first().map(|f| f.round);
    Ok(ValidationReport {
        mode: Mode::OneStep,
        tolerance: tol,
        passed: failures.is_empty(),
        first_failure,
        diagnosis: failures.first().map(|f| f.diagnosis.clone()),
        summary: summarize(&causes, rounds),
        rounds: reports,
        failures,
    })
}

/// What failed a one-step round, for the summary across rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Cause {
    /// The round started from the candidate's non-finite models.
    StartNotFinite,
    /// A NaN, infinite or padding entry.
    BadEntry,
    /// Clients chose another cluster from the same models.
    Labels,
    /// Same choices, the worst model moved this many times as far as the reference's.
    Move(f64),
}

/// One failing round of the one-step comparison, explained: every side started from the
/// candidate's models `prev`.
pub(super) fn diagnose_step(
    prev: &DMatrix<f64>,
    reference: &DMatrix<f64>,
    candidate: &DMatrix<f64>,
    r: &RoundReport,
    rule: &UpdateRule,
) -> (Cause, String) {
    if let Some(why) = entry_text(r) {
        return (Cause::BadEntry, why);
    }
    if let Some(l) = r.label_disagreements.as_ref().filter(|l| !l.is_empty()) {
        let text = format!(
            "round {}: from the candidate's own models after round {}, {} client(s) chose another \
             cluster than the reference's eq. 8 choice (argmin_j ‖y_i − φ_iθ_j‖², ties → lowest j) \
             from the same models (clients {}): a tie broken differently or another assignment rule",
            r.round,
            r.round - 1,
            l.len(),
            clients_text(l)
        );
        return (Cause::Labels, text);
    }
    let cand = candidate.columns(0, reference.ncols()).clone_owned();
    let (ratio, text) = move_text(prev, prev, reference, &cand, r, rule);
    (Cause::Move(ratio), text)
}

/// One line across the failing rounds of a one-step comparison of `rounds` rounds.
pub(super) fn summarize(causes: &[(usize, Cause)], rounds: usize) -> Option<String> {
    let first = causes.first()?;
    let same_ratio = |c: &Cause| match (first.1, c) {
        (Cause::Move(a), Cause::Move(b)) => (b / a - 1.0).abs() <= 1e-3,
        _ => false,
    };
    let all: Vec<usize> = causes.iter().map(|c| c.0).collect();
    let rest = match rounds - all.len() {
        0 => String::new(),
        n => format!("; the other {n} round(s) match"),
    };
    if let (Cause::Move(ratio), true) = (first.1, causes.iter().all(|c| same_ratio(&c.1))) {
        let what = match factor_name(ratio) {
            Some(name) => format!(": a step {name} the reference's"),
            None => " (the candidate's move over the reference's)".into(),
        };
        let every = if all.len() > 1 { " all" } else { "" };
        return Some(format!(
            "{}{every} differ by the factor {ratio:.3} in the step{what}{rest}",
            rounds_text(&all)
        ));
    }
    type Group = (&'static str, fn(&Cause) -> bool);
    let groups: [Group; 4] = [
        ("a different cluster choice from the same models", |c| {
            matches!(c, Cause::Labels)
        }),
        ("a NaN or infinite entry", |c| matches!(c, Cause::BadEntry)),
        (
            "a start that is not finite (the candidate's previous round)",
            |c| matches!(c, Cause::StartNotFinite),
        ),
        ("the update (same choices, another move)", |c| {
            matches!(c, Cause::Move(_))
        }),
    ];
    // Groups in the order of their first round.
    let mut parts: Vec<(usize, String)> = groups
        .iter()
        .filter_map(|(what, is)| {
            let rs: Vec<usize> = causes.iter().filter(|c| is(&c.1)).map(|c| c.0).collect();
            let first = *rs.first()?;
            Some((first, format!("{}: {what}", rounds_text(&rs))))
        })
        .collect();
    parts.sort_by_key(|p| p.0);
    let parts: Vec<String> = parts.into_iter().map(|p| p.1).collect();
    Some(format!("{}{rest}", parts.join("; ")))
}
