//! One-shot clustering (Ghosh et al. 2019; IFCA Algorithm 1; SXY22 App. C baseline (2)): every
//! client computes its local ERM ([`local_models`]: min-norm least squares, or ridge with
//! `local_ridge`) and uploads it once; the PS runs k-means on the `M` local models
//! ([`kmeans`]: k-means++ seeding, Lloyd, `kmeans_inits` seeded starts, lowest inertia), then
//! FedAvg runs inside each cluster with the labels fixed, starting from the centroids.
//!
//! Decision: "FedAvg inside each cluster" is Phase 2's aggregation with fixed labels
//! ([`Phase2Rounds`] with fixed labels, weights `n_i/N` — SXY22 Algorithm 2), so one-shot, `oracle-labels` and the
//! two-phase algorithm differ only in where the labels and the start come from (SXY22 Fig. 1–3
//! compare them at the same `s`). Per-cluster weights `n_i/N_j` would be Phase 2 with a step
//! larger by `N/N_j`.
//!
//! The trace has one Phase 1 row (the clustering: centroids, k-means labels, `M·d` floats up),
//! then the Phase 2 rows. The clustering runs when the live run is built; its rounds are then
//! stepped by the round executor like every Phase 2 (the Python `Session` is live).

use super::fedx_clustering::Phase2Rounds;
use super::kmeans::kmeans;
use super::local::local_models;
use super::local::LocalParams;
use crate::engine::contract::{Algorithm, LiveRun, RunOutput};
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::params::AlgorithmKind;
use crate::params::Phase2Params;
use crate::params::{resolve_k, Phase2Config};
use serde::Serialize;

/// One-shot clustering then FedAvg within clusters (`one-shot`).
#[derive(Clone, Debug)]
pub struct OneShot {
    /// Parameters (`k`, `local_ridge`, `kmeans_inits`, `kmeans_max_iter`, Phase 2 keys).
    pub params: crate::params::Valid<OneShotParams>,
}

impl Algorithm for OneShot {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::OneShot
    }

    /// Local estimates and k-means, recorded as one row, then Phase 2's rounds within the
    /// k-means clusters (labels fixed), live.
    fn live(
        &self,
        fed: &Federation,
        seed: u64,
        rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        let q = &self.params;
        let k = resolve_k(q.k, fed)?;
        let p = q.phase2.resolve(fed);
        p.check(fed)?;
        let w = local_models(fed, q.local.ridge)?;
        let km = kmeans(&w, k, q.kmeans_inits, q.kmeans_max_iter, seed)?;
        let (m, d) = (fed.num_clients() as u64, fed.d() as u64);
        let upload = Comm {
            floats_down: 0,
            floats_up: m * d,
            messages: m,
            participants: m,
        };
        rec.model_round(fed, Phase::Phase1, &km.centroids, Some(&km.labels), upload);
        let rounds = Phase2Rounds::new(fed, km.centroids.clone(), &p, Some(km.labels.clone()))?;
        let mut sizes = vec![0usize; k];
        km.labels.iter().for_each(|&l| sizes[l] += 1);
        let one_shot = OneShotSummary {
            kmeans: KmeansSummary {
                inertia: km.inertia,
                start: km.start,
                lloyd_iterations: km.iterations,
                start_inertias: km.inertias,
                cluster_sizes: sizes,
            },
            local_ridge: q.local.ridge,
            phase2: p,
        };
        let labels = km.labels;
        let live = rounds.live(
            fed,
            Box::new(move |_, done| RunOutput {
                theta_hat: done.state.theta,
                labels,
                termination: done.termination,
                summary: RunSummary::new().with("one_shot", one_shot),
            }),
        )?;
        Ok(Some(live))
    }
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

/// Validated parameters of `one-shot` (local estimates, k-means, Phase 2 within the clusters).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OneShotParams {
    /// Number of clusters; `None` = the data's.
    pub k: Option<usize>,
    /// The local estimates.
    pub local: LocalParams,
    /// Seeded k-means++ starts (≥ 1).
    pub kmeans_inits: usize,
    /// Lloyd iterations per start.
    pub kmeans_max_iter: usize,
    /// Phase 2 within the clusters.
    pub phase2: Phase2Config,
}

crate::params::groups::bind_keys! {
    OneShotParams {
        k: k,
        kmeans_inits: kmeans_inits,
        kmeans_max_iter: kmeans_max_iter;
        local: LocalParams,
        phase2: Phase2Config
    }
}
