//! Oracle with known labels (`oracle-labels`; our addition, a floor below SXY22 App. C's oracle
//! iterative clustering, baseline (4)): Phase 2's FedAvg/FedProx aggregation ([`Phase2Rounds`])
//! started at `θ*` with every client's label fixed to its true cluster, so no client ever
//! re-clusters. Infeasible (it needs `z_i` and `θ*`): the floor that
//! a clustering algorithm could reach if it clustered perfectly. `oracle` (in
//! [`two_phase`](super::two_phase)) starts at `θ*` but re-clusters every round.

use super::fedx_clustering::Phase2Rounds;
use crate::engine::contract::{Algorithm, LiveRun, RunOutput};
use crate::engine::recorder::Recorder;
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::params::AlgorithmKind;
use crate::params::Phase2Config;
use serde::Serialize;

/// Phase 2 from `θ*` with labels fixed to the truth (`oracle-labels`).
#[derive(Clone, Debug)]
pub struct OracleLabels {
    /// Parameters (`eta`, `eta_gamma`, `local_steps`, `local_solver`, `rounds`).
    pub params: crate::params::Valid<OracleLabelsParams>,
}

impl Algorithm for OracleLabels {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::OracleLabels
    }

    fn live(
        &self,
        fed: &Federation,
        seed: u64,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        self.live_run(fed, seed).map(Some)
    }
}

impl OracleLabels {
    /// Phase 2's rounds from `θ*` with the true labels, live.
    fn live_run(&self, fed: &Federation, _seed: u64) -> Result<Box<dyn LiveRun>> {
        let theta0 = fed.require_theta_star("oracle-labels")?.clone();
        let truth = fed.require_labels("oracle-labels")?.to_vec();
        let p = self.params.phase2.resolve(fed);
        let rounds = Phase2Rounds::new(fed, theta0, &p, Some(truth.clone()))?;
        let live = rounds.live(
            fed,
            Box::new(move |_, done| RunOutput {
                theta_hat: done.state.theta,
                labels: truth,
                termination: done.termination,
                summary: RunSummary::new()
                    .with("phase2", p)
                    .with("labels", "fixed to the true labels"),
            }),
        )?;
        Ok(live)
    }
}

/// Validated parameters of `oracle-labels` (Phase 2 from `θ*` with the true labels fixed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OracleLabelsParams {
    /// Phase 2.
    pub phase2: Phase2Config,
}

crate::params::groups::bind_keys! {
    OracleLabelsParams { ; phase2: Phase2Config }
}
