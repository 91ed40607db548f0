//! Vanilla FedAvg (McMahan et al. 2017; SXY22 App. C baseline (1)): one global model, every
//! participating client runs the shared local solver
//! ([`local_update`](crate::engine::local_update::local_update):
//! `s` GD steps, or FedProx's proximal step — Li et al. 2020 — as its local-solver option) and
//! the PS averages the returned models with weights `n_i / Σ_{i'∈M_t} n_i'`
//! ([`aggregate_weighted`]). With full participation this is exactly `θ ← Σ_i (n_i/N) θ_i`.
//!
//! Output: `θ̂` is `d × 1` and every client's label is 0, so `K̂ = 1 < k`: the summary reports
//! the eq. 6 distance as absent and the coverage distance `max_j ‖θ̄ − θ*_j‖` instead.
//!
//! Parameters: `eta`, `local_steps`, `local_solver`, `rounds`, `participation`, `init_scale`.
//! Randomness from files (`crate::engine::randomness`): `--init` (`1 × d`), `--participation`.
//!
//! Decision: `θ₀ ~ N(0, init_scale² I_d/d)` from `stream(seed, Init, 0)`, the start of the other
//! algorithms (the objective is convex, so the start only changes the transient). Decision:
//! with partial participation the weights are renormalised over the round's participants,
//! `n_i / Σ_{i'∈M_t} n_i'` (McMahan et al.'s `n_k/n` over the selected clients).

use crate::algorithms::fedx_clustering::aggregate_weighted;
use crate::params::AlgorithmKind;
use crate::params::Phase2Params;
use serde::Serialize;

use crate::engine::local_update::prox_factors;

use crate::engine::contract::RunOutput;
use crate::engine::contract::{LiveRun, WithRandomness};
use crate::engine::executor::{ModelState, RoundSolver};
use crate::engine::init::{random_init, single_init};
use crate::engine::live::{Live, Output};
use crate::engine::participation;
use crate::engine::participation::{round_participants, Schedule};
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Comm, Recorder};
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::params::LocalSolver;
use crate::params::Phase2Config;
use nalgebra::DMatrix;

/// FedAvg's aggregation weights for the participants `part`: `n_i / Σ_{i'∈part} n_i'`.
pub fn participant_weights(fed: &Federation, part: &[usize]) -> Vec<f64> {
    let total: usize = part.iter().map(|&i| fed.n(i)).sum();
    let mut w = vec![0.0; fed.num_clients()];
    for &i in part {
        w[i] = fed.n(i) as f64 / total as f64;
    }
    w
}

/// One FedAvg round from the global model `theta` (`d × 1`) on participants `part`.
pub fn fedavg_round(
    fed: &Federation,
    theta: &DMatrix<f64>,
    part: &[usize],
    p: &crate::params::Phase2Params,
    prox: Option<&[crate::engine::local_update::ProxFactor]>,
) -> DMatrix<f64> {
    let mut labels = vec![None; fed.num_clients()];
    part.iter().for_each(|&i| labels[i] = Some(0));
    aggregate_weighted(
        fed,
        theta,
        &labels,
        &participant_weights(fed, part),
        p,
        prox,
    )
}

/// Vanilla FedAvg / FedProx (`fedavg`).
#[derive(Clone, Debug)]
pub struct FedAvg {
    /// Configuration.
    pub params: crate::params::Valid<FedAvgParams>,
}

