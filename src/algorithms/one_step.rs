//! One round of an algorithm from a given state: the models broadcast at the start of round `t`
//! in, the models after it and every client's cluster choice out (`fedmix validate --one-step`
//! runs it from a candidate's own models after round `t − 1`).
//!
//! Covered: the algorithms whose round is a function of the broadcast models — SXY22 Phase 2
//! (`phase2`, `oracle`, `oracle-labels` with its fixed labels, and the Phase 2 of `two-phase`,
//! §4.2, eq. 8), IFCA Algorithm 2 options I and II (`ifca`) with the reference's participants of
//! round `t` (the `Sampling` stream of that round and restart,
//! [`crate::engine::participation::participants`], or the supplied schedule), the official
//! IFCA iteration (`ifca-official`, the reported run's learning rate) and FedAvg (`fedavg`).
//! The others are refused with [`FedmixError::OneStepUnsupported`] saying why
//! ([`refusal`]).

use super::fedavg::fedavg_round;
use super::fedx_clustering::phase2_round_fused;
use super::ifca::{ifca_round, official_step, IfcaParams};
use super::registry::resolve;
use super::two_phase::TwoPhase;
use crate::engine::contract::RunOutput;
use crate::engine::local_update::{prox_factors, ProxFactor};
use crate::engine::participation::{round_participants, Schedule};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::engine::summary::RunSummary;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{AlgorithmKind, AlgorithmParams, IfcaOption, LocalSolver, Phase2Params};
use nalgebra::DMatrix;

/// Why algorithm `kind` has no one step from a given state (`None`: it has one).
pub fn refusal(kind: AlgorithmKind) -> Option<&'static str> {
    match kind {
        AlgorithmKind::Local => {
            Some("it has no rounds (each client solves its own least squares once)")
        }
        AlgorithmKind::OneShot => Some(
            "its clusters come from k-means on local estimates (seeded k-means++), not from the \
             broadcast models; one step of its within-cluster FedAvg is not implemented",
        ),
        AlgorithmKind::SrFca => Some(
            "its rounds merge and refine clusters (SRFCA Algorithms 3–4), so the number of models \
             and the clusters change with a state beyond the broadcast models",
        ),
        AlgorithmKind::Cfl => Some(
            "its rounds split clusters from the clients' update similarities (Sattler et al.), a \
             state beyond the broadcast models",
        ),
        _ => None,
    }
}

/// The update one round applies.
#[derive(Clone, Debug)]
enum Rule {
    /// SXY22 Phase 2 (eq. 8 choice, or fixed labels; `n_i/N` weights).
    Phase2 {
        p: Phase2Params,
        prox: Option<Vec<ProxFactor>>,
        fixed: Option<Vec<usize>>,
    },
    /// IFCA Algorithm 2 on restart `restart`'s participants.
    Ifca {
        p: IfcaParams,
        prox: Option<Vec<ProxFactor>>,
        schedule: Option<Schedule>,
        seed: u64,
        restart: usize,
    },
    /// The official IFCA iteration with learning rate `lr`.
    Official { lr: f64 },
    /// FedAvg on the round's participants.
    Fedavg {
        p: Phase2Params,
        prox: Option<Vec<ProxFactor>>,
        schedule: Option<Schedule>,
        seed: u64,
        participation: f64,
    },
}

/// One round of the reference from any state, and the state its round 1 starts from.
#[derive(Clone, Debug)]
pub struct RoundStep {
    /// The models broadcast at the start of round 1 (`θ_0`; for `two-phase`, Phase 1's output).
    pub start: DMatrix<f64>,
    rule: Rule,
}

impl RoundStep {
    /// Round `round` (1-based) from the models `theta` (`d × k`) broadcast at its start: the
    /// models after it and every client's cluster choice, exactly as the reference's run
    /// computes that round from the same models.
    pub fn step(
        &self,
        fed: &Federation,
        round: usize,
        theta: &DMatrix<f64>,
    ) -> (DMatrix<f64>, Vec<usize>) {
        let (m, t) = (fed.num_clients(), round.saturating_sub(1));
        match &self.rule {
            Rule::Phase2 { p, prox, fixed } => {
                phase2_round_fused(fed, theta, p, prox.as_deref(), fixed.as_deref())
            }
            Rule::Ifca {
                p,
                prox,
                schedule,
                seed,
                restart,
            } => {
                let part =
                    round_participants(schedule.as_ref(), *seed, *restart, t, m, p.participation);
                ifca_round(fed, theta, &part, p, prox.as_deref())
            }
            Rule::Official { lr } => official_step(fed, theta, *lr),
            Rule::Fedavg {
                p,
                prox,
                schedule,
                seed,
                participation,
            } => {
                let part = round_participants(schedule.as_ref(), *seed, 0, t, m, *participation);
                (
                    fedavg_round(fed, theta, &part, p, prox.as_deref()),
                    vec![0; m],
                )
            }
        }
    }
}

