//! SR-FCA — Successive Refine Federated Clustering Algorithm (Vardhan, Ghosh, Mazumdar, TMLR
//! 2024, Algorithms 1–4). It does not need `k`: it reports the number of
//! clusters it finds.
//!
//! - `ONE_SHOT(λ, t)` (Algorithm 1): every client trains locally from `w₀`; clients `i, j` are
//!   linked when `dist(w_i, w_j) ≤ λ`; the clusters are the connected components with at least
//!   `t` clients; clients in smaller components are **unassigned**.
//! - `REFINE` (Algorithm 1), `R` times:
//!   - `TrimmedMeanGD` (Algorithm 3) per cluster: `ω_{c,0} = w₀`,
//!     `ω_{c,t+1} = proj_W(ω_{c,t} − η TrMean_β({∇f_i(ω_{c,t})}_{i∈S_c}))`, `T` steps;
//!   - `RECLUSTER` (Algorithm 2): every client `i ∈ [m]` (unassigned ones included) moves to
//!     `argmin_c dist(w_i, ω_c)`;
//!   - `MERGE` (Algorithm 4): clusters `c, c'` are linked when `dist(ω_c, ω_c') ≤ λ`; each
//!     connected component with at least `t` clients becomes one cluster whose model is the
//!     average of its members' models; clients of smaller components become unassigned.
//! - `TrMean_β` (Definition 3.2): per coordinate, drop the `⌊βJ⌋` smallest and `⌊βJ⌋` largest
//!   of the `J` values and average the rest.
//! - `dist` (`srfca_dist`): `l2` = `‖w − w'‖`, or `cross-loss` (Definition 5.1)
//!   `½(f_i(w_j) + f_j(w_i))`, with a cluster's loss `f_c` the mean of its clients' losses.
//!
//! Decisions (the paper leaves these open; the authors' code is cited where it answers):
//! - `w₀ = 0`; `srfca_local_iterations = None` (default) takes the limit `T → ∞` of local GD
//!   from `w₀ = 0`, the min-norm least-squares solution ([`local_models`]); `Some(T)` runs `T`
//!   GD steps of the shared local solver with step `eta`.
//! - `λ`: `srfca_lambda`, or when unset the authors' code rule (`dist_fraction`): the
//!   `⌈q·P⌉`-th smallest of the `P = M(M−1)/2` ONE_SHOT distances, `q = srfca_lambda_quantile`.
//!   With connected components the working λ sit just below the smallest cross-cluster
//!   distance, at the low end of the distances, which a low quantile finds and a
//!   "middle of the histogram" rule does not (measurements on the field's doc).
//! - Sizes (`≥ t`) count clients, also in MERGE, whose graph nodes are clusters.
//! - `TrMean_β` divides by the number of values kept, `J − 2⌊βJ⌋` (Definition 3.2 writes
//!   `(1−2β)J`, equal when `βJ` is an integer): it is an average.
//! - `W` is the closed ball of diameter `D` centred at 0 (`srfca_diameter`; unset = `R^d`, no
//!   projection); `TrimmedMeanGD` uses the Phase 2 step `eta`.
//! - `RECLUSTER`'s cross-loss uses `f_c` over the clients that trained `ω_c` (`C_{r−1}`, as the
//!   authors' `recluster`), `MERGE`'s over the re-clustered members; ties → lowest cluster index;
//!   components are numbered by their smallest member.
//! - Clients still unassigned at the end are **served** the model minimising `dist` (the
//!   RECLUSTER rule) in the output labels, and are counted (`unassigned_clients`, ids, and a
//!   misclustering rate that counts them as errors).
//!
//! The rounds run on the round executor ([`SrfcaRounds`]): ONE_SHOT is their start, and each
//! trace row of REFINE is one round — a TrimmedMeanGD step, or RECLUSTER + MERGE — so the
//! driver records every row and checks every TrimmedMeanGD iterate.
//!
//! Limitation, measured (`examples/baselines_table.rs`, `docs/baselines.md`): when `n_i ≪ d`
//! (`srfca-linear`: n_i = 100, d = 1000) the local models do not separate pairwise — their
//! distances are dominated by each client's ‖P_i θ*‖ — so no λ gives ONE_SHOT one pure
//! component per true cluster, and since REFINE never creates clusters SR-FCA ends with K̂ = 1.
//! This is the regime where the paper's Lemma 4.6 does not apply (it needs `n` large against
//! `d`).
//!
//! The authors' code differs from the paper in two places this module follows the paper on: it
//! forms clusters by a randomised pivot "correlation clustering" instead of connected
//! components, and applies the size filter after RECLUSTER rather than in MERGE.

