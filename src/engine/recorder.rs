//! Run records: the per-round trace and the communication ledger that every algorithm writes
//! through (the boundary between the shared machinery and the algorithms is the
//! [`crate::engine::contract::Algorithm`] trait, in `contract`).

use crate::federation::Federation;
use crate::metrics::{self, as_options, model_distance};
use crate::progress::RunProgress;
use nalgebra::DMatrix;
use serde::Serialize;
use std::sync::Arc;

/// Which phase a round belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// SXY22 Phase 1 (FedMD on anchors), or the initial clustering step of a baseline
    /// (one-shot's local models + k-means, SR-FCA's ONE_SHOT).
    Phase1,
    /// SXY22 Phase 2 (FedX + clustering), or the main loop of a baseline.
    Phase2,
}

impl Phase {
    /// Name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Phase1 => "phase1",
            Phase::Phase2 => "phase2",
        }
    }
}

/// Communication of one round: what crossed the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Comm {
    /// Floats sent by the PS, counted per recipient.
    pub floats_down: u64,
    /// Floats uploaded by clients.
    pub floats_up: u64,
    /// Messages (downloads + uploads).
    pub messages: u64,
    /// Clients taking part.
    pub participants: u64,
}

impl Comm {
    /// A broadcast of `floats` to `recipients` clients and one upload of `up` floats from each.
    pub fn broadcast_and_upload(recipients: u64, floats: u64, up: u64) -> Self {
        Self {
            floats_down: recipients * floats,
            floats_up: recipients * up,
            messages: 2 * recipients,
            participants: recipients,
        }
    }

    /// Sum two ledgers (participants: the larger, as the same clients may appear twice).
    pub fn merge(self, o: Self) -> Self {
        Self {
            floats_down: self.floats_down + o.floats_down,
            floats_up: self.floats_up + o.floats_up,
            messages: self.messages + o.messages,
            participants: self.participants.max(o.participants),
        }
    }
}

/// Phase 1 diagnostics of one round.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AnchorStats {
    /// `‖θ_{i,t} − θ*_{z_i}‖` for each anchor (when `θ*` is known).
    pub errors: Vec<f64>,
    /// `σ̂_{i,t}` for each anchor.
    pub sigma_hat: Vec<f64>,
    /// Step sizes `η_{i,t}` (0 where the stopping rule held).
    pub step_sizes: Vec<f64>,
}

/// One row of the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundRecord {
    /// Global round index (Phase 1 rounds first, starting at 1).
    pub round: usize,
    /// Phase.
    pub phase: Phase,
    /// `d(θ_t, θ*)` (eq. 6), when `θ*` is known and models exist for every cluster.
    pub distance: Option<f64>,
    /// Per-cluster errors under the optimal bottleneck assignment.
    pub per_cluster: Vec<f64>,
    /// Misclustering rate of clients / samples (when labels are known and assigned).
    pub misclustering: Option<(f64, f64)>,
    /// Training loss `Σ (n_i/N) min_j L_i(θ_j)`.
    pub training_loss: Option<f64>,
    /// Phase 1 diagnostics.
    pub anchors: Option<AnchorStats>,
    /// Number of clusters the anchors formed (last Phase 1 round).
    pub anchor_clusters: Option<usize>,
    /// Models no client chose this round (they stay put, as IFCA Alg. 2 and SXY22 Alg. 2 do);
    /// `None` in rounds without an assignment.
    pub empty_clusters: Option<usize>,
    /// Communication.
    pub comm: Comm,
}