/// FedProx factors when the local solver is FedProx.
fn prox_for(fed: &Federation, p: &Phase2Params) -> Result<Option<Vec<ProxFactor>>> {
    match p.local_solver {
        LocalSolver::Fedprox => Ok(Some(prox_factors(fed, p.eta)?)),
        LocalSolver::Fedavg => Ok(None),
    }
}

/// The reference's round function for `params` on `fed` under `seed` and the supplied
/// randomness `given`; `out` is the reference's full run, which fixes the choices a step needs
/// (IFCA's chosen restart, `ifca-official`'s reported init and learning rate).
///
/// # Errors
/// [`FedmixError::OneStepUnsupported`] for the algorithms of [`refusal`]; the algorithm's
/// parameter errors; for `two-phase`, Phase 1's errors (its output is Phase 2's start).
pub fn round_step(
    params: &AlgorithmParams,
    fed: &Federation,
    seed: u64,
    given: &Randomness,
    data_sigma: Option<f64>,
    out: &RunOutput,
) -> Result<RoundStep> {
    if let Some(reason) = refusal(params.kind()) {
        return Err(FedmixError::OneStepUnsupported {
            algorithm: params.kind().to_string(),
            reason: reason.into(),
        });
    }
    let init = |index: usize| -> Result<DMatrix<f64>> {
        let r = resolve(params, fed, seed, given, data_sigma)?;
        r.init
            .and_then(|s| s.value.get(index).cloned())
            .ok_or_else(|| FedmixError::Missing {
                what: format!("the start of round 1 (init {index})"),
            })
    };
    let phase2 = |fixed: Option<Vec<usize>>| -> Result<Rule> {
        let p = params.phase2(fed);
        p.check(fed)?;
        Ok(Rule::Phase2 {
            prox: prox_for(fed, &p)?,
            p,
            fixed,
        })
    };
    let (start, rule) = match (params, &out.summary) {
        (AlgorithmParams::Phase2(_), _) => (init(0)?, phase2(None)?),
        (AlgorithmParams::Oracle(_), _) => {
            (fed.require_theta_star("the oracle")?.clone(), phase2(None)?)
        }
        (AlgorithmParams::OracleLabels(_), _) => (
            fed.require_theta_star("oracle-labels")?.clone(),
            phase2(Some(fed.require_labels("oracle-labels")?.to_vec()))?,
        ),
        (AlgorithmParams::TwoPhase(p), _) => {
            let alg = TwoPhase {
                params: *p,
                init: None,
            };
            let phase1 = alg.run_phase1_with(fed, seed, given, &mut Recorder::new(false))?;
            (phase1.theta_hat, phase2(None)?)
        }
        (AlgorithmParams::Ifca(c), RunSummary::Ifca { ifca }) => {
            let p = IfcaParams::resolve(c, fed)?;
            // As `run_restart_with`: option II's FedProx factors at the step γ.
            let prox = match (p.option, p.local.local_solver) {
                (IfcaOption::Model, LocalSolver::Fedprox) => Some(prox_factors(fed, p.step)?),
                _ => None,
            };
            let restart = ifca.chosen_restart;
            let rule = Rule::Ifca {
                p,
                prox,
                schedule: given.participation.as_ref().map(|s| s.value.clone()),
                seed,
                restart,
            };
            (init(restart)?, rule)
        }
        (AlgorithmParams::IfcaOfficial(_), RunSummary::IfcaOfficial { ifca_official }) => {
            let run = &ifca_official.reported_run;
            (init(run.init)?, Rule::Official { lr: run.lr })
        }
        (AlgorithmParams::Fedavg(f), _) => {
            let p = params.phase2(fed);
            p.check(fed)?;
            let rule = Rule::Fedavg {
                prox: prox_for(fed, &p)?,
                p,
                schedule: given.participation.as_ref().map(|s| s.value.clone()),
                seed,
                participation: f.participation,
            };
            (init(0)?, rule)
        }
        _ => {
            return Err(FedmixError::OneStepUnsupported {
                algorithm: params.kind().to_string(),
                reason: "the reference run's summary does not name the run its trajectory is"
                    .into(),
            })
        }
    };
    Ok(RoundStep { start, rule })
}