mod blocks;
mod params;
pub use params::*;

use crate::engine::local_update::{client_gradient, local_update};
use crate::metrics::MajorityMisclustering;
use crate::params::AlgorithmKind;
use crate::params::SrfcaDist;
pub use blocks::{components, project_ball, threshold, trimmed_mean};
use serde::Serialize;

use super::local::local_models;
use crate::engine::contract::{Algorithm, LiveRun, RunOutput, Termination};
use crate::engine::executor::{record_round, Executor, RoundSolver, RoundState};
use crate::engine::live::{Live, Output};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::engine::summary::RunSummary;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::UNASSIGNED;
use crate::metrics::{self, argmin};
use crate::params::{LocalSolver, Phase2Params};
use nalgebra::{DMatrix, DVector};

/// `L[i][c] = F_i(models_c)` for every client and model (`M × K`).
fn loss_matrix(fed: &Federation, models: &DMatrix<f64>) -> DMatrix<f64> {
    let mut l = DMatrix::zeros(fed.num_clients(), models.ncols());
    for i in 0..fed.num_clients() {
        for (c, v) in metrics::client_losses(fed, i, models)
            .into_iter()
            .enumerate()
        {
            l[(i, c)] = v;
        }
    }
    l
}

/// Mean of `L[j][col]` over the clients `members` (a cluster's loss `f_c` at model `col`).
fn mean_loss(l: &DMatrix<f64>, members: &[usize], col: usize) -> f64 {
    members.iter().map(|&j| l[(j, col)]).sum::<f64>() / members.len().max(1) as f64
}

/// Labels `0..K` of the clients in `clusters`, [`UNASSIGNED`] for the others.
fn labels_of(m: usize, clusters: &[Vec<usize>]) -> Vec<usize> {
    let mut labels = vec![UNASSIGNED; m];
    for (c, members) in clusters.iter().enumerate() {
        members.iter().for_each(|&i| labels[i] = c);
    }
    labels
}

/// ONE_SHOT's local models `w_i` (`d × M`).
///
/// # Errors
/// As [`local_models`].
pub fn one_shot_models(fed: &Federation, p: &SrfcaParams) -> Result<DMatrix<f64>> {
    match p.local_iterations {
        None => local_models(fed, 0.0),
        Some(t) => {
            let lp = Phase2Params {
                eta: p.eta,
                local_steps: t,
                local_solver: LocalSolver::Fedavg,
                rounds: 1,
            };
            let w0 = DVector::zeros(fed.d());
            let mut w = DMatrix::zeros(fed.d(), fed.num_clients());
            for i in 0..fed.num_clients() {
                w.set_column(i, &local_update(fed, i, &w0, &lp, None));
            }
            Ok(w)
        }
    }
}

/// ONE_SHOT's pairwise distances (`M × M`, symmetric, zero diagonal) and, for the cross-loss,
/// the loss matrix `F_i(w_j)` it came from.
pub fn pairwise(
    fed: &Federation,
    w: &DMatrix<f64>,
    dist: SrfcaDist,
) -> (DMatrix<f64>, Option<DMatrix<f64>>) {
    let m = w.ncols();
    match dist {
        SrfcaDist::L2 => (
            DMatrix::from_fn(m, m, |a, b| (w.column(a) - w.column(b)).norm()),
            None,
        ),
        SrfcaDist::CrossLoss => {
            let l = loss_matrix(fed, w);
            let d = DMatrix::from_fn(m, m, |a, b| {
                if a == b {
                    0.0
                } else {
                    0.5 * (l[(a, b)] + l[(b, a)])
                }
            });
            (d, Some(l))
        }
    }
}

