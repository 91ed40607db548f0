//! The `ifca` algorithm ([`Ifca`]): `R` independent runs (restarts) of IFCA (Ghosh, Chung, Yin,
//! Ramchandran 2020, Algorithm 2) from random starts, the one reported being the run with the
//! lowest final training loss (see the [module docs](super)); each restart's start and
//! participants are drawn from the master seed or supplied from files. With more than one
//! restart the restarts run in lock-step batches ([`run_restarts_batch`]: each round one pass
//! over the data serves the whole batch), each equal, bit for bit, to the driven restart alone
//! ([`run_restart_with`](super::algorithm::run_restart_with)).

use super::algorithm::{
    ifca_prox_factors, ifca_round_batch, init_models, round_comm, RestartRounds, IFCA,
};
use super::params::{IfcaConfig, IfcaParams};
use crate::params::AlgorithmKind;
use serde::Serialize;

use crate::engine::client_pass::training_loss;
use crate::engine::client_pass::{assign_clusters_batch, training_losses};
use crate::engine::contract::{LiveRun, WithRandomness};
use crate::engine::contract::{RunOutput, Termination};
use crate::engine::executor::check_finite_iterate;
use crate::engine::executor::{ModelState, RoundSolver};
use crate::engine::live::{drive, Live, Output};
use crate::engine::participation;
use crate::engine::participation::{round_participants, Schedule};
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::engine::summary::{LossOrDiverged, RunSummary};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::argmin;
use nalgebra::DMatrix;

/// What one restart of [`run_restarts_batch`] produced.
#[derive(Debug)]
pub struct RestartOutcome {
    /// Final models and labels, or the divergence.
    pub result: Result<(DMatrix<f64>, Vec<usize>)>,
    /// Communication of the rounds it completed.
    pub comm: Comm,
}

/// Restarts `ids` (their indices in the run: they select the participation draws) from
/// `starts`, in lock-step: every round, one pass over the data serves all restarts still
/// running ([`ifca_round_batch`]); a restart whose iterate becomes non-finite leaves the batch
/// with [`FedmixError::Divergence`]. Each outcome equals [`run_restart_with`](super::algorithm::run_restart_with) on that restart
/// alone — models, labels, error and communication — bit for bit.
///
/// # Errors
/// FedProx factorisation errors (shared by every restart).
///
/// # Panics
/// When `starts` and `ids` differ in length.
pub fn run_restarts_batch(
    fed: &Federation,
    p: &IfcaParams,
    starts: &[DMatrix<f64>],
    ids: &[usize],
    seed: u64,
    schedule: Option<&Schedule>,
) -> Result<Vec<RestartOutcome>> {
    assert_eq!(starts.len(), ids.len(), "one start per restart");
    let prox = ifca_prox_factors(fed, p)?;
    let m = fed.num_clients();
    let refs: Vec<&DMatrix<f64>> = starts.iter().collect();
    let mut state: Vec<RestartOutcome> = starts
        .iter()
        .zip(assign_clusters_batch(fed, &refs))
        .map(|(t, labels)| RestartOutcome {
            result: Ok((t.clone(), labels)),
            comm: Comm::default(),
        })
        .collect();
    for t in 0..p.local.rounds {
        let active: Vec<usize> = (0..state.len())
            .filter(|&b| state[b].result.is_ok())
            .collect();
        if active.is_empty() {
            break;
        }
        let parts: Vec<Vec<usize>> = active
            .iter()
            .map(|&b| round_participants(schedule, seed, ids[b], t, m, p.participation))
            .collect();
        let thetas: Vec<&DMatrix<f64>> = active
            .iter()
            .map(|&b| match &state[b].result {
                Ok((theta, _)) => theta,
                Err(_) => unreachable!("only running restarts are active"),
            })
            .collect();
        let part_refs: Vec<&[usize]> = parts.iter().map(Vec::as_slice).collect();
        let next = ifca_round_batch(fed, &thetas, &part_refs, p, prox.as_deref());
        for ((&b, part), (theta, labels)) in active.iter().zip(&parts).zip(next) {
            let o = &mut state[b];
            match check_finite_iterate(&theta, IFCA, t + 1) {
                Ok(()) => {
                    o.comm = o.comm.merge(round_comm(part.len(), p.k, fed.d()));
                    o.result = Ok((theta, labels));
                }
                Err(e) => o.result = Err(e),
            }
        }
    }
    Ok(state)
}

