//! Round-by-round comparison of a candidate trajectory (another implementation's iterates and
//! labels) with the reference run on identical data and randomness (`fedmix validate`).
//!
//! Per round `t` the deviation is `max|θ^ref_t − θ^cand_t| / max|θ^ref_t|` over all `k × d`
//! entries; the round is within tolerance when `max|θ^ref_t − θ^cand_t| ≤ atol + rtol·max|θ^ref_t|`,
//! no entry of either side is NaN or infinite, and, when both sides give labels, every client
//! chose the same cluster. At the first round that fails, [`diagnose`] says what diverged: a
//! non-finite entry, the cluster choices (eq. 8 / ties), or — with identical choices — the update
//! itself, comparing how far each model moved on both sides (a constant ratio such as `N/N_j`
//! points at the aggregation weights).
//!
//! Every comparison here fails on NaN: a NaN deviation is the largest of its round (never
//! skipped by the fold), and a round with a NaN or infinite entry on either side fails whatever
//! the tolerance (`inf ≤ atol + rtol·inf` would otherwise pass a reference entry of `inf`).
//!
//! Decision (rounds with fewer models than others — SR-FCA merges, CFL splits): the candidate's
//! model axis has the most models any reference round has, `K_max`, and a round with `k_t <
//! K_max` models leaves slots `k_t..K_max` as padding, NaN, exactly as `iterates.npy` is written
//! by `fedmix run --save-iterates`; a padding slot holding anything but NaN is a model the
//! reference does not have, and fails the round.
//!
//! Decision (a candidate with another number of clusters): the candidate's model axis `K_c` may
//! differ from `K_max`. Its round `t` has as many models as its slots up to the last one holding
//! a value that is not NaN (the slots after it are the format's padding); a round where that
//! count differs from the reference's `k_t` fails, diagnosed as "the candidate has 4 models, the
//! reference 1" — a candidate that clusters differently is a result to report, not malformed
//! input. A shorter axis reads as NaN padding. Wrong `d`, another number of rounds or an empty
//! model axis stay typed errors.

use crate::error::{FedmixError, Result};
use crate::params::LocalSolver;
use nalgebra::DMatrix;
use serde::Serialize;
use std::path::Path;

/// Tolerances (see the module doc).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Tolerance {
    /// Relative tolerance (to the round's largest reference entry).
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

/// Which side of the comparison holds an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The trajectory under test.
    Candidate,
    /// fedmix's own run.
    Reference,
}

/// An entry that fails its round whatever the tolerance.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BadEntry {
    /// A NaN or infinite entry in a model the reference has.
    NonFinite {
        /// Which side holds it.
        side: Side,
        /// Model (cluster index).
        model: usize,
        /// Coordinate.
        coordinate: usize,
        /// `NaN`, `inf` or `-inf` (JSON has no non-finite numbers).
        value: String,
    },
    /// A value (not NaN padding) in a model slot the reference does not have in this round.
    BeyondModels {
        /// Model slot (≥ `models`).
        model: usize,
        /// Coordinate.
        coordinate: usize,
        /// The value found, as text.
        value: String,
        /// Models the reference has in this round.
        models: usize,
    },
}

impl BadEntry {
    /// Model and coordinate of the entry.
    pub fn at(&self) -> (usize, usize) {
        match *self {
            BadEntry::NonFinite {
                model, coordinate, ..
            }
            | BadEntry::BeyondModels {
                model, coordinate, ..
            } => (model, coordinate),
        }
    }

    /// One line saying what the entry is.
    pub fn describe(&self) -> String {
        match self {
            BadEntry::NonFinite {
                side,
                model,
                coordinate,
                value,
            } => {
                let side = match side {
                    Side::Candidate => "candidate",
                    Side::Reference => "reference",
                };
                format!("{side} model {model}, coordinate {coordinate} is {value}")
            }
            BadEntry::BeyondModels {
                model,
                coordinate,
                value,
                models,
            } => format!(
                "candidate model {model}, coordinate {coordinate} is {value}, but the reference has \
                 {models} model(s) in this round (slots beyond them must be NaN padding)"
            ),
        }
    }
}