/// SR-FCA (`sr-fca`).
#[derive(Clone, Debug)]
pub struct SrFca {
    /// Parameters (`srfca_*`, `eta` / `eta_gamma`).
    pub params: crate::params::Valid<SrfcaConfig>,
}

impl SrFca {
    /// The rounds of this run on `fed`: the parameters resolved against the data.
    ///
    /// # Errors
    /// The parameters' checks ([`SrfcaParams::resolve`]).
    pub fn rounds(&self, fed: &Federation) -> Result<SrfcaRounds> {
        Ok(SrfcaRounds {
            p: SrfcaParams::resolve(&self.params, fed)?,
        })
    }

    /// Run and return the report alongside the output: ONE_SHOT ([`SrfcaRounds`]' start,
    /// recorded as a Phase 1 row), then REFINE's rows on the [`Executor`].
    ///
    /// # Errors
    /// Parameter errors; [`FedmixError::NoClustersFormed`] when a stage leaves no cluster;
    /// [`FedmixError::Divergence`] naming the trace row of a non-finite TrimmedMeanGD iterate.
    pub fn run_detailed(
        &self,
        fed: &Federation,
        rec: &mut Recorder,
    ) -> Result<(RunOutput, SrfcaReport)> {
        let rounds = self.rounds(fed)?;
        let start = rounds.start(fed, rec)?;
        // No budget: the rounds stop on their own after R REFINE rounds (`terminate`).
        let done = Executor::new(fed, &rounds, usize::MAX).run_from(start, rec)?;
        Ok(rounds.finish(fed, done.state, done.termination))
    }
}

impl SrfcaRounds {
    /// ONE_SHOT ([`RoundSolver::init`]), recorded as the run's first (Phase 1) row; the
    /// rounds after it are numbered by the recorder's rows, so that a divergence names the
    /// trace row.
    ///
    /// # Errors
    /// As [`RoundSolver::init`].
    fn start(&self, fed: &Federation, rec: &mut Recorder) -> Result<SrfcaState> {
        let mut start = self.init(fed, 0, &Randomness::default())?;
        record_round(fed, Phase::Phase1, &start, rec);
        start.round = rec.rows.len();
        Ok(start)
    }
}

/// The clients' ONE_SHOT models and, for the cross-loss, `F_j(w_i)` at `(j, i)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalModels {
    /// ONE_SHOT's local models `w_i` (`d × M`).
    pub w: DMatrix<f64>,
    /// `F_j(w_i)` at `(j, i)` (`M × M`), for the cross-loss only.
    pub losses: Option<DMatrix<f64>>,
}

impl LocalModels {
    /// `dist(w_i, ω_c)`: `‖w_i − ω_c‖`, or `½(f_i(ω_c) + f_c(w_i))` with `f_c` the mean loss of
    /// `members` (`lw[(i, c)] = F_i(ω_c)`).
    fn to_model(
        &self,
        lw: Option<&DMatrix<f64>>,
        models: &DMatrix<f64>,
        members: &[usize],
        i: usize,
        c: usize,
    ) -> f64 {
        match (lw, self.losses.as_ref()) {
            (Some(lw), Some(lc)) => 0.5 * (lw[(i, c)] + mean_loss(lc, members, i)),
            _ => (self.w.column(i) - models.column(c)).norm(),
        }
    }
}

/// SR-FCA's state after one trace row: ONE_SHOT's (the start), a TrimmedMeanGD step's, or a
/// RECLUSTER + MERGE's.
#[derive(Clone, Debug, PartialEq)]
pub struct SrfcaState {
    /// Trace rows so far (ONE_SHOT's row is the first).
    pub round: usize,
    /// The row's models: each cluster's mean local model after ONE_SHOT, `ω_{c,t}` after
    /// TrimmedMeanGD step `t`, the merged models after MERGE (`d × K̂`).
    pub theta: DMatrix<f64>,
    /// Every client's cluster in `clusters`, [`UNASSIGNED`] for the others.
    pub labels: Vec<usize>,
    /// Communication of the row.
    pub comm: Comm,
    /// The clusters REFINE trains (client ids, in model order): ONE_SHOT's, then each MERGE's.
    pub clusters: Vec<Vec<usize>>,
    /// REFINE rounds completed.
    pub refined: usize,
    /// TrimmedMeanGD steps done in the current REFINE round (`theta` is their last iterate when
    /// positive).
    pub gd_steps: usize,
    /// ONE_SHOT's local models, which RECLUSTER and the final labels measure against.
    pub local: LocalModels,
    /// λ and the clusters and unassigned clients after each stage so far.
    pub report: SrfcaReport,
}

