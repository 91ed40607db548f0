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

use crate::error::Result;
use nalgebra::DMatrix;
use serde::Serialize;

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

/// [`compare`] knowing the reference's update rule, so that the diagnosis of the first
/// failing round names the update the candidate should match and the usual ways it differs.
///
/// # Errors
/// [`FedmixError::RoundsMismatch`](crate::error::FedmixError::RoundsMismatch) or [`FedmixError::DimensionMismatch`](crate::error::FedmixError::DimensionMismatch) when the candidate's
/// shape disagrees with the reference in rounds or `d`, or it has no model slot (another number
/// of models is a failing round, not an error: see the module doc);
/// [`FedmixError::CandidateLabelOutOfRange`](crate::error::FedmixError::CandidateLabelOutOfRange) for a label that is neither `-1` nor a model slot
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
pub type StepFn<'a> = &'a dyn Fn(usize, &DMatrix<f64>) -> Result<(DMatrix<f64>, Vec<usize>)>;

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

mod candidate;
mod diagnosis;
mod one_step;
use candidate::{candidate_models, check_label_range, check_label_shape, label_i64};
pub use candidate::{labels_from_f64, read_labels, UNASSIGNED_LABEL};
pub use diagnosis::{diagnose, UpdateRule};
pub use one_step::compare_one_step;
#[cfg(test)]
mod tests;