/// One round of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct RoundReport {
    /// Round (1-based: the models after round `round`).
    pub round: usize,
    /// `max|Δ| / max|θ^ref|` (`max|Δ|` when the reference is all zero); NaN when any `Δ` is.
    pub max_rel_deviation: f64,
    /// `max|Δ|` over the reference's models; NaN when any `Δ` is NaN (a NaN is never skipped).
    pub max_abs_deviation: f64,
    /// Model (cluster index) holding the largest deviation, or the first bad entry.
    pub worst_model: usize,
    /// Coordinate of the largest deviation, or of the first bad entry.
    pub worst_coordinate: usize,
    /// Models the reference has in this round (the candidate's slots beyond are NaN padding).
    pub models: usize,
    /// Models the candidate has in this round: its slots up to the last one holding a value
    /// that is not NaN (the slots after it are padding). The round fails when this is not
    /// `models`.
    pub candidate_models: usize,
    /// The first entry (models in order, coordinates within) that fails the round whatever the
    /// tolerance: NaN or infinite on either side, or a value in a padding slot.
    pub bad_entry: Option<BadEntry>,
    /// Clients whose cluster choice differs (when both sides give labels).
    pub label_disagreements: Option<Vec<usize>>,
    /// Within tolerance.
    pub ok: bool,
}

/// What is compared in each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The candidate's models after round `t` against the reference's own run after round `t`
    /// (informative up to the first divergence).
    Trajectory,
    /// The candidate's models after round `t` against the reference's round `t` run from the
    /// candidate's own models after round `t − 1` (teacher forcing: every round is judged on its
    /// own, [`compare_one_step`]).
    OneStep,
}

/// The diagnosis of one failing round.
#[derive(Clone, Debug, Serialize)]
pub struct RoundDiagnosis {
    /// Round (1-based).
    pub round: usize,
    /// What diverged in it ([`diagnose`]).
    pub diagnosis: String,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationReport {
    /// Trajectory or one-step.
    pub mode: Mode,
    /// Tolerances used.
    pub tolerance: Tolerance,
    /// Per-round reports.
    pub rounds: Vec<RoundReport>,
    /// First failing round.
    pub first_failure: Option<usize>,
    /// What diverged at the first failing round.
    pub diagnosis: Option<String>,
    /// The diagnosed failing rounds: the first only in trajectory mode (later rounds start from
    /// models that already differ), every one in one-step mode.
    pub failures: Vec<RoundDiagnosis>,
    /// One line across the failing rounds (`None` when every round passed), e.g. "rounds 1–20
    /// all differ by the factor 2.000 in the step: a step twice the reference's".
    pub summary: Option<String>,
    /// All rounds within tolerance.
    pub passed: bool,
}

/// Compare `reference` (one `d × k` matrix per round) and optional reference labels with a
/// candidate given as a flat C-order `rounds × k × d` array and optional `rounds × M` labels.
/// `init` (`d × k`), the common start when known, is used to diagnose the first round.
///
/// # Errors
/// As [`compare_under`].
pub fn compare(
    init: Option<&DMatrix<f64>>,
    reference: &[DMatrix<f64>],
    reference_labels: Option<&[Vec<usize>]>,
    candidate: &[f64],
    candidate_shape: &[usize],
    candidate_labels: Option<(&[i64], &[usize])>,
    tol: Tolerance,
) -> Result<ValidationReport> {
    compare_under(
        &UpdateRule::Other,
        &Reference {
            init,
            iterates: reference,
            labels: reference_labels,
        },
        &Candidate {
            iterates: candidate,
            shape: candidate_shape,
            labels: candidate_labels,
        },
        tol,
    )
}

/// The reference run's side of a comparison.
#[derive(Clone, Copy, Debug)]
pub struct Reference<'a> {
    /// The common start (`d × k`), when known: used to diagnose the first round.
    pub init: Option<&'a DMatrix<f64>>,
    /// The models after each round (`d × k_t` each).
    pub iterates: &'a [DMatrix<f64>],
    /// The labels after each round, when recorded.
    pub labels: Option<&'a [Vec<usize>]>,
}