impl RoundState for SrfcaState {
    fn round(&self) -> usize {
        self.round
    }
    fn models(&self) -> &DMatrix<f64> {
        &self.theta
    }
    fn labels(&self) -> Option<&[usize]> {
        Some(&self.labels)
    }
    fn comm(&self) -> Comm {
        self.comm
    }
    /// Only TrimmedMeanGD iterates are checked: a MERGE row's models are averages of the checked
    /// iterates of its REFINE round, and SR-FCA has never checked them.
    fn finiteness_checked(&self) -> bool {
        self.gd_steps > 0
    }
}

/// SR-FCA's rounds ([`RoundSolver`]) for one run: the start is ONE_SHOT (Algorithm 1), each
/// round one trace row of REFINE — a TrimmedMeanGD step (Algorithm 3) for every cluster, or,
/// after `T` of them, RECLUSTER (Algorithm 2) + MERGE (Algorithm 4) — until `R` REFINE rounds.
///
/// Decision: a round is a trace row, not a whole REFINE round, because SR-FCA's trace records
/// every TrimmedMeanGD step and the driver records and checks one row per round.
#[derive(Clone, Debug)]
pub struct SrfcaRounds {
    p: SrfcaParams,
}

impl RoundSolver for SrfcaRounds {
    type State = SrfcaState;

    fn name(&self) -> &'static str {
        "SR-FCA TrimmedMeanGD"
    }

    /// ONE_SHOT (Algorithm 1): local models, the threshold λ, the components with at least `t`
    /// clients.
    fn init(&self, fed: &Federation, _seed: u64, _given: &Randomness) -> Result<SrfcaState> {
        let p = &self.p;
        let (m, d) = (fed.num_clients(), fed.d());
        let w = one_shot_models(fed, p)?;
        let (dmat, losses) = pairwise(fed, &w, p.dist);
        let lambda = threshold(&dmat, p.lambda, p.lambda_quantile).unwrap_or(f64::INFINITY);
        let clusters: Vec<Vec<usize>> = components(m, |a, b| dmat[(a, b)] <= lambda)
            .into_iter()
            .filter(|c| c.len() >= p.size)
            .collect();
        no_cluster_error(&clusters, "ONE_SHOT", p.size, lambda)?;
        let mut comm = Comm::broadcast_and_upload(m as u64, d as u64, d as u64);
        if p.dist == SrfcaDist::CrossLoss {
            let all_models = Comm::broadcast_and_upload(m as u64, (m * d) as u64, m as u64);
            comm = comm.merge(all_models);
        }
        // The ONE_SHOT row reports each cluster's mean local model (there is no cluster model yet).
        let centroids = DMatrix::from_fn(d, clusters.len(), |r, c| {
            clusters[c].iter().map(|&i| w[(r, i)]).sum::<f64>() / clusters[c].len() as f64
        });
        let report = SrfcaReport {
            lambda,
            lambda_from_quantile: p.lambda.is_none(),
            clusters_per_stage: vec![clusters.len()],
            unassigned_per_stage: vec![unassigned_count(m, &clusters)],
            unassigned_ids: Vec::new(),
        };
        Ok(SrfcaState {
            round: 1,
            theta: centroids,
            labels: labels_of(m, &clusters),
            comm,
            clusters,
            refined: 0,
            gd_steps: 0,
            local: LocalModels { w, losses },
            report,
        })
    }

    /// The next TrimmedMeanGD step of the current REFINE round, or its RECLUSTER + MERGE once
    /// its `T` steps are done.
    fn next_round(&self, fed: &Federation, s: SrfcaState) -> Result<SrfcaState> {
        if s.gd_steps < self.p.refine_rounds {
            self.trimmed_mean_gd_step(fed, s)
        } else {
            self.recluster_and_merge(fed, s)
        }
    }

    /// Completed after `R` REFINE rounds.
    fn terminate(&self, s: &SrfcaState) -> Option<Termination> {
        (s.refined >= self.p.refine_steps).then_some(Termination::Completed)
    }
}