impl FedAvg {
    /// The start: supplied (`1 × d`) or `θ₀ ~ N(0, init_scale² I_d/d)` from `stream(seed, Init, 0)`.
    fn theta0(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<DMatrix<f64>> {
        match &given.init {
            Some(s) => single_init(s, fed.d(), 1),
            None => Ok(random_init(fed.d(), 1, self.params.init_scale, seed, 0)),
        }
    }

    /// The rounds of this run on `fed` under master seed `seed`: the step resolved against the
    /// data and checked, FedProx's factors, and the participants of each round (the supplied
    /// schedule, checked against the run, or `seed`'s draws).
    ///
    /// # Errors
    /// The step's checks, FedProx's factorisation, a schedule that does not fit.
    pub fn rounds(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<FedAvgRounds> {
        let p = self.params.phase2.resolve(fed);
        p.check(fed)?;
        let prox = match p.local_solver {
            LocalSolver::Fedprox => Some(prox_factors(fed, p.eta)?),
            LocalSolver::Fedavg => None,
        };
        if let Some(s) = &given.participation {
            s.value.check(&s.source, 1, p.rounds, fed.num_clients())?;
        }
        Ok(FedAvgRounds {
            alg: self.clone(),
            p,
            prox,
            schedule: given.participation.as_ref().map(|s| s.value.clone()),
            seed,
        })
    }
}

/// FedAvg's rounds ([`RoundSolver`]) for one run: resolved parameters, FedProx factors, the
/// participation schedule, if supplied, and the master seed the participants are drawn from.
#[derive(Clone, Debug)]
pub struct FedAvgRounds {
    alg: FedAvg,
    p: crate::params::Phase2Params,
    prox: Option<Vec<crate::engine::local_update::ProxFactor>>,
    schedule: Option<Schedule>,
    seed: u64,
}

impl RoundSolver for FedAvgRounds {
    type State = ModelState;

    fn name(&self) -> &'static str {
        "FedAvg"
    }

    /// `θ₀` ([`FedAvg`]'s start) and every client in cluster 0.
    fn init(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<ModelState> {
        let theta = self.alg.theta0(fed, seed, given)?;
        Ok(ModelState::start(theta, vec![0; fed.num_clients()], ()))
    }

    /// [`fedavg_round`] on round `t`'s participants (drawn from `seed`'s `Sampling` stream of
    /// round `t`, or the supplied schedule's).
    fn next_round(&self, fed: &Federation, s: ModelState) -> Result<ModelState> {
        let (m, d) = (fed.num_clients(), fed.d() as u64);
        let rate = self.alg.params.participation;
        let part = round_participants(self.schedule.as_ref(), self.seed, 0, s.round, m, rate);
        let theta = fedavg_round(fed, &s.theta, &part, &self.p, self.prox.as_deref());
        let comm = Comm::broadcast_and_upload(part.len() as u64, d, d);
        let labels = s.labels.clone();
        Ok(s.advance(theta, labels, comm))
    }
}

impl FedAvg {
    /// FedAvg's rounds ([`FedAvgRounds`]) from their start, live.
    fn live_run(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
    ) -> Result<Box<dyn LiveRun>> {
        let rounds = self.rounds(fed, seed, given)?;
        let start = rounds.init(fed, seed, given)?;
        let fedavg = FedAvgSummary {
            params: rounds.p,
            participation: self.params.participation,
        };
        let max = rounds.p.rounds;
        let output: Output<ModelState> = Box::new(move |_, done| RunOutput {
            theta_hat: done.state.theta,
            labels: done.state.labels,
            termination: done.termination,
            summary: RunSummary::new().with("fedavg", fedavg),
        });
        Ok(Box::new(Live::new(rounds, start, max, output)))
    }
}

impl WithRandomness for FedAvg {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::Fedavg
    }

    fn live_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        self.live_run(fed, seed, given).map(Some)
    }