/// The candidate's side: C-order `rounds × K_max × d` models and optional `rounds × M` labels
/// (values and shape).
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// Flat C-order models.
    pub iterates: &'a [f64],
    /// Their shape.
    pub shape: &'a [usize],
    /// Labels and their shape.
    pub labels: Option<(&'a [i64], &'a [usize])>,
}

/// The label `-1` (as `labels.npy` writes [`crate::metrics::UNASSIGNED`]: a client outside every
/// cluster, SR-FCA).
pub const UNASSIGNED_LABEL: i64 = -1;

/// Candidate labels given as floats (a float64 `labels.npy`, a float numpy array), in C order of
/// `shape` (`rounds × M`): each must be an integer — a cluster index, or `-1` for unassigned —
/// and is then converted exactly; NaN, ±inf, a fraction or a value beyond the `int64` range is
/// refused rather than cast. `source` names the file or array in the error.
///
/// # Errors
/// [`FedmixError::LabelNotInteger`] at the first such entry (round 1-based, client 0-based).
pub fn labels_from_f64(source: &Path, shape: &[usize], data: &[f64]) -> Result<Vec<i64>> {
    // 2^63: every integral f64 below it in magnitude is an exact int64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let m = shape.get(1).copied().unwrap_or(1).max(1);
    data.iter()
        .enumerate()
        .map(|(i, &v)| match v.fract() == 0.0 && v.abs() < LIMIT {
            true => Ok(v as i64),
            false => Err(FedmixError::LabelNotInteger {
                path: source.into(),
                round: i / m + 1,
                client: i % m,
                value: v,
            }),
        })
        .collect()
}

/// Read candidate labels (`rounds × clients`) from a `.npy` file: int64, or float64 holding
/// integers only ([`labels_from_f64`]'s rule).
///
/// # Errors
/// The `.npy` reader's errors (another dtype is [`FedmixError::WrongDtype`]), and
/// [`FedmixError::LabelNotInteger`].
pub fn read_labels(path: &Path, clients: usize) -> Result<(Vec<usize>, Vec<i64>)> {
    let expected = [None, Some(clients)];
    match crate::io::read_i64(path, &expected) {
        Err(FedmixError::WrongDtype { found, .. }) if found == "<f8" => {
            let (shape, data) = crate::io::read_f64(path, &expected)?;
            let labels = labels_from_f64(path, &shape, &data)?;
            Ok((shape, labels))
        }
        Err(FedmixError::WrongDtype { path: p, found, .. }) => Err(FedmixError::WrongDtype {
            path: p,
            expected: "<i8 (or <f8 holding integers)".into(),
            found,
        }),
        other => other,
    }
}