impl SrfcaRounds {
    /// One TrimmedMeanGD step (Algorithm 3) for every cluster, from `ω_{c,0} = w₀ = 0` at a
    /// REFINE round's first step: `ω_c ← proj_W(ω_c − η TrMean_β({∇f_i(ω_c)}_{i∈S_c}))`.
    fn trimmed_mean_gd_step(&self, fed: &Federation, s: SrfcaState) -> Result<SrfcaState> {
        let (p, d) = (&self.p, fed.d());
        let mut omega = if s.gd_steps == 0 {
            DMatrix::zeros(d, s.clusters.len())
        } else {
            s.theta
        };
        for (c, members) in s.clusters.iter().enumerate() {
            let w = omega.column(c).clone_owned();
            let mut grads = DMatrix::zeros(d, members.len());
            for (col, &i) in members.iter().enumerate() {
                grads.set_column(col, &client_gradient(fed, i, &w));
            }
            let g = trimmed_mean(&grads, p.beta)?;
            omega.set_column(c, &project_ball(w - g * p.eta, p.diameter));
        }
        let active: u64 = s.clusters.iter().map(|c| c.len() as u64).sum();
        Ok(SrfcaState {
            round: s.round + 1,
            theta: omega,
            comm: Comm::broadcast_and_upload(active, d as u64, d as u64),
            gd_steps: s.gd_steps + 1,
            ..s
        })
    }

    /// RECLUSTER (Algorithm 2) of every client against the trained models, then MERGE
    /// (Algorithm 4); the REFINE round ends.
    fn recluster_and_merge(&self, fed: &Federation, s: SrfcaState) -> Result<SrfcaState> {
        let (p, m, d) = (&self.p, fed.num_clients(), fed.d());
        let trained = if s.gd_steps == 0 {
            DMatrix::zeros(d, s.clusters.len())
        } else {
            s.theta
        };
        let lambda = s.report.lambda;
        let lw = (p.dist == SrfcaDist::CrossLoss).then(|| loss_matrix(fed, &trained));
        let members = recluster(&s.local, lw.as_ref(), &trained, &s.clusters);
        let (next, models) = merge(&members, &trained, lw.as_ref(), lambda, p.size);
        let step = s.refined + 1;
        let stage = format!("MERGE of REFINE step {step}");
        no_cluster_error(&next, &stage, p.size, lambda)?;
        let comm = match p.dist {
            SrfcaDist::L2 => Comm::default(),
            SrfcaDist::CrossLoss => {
                let k = trained.ncols() as u64;
                Comm::broadcast_and_upload(m as u64, k * d as u64, k)
            }
        };
        let mut report = s.report;
        report.clusters_per_stage.push(next.len());
        report.unassigned_per_stage.push(unassigned_count(m, &next));
        Ok(SrfcaState {
            round: s.round + 1,
            theta: models,
            labels: labels_of(m, &next),
            comm,
            clusters: next,
            refined: step,
            gd_steps: 0,
            local: s.local,
            report,
        })
    }

    /// The output of the run ending in `s`: its models, the clients' labels (unassigned clients
    /// served the model minimising `dist`), the summary and the report.
    fn finish(
        self,
        fed: &Federation,
        s: SrfcaState,
        termination: Termination,
    ) -> (RunOutput, SrfcaReport) {
        let m = fed.num_clients();
        let (omega, clusters, labels, mut report) = (s.theta, s.clusters, s.labels, s.report);
        report.unassigned_ids = (0..m).filter(|&i| labels[i] == UNASSIGNED).collect();
        let strict = fed.labels().and_then(|truth| {
            let est = crate::metrics::as_options(&labels);
            metrics::majority_misclustering(&est, truth, &fed.sizes(), clusters.len()).ok()
        });
        let lw = (self.p.dist == SrfcaDist::CrossLoss).then(|| loss_matrix(fed, &omega));
        let served = serve(&s.local, lw.as_ref(), &omega, &clusters, labels);
        let sr_fca = SrfcaSummary {
            params: self.p,
            clusters_found: clusters.len(),
            unassigned_clients: report.unassigned_ids.len(),
            report: report.clone(),
            misclustering_unassigned_as_errors: strict,
            output_labels: "unassigned clients are served the model minimising dist",
        };
        let out = RunOutput {
            theta_hat: omega,
            labels: served,
            termination,
            summary: RunSummary::new().with("sr_fca", sr_fca),
        };
        (out, report)
    }
}