/// IFCA (`ifca`).
#[derive(Clone, Debug)]
pub struct Ifca {
    /// Parameters.
    pub params: crate::params::Valid<IfcaConfig>,
    /// Initial models of restart 0 (`d × k`); restarts `1..R` stay random. Random when `None`.
    pub init: Option<DMatrix<f64>>,
}

impl Ifca {
    /// Restart `r`'s start: supplied (`init[r]`, or restart 0 only for a single `k × d` file),
    /// `self.init` (restart 0), or drawn.
    fn start(
        &self,
        p: &IfcaParams,
        fed: &Federation,
        seed: u64,
        r: usize,
        given: &Randomness,
    ) -> Result<DMatrix<f64>> {
        let supplied = match &given.init {
            Some(s) => s.value.get(r),
            None => self.init.as_ref().filter(|_| r == 0),
        };
        match supplied {
            Some(m) => {
                if m.nrows() != fed.d() || m.ncols() != p.k {
                    return Err(FedmixError::DimensionMismatch {
                        what: "IFCA initial models (d × k entries)".into(),
                        expected: fed.d() * p.k,
                        found: m.nrows() * m.ncols(),
                    });
                }
                Ok(m.clone())
            }
            None => Ok(init_models(fed.d(), p.k, p.init, p.init_scale, seed, r)),
        }
    }

    /// Check the supplied files against the run: one start or one per restart, `k` models
    /// each; a schedule of `restarts × rounds × M`.
    fn check_given(&self, p: &IfcaParams, fed: &Federation, given: &Randomness) -> Result<()> {
        if let Some(s) = &given.init {
            let n = s.value.len();
            if n != 1 && n != p.restarts {
                return Err(FedmixError::InvalidRandomness {
                    path: s.source.clone(),
                    field: "init".into(),
                    reason: format!(
                        "{n} starts, but the run has restarts = {} (give k × d for restart 0, \
                         or restarts × k × d)",
                        p.restarts
                    ),
                });
            }
            if let Some(m) = s.value.iter().find(|m| m.ncols() != p.k) {
                return Err(FedmixError::InvalidRandomness {
                    path: s.source.clone(),
                    field: "init".into(),
                    reason: format!("{} models per start, but k = {}", m.ncols(), p.k),
                });
            }
        }
        if let Some(s) = &given.participation {
            s.value
                .check(&s.source, p.restarts, p.local.rounds, fed.num_clients())?;
        }
        Ok(())
    }
}

/// What the `R > 1` restarts chose ([`Ifca::run_restarts`]).
struct Restarts {
    /// The restart with the lowest final training loss (ties → the lowest index).
    chosen: usize,
    /// Every restart's final training loss (∞: diverged).
    losses: Vec<f64>,
    /// The communication of every restart's rounds.
    comm_all: Comm,
    /// The chosen restart's batched result (identical to a re-run).
    result: Option<(DMatrix<f64>, Vec<usize>)>,
}

/// The run's output: the chosen restart's final state and the summary of every restart.
fn ifca_output(
    p: IfcaParams,
    r: Restarts,
    theta_hat: DMatrix<f64>,
    labels: Vec<usize>,
    termination: Termination,
) -> RunOutput {
    let ifca = IfcaSummary {
        params: p,
        restart_training_losses: r.losses.iter().map(|&l| LossOrDiverged(l)).collect(),
        chosen_restart: r.chosen,
        selection: "lowest final training loss (ties → lowest restart index)",
        communication_all_restarts: r.comm_all,
    };
    RunOutput {
        theta_hat,
        labels,
        termination,
        summary: RunSummary::new().with("ifca", ifca),
    }
}