/// [`compare`] knowing the reference's update rule, so that the diagnosis of the first
/// failing round names the update the candidate should match and the usual ways it differs.
///
/// # Errors
/// [`FedmixError::RoundsMismatch`] or [`FedmixError::DimensionMismatch`] when the candidate's
/// shape disagrees with the reference in rounds or `d`, or it has no model slot (another number
/// of models is a failing round, not an error: see the module doc);
/// [`FedmixError::CandidateLabelOutOfRange`] for a label that is neither `-1` nor a model slot
/// of its round (the reference's models or the candidate's model axis, whichever is larger).
pub fn compare_under(
    rule: &UpdateRule,
    reference: &Reference<'_>,
    candidate: &Candidate<'_>,
    tol: Tolerance,
) -> Result<ValidationReport> {
    let Reference {
        init,
        iterates: reference,
        labels: reference_labels,
    } = *reference;
    let Candidate {
        iterates: candidate,
        shape: candidate_shape,
        labels: candidate_labels,
    } = *candidate;
    let (d, k) = match reference.first() {
        Some(m) => (
            m.nrows(),
            reference.iter().map(DMatrix::ncols).max().unwrap_or(0),
        ),
        None => (
            candidate_shape.get(2).copied().unwrap_or(0),
            candidate_shape.get(1).copied().unwrap_or(0),
        ),
    };
    let cand = candidate_models(candidate, candidate_shape, [reference.len(), k, d])?;
    let labels = match (reference_labels, candidate_labels) {
        (Some(r), Some((c, shape))) => {
            let m = r.first().map_or(0, Vec::len);
            check_label_shape(shape, c.len(), reference.len(), m)?;
            let slots = cand.first().map_or(0, DMatrix::ncols);
            check_label_range(c, m, slots, |t| reference.get(t).map_or(0, DMatrix::ncols))?;
            Some((r, c, m))
        }
        _ => None,
    };
    let rounds: Vec<RoundReport> = reference
        .iter()
        .zip(&cand)
        .enumerate()
        .map(|(t, (a, b))| {
            let disagreements = labels.map(|(r, c, m)| {
                (0..m)
                    .filter(|&i| c[t * m + i] != label_i64(r[t][i]))
                    .collect::<Vec<usize>>()
            });
            round_report(t, a, b, disagreements, tol)
        })
        .collect();
    let first_failure = rounds.iter().find(|r| !r.ok).map(|r| r.round);
    let diagnosis = first_failure.map(|t| diagnose(init, reference, &cand, &rounds[t - 1], rule));
    let failures: Vec<RoundDiagnosis> = first_failure
        .zip(diagnosis.clone())
        .map(|(round, diagnosis)| RoundDiagnosis { round, diagnosis })
        .into_iter()
        .collect();
    let failing: Vec<usize> = rounds.iter().filter(|r| !r.ok).map(|r| r.round).collect();
    let summary = (!failing.is_empty()).then(|| {
        format!(
            "{} beyond tolerance; only round {} is diagnosed (each later round starts from models \
             that already differ: `--one-step` judges every round on its own)",
            rounds_text(&failing),
            failing[0]
        )
    });
    Ok(ValidationReport {
        mode: Mode::Trajectory,
        tolerance: tol,
        passed: first_failure.is_none(),
        rounds,
        first_failure,
        diagnosis,
        failures,
        summary,
    })
}

