//! What each algorithm reports about its own run, typed: one [`RunSummary`] variant per
//! algorithm, written to `summary.json` beside the facts every run shares
//! ([`crate::runner::Prepared::summary`]). The field names are the JSON keys.

use crate::engine::recorder::Comm;
use crate::metrics::{ErrorSummary, MajorityMisclustering};
use crate::params::{
    CflParams, FedMdParams, FedSoftParams, IfcaParams, OfficialParams, Phase2Params, SrfcaParams,
};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A training loss as summaries write it: the value, or `"diverged"` when it is not finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossOrDiverged(pub f64);

impl Serialize for LossOrDiverged {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0.is_finite() {
            true => s.serialize_f64(self.0),
            false => s.serialize_str("diverged"),
        }
    }
}

/// What an algorithm reports about its run, one variant per algorithm; serialised as the
/// top-level keys it adds to `summary.json` (`phase1`/`phase2`, `ifca`, `sr_fca`, …).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RunSummary {
    /// `two-phase`: Phase 1 (SXY22 Algorithm 1) and the Phase 2 parameters.
    TwoPhase {
        /// Phase 1's parameters and outcome.
        phase1: Phase1Summary,
        /// Phase 2's parameters.
        phase2: Phase2Params,
    },
    /// `phase2`, `oracle`: Phase 2 alone from given or random models.
    Phase2 {
        /// Phase 2's parameters.
        phase2: Phase2Params,
    },
    /// `oracle-labels`: Phase 2's local solver with the labels fixed to the truth.
    OracleLabels {
        /// Phase 2's parameters.
        phase2: Phase2Params,
        /// Always "fixed to the true labels".
        labels: &'static str,
    },
    /// `ifca` (IFCA Algorithm 2 with restarts).
    Ifca {
        /// Parameters, restarts and the choice among them.
        ifca: IfcaSummary,
    },
    /// `ifca-official` (the authors' protocol).
    IfcaOfficial {
        /// Parameters, every run of the grid and the verdict.
        ifca_official: OfficialSummary,
    },
    /// `fedavg`: one global model.
    Fedavg {
        /// Parameters.
        fedavg: FedAvgSummary,
    },
    /// `local`: one model per client.
    Local {
        /// The estimator.
        local: LocalSummary,
    },
    /// `one-shot`: k-means on local models, then Phase 2.
    OneShot {
        /// The clustering and the Phase 2 parameters.
        one_shot: OneShotSummary,
    },
    /// `sr-fca` (SR-FCA Algorithm 1).
    SrFca {
        /// Parameters and what the run found.
        sr_fca: SrfcaSummary,
    },
    /// `cfl` (Sattler et al. Algorithm 1).
    Cfl {
        /// Parameters and the splits made.
        cfl: CflSummary,
    },
    /// `fedsoft` (Ruan & Joe-Wong 2022).
    FedSoft {
        /// Parameters, the final importance weights and the personal models' error.
        fedsoft: FedSoftSummary,
    },
}

impl RunSummary {
    /// The keys this summary adds to `summary.json`.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }
}

/// Phase 1 of the two-phase algorithm (SXY22 Algorithm 1): parameters and outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase1Summary {
    /// Phase 1's parameters.
    pub params: FedMdParams,
    /// Anchor client ids, in `H` order.
    pub anchors: Vec<usize>,
    /// Connected components found by the `Δ/2` rule.
    pub components_found: usize,
    /// Clients left out of the subspace step for having `n_i < 2`.
    #[serde(rename = "excluded_clients_n_lt_2")]
    pub excluded_clients: usize,
    /// `Δ` used.
    pub separation: f64,
    /// Distance (SXY22 eq. 6) of Phase 1's models to `θ*`, when `θ*` is known.
    pub phase1_distance: Option<f64>,
}

/// IFCA with restarts: the final training loss of every restart and the one kept.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IfcaSummary {
    /// Parameters.
    pub params: IfcaParams,
    /// Final training loss of every restart.
    pub restart_training_losses: Vec<LossOrDiverged>,
    /// The restart reported.
    pub chosen_restart: usize,
    /// How it was chosen.
    pub selection: &'static str,
    /// Communication summed over every restart (the trace has the chosen one's).
    pub communication_all_restarts: Comm,
}

/// One run of the official protocol's grid.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfficialRunSummary {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// Final official `min_dist` (`null` when NaN).
    pub min_dist: f64,
    /// Final training loss.
    pub training_loss: LossOrDiverged,
    /// Iteration at which the run diverged, if it did.
    pub diverged_at: Option<usize>,
}

/// The run the official protocol reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReportedRun {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// How it was chosen.
    pub selection: &'static str,
}

/// The run a user without `θ*` would pick: lowest training loss.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingLossChoice {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// Its final official `min_dist`.
    pub min_dist: f64,
    /// `min_dist < threshold`.
    pub success: bool,
}

/// IFCA's official protocol (`ifca-official`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfficialSummary {
    /// Parameters.
    pub params: OfficialParams,
    /// The data seed's verdict.
    pub verdict: OfficialVerdict,
    /// Every run, in official loop order.
    pub runs: Vec<OfficialRunSummary>,
    /// The run reported.
    pub reported_run: ReportedRun,
    /// The run chosen by training loss.
    pub training_loss_choice: TrainingLossChoice,
}

