//! What diverged at the first failing round: a non-finite entry, the cluster choices (SXY22
//! eq. 8 / IFCA's argmin, ties), or — with identical choices — the update itself, by how far each
//! model moved on both sides against the reference's update rule.

use super::*;
use crate::params::LocalSolver;
use nalgebra::DMatrix;

/// `twice` or `half` for a ratio within 2% of 2 or ½.
pub(super) fn factor_name(ratio: f64) -> Option<&'static str> {
    let near = |x: f64| (ratio / x - 1.0).abs() < 0.02;
    match (near(2.0), near(0.5)) {
        (true, _) => Some("twice"),
        (_, true) => Some("half"),
        _ => None,
    }
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
pub(super) fn entry_text(r: &RoundReport) -> Option<String> {
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
pub(super) fn clients_text(l: &[usize]) -> String {
    let shown: Vec<String> = l.iter().take(8).map(usize::to_string).collect();
    format!(
        "{}{}",
        shown.join(", "),
        if l.len() > 8 { ", …" } else { "" }
    )
}

/// How far the worst model moved on each side from its start of the round, their ratio
/// (candidate / reference; `inf` when the reference did not move) and the sentence saying so.
pub(super) fn move_text(
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
pub(super) fn factor_hint(ratio: f64) -> &'static str {
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