/// The reference's round `t` (1-based) from the models broadcast at its start: the models after
/// it and every client's cluster choice.
pub type StepFn<'a> = &'a dyn Fn(usize, &DMatrix<f64>) -> (DMatrix<f64>, Vec<usize>);

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
/// [`FedmixError::RoundsMismatch`] or [`FedmixError::DimensionMismatch`] when the candidate is
/// not `rounds × K_c × d` (`d` and `rounds` those of the reference, `K_c ≥ 1`) or its labels not
/// `rounds × clients`; [`FedmixError::CandidateLabelOutOfRange`] for a label outside
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
            true => step(t + 1, &prev),
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
enum Cause {
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
fn diagnose_step(
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
fn summarize(causes: &[(usize, Cause)], rounds: usize) -> Option<String> {
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

/// `twice` or `half` for a ratio within 2% of 2 or ½.
fn factor_name(ratio: f64) -> Option<&'static str> {
    let near = |x: f64| (ratio / x - 1.0).abs() < 0.02;
    match (near(2.0), near(0.5)) {
        (true, _) => Some("twice"),
        (_, true) => Some("half"),
        _ => None,
    }
}

/// `round 3`, `rounds 1–20`, `rounds 2, 5–7, 9` (consecutive rounds as ranges).
pub fn rounds_text(rounds: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < rounds.len() {
        let mut j = i;
        while j + 1 < rounds.len() && rounds[j + 1] == rounds[j] + 1 {
            j += 1;
        }
        parts.push(match j > i {
            true => format!("{}–{}", rounds[i], rounds[j]),
            false => rounds[i].to_string(),
        });
        i = j + 1;
    }
    let word = if rounds.len() == 1 { "round" } else { "rounds" };
    format!("{word} {}", parts.join(", "))
}

/// The candidate's models as one `d × max(K_c, K_max)` matrix per round (a shorter axis padded
/// with NaN, the format's padding), after checking its shape `[rounds, K_c, d]` against
/// `expect = [rounds, K_max, d]`: rounds and `d` must agree (another number of rounds is told as
/// such) and `K_c ≥ 1`; another `K_c` is judged round by round ([`round_report`]).
fn candidate_models(
    candidate: &[f64],
    candidate_shape: &[usize],
    expect: [usize; 3],
) -> Result<Vec<DMatrix<f64>>> {
    let [rounds, k, d] = expect;
    if candidate_shape.len() == 3
        && candidate_shape[2] == d
        && rounds > 0
        && candidate_shape[0] != rounds
    {
        return Err(FedmixError::RoundsMismatch {
            candidate: candidate_shape[0],
            reference: rounds,
        });
    }
    let k_c = candidate_shape.get(1).copied().unwrap_or(0);
    let fits = candidate_shape.len() == 3
        && candidate_shape[0] == rounds
        && candidate_shape[2] == d
        && (k_c > 0 || k == 0)
        && candidate.len() == candidate_shape.iter().product::<usize>();
    if !fits {
        return Err(FedmixError::DimensionMismatch {
            what: format!(
                "candidate iterates shape {candidate_shape:?} vs reference {expect:?} (rounds × k × d; \
                 the model axis may differ, with at least one slot)"
            ),
            expected: expect.iter().product(),
            found: candidate_shape.iter().product(),
        });
    }
    // `rounds × K_c × d` C order = one column-major `d × K_c` matrix per round, padded with NaN
    // to `K_max` columns when `K_c < K_max`.
    let width = k_c.max(k);
    Ok((0..rounds)
        .map(|t| {
            let mut m = DMatrix::from_element(d, width, f64::NAN);
            if k_c * d > 0 {
                let own = &candidate[t * k_c * d..(t + 1) * k_c * d];
                m.columns_mut(0, k_c)
                    .copy_from(&DMatrix::from_column_slice(d, k_c, own));
            }
            m
        })
        .collect())
}

/// Candidate labels of `shape` (`len` values) are `rounds × m`.
fn check_label_shape(shape: &[usize], len: usize, rounds: usize, m: usize) -> Result<()> {
    if shape != [rounds, m] || len != rounds * m {
        return Err(FedmixError::DimensionMismatch {
            what: format!(
                "candidate labels shape {shape:?} vs reference [{rounds}, {m}] (rounds × M)"
            ),
            expected: rounds * m,
            found: shape.iter().product(),
        });
    }
    Ok(())
}

/// A reference label as the candidate writes it (`-1` for unassigned).
fn label_i64(l: usize) -> i64 {
    match l == crate::metrics::UNASSIGNED {
        true => UNASSIGNED_LABEL,
        false => i64::try_from(l).unwrap_or(i64::MAX),
    }
}

/// Every candidate label (`rounds × m`, C order) is `-1` or a model slot of its round: below
/// the reference's models (round `t`, 0-based, has `models_of(t)`) or the candidate's model
/// axis `slots`, whichever is larger. A label within the candidate's models but beyond the
/// reference's is a disagreement, judged per round, not an error.
fn check_label_range(
    labels: &[i64],
    m: usize,
    slots: usize,
    models_of: impl Fn(usize) -> usize,
) -> Result<()> {
    for (t, row) in labels.chunks(m.max(1)).enumerate() {
        let models = models_of(t);
        let bound = models.max(slots);
        let fits = |l: i64| l == UNASSIGNED_LABEL || usize::try_from(l).is_ok_and(|l| l < bound);
        if let Some((client, &label)) = row.iter().enumerate().find(|(_, &l)| !fits(l)) {
            return Err(FedmixError::CandidateLabelOutOfRange {
                round: t + 1,
                client,
                label,
                models,
                slots,
            });
        }
    }
    Ok(())
}

/// `NaN`, `inf` or `-inf`; other values in full.
fn value_text(v: f64) -> String {
    match v.is_nan() {
        true => "NaN".into(),
        false => format!("{v:e}"),
    }
}

/// Round `t` (0-based): reference `a` (`d × k_t`) against candidate `b` (`d × max(K_c, K_max)`).
fn round_report(
    t: usize,
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    label_disagreements: Option<Vec<usize>>,
    tol: Tolerance,
) -> RoundReport {
    let (d, models) = (a.nrows(), a.ncols());
    let compared = &b.as_slice()[..models * d];
    let bad_entry = first_bad_entry(a.as_slice(), b.as_slice(), d, models);
    let candidate_models = b
        .column_iter()
        .rposition(|c| c.iter().any(|v| !v.is_nan()))
        .map_or(0, |j| j + 1);
    let (mut worst, abs) = nan_max(a.iter().zip(compared).map(|(x, y)| (x - y).abs()));
    let scale = nan_max(a.iter().map(|x| x.abs())).1;
    if let Some(e) = &bad_entry {
        let (j, c) = e.at();
        worst = j * d + c;
    }
    // `!(abs > …)` would pass a NaN: the test is written so that NaN fails.
    let within = abs <= tol.atol + tol.rtol * scale;
    let ok = within
        && bad_entry.is_none()
        && candidate_models == models
        && label_disagreements.as_ref().is_none_or(Vec::is_empty);
    RoundReport {
        round: t + 1,
        max_rel_deviation: if scale > 0.0 { abs / scale } else { abs },
        max_abs_deviation: abs,
        worst_model: worst.checked_div(d).unwrap_or(0),
        worst_coordinate: worst.checked_rem(d).unwrap_or(0),
        models,
        candidate_models,
        bad_entry,
        label_disagreements,
        ok,
    }
}

/// Index and value of the largest of `values`, NaN counting as the largest (the first NaN, or
/// the first maximum); `(0, 0.0)` when empty.
fn nan_max(values: impl Iterator<Item = f64>) -> (usize, f64) {
    values.enumerate().fold((0, 0.0f64), |(bi, bv), (i, v)| {
        match bv.is_nan() || v <= bv {
            true => (bi, bv),
            false => (i, v),
        }
    })
}

/// The first entry (column-major over `d × K_max`) that fails the round whatever the tolerance.
fn first_bad_entry(
    reference: &[f64],
    candidate: &[f64],
    d: usize,
    models: usize,
) -> Option<BadEntry> {
    candidate.iter().enumerate().find_map(|(i, &c)| {
        let (model, coordinate) = (i / d, i % d);
        if model >= models {
            return (!c.is_nan()).then(|| BadEntry::BeyondModels {
                model,
                coordinate,
                value: value_text(c),
                models,
            });
        }
        let r = reference[i];
        let (side, v) = match (c.is_finite(), r.is_finite()) {
            (true, true) => return None,
            (false, _) => (Side::Candidate, c),
            (true, false) => (Side::Reference, r),
        };
        Some(BadEntry::NonFinite {
            side,
            model,
            coordinate,
            value: value_text(v),
        })
    })
}

/// Explain the first failing round.
pub fn diagnose(
    init: Option<&DMatrix<f64>>,
    reference: &[DMatrix<f64>],
    candidate: &[DMatrix<f64>],
    r: &RoundReport,
    rule: &UpdateRule,
) -> String {
    if let Some(why) = entry_text(r) {
        return why;
    }
    if let Some(l) = r.label_disagreements.as_ref().filter(|l| !l.is_empty()) {
        return format!(
            "round {}: {} client(s) chose a different cluster (clients {}): the assignment step differs \
             (eq. 8: argmin_j ‖y_i − φ_iθ_j‖², ties → lowest j) or the models broadcast in this round already differed",
            r.round,
            l.len(),
            clients_text(l),
        );
    }
    let t = r.round - 1;
    // The candidate's models this round has (its other slots are padding).
    let models = |m: &DMatrix<f64>, k: usize| m.columns(0, k.min(m.ncols())).clone_owned();
    let (prev_ref, prev_cand) = match (t, init) {
        (0, Some(i)) => (i.clone(), i.clone()),
        (0, None) => {
            return format!(
                "round 1: every client chose the same cluster, but model {} differs by {:.3e} \
                 (start unknown here: pass --init to see how far each side moved)",
                r.worst_model, r.max_abs_deviation
            )
        }
        _ => (
            reference[t - 1].clone(),
            models(&candidate[t - 1], reference[t - 1].ncols()),
        ),
    };
    let j = r.worst_model;
    if j >= prev_ref.ncols() || prev_ref.shape() != prev_cand.shape() {
        return format!(
            "round {}: model {j} differs by {:.3e}; it is new in this round (the reference has {} \
             model(s) now, {} before), so there is no move to compare",
            r.round,
            r.max_abs_deviation,
            r.models,
            prev_ref.ncols()
        );
    }
    let start_gap = (&prev_ref - &prev_cand).amax();
    if start_gap > 0.0 && t > 0 {
        return format!(
            "round {}: the models entering this round already differed by {start_gap:.3e} (below tolerance); \
             the deviation grew to {:.3e} in model {j}: an accumulating difference in the update",
            r.round, r.max_abs_deviation
        );
    }
    move_text(&prev_ref, &prev_cand, &reference[t], &candidate[t], r, rule).1
}

/// A failing round's bad entry, explained (`None` without one).
fn entry_text(r: &RoundReport) -> Option<String> {
    if r.candidate_models != r.models {
        let entry = r.bad_entry.as_ref().map_or(String::new(), |e| {
            let (j, c) = e.at();
            format!(" (first entry that differs in kind: model {j}, coordinate {c})")
        });
        return Some(format!(
            "round {}: the candidate has {} model(s), the reference {}{entry}: it clusters \
             differently (the slots after a round's last model must be NaN padding)",
            r.round, r.candidate_models, r.models
        ));
    }
    let e = r.bad_entry.as_ref()?;
    let why = match e {
        BadEntry::NonFinite {
            side: Side::Reference,
            ..
        } => {
            "the reference itself is not finite here (a fedmix bug: please report it); no \
              comparison can pass"
        }
        BadEntry::NonFinite { .. } => {
            "a NaN or infinite entry fails its round whatever the tolerance (the candidate \
             diverged, or did not write this entry)"
        }
        BadEntry::BeyondModels { .. } => {
            "the candidate has more models than the reference in this round"
        }
    };
    Some(format!("round {}: {}: {why}", r.round, e.describe()))
}

/// The first eight clients of `l`, then `…`.
fn clients_text(l: &[usize]) -> String {
    let shown: Vec<String> = l.iter().take(8).map(usize::to_string).collect();
    format!(
        "{}{}",
        shown.join(", "),
        if l.len() > 8 { ", …" } else { "" }
    )
}

/// How far the worst model moved on each side from its start of the round, their ratio
/// (candidate / reference; `inf` when the reference did not move) and the sentence saying so.
fn move_text(
    prev_ref: &DMatrix<f64>,
    prev_cand: &DMatrix<f64>,
    reference: &DMatrix<f64>,
    candidate: &DMatrix<f64>,
    r: &RoundReport,
    rule: &UpdateRule,
) -> (f64, String) {
    let j = r.worst_model;
    let moved_ref = (reference.column(j) - prev_ref.column(j)).norm();
    let moved_cand = (candidate.column(j) - prev_cand.column(j)).norm();
    let ratio = if moved_ref > 0.0 {
        moved_cand / moved_ref
    } else {
        f64::INFINITY
    };
    let text = format!(
        "round {}: every client chose the same cluster, but model {j} moved by {moved_cand:.6e} in the candidate \
         vs {moved_ref:.6e} in the reference (ratio {ratio:.4}): {}{}",
        r.round,
        factor_hint(ratio),
        rule.explain()
    );
    (ratio, text)
}

/// A ratio of moves that is a telling constant.
fn factor_hint(ratio: f64) -> &'static str {
    let near = |x: f64| (ratio / x - 1.0).abs() < 0.02;
    if near(2.0) {
        "the candidate moves twice as far — a step twice the reference's, e.g. a loss \
         (1/n_i)‖y_i − X_iθ‖² where the reference's is (1/(2n_i))‖y_i − X_iθ‖² (gradient \
         (1/n_i)X_iᵀ(X_iθ − y_i)): pass the candidate's step to the reference or halve it; "
    } else if near(0.5) {
        "the candidate moves half as far — a step half the reference's, e.g. a loss \
         (1/(4n_i))‖·‖² or a gradient divided by 2n_i: pass the candidate's step to the reference; "
    } else {
        ""
    }
}

/// The update rule the reference ran, so that a diagnosis can name what to compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UpdateRule {
    /// SXY22 Phase 2 (FedAvg / FedProx + eq. 8 clustering), also the Phase 2 of `two-phase`.
    Phase2 {
        /// Step `η`.
        eta: f64,
        /// Local steps `s` (FedAvg).
        local_steps: usize,
        /// Local solver.
        local_solver: LocalSolver,
    },
    /// IFCA option I (Algorithm 2, gradient averaging).
    IfcaGradient {
        /// Step `γ`.
        step: f64,
    },
    /// IFCA option II (Algorithm 2, model averaging).
    IfcaModel {
        /// Local step `γ`.
        step: f64,
        /// Local steps `τ`.
        local_steps: usize,
    },
    /// Any other algorithm: no rule-specific advice.
    Other,
}

