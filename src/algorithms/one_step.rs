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
//!
//! A step is the algorithm's own round ([`RoundSolver::next_round`]) run by the
//! [`Executor`] from a state whose round count is `t − 1` ([`Executor::round`]), so it is the
//! round of a full run by construction, not a second implementation of it. The official IFCA
//! iteration, whose loop is not on the executor, steps with [`official_step`], the function its
//! own loop calls.

use super::fedavg::{FedAvg, FedAvgRounds};
use super::fedx_clustering::Phase2Rounds;
use super::ifca::{official_step, IfcaParams, RestartRounds};
use super::ifca::{IfcaSummary, OfficialSummary};
use super::registry::resolve;
use super::registry::AlgorithmParams;
use super::two_phase::TwoPhase;
use crate::engine::contract::RunOutput;
use crate::engine::executor::{Executor, ModelState, RoundSolver};
use crate::engine::participation::Schedule;
use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{AlgorithmKind, Phase2Params};
use nalgebra::DMatrix;

/// Why algorithm `kind` has no one step from a given state (`None`: it has one), as its
/// declaration states it ([`AlgorithmKind::one_step_refusal`]).
pub fn refusal(kind: AlgorithmKind) -> Option<&'static str> {
    kind.one_step_refusal()
}

/// What builds the reference's round: each algorithm's [`RoundSolver`] with the choices of
/// the reference's run.
#[derive(Clone, Debug)]
enum Rule {
    /// SXY22 Phase 2 ([`Phase2Rounds`]; eq. 8 choice, or fixed labels).
    Phase2 {
        p: Phase2Params,
        fixed: Option<Vec<usize>>,
    },
    /// IFCA Algorithm 2, restart `restart` ([`RestartRounds`]) from `theta0`.
    Ifca {
        p: IfcaParams,
        theta0: DMatrix<f64>,
        schedule: Option<Schedule>,
        seed: u64,
        restart: usize,
    },
    /// The official IFCA iteration with learning rate `lr`.
    Official { lr: f64 },
    /// FedAvg ([`FedAvgRounds`]).
    Fedavg(FedAvgRounds),
}

/// One round of the reference from any state, and the state its round 1 starts from.
#[derive(Clone, Debug)]
pub struct RoundStep {
    /// The models broadcast at the start of round 1 (`θ_0`; for `two-phase`, Phase 1's output).
    pub start: DMatrix<f64>,
    rule: Rule,
}

impl RoundStep {
    /// The reference's round solver on `fed`, built once (FedProx's factorisation included)
    /// and then stepped from any state ([`Stepper::step`]).
    ///
    /// # Errors
    /// The solver's construction: a start of another dimension, the step's checks, FedProx's
    /// factorisation.
    pub fn stepper<'s>(&'s self, fed: &Federation) -> Result<Stepper<'s>> {
        Ok(match &self.rule {
            Rule::Phase2 { p, fixed } => Stepper::Phase2(Phase2Rounds::new(
                fed,
                self.start.clone(),
                p,
                fixed.clone(),
            )?),
            Rule::Ifca {
                p,
                theta0,
                schedule,
                seed,
                restart,
            } => Stepper::Ifca(RestartRounds::new(
                fed,
                p,
                theta0,
                *seed,
                *restart,
                schedule.as_ref(),
            )?),
            Rule::Official { lr } => Stepper::Official(*lr),
            Rule::Fedavg(rounds) => Stepper::Fedavg(rounds),
        })
    }
}

/// The reference's round, ready to run from any state ([`RoundStep::stepper`]).
#[derive(Debug)]
pub enum Stepper<'s> {
    /// SXY22 Phase 2.
    Phase2(Phase2Rounds),
    /// One IFCA restart.
    Ifca(RestartRounds<'s>),
    /// The official IFCA iteration at this learning rate.
    Official(f64),
    /// FedAvg.
    Fedavg(&'s FedAvgRounds),
}

impl Stepper<'_> {
    /// Round `round` (1-based) from the models `theta` (`d × k`) broadcast at its start: the
    /// models after it and every client's cluster choice, exactly as the reference's run
    /// computes that round from the same models (the participants of round `round`).
    ///
    /// # Errors
    /// The round's own errors (none of the covered rounds has any today).
    pub fn step(
        &self,
        fed: &Federation,
        round: usize,
        theta: &DMatrix<f64>,
    ) -> Result<(DMatrix<f64>, Vec<usize>)> {
        match self {
            Self::Phase2(s) => from_state(fed, s, round, theta),
            Self::Ifca(s) => from_state(fed, s, round, theta),
            Self::Fedavg(s) => from_state(fed, *s, round, theta),
            Self::Official(lr) => Ok(official_step(fed, theta, *lr)),
        }
    }
}

/// `solver`'s round `round` run by the [`Executor`] from the state that has done `round − 1`
/// rounds with models `theta` (every client's previous choice 0: none of the covered rounds
/// reads it). Unchecked ([`Executor::round`]): a non-finite result is the comparison's to
/// report, entry by entry.
fn from_state<S: RoundSolver<State = ModelState>>(
    fed: &Federation,
    solver: &S,
    round: usize,
    theta: &DMatrix<f64>,
) -> Result<(DMatrix<f64>, Vec<usize>)> {
    let mut state = ModelState::start(theta.clone(), vec![0; fed.num_clients()], ());
    state.round = round.saturating_sub(1);
    let next = Executor::new(fed, solver, usize::MAX).round(state)?;
    Ok((next.theta, next.labels))
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
        Ok(Rule::Phase2 { p, fixed })
    };
    let parts = (
        out.summary.get::<IfcaSummary>("ifca"),
        out.summary.get::<OfficialSummary>("ifca_official"),
    );
    let (start, rule) = match (params, parts) {
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
        (AlgorithmParams::Ifca(c), (Some(ifca), _)) => {
            let restart = ifca.chosen_restart;
            let theta0 = init(restart)?;
            let rule = Rule::Ifca {
                p: IfcaParams::resolve(c, fed)?,
                theta0: theta0.clone(),
                schedule: given.participation.as_ref().map(|s| s.value.clone()),
                seed,
                restart,
            };
            (theta0, rule)
        }
        (AlgorithmParams::IfcaOfficial(_), (_, Some(ifca_official))) => {
            let run = &ifca_official.reported_run;
            (init(run.init)?, Rule::Official { lr: run.lr })
        }
        (AlgorithmParams::Fedavg(f), _) => {
            let alg = FedAvg { params: *f };
            (init(0)?, Rule::Fedavg(alg.rounds(fed, seed, given)?))
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
