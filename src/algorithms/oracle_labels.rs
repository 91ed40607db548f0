//! Oracle with known labels (`oracle-labels`; our addition, a floor below SXY22 App. C's oracle
//! iterative clustering, baseline (4)): Phase 2's FedAvg/FedProx aggregation ([`run_phase2`])
//! started at `θ*` with every client's label fixed to its true cluster, so no client ever
//! re-clusters. Infeasible (it needs `z_i` and `θ*`): the floor that
//! a clustering algorithm could reach if it clustered perfectly. `oracle` (in
//! [`two_phase`](super::two_phase)) starts at `θ*` but re-clusters every round.

use super::fedx_clustering::run_phase2;
use crate::engine::contract::{Algorithm, RunOutput, Termination};
use crate::engine::recorder::Recorder;
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::params::AlgorithmKind;
use crate::params::OracleLabelsParams;

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

    fn run(&self, fed: &Federation, _seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        let theta0 = fed.require_theta_star("oracle-labels")?.clone();
        let truth = fed.require_labels("oracle-labels")?.to_vec();
        let p = self.params.phase2.resolve(fed);
        let (theta_hat, _) = run_phase2(fed, &theta0, &p, Some(&truth), rec)?;
        Ok(RunOutput {
            theta_hat,
            labels: truth,
            termination: Termination::MaxRounds,
            summary: RunSummary::OracleLabels {
                phase2: p,
                labels: "fixed to the true labels",
            },
        })
    }
}