impl UpdateRule {
    /// What the reference's update is and the usual ways a candidate differs from it.
    fn explain(&self) -> String {
        match *self {
            UpdateRule::Phase2 {
                eta,
                local_steps,
                local_solver,
            } => {
                let local = match local_solver {
                    LocalSolver::Fedavg => format!(
                        "FedAvg: {local_steps} local step(s) θ ← θ − (η/n_i)X_iᵀ(X_iθ − y_i) with η = {eta}"
                    ),
                    LocalSolver::Fedprox => format!(
                        "FedProx: one exact proximal step (I + (η/n_i)X_iᵀX_i)⁻¹(θ + (η/n_i)X_iᵀy_i) with η = {eta}"
                    ),
                };
                format!(
                    "the local update or the aggregation differs. The reference (SXY22 Phase 2) runs {local} \
                     on every client and averages with weights n_i/N over all clients (w_i = n_i/N); a \
                     constant ratio like N/N_j means per-cluster weights; FedProx against FedAvg (or \
                     another number of local steps) gives a ratio that changes from round to round — \
                     set `local_solver`, `local_steps` and `eta` to the candidate's"
                )
            }
            UpdateRule::IfcaGradient { step } => format!(
                "the gradient step or its averaging differs. The reference (IFCA Algorithm 2, option I) \
                 takes θ_j ← θ_j − (γ/|M_t|) Σ_(i ∈ M_t, z_i = j) ∇F_i(θ_j) with γ = {step} and \
                 ∇F_i(θ) = (1/n_i)X_iᵀ(X_iθ − y_i): divided by the round's participants |M_t|, not by the \
                 cluster's (a ratio |M_t|/|{{i : z_i = j}}| means that); set `eta` to the candidate's step"
            ),
            UpdateRule::IfcaModel { step, local_steps } => format!(
                "the local steps or the model average differ. The reference (IFCA Algorithm 2, option \
                 II) runs τ = {local_steps} gradient step(s) θ ← θ − γ(1/n_i)X_iᵀ(X_iθ − y_i) with \
                 γ = {step} on each participant and averages cluster j's participants' models \
                 unweighted; set `eta` and `local_steps` to the candidate's, or `ifca_option=gradient` \
                 if the candidate averages gradients"
            ),
            UpdateRule::Other => {
                "the local update or the aggregation differs (compare the algorithm's keys printed \
                 above with the candidate's)"
                    .to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let halve = |_: usize, th: &DMatrix<f64>| (th * 0.5, vec![0usize; 2]);
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
        let rep =
            compare_one_step(&UpdateRule::Other, &start, (6, 2), &halve, &cand, tight()).unwrap();
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
}
