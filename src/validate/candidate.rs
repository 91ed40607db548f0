//! Reading and checking a candidate's files: its labels (integers within the round's models,
//! `UNASSIGNED_LABEL` for a client outside the round) and its model axis against the
//! reference's (the padding and model-count decisions of the module above).

use crate::error::{FedmixError, Result};
use nalgebra::DMatrix;
use std::path::Path;

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

/// The candidate's models as one `d × max(K_c, K_max)` matrix per round (a shorter axis padded
/// with NaN, the format's padding), after checking its shape `[rounds, K_c, d]` against
/// `expect = [rounds, K_max, d]`: rounds and `d` must agree (another number of rounds is told as
/// such) and `K_c ≥ 1`; another `K_c` is judged round by round ([`round_report`]).
pub(super) fn candidate_models(
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
pub(super) fn check_label_shape(
    shape: &[usize],
    len: usize,
    rounds: usize,
    m: usize,
) -> Result<()> {
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
pub(super) fn label_i64(l: usize) -> i64 {
    match l == crate::metrics::UNASSIGNED {
        true => UNASSIGNED_LABEL,
        false => i64::try_from(l).unwrap_or(i64::MAX),
    }
}

/// Every candidate label (`rounds × m`, C order) is `-1` or a model slot of its round: below
/// the reference's models (round `t`, 0-based, has `models_of(t)`) or the candidate's model
/// axis `slots`, whichever is larger. A label within the candidate's models but beyond the
/// reference's is a disagreement, judged per round, not an error.
pub(super) fn check_label_range(
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
