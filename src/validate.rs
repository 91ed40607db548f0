//! Round-by-round comparison of a candidate trajectory (another implementation's iterates and
//! labels) with the reference run on identical data and randomness (`fedmix validate`).
//!
//! Per round `t` the deviation is `max|θ^ref_t − θ^cand_t| / max|θ^ref_t|` over all `k × d`
//! entries; the round is within tolerance when `max|θ^ref_t − θ^cand_t| ≤ atol + rtol·max|θ^ref_t|`
//! and, when both sides give labels, every client chose the same cluster. At the first round
//! that fails, [`diagnose`] says what diverged: the cluster choices (eq. 8 / ties), or — with
//! identical choices — the update itself, comparing how far each model moved on both sides
//! (a constant ratio such as `N/N_j` points at the aggregation weights).

use crate::error::{FedmixError, Result};
use crate::params::LocalSolver;
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

/// One round of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct RoundReport {
    /// Round (1-based: the models after round `round`).
    pub round: usize,
    /// `max|Δ| / max|θ^ref|`.
    pub max_rel_deviation: f64,
    /// `max|Δ|`.
    pub max_abs_deviation: f64,
    /// Model (cluster index) holding the largest deviation.
    pub worst_model: usize,
    /// Coordinate of the largest deviation.
    pub worst_coordinate: usize,
    /// Clients whose cluster choice differs (when both sides give labels).
    pub label_disagreements: Option<Vec<usize>>,
    /// Within tolerance.
    pub ok: bool,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationReport {
    /// Tolerances used.
    pub tolerance: Tolerance,
    /// Per-round reports.
    pub rounds: Vec<RoundReport>,
    /// First failing round.
    pub first_failure: Option<usize>,
    /// What diverged at the first failing round.
    pub diagnosis: Option<String>,
    /// All rounds within tolerance.
    pub passed: bool,
}

/// Compare `reference` (one `d × k` matrix per round) and optional reference labels with a
/// candidate given as a flat C-order `rounds × k × d` array and optional `rounds × M` labels.
/// `init` (`d × k`), the common start when known, is used to diagnose the first round.
///
/// # Errors
/// [`FedmixError::DimensionMismatch`] when the candidate's shape disagrees with the reference.
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
    /// The models after each round (`d × k` each).
    pub iterates: &'a [DMatrix<f64>],
    /// The labels after each round, when recorded.
    pub labels: Option<&'a [Vec<usize>]>,
}

/// The candidate's side: C-order `rounds × k × d` models and optional `rounds × M` labels
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
/// As [`compare`].
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
        Some(m) => (m.nrows(), m.ncols()),
        None => (
            candidate_shape.get(2).copied().unwrap_or(0),
            candidate_shape.get(1).copied().unwrap_or(0),
        ),
    };
    let expect = [reference.len(), k, d];
    if candidate_shape.len() == 3
        && candidate_shape[1..] == expect[1..]
        && !reference.is_empty()
        && candidate_shape[0] != expect[0]
    {
        return Err(FedmixError::RoundsMismatch {
            candidate: candidate_shape[0],
            reference: expect[0],
        });
    }
    if candidate_shape != expect {
        return Err(FedmixError::DimensionMismatch {
            what: format!("candidate iterates shape {candidate_shape:?} vs reference {expect:?} (rounds × k × d)"),
            expected: expect.iter().product(),
            found: candidate_shape.iter().product(),
        });
    }
    let cand: Vec<DMatrix<f64>> = candidate
        .chunks_exact(k * d)
        .map(|c| DMatrix::from_column_slice(d, k, c))
        .collect();
    let labels = match (reference_labels, candidate_labels) {
        (Some(r), Some((c, shape))) => {
            let m = r.first().map_or(0, Vec::len);
            if shape != [reference.len(), m] {
                return Err(FedmixError::DimensionMismatch {
                    what: format!(
                        "candidate labels shape {shape:?} vs reference [{}, {m}] (rounds × M)",
                        reference.len()
                    ),
                    expected: reference.len() * m,
                    found: shape.iter().product(),
                });
            }
            Some((r, c, m))
        }
        _ => None,
    };
    let mut rounds = Vec::with_capacity(reference.len());
    for (t, (a, b)) in reference.iter().zip(&cand).enumerate() {
        let diff = a - b;
        let (imax, abs) = diff
            .iter()
            .enumerate()
            .fold((0, 0.0f64), |(bi, bv), (i, v)| {
                if v.abs() > bv {
                    (i, v.abs())
                } else {
                    (bi, bv)
                }
            });
        let scale = a.amax();
        let disagreements = labels.map(|(r, c, m)| {
            (0..m)
                .filter(|&i| c[t * m + i] != r[t][i] as i64)
                .collect::<Vec<usize>>()
        });
        let ok =
            abs <= tol.atol + tol.rtol * scale && disagreements.as_ref().is_none_or(Vec::is_empty);
        rounds.push(RoundReport {
            round: t + 1,
            max_rel_deviation: if scale > 0.0 { abs / scale } else { abs },
            max_abs_deviation: abs,
            worst_model: imax / d,
            worst_coordinate: imax % d,
            label_disagreements: disagreements,
            ok,
        });
    }
    let first_failure = rounds.iter().find(|r| !r.ok).map(|r| r.round);
    let diagnosis = first_failure.map(|t| diagnose(init, reference, &cand, &rounds[t - 1], rule));
    Ok(ValidationReport {
        tolerance: tol,
        passed: first_failure.is_none(),
        rounds,
        first_failure,
        diagnosis,
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
    if let Some(l) = r.label_disagreements.as_ref().filter(|l| !l.is_empty()) {
        let shown: Vec<String> = l.iter().take(8).map(usize::to_string).collect();
        return format!(
            "round {}: {} client(s) chose a different cluster (clients {}{}): the assignment step differs \
             (eq. 8: argmin_j ‖y_i − φ_iθ_j‖², ties → lowest j) or the models broadcast in this round already differed",
            r.round,
            l.len(),
            shown.join(", "),
            if l.len() > 8 { ", …" } else { "" }
        );
    }
    let t = r.round - 1;
    let (prev_ref, prev_cand) = match (t, init) {
        (0, Some(i)) => (i, i),
        (0, None) => {
            return format!(
                "round 1: every client chose the same cluster, but model {} differs by {:.3e} \
                 (start unknown here: pass --init to see how far each side moved)",
                r.worst_model, r.max_abs_deviation
            )
        }
        _ => (&reference[t - 1], &candidate[t - 1]),
    };
    let j = r.worst_model;
    let moved_ref = (reference[t].column(j) - prev_ref.column(j)).norm();
    let moved_cand = (candidate[t].column(j) - prev_cand.column(j)).norm();
    let start_gap = (prev_ref - prev_cand).amax();
    if start_gap > 0.0 && t > 0 {
        return format!(
            "round {}: the models entering this round already differed by {start_gap:.3e} (below tolerance); \
             the deviation grew to {:.3e} in model {j}: an accumulating difference in the update",
            r.round, r.max_abs_deviation
        );
    }
    let ratio = if moved_ref > 0.0 {
        moved_cand / moved_ref
    } else {
        f64::INFINITY
    };
    format!(
        "round {}: every client chose the same cluster, but model {j} moved by {moved_cand:.6e} in the candidate \
         vs {moved_ref:.6e} in the reference (ratio {ratio:.4}): {}{}",
        r.round,
        factor_hint(ratio),
        rule.explain()
    )
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
}