/// Collects the trace of a run and evaluates the metrics that the data allow.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// Rows so far.
    pub rows: Vec<RoundRecord>,
    /// Save each round's models (for `iterates.npy`).
    pub save_iterates: bool,
    /// Saved models (`d × k` each).
    pub iterates: Vec<DMatrix<f64>>,
    /// Saved labels per round (when assigned).
    pub labels: Vec<Vec<usize>>,
    /// The round (1-based trace row) of each saved model set in `iterates`: rows without
    /// models (Phase 1, communication-only rows) have none.
    pub iterate_rounds: Vec<usize>,
    /// The round of each saved label vector in `labels`.
    pub label_rounds: Vec<usize>,
    /// Skip the per-round metrics (distance, misclustering, loss); rows keep only communication.
    pub skip_metrics: bool,
    /// Rows recorded so far and the last distance, readable from another thread (a progress
    /// display).
    pub progress: Option<Arc<RunProgress>>,
}

impl Recorder {
    /// A recorder; `save_iterates` keeps every round's models.
    pub fn new(save_iterates: bool) -> Self {
        Self {
            save_iterates,
            ..Self::default()
        }
    }

    /// Append a row, counting it in [`Recorder::progress`].
    pub fn push_row(&mut self, row: RoundRecord) {
        let distance = row.distance;
        self.rows.push(row);
        if let Some(p) = &self.progress {
            p.record(self.rows.len(), distance);
        }
    }

    /// A recorder that keeps only communication per round (for sweeps that need final results).
    pub fn quiet() -> Self {
        Self {
            skip_metrics: true,
            ..Self::default()
        }
    }

    /// Record a Phase 2 style round: models `theta` (`d × K̂`) and the labels clients chose
    /// ([`crate::metrics::UNASSIGNED`] for a client outside every cluster). The distance is eq. 6 when
    /// `K̂ ≥ k` (empty otherwise); misclustering uses the best permutation when `K̂ = k` and
    /// every client is assigned, SRFCA Def. 3.1 majority labels otherwise
    /// ([`metrics::label_quality`]).
    pub fn model_round(
        &mut self,
        fed: &Federation,
        phase: Phase,
        theta: &DMatrix<f64>,
        labels: Option<&[usize]>,
        comm: Comm,
    ) {
        let loss =
            (!self.skip_metrics).then(|| crate::engine::client_pass::training_loss(fed, theta));
        self.model_round_with_loss(fed, phase, theta, labels, comm, loss);
    }

    /// A row with communication only — what a quiet recorder keeps of a round — for a round
    /// whose models the caller does not have at hand (a run reused from a batch).
    pub fn comm_round(&mut self, phase: Phase, comm: Comm) {
        let row = self.bare_row(phase, comm, None);
        self.push_row(row);
    }

    /// The next row with communication (and empty-cluster count) only.
    fn bare_row(&self, phase: Phase, comm: Comm, empty_clusters: Option<usize>) -> RoundRecord {
        RoundRecord {
            round: self.rows.len() + 1,
            phase,
            distance: None,
            per_cluster: Vec::new(),
            misclustering: None,
            training_loss: None,
            anchors: None,
            anchor_clusters: None,
            empty_clusters,
            comm,
        }
    }

    /// Whether the recorder needs each round's models: it computes metrics or saves iterates.
    /// When it does not, a run computed elsewhere can be reported with [`Recorder::comm_round`]
    /// rows instead of being re-run.
    pub fn needs_models(&self) -> bool {
        !self.skip_metrics || self.save_iterates
    }

    /// Whether rows get metrics (a [`Recorder::quiet`] recorder keeps communication only).
    pub fn records_metrics(&self) -> bool {
        !self.skip_metrics
    }