/// FedAvg's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedAvgSummary {
    /// Local solver, step and rounds.
    pub params: Phase2Params,
    /// Fraction of clients per round.
    pub participation: f64,
}

/// The local baseline's estimator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocalSummary {
    /// Ridge penalty (0: min-norm least squares).
    pub ridge: f64,
    /// "ridge" or "min-norm least squares".
    pub estimator: &'static str,
    /// How to read its distance.
    pub note: &'static str,
}

/// k-means on the local models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KmeansSummary {
    /// Final inertia of the kept start.
    pub inertia: f64,
    /// The kept start.
    pub start: usize,
    /// Lloyd iterations of the kept start.
    pub lloyd_iterations: usize,
    /// Final inertia of every start.
    pub start_inertias: Vec<f64>,
    /// Clients per cluster.
    pub cluster_sizes: Vec<usize>,
}

/// One-shot clustering, then Phase 2.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OneShotSummary {
    /// The clustering.
    pub kmeans: KmeansSummary,
    /// Ridge penalty of the local models.
    pub local_ridge: f64,
    /// Phase 2's parameters.
    pub phase2: Phase2Params,
}

/// SR-FCA's parameters and what the run found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SrfcaSummary {
    /// Parameters.
    pub params: SrfcaParams,
    /// Clusters at the end.
    pub clusters_found: usize,
    /// Clients unassigned at the end.
    pub unassigned_clients: usize,
    /// Per stage.
    pub report: SrfcaReport,
    /// SRFCA Definition 3.1 misclustering counting unassigned clients as errors.
    pub misclustering_unassigned_as_errors: Option<MajorityMisclustering>,
    /// How the output labels treat unassigned clients.
    pub output_labels: &'static str,
}

/// CFL's parameters and the splits it made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CflSummary {
    /// Parameters.
    pub params: CflParams,
    /// Clusters at the end.
    pub clusters_found: usize,
    /// Every split.
    pub splits: Vec<Split>,
    /// Client ids of every final cluster.
    pub clusters: Vec<Vec<usize>>,
}

/// FedSoft's parameters, its final importance weights and how far the personal models are from
/// their own clusters' true models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedSoftSummary {
    /// Parameters.
    pub params: FedSoftParams,
    /// Every client's importance weights `(u_i1 … u_ik)` from the last estimation (row i is
    /// client i; the output labels are their argmax, ties → lowest s).
    pub importance_weights: Vec<Vec<f64>>,
    /// The round whose start made the last estimation (1-based; 0 with no round run: the
    /// estimate at the start).
    pub last_estimation_round: usize,
    /// `‖w_i − θ*_{z_i}‖` over the clients (personal model against the client's own true
    /// cluster model), when `θ*` and the true labels are known.
    pub personal_model_error: Option<ErrorSummary>,
}

/// The official summary's verdict for one data seed (`run_p2_r_noise.py::summarize`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OfficialVerdict {
    /// The official `min_value`: the smallest non-NaN final `min_dist`, or the sentinel `-1`
    /// when every run is NaN.
    pub min_value: f64,
    /// `min_value < threshold`.
    pub success: bool,
    /// Every run ended NaN.
    pub all_nan: bool,
}

/// What one SR-FCA run found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SrfcaReport {
    /// Threshold used.
    pub lambda: f64,
    /// Whether λ came from the quantile rule.
    pub lambda_from_quantile: bool,
    /// Clusters after ONE_SHOT and after each REFINE step.
    pub clusters_per_stage: Vec<usize>,
    /// Unassigned clients after ONE_SHOT and after each REFINE step.
    pub unassigned_per_stage: Vec<usize>,
    /// Clients unassigned at the end (served the nearest model in the output labels).
    pub unassigned_ids: Vec<usize>,
}

/// One recorded split.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Split {
    /// Round (1-based).
    pub round: usize,
    /// Client ids of the parent cluster.
    pub parent: Vec<usize>,
    /// Client ids of the two children.
    pub children: (Vec<usize>, Vec<usize>),
    /// `α_max^cross`.
    pub alpha_max_cross: f64,
    /// `‖mean update‖`, `max ‖update‖` at the split.
    pub norms: (f64, f64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_non_finite_loss_is_written_as_diverged() {
        let v = |x: f64| serde_json::to_value(LossOrDiverged(x)).unwrap();
        assert_eq!(v(1.5), json!(1.5));
        assert_eq!(v(f64::INFINITY), json!("diverged"));
        assert_eq!(v(f64::NAN), json!("diverged"));
    }

    #[test]
    fn each_variant_adds_its_own_top_level_keys() {
        let p2 = Phase2Params {
            eta: 0.1,
            local_steps: 5,
            local_solver: crate::params::LocalSolver::Fedavg,
            rounds: 3,
        };
        let keys = |s: &RunSummary| s.to_map().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&RunSummary::Phase2 { phase2: p2 }), ["phase2"]);
        assert_eq!(
            keys(&RunSummary::OracleLabels {
                phase2: p2,
                labels: "fixed to the true labels"
            }),
            ["labels", "phase2"]
        );
        let local = LocalSummary {
            ridge: 0.0,
            estimator: "min-norm least squares",
            note: "",
        };
        assert_eq!(keys(&RunSummary::Local { local }), ["local"]);
    }
}