/// RECLUSTER (SRFCA Algorithm 2): every client to its nearest cluster model (ties → lowest);
/// `clusters` (the clients that trained each model) define the cross-loss `f_c`. Returns the
/// members of each model (possibly empty).
fn recluster(
    local: &LocalModels,
    lw: Option<&DMatrix<f64>>,
    trained: &DMatrix<f64>,
    clusters: &[Vec<usize>],
) -> Vec<Vec<usize>> {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); clusters.len()];
    for i in 0..local.w.ncols() {
        let dists: Vec<f64> = (0..clusters.len())
            .map(|c| local.to_model(lw, trained, &clusters[c], i, c))
            .collect();
        members[argmin(&dists)].push(i);
    }
    members
}

/// MERGE (SRFCA Algorithm 4) of the non-empty re-clustered clusters: link models within `λ`
/// (`‖ω_c − ω_c'‖`, or `½(f_c(ω_c') + f_c'(ω_c))` over the members), keep components holding at
/// least `t` clients, average each component's models. Returns the merged clusters (numbered by
/// smallest client) and their models.
fn merge(
    members: &[Vec<usize>],
    trained: &DMatrix<f64>,
    lw: Option<&DMatrix<f64>>,
    lambda: f64,
    t: usize,
) -> (Vec<Vec<usize>>, DMatrix<f64>) {
    let kept: Vec<usize> = (0..members.len())
        .filter(|&c| !members[c].is_empty())
        .collect();
    let cdist = |a: usize, b: usize| -> f64 {
        let (ca, cb) = (kept[a], kept[b]);
        match lw {
            Some(lw) => 0.5 * (mean_loss(lw, &members[ca], cb) + mean_loss(lw, &members[cb], ca)),
            None => (trained.column(ca) - trained.column(cb)).norm(),
        }
    };
    let mut merged: Vec<(Vec<usize>, DVector<f64>)> =
        components(kept.len(), |a, b| cdist(a, b) <= lambda)
            .into_iter()
            .filter(|g| g.iter().map(|&a| members[kept[a]].len()).sum::<usize>() >= t)
            .map(|g| {
                let mut all: Vec<usize> = g
                    .iter()
                    .flat_map(|&a| members[kept[a]].iter().copied())
                    .collect();
                all.sort_unstable();
                let mut model = DVector::zeros(trained.nrows());
                g.iter().for_each(|&a| model += trained.column(kept[a]));
                (all, model / g.len() as f64)
            })
            .collect();
    merged.sort_by_key(|(c, _)| c.first().copied());
    let mut models = DMatrix::zeros(trained.nrows(), merged.len());
    for (c, (_, model)) in merged.iter().enumerate() {
        models.set_column(c, model);
    }
    (merged.into_iter().map(|(c, _)| c).collect(), models)
}

/// Output labels: members keep their cluster; an unassigned client is served the model
/// minimising `dist` (the RECLUSTER rule).
fn serve(
    local: &LocalModels,
    lw: Option<&DMatrix<f64>>,
    models: &DMatrix<f64>,
    clusters: &[Vec<usize>],
    mut labels: Vec<usize>,
) -> Vec<usize> {
    for (i, label) in labels.iter_mut().enumerate() {
        if *label == UNASSIGNED {
            let dists: Vec<f64> = (0..clusters.len())
                .map(|c| local.to_model(lw, models, &clusters[c], i, c))
                .collect();
            *label = argmin(&dists);
        }
    }
    labels
}

fn unassigned_count(m: usize, clusters: &[Vec<usize>]) -> usize {
    m - clusters.iter().map(|c| c.len()).sum::<usize>()
}