    /// The start `θ₀` (`1 × d`) and, with partial participation or a supplied schedule, the
    /// participation schedule (`1 × rounds × M`).
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let m = fed.num_clients();
        if let Some(s) = &given.participation {
            s.value.check(&s.source, 1, self.params.phase2.rounds, m)?;
        }
        let drawn: std::path::PathBuf = format!("<drawn from seed {seed}>").into();
        let init = given.init.clone().map_or_else(
            || -> Result<_> {
                Ok(Supplied {
                    source: drawn.clone(),
                    value: vec![self.theta0(fed, seed, given)?],
                })
            },
            Ok,
        )?;
        let participation = given.participation.clone().or_else(|| {
            (participation::participant_count(m, self.params.participation) < m).then(|| Supplied {
                source: drawn.clone(),
                value: Schedule::draw(
                    seed,
                    1,
                    self.params.phase2.rounds,
                    m,
                    self.params.participation,
                ),
            })
        });
        Ok(Randomness {
            init: Some(init),
            participation,
            ..Randomness::default()
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::executor::Executor;
    use crate::engine::local_update::local_update;
    use crate::params::{ParamGuard, Phase2Params};
    use nalgebra::DVector;

    /// Seven clients of log-normal sizes (d = 5, `sxy-balanced` seed 2) and one round of three
    /// local GD steps at η = 0.02: unequal n_i, so aggregation weights matter.
    pub(crate) fn unequal_clients_one_round() -> (Federation, Phase2Params) {
        let fed = crate::synthetic::train_federation(
            "sxy-balanced",
            2,
            &[
                ("d", "5"),
                ("clients", "7"),
                ("sizes", "lognormal"),
                ("samples", "6"),
            ],
        );
        let sizes: Vec<usize> = (0..7).map(|i| fed.n(i)).collect();
        assert!(sizes.iter().any(|&n| n != sizes[0]), "{sizes:?}");
        let p = Phase2Params {
            eta: 0.02,
            local_steps: 3,
            local_solver: LocalSolver::Fedavg,
            rounds: 1,
        };
        (fed, p)
    }

    /// `sxy-balanced` seed 2, seven clients of six samples, d = 5; FedAvg with γ = 0.5, two
    /// local steps, five rounds, full participation.
    fn seven_clients_fedavg() -> (Federation, FedAvg) {
        let fed = crate::synthetic::train_federation(
            "sxy-balanced",
            2,
            &[("d", "5"), ("clients", "7"), ("samples", "6")],
        );
        let alg = FedAvg {
            params: FedAvgParams {
                init_scale: 1.0,
                participation: 1.0,
                phase2: crate::params::Phase2Config {
                    step: crate::params::StepRule::Gamma(0.5),
                    local_steps: 2,
                    local_solver: LocalSolver::Fedavg,
                    rounds: 5,
                },
            }
            .check()
            .unwrap(),
        };
        (fed, alg)
    }

    /// `resolve` returns the randomness the run uses (what `--export-randomness` writes): the
    /// drawn start `θ₀ ~ N(0, init_scale² I/d)` from the run's seed, no schedule at full
    /// participation and the drawn one at partial participation; replaying it under another seed
    /// gives the same run, bit for bit.
    #[test]
    fn resolved_randomness_is_the_runs_own_and_replays() {
        let (fed, alg) = seven_clients_fedavg();
        let r = alg.resolve(&fed, 3, &Randomness::default()).unwrap();
        let init = r.init.as_ref().expect("the drawn start is exported");
        assert_eq!(init.value, vec![random_init(5, 1, 1.0, 3, 0)]);
        assert!(r.participation.is_none());
        // The run at seed 3 equals its replay from `r` at seed 99, and differs from seed 99's.
        let replays = |alg: &FedAvg, r: &Randomness| {
            let run = |seed, given: &Randomness| {
                alg.run_with(&fed, seed, given, &mut Recorder::new(false))
                    .unwrap()
                    .theta_hat
            };
            let own = run(3, &Randomness::default());
            assert_eq!(own, run(99, r));
            assert_ne!(own, run(99, &Randomness::default()));
        };
        replays(&alg, &r);
        // Partial participation (3 of 7 clients a round): the drawn schedule is exported too,
        // rounds × M with 3 participants a round, and replays the run under another seed.
        let partial = FedAvg {
            params: FedAvgParams {
                participation: 3.0 / 7.0,
                ..*alg.params
            }
            .check()
            .unwrap(),
        };
        let r = partial.resolve(&fed, 3, &Randomness::default()).unwrap();
        let schedule = r
            .participation
            .as_ref()
            .expect("the drawn schedule is exported");
        let sv = &schedule.value;
        assert_eq!((sv.restarts, sv.rounds, sv.clients), (1, 5, 7));
        assert!(sv.sets.iter().all(|set| set.len() == 3), "{:?}", sv.sets);
        replays(&partial, &r);
    }

    /// One round from a state rebuilt out of a saved iterate (the models after round 2 of a
    /// run with 3 of 7 clients a round) equals round 3 of the full run, bit for bit: the state
    /// carries its round, so the step draws round 3's participants.
    #[test]
    fn one_round_from_a_saved_state_is_the_runs_next_round() {
        let (fed, alg) = seven_clients_fedavg();
        let alg = FedAvg {
            params: FedAvgParams {
                participation: 3.0 / 7.0,
                ..*alg.params
            }
            .check()
            .unwrap(),
        };
        let mut rec = Recorder::new(true);
        alg.run_with(&fed, 3, &Randomness::default(), &mut rec)
            .unwrap();
        let rounds = alg.rounds(&fed, 3, &Randomness::default()).unwrap();
        let ex = Executor::new(&fed, &rounds, 5);
        let saved = ModelState {
            round: 2,
            theta: rec.iterates[1].clone(),
            labels: vec![0; 7],
            comm: Comm::default(),
            extra: (),
        };
        let next = ex.step(saved).unwrap();
        assert_eq!(next.round, 3);
        assert_eq!(next.theta, rec.iterates[2]);
        assert_eq!(next.comm, rec.rows[2].comm);
    }

    /// With full participation one round is `Σ_i (n_i/N) LocalUpdate_i(θ)`, computed directly.
    #[test]
    fn full_participation_round_is_the_weighted_average_of_local_models() {
        let (fed, p) = unequal_clients_one_round();
        let theta = DMatrix::from_fn(5, 1, |r, _| 0.3 - 0.1 * r as f64);
        let all: Vec<usize> = (0..7).collect();
        let next = fedavg_round(&fed, &theta, &all, &p, None);
        let n = fed.total_samples() as f64;
        let mut direct = DVector::zeros(5);
        for i in 0..7 {
            direct += local_update(&fed, i, &theta.column(0).clone_owned(), &p, None)
                * (fed.n(i) as f64 / n);
        }
        assert!(crate::prec::amax_nan(&(next.column(0) - direct)) < 1e-14);
    }

    /// A start whose predictions overflow (entries 1e308) makes the first iterate non-finite:
    /// the run stops with a divergence that names round 1 (rounds count from 1) and records no
    /// round.
    #[test]
    fn divergence_names_the_first_non_finite_round() {
        let (fed, alg) = seven_clients_fedavg();
        let given = Randomness {
            init: Some(Supplied {
                source: "test".into(),
                value: vec![DMatrix::from_element(5, 1, 1e308)],
            }),
            ..Randomness::default()
        };
        let mut rec = Recorder::new(false);
        let e = alg.run_with(&fed, 3, &given, &mut rec).unwrap_err();
        assert!(
            matches!(e, crate::error::FedmixError::Divergence { round: 1, .. }),
            "{e}"
        );
        assert_eq!(rec.rows.len(), 0);
    }
}

/// FedAvg's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedAvgSummary {
    /// Local solver, step and rounds.
    pub params: Phase2Params,
    /// Fraction of clients per round.
    pub participation: f64,
}

/// Validated parameters of vanilla FedAvg / FedProx with one model (`fedavg`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FedAvgParams {
    /// Scale of the random start `θ₀ ~ N(0, init_scale² I_d / d)`.
    pub init_scale: f64,
    /// Fraction of clients per round, in (0, 1].
    pub participation: f64,
    /// The local solver, step and rounds (Phase 2's, with one model).
    pub phase2: Phase2Config,
}

crate::params::groups::bind_keys! {
    FedAvgParams { init_scale: init_scale, participation: participation; phase2: Phase2Config }
}