impl Ifca {
    /// With `R > 1` restarts: every restart quietly, in lock-step batches of
    /// `replicate_batch` (identical to one at a time), then the choice.
    ///
    /// # Errors
    /// The first divergence when every restart diverged; FedProx factorisation errors.
    fn run_restarts(
        &self,
        p: &IfcaParams,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
    ) -> Result<Restarts> {
        let schedule = given.participation.as_ref().map(|s| &s.value);
        let mut losses = Vec::with_capacity(p.restarts);
        let mut comm_all = Comm::default();
        let mut first_err = None;
        let mut reused: Vec<Option<(DMatrix<f64>, Vec<usize>)>> = Vec::new();
        let starts = (0..p.restarts)
            .map(|r| self.start(p, fed, seed, r, given))
            .collect::<Result<Vec<_>>>()?;
        let ids: Vec<usize> = (0..p.restarts).collect();
        for group in ids.chunks(self.params.replicate_batch.max(1)) {
            let outcomes = run_restarts_batch(
                fed,
                p,
                &starts[group[0]..group[0] + group.len()],
                group,
                seed,
                schedule,
            )?;
            let mut finals = Vec::new();
            for o in outcomes {
                comm_all = comm_all.merge(o.comm);
                match o.result {
                    Ok(done) => finals.push(Some(done)),
                    Err(e @ FedmixError::Divergence { .. }) => {
                        finals.push(None);
                        first_err.get_or_insert(e);
                    }
                    Err(e) => return Err(e),
                }
            }
            let done: Vec<&DMatrix<f64>> = finals.iter().flatten().map(|f| &f.0).collect();
            let mut l = training_losses(fed, &done).into_iter();
            losses.extend(finals.iter().map(|f| {
                f.as_ref().map_or(f64::INFINITY, |_| {
                    l.next().expect("one loss per finished restart")
                })
            }));
            reused.extend(finals);
        }
        let chosen = argmin(&losses);
        if !losses[chosen].is_finite() {
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        Ok(Restarts {
            chosen,
            losses,
            comm_all,
            result: reused.swap_remove(chosen),
        })
    }

    /// The reported restart's rounds as a live run: restart 0 with one restart (its loss and
    /// communication taken at the end), otherwise the restart `restarts` chose, re-run from its
    /// start — what the run records.
    fn live_run(
        &self,
        p: IfcaParams,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        restarts: Option<Restarts>,
    ) -> Result<Box<dyn LiveRun>> {
        let chosen = restarts.as_ref().map_or(0, |r| r.chosen);
        let theta0 = self.start(&p, fed, seed, chosen, given)?;
        let schedule = given.participation.as_ref().map(|s| s.value.clone());
        let rounds = RestartRounds::owned(fed, p.clone(), theta0, seed, chosen, schedule.clone())?;
        let start = rounds.init(fed, seed, given)?;
        let max = p.local.rounds;
        let output: Output<ModelState> = Box::new(move |fed, done| {
            let r = restarts.unwrap_or_else(|| {
                // One restart: its loss, and the communication of the rounds it ran (what
                // its trace rows record).
                let m = fed.num_clients();
                let comm_all = (0..done.state.round).fold(Comm::default(), |a, t| {
                    let n =
                        round_participants(schedule.as_ref(), seed, 0, t, m, p.participation).len();
                    a.merge(round_comm(n, p.k, fed.d()))
                });
                Restarts {
                    chosen: 0,
                    losses: vec![training_loss(fed, &done.state.theta)],
                    comm_all,
                    result: None,
                }
            });
            ifca_output(p, r, done.state.theta, done.state.labels, done.termination)
        });
        Ok(Box::new(Live::new(rounds, start, max, output)))
    }
}

impl WithRandomness for Ifca {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::Ifca
    }