/// [`FedmixError::NoClustersFormed`] when `clusters` is empty.
fn no_cluster_error(clusters: &[Vec<usize>], stage: &str, t: usize, lambda: f64) -> Result<()> {
    if clusters.is_empty() {
        return Err(FedmixError::NoClustersFormed {
            algorithm: "SR-FCA".into(),
            stage: stage.into(),
            detail: format!(
                "every component has fewer than t = {t} clients at λ = {lambda:.6e}; raise \
                 srfca_lambda (or srfca_lambda_quantile) or lower srfca_size"
            ),
        });
    }
    Ok(())
}

impl Algorithm for SrFca {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::SrFca
    }
    fn run(&self, fed: &Federation, _seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        self.run_detailed(fed, rec).map(|r| r.0)
    }

    /// ONE_SHOT runs here (its row recorded in `rec`); the TrimmedMeanGD and RECLUSTER +
    /// MERGE rows are live.
    fn live(
        &self,
        fed: &Federation,
        _seed: u64,
        rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        let rounds = self.rounds(fed)?;
        let start = rounds.start(fed, rec)?;
        let solver = rounds.clone();
        let output: Output<SrfcaState> =
            Box::new(move |fed, done| solver.finish(fed, done.state, done.termination).0);
        Ok(Some(Box::new(Live::new(rounds, start, usize::MAX, output))))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `sxy-balanced` with d = 5, M = 24, n_i = 30 and λ from a low quantile: ONE_SHOT leaves
    /// clients unassigned, which the first RECLUSTER takes in.
    fn small_run() -> (Federation, SrFca) {
        use crate::params::ParamGuard;
        let fed = crate::synthetic::train_federation(
            "sxy-balanced",
            3,
            &[("d", "5"), ("clients", "24"), ("samples", "30")],
        );
        let params = SrfcaConfig {
            refine_rounds: 4,
            refine_steps: 2,
            lambda_quantile: 0.05,
            ..SrfcaConfig::default()
        };
        let alg = SrFca {
            params: params.check().expect("in range"),
        };
        (fed, alg)
    }

    /// On the executor the trace is ONE_SHOT's Phase 1 row, then per REFINE round `T`
    /// TrimmedMeanGD rows and one RECLUSTER + MERGE row (Algorithms 1–4); the rounds stop on their
    /// own (`Completed`) after `R` REFINE rounds.
    #[test]
    fn the_trace_is_one_shot_then_t_steps_and_a_merge_per_refine_round() {
        let (fed, alg) = small_run();
        let mut rec = Recorder::quiet();
        let (out, report) = alg.run_detailed(&fed, &mut rec).unwrap();
        assert_eq!(out.termination, Termination::Completed);
        assert_eq!(rec.rows.len(), 1 + 2 * (4 + 1));
        assert_eq!(rec.rows[0].phase, Phase::Phase1);
        assert!(rec.rows[1..].iter().all(|r| r.phase == Phase::Phase2));
        assert_eq!(report.clusters_per_stage.len(), 3);
        assert!(report.unassigned_per_stage[0] > 0, "{report:?}");
        // L2: MERGE sends nothing, a TrimmedMeanGD step a model to and from every member.
        assert_eq!(rec.rows[5].comm, Comm::default());
        let members = (24 - report.unassigned_per_stage[1]) as u64;
        assert_eq!(rec.rows[6].comm, Comm::broadcast_and_upload(members, 5, 5));
    }

    /// A run resumed from a state in the middle of a REFINE round, or at a REFINE round's start,
    /// ends where the full run ends, bit for bit: the state carries all SR-FCA needs.
    #[test]
    fn a_run_resumed_from_any_state_ends_as_the_full_run() {
        let (fed, alg) = small_run();
        let rounds = alg.rounds(&fed).unwrap();
        let ex = Executor::new(&fed, &rounds, usize::MAX);
        let full = ex
            .run(0, &Randomness::default(), &mut Recorder::quiet())
            .unwrap();
        for steps in [2, 5, 7] {
            let mut s = ex.init(0, &Randomness::default()).unwrap();
            for _ in 0..steps {
                s = ex.step(s).unwrap();
            }
            assert_eq!(s.round, 1 + steps);
            let resumed = ex.run_from(s, &mut Recorder::quiet()).unwrap();
            assert_eq!(resumed.state, full.state, "from row {}", 1 + steps);
        }
    }
}