    /// [`Recorder::model_round`] with the training loss at `theta` computed by the caller
    /// (batched runs compute the losses of all their replicates in one pass; the value must be
    /// [`crate::engine::client_pass::training_loss`]`(fed, theta)`, which the batched pass reproduces bit for bit).
    /// Ignored by a quiet recorder.
    pub fn model_round_with_loss(
        &mut self,
        fed: &Federation,
        phase: Phase,
        theta: &DMatrix<f64>,
        labels: Option<&[usize]>,
        comm: Comm,
        training_loss: Option<f64>,
    ) {
        let round = self.rows.len() + 1;
        let empty_clusters = labels.map(|l| {
            let mut used = vec![false; theta.ncols()];
            for &j in l {
                if let Some(u) = used.get_mut(j) {
                    *u = true;
                }
            }
            used.iter().filter(|u| !**u).count()
        });
        if self.skip_metrics {
            let row = self.bare_row(phase, comm, empty_clusters);
            self.push_row(row);
            return;
        }
        let (distance, per_cluster) = model_distance(fed, theta);
        let misclustering = match (labels, fed.labels(), fed.k()) {
            (Some(est), Some(truth), Some(k)) => {
                metrics::label_quality(&as_options(est), truth, &fed.sizes(), theta.ncols(), k)
                    .ok()
                    .map(|m| (m.clients, m.samples))
            }
            _ => None,
        };
        self.push_row(RoundRecord {
            round,
            phase,
            distance,
            per_cluster,
            misclustering,
            training_loss,
            anchors: None,
            anchor_clusters: None,
            empty_clusters,
            comm,
        });
        if self.save_iterates {
            self.iterates.push(theta.clone());
            self.iterate_rounds.push(round);
            if let Some(l) = labels {
                self.labels.push(l.to_vec());
                self.label_rounds.push(round);
            }
        }
    }

    /// Total communication of the rows of `phase` (or all rows for `None`).
    pub fn comm_total(&self, phase: Option<Phase>) -> Comm {
        self.rows
            .iter()
            .filter(|r| phase.is_none_or(|p| p == r.phase))
            .fold(Comm::default(), |acc, r| Comm {
                floats_down: acc.floats_down + r.comm.floats_down,
                floats_up: acc.floats_up + r.comm.floats_up,
                messages: acc.messages + r.comm.messages,
                participants: acc.participants.max(r.comm.participants),
            })
    }

    /// The trace as CSV (header + one line per round). Vectors are `;`-separated; empty fields
    /// are unknown or not applicable. In Phase 1 rows, `distance` is
    /// `max_{i∈H} ‖θ_{i,t} − θ*_{z_i}‖` (Theorem 1's statistic), as there are no k models yet.
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "round,phase,distance,per_cluster_errors,misclustering_clients,misclustering_samples,training_loss,\
             anchor_error_max,anchor_error_mean,sigma_hat_max,step_size_mean,anchor_clusters,\
             anchor_errors,sigma_hat,step_sizes,\
             floats_down,floats_up,messages,participants,empty_clusters\n",
        );
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:e}"));
        let list = |v: Option<&[f64]>| {
            v.map_or(String::new(), |v| {
                v.iter()
                    .map(|x| format!("{x:e}"))
                    .collect::<Vec<_>>()
                    .join(";")
            })
        };
        for r in &self.rows {
            let a = r.anchors.as_ref();
            let max = |v: &[f64]| {
                v.iter()
                    .copied()
                    .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
            };
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let per: Vec<String> = r.per_cluster.iter().map(|x| format!("{x:e}")).collect();
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                r.round,
                r.phase.as_str(),
                opt(r.distance),
                per.join(";"),
                opt(r.misclustering.map(|m| m.0)),
                opt(r.misclustering.map(|m| m.1)),
                opt(r.training_loss),
                opt(a.and_then(|a| max(&a.errors))),
                opt(a.and_then(|a| mean(&a.errors))),
                opt(a.and_then(|a| max(&a.sigma_hat))),
                opt(a.and_then(|a| mean(&a.step_sizes))),
                r.anchor_clusters.map_or(String::new(), |c| c.to_string()),
                list(a.map(|a| &a.errors[..])),
                list(a.map(|a| &a.sigma_hat[..])),
                list(a.map(|a| &a.step_sizes[..])),
                r.comm.floats_down,
                r.comm.floats_up,
                r.comm.messages,
                r.comm.participants,
                r.empty_clusters.map_or(String::new(), |c| c.to_string()),
            ));
        }
        s
    }
}