    fn run_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        let p = IfcaParams::resolve(&self.params, fed)?;
        self.check_given(&p, fed, given)?;
        if p.restarts == 1 {
            return drive(self.live_run(p, fed, seed, given, None)?, fed, rec);
        }
        let mut r = self.run_restarts(&p, fed, seed, given)?;
        // A recorder that needs no models gets the chosen restart's batched result (identical
        // to a re-run) with its communication rows instead of a re-run.
        if !rec.needs_models() {
            if let Some((theta_hat, labels)) = r.result.take() {
                let schedule = given.participation.as_ref().map(|s| &s.value);
                let m = fed.num_clients();
                for t in 0..p.local.rounds {
                    let n =
                        round_participants(schedule, seed, r.chosen, t, m, p.participation).len();
                    rec.comm_round(Phase::Phase2, round_comm(n, p.k, fed.d()));
                }
                return Ok(ifca_output(p, r, theta_hat, labels, Termination::MaxRounds));
            }
        }
        drive(self.live_run(p, fed, seed, given, Some(r))?, fed, rec)
    }

    fn live_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        let p = IfcaParams::resolve(&self.params, fed)?;
        self.check_given(&p, fed, given)?;
        let restarts = match p.restarts {
            1 => None,
            _ => Some(self.run_restarts(&p, fed, seed, given)?),
        };
        self.live_run(p, fed, seed, given, restarts).map(Some)
    }

    /// The initial models of every restart (`R × k × d`, or `k × d` with one restart) and, with
    /// partial participation or a supplied schedule, the participation schedule.
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let p = IfcaParams::resolve(&self.params, fed)?;
        self.check_given(&p, fed, given)?;
        let drawn: std::path::PathBuf = format!("<drawn from seed {seed}>").into();
        let inits = (0..p.restarts)
            .map(|r| self.start(&p, fed, seed, r, given))
            .collect::<Result<Vec<_>>>()?;
        let participation = match &given.participation {
            Some(s) => Some(s.clone()),
            None => (participation::participant_count(fed.num_clients(), p.participation)
                < fed.num_clients())
            .then(|| Supplied {
                source: drawn.clone(),
                value: Schedule::draw(
                    seed,
                    p.restarts,
                    p.local.rounds,
                    fed.num_clients(),
                    p.participation,
                ),
            }),
        };
        Ok(Randomness {
            init: Some(Supplied {
                source: given.init.as_ref().map_or(drawn, |s| s.source.clone()),
                value: inits,
            }),
            participation,
            ..Randomness::default()
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::ifca::algorithm::run_restart;
    use crate::algorithms::ifca::algorithm::tests::cfg_with;
    use crate::engine::contract::Algorithm;
    use crate::engine::local_update::client_gradient;
    use crate::params::{IfcaOption, InitDist, KeyTable};
    use crate::synthetic::{generate_named, sets};

    /// `sxy-balanced` seed 6 with M = 30 clients of 10 samples, d = 6 (k = 3).
    fn thirty_clients() -> Federation {
        crate::synthetic::train_federation(
            "sxy-balanced",
            6,
            &[("d", "6"), ("clients", "30"), ("samples", "10")],
        )
    }

    /// With one client per cluster and θ* as init, option I is plain GD on each client with step
    /// γ/M (the 1/|M_t| factor), as long as the choices stay correct.
    #[test]
    fn option_one_with_one_client_per_cluster_is_plain_gd() {
        let data = generate_named(
            "sxy-balanced",
            2,
            &sets(&[
                ("d", "4"),
                ("clients", "2"),
                ("samples", "30"),
                ("k", "2"),
                ("labels", "modulo"),
                ("r", "5"),
            ]),
        )
        .unwrap();
        let fed = data.train;
        let ts = fed.theta_star().unwrap().clone();
        let g = 0.2;
        let cfg = KeyTable {
            rounds: 25,
            ..cfg_with(IfcaOption::Gradient, g, 2)
        };
        let alg = Ifca {
            params: cfg.group::<IfcaConfig>().unwrap(),
            init: Some(ts.clone()),
        };
        let out = alg.run(&fed, 1, &mut Recorder::quiet()).unwrap();
        for i in 0..2 {
            let mut th = ts.column(i).clone_owned();
            for _ in 0..25 {
                th -= client_gradient(&fed, i, &th) * (g / 2.0);
            }
            assert_eq!(out.labels[i], i);
            assert!(crate::prec::amax_nan(&(out.theta_hat.column(i) - &th)) < 1e-13);
        }
    }

    /// The reported restart is the one with the lowest final training loss.
    #[test]
    fn restart_selection_picks_the_lowest_training_loss() {
        let fed = thirty_clients();
        let cfg = KeyTable {
            restarts: 5,
            rounds: 15,
            ifca_init: InitDist::Bernoulli,
            init_scale: 2.0,
            ..KeyTable::default()
        };
        let out = Ifca {
            params: cfg.group::<IfcaConfig>().unwrap(),
            init: None,
        }
        .run(&fed, 11, &mut Recorder::quiet())
        .unwrap();
        let Some(ifca) = out.summary.get::<IfcaSummary>("ifca") else {
            panic!("ifca reports an IFCA summary")
        };
        let chosen = ifca.chosen_restart;
        let p = IfcaParams::from_config(&cfg, &fed).unwrap();
        let mut losses = Vec::new();
        for r in 0..5 {
            let th0 = init_models(6, 3, InitDist::Bernoulli, 2.0, 11, r);
            let (th, _) = run_restart(&fed, &p, &th0, 11, r, &mut Recorder::quiet()).unwrap();
            losses.push(training_loss(&fed, &th));
            if r == chosen {
                assert_eq!(th, out.theta_hat);
            }
        }
        let min = losses
            .iter()
            .copied()
            .fold(f64::INFINITY, crate::prec::min_nan);
        assert_eq!(losses[chosen].to_bits(), min.to_bits(), "{losses:?}");
        assert!(losses.iter().take(chosen).all(|&l| l > min));
        // The selection rule is not vacuous here: the restarts end at different losses.
        assert!(losses.iter().any(|&l| l > min * (1.0 + 1e-6)), "{losses:?}");
    }

    /// Starts whose predictions overflow (entries 1e308) make the first iterate non-finite: the
    /// run fails with a divergence naming round 1 (rounds count from 1) on both code paths —
    /// one restart (`run_restart_with`) and lock-step restarts (`run_restarts_batch`), where
    /// every restart diverges and the first restart's error is returned.
    #[test]
    fn divergence_names_round_one_on_both_paths() {
        let fed = thirty_clients();
        for restarts in [1usize, 3] {
            let cfg = KeyTable {
                restarts,
                rounds: 5,
                ..KeyTable::default()
            };
            let given = Randomness {
                init: Some(Supplied {
                    source: "init.npy".into(),
                    value: vec![DMatrix::from_element(6, 3, 1e308); restarts],
                }),
                ..Randomness::default()
            };
            let alg = Ifca {
                params: cfg.group::<IfcaConfig>().unwrap(),
                init: None,
            };
            let e = alg
                .run_with(&fed, 11, &given, &mut Recorder::quiet())
                .unwrap_err();
            assert!(
                matches!(e, FedmixError::Divergence { round: 1, .. }),
                "restarts {restarts}: {e}"
            );
        }
    }

    /// The communication ledger of a whole IFCA run, by hand (IFCA §3, Algorithm 1/2: each
    /// round the server broadcasts all k models, k·d floats, to each of the M participants,
    /// and each returns d floats plus its cluster identity): with M = 30, k = 3, d = 6,
    /// R = 15 rounds and full participation, one restart sends 15·30·18 = 8 100 floats down,
    /// 15·30·7 = 3 150 up and 15·60 = 900 messages; five restarts (the batched path) five times
    /// that; participants stay 30.
    #[test]
    fn communication_of_a_run_by_hand() {
        let fed = thirty_clients();
        for (restarts, times) in [(1u64, 1u64), (5, 5)] {
            let cfg = KeyTable {
                restarts: restarts as usize,
                rounds: 15,
                ..KeyTable::default()
            };
            let mut rec = Recorder::quiet();
            let out = Ifca {
                params: cfg.group::<IfcaConfig>().unwrap(),
                init: None,
            }
            .run(&fed, 11, &mut rec)
            .unwrap();
            let Some(ifca) = out.summary.get::<IfcaSummary>("ifca") else {
                panic!("ifca reports an IFCA summary")
            };
            let want = Comm {
                floats_down: times * 8_100,
                floats_up: times * 3_150,
                messages: times * 900,
                participants: 30,
            };
            assert_eq!(ifca.communication_all_restarts, want, "restarts {restarts}");
        }
    }
}
