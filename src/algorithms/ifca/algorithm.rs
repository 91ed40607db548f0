//! IFCA proper (IFCA Algorithm 2): options I and II, partial participation, random restarts
//! selected by training loss. See the [module docs](super).

use crate::algorithms::fedx_clustering::{apply_sums, assign_clusters, single};
use crate::params::AlgorithmKind;
pub use crate::params::IfcaParams;
use crate::params::{IfcaConfig, IfcaOption, InitDist};

use crate::engine::local_update::{prox_factors, ProxFactor};

use crate::engine::client_pass::training_loss;
use crate::engine::client_pass::{
    assign_clusters_batch, batched_sums, training_losses, Contribution, Replicate, Weight,
};
use crate::engine::contract::WithRandomness;
use crate::engine::contract::{RunOutput, Termination};
use crate::engine::executor::{check_finite_iterate, Executor, ModelState, RoundSolver};
use crate::engine::init::random_init;
use crate::engine::participation;
use crate::engine::participation::{round_participants, Schedule};
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::engine::summary::{IfcaSummary, LossOrDiverged, RunSummary};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::argmin;
use crate::params::LocalSolver;
use crate::seed_streams::{stream, Purpose};
use nalgebra::DMatrix;
use rand::RngExt;

/// Restart `restart`'s initial models (`d × k`) from `stream(seed, Purpose::Init, restart)`.
pub fn init_models(
    d: usize,
    k: usize,
    law: InitDist,
    scale: f64,
    seed: u64,
    restart: usize,
) -> DMatrix<f64> {
    match law {
        InitDist::Gaussian => random_init(d, k, scale, seed, restart as u64),
        InitDist::Bernoulli => bernoulli_init(d, k, scale, seed, restart),
    }
}

/// `scale · Bernoulli(0.5)^{d×k}`, column-major (model 0's coordinates first).
pub(crate) fn bernoulli_init(
    d: usize,
    k: usize,
    scale: f64,
    seed: u64,
    restart: usize,
) -> DMatrix<f64> {
    let mut rng = stream(seed, Purpose::Init, restart as u64);
    DMatrix::from_iterator(
        d,
        k,
        (0..d * k).map(|_| if rng.random_bool(0.5) { scale } else { 0.0 }),
    )
}

/// A 0/1 mask of the clients in `part` (length `m`).
fn mask_of(part: &[usize], m: usize) -> Vec<bool> {
    let mut mask = vec![false; m];
    part.iter().for_each(|&i| mask[i] = true);
    mask
}

/// Option I's PS update on the clients `part` with cluster choices `labels` (indexed by
/// client): `θ_j ← θ_j − (step · grad_scale / divisor) Σ_{i∈part, labels[i]=j} ∇F_i(θ_j)`.
/// IFCA: `divisor = |M_t|`, `grad_scale = 1`; official code: `divisor = m`, `grad_scale = 2`.
/// A model no client chose is returned unchanged (bit for bit).
pub fn gradient_step(
    fed: &Federation,
    theta: &DMatrix<f64>,
    part: &[usize],
    labels: &[usize],
    step: f64,
    divisor: f64,
    grad_scale: f64,
) -> DMatrix<f64> {
    let mask = mask_of(part, fed.num_clients());
    let rep = Replicate::new(theta, Contribution::Gradient, Weight::InverseSize)
        .fixed(Some(labels))
        .taking_part(Some(&mask));
    let out = single(fed, rep);
    let chosen = out.chosen();
    apply_sums(theta, &(out.sums * (-step * grad_scale / divisor)), &chosen)
}

/// `θ_j + sums_j / counts_j` for every model with `counts_j > 0`; the others are kept bit for
/// bit.
fn average_sums(theta: &DMatrix<f64>, mut sums: DMatrix<f64>, counts: &[usize]) -> DMatrix<f64> {
    for (j, &c) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
        sums.column_mut(j).scale_mut(1.0 / c as f64);
    }
    let any: Vec<bool> = counts.iter().map(|&c| c > 0).collect();
    apply_sums(theta, &sums, &any)
}

/// One IFCA round on participants `part`: every client's choice at `theta` (eq. 8 rule, used by
/// the participants and recorded for all), then option I or II. Returns the new models and the
/// labels. One fused pass per client ([`batched_sums`]): the choice and, for a participant,
/// its gradient or local update from the same residual, chunked in parallel.
pub fn ifca_round(
    fed: &Federation,
    theta: &DMatrix<f64>,
    part: &[usize],
    p: &IfcaParams,
    prox: Option<&[ProxFactor]>,
) -> (DMatrix<f64>, Vec<usize>) {
    ifca_round_batch(fed, &[theta], &[part], p, prox)
        .pop()
        .unwrap_or_else(|| unreachable!("one replicate in, one out"))
}

/// IFCA rounds of several replicates (restarts) in one pass over the data: replicate `b` has
/// models `thetas[b]` and participants `parts[b]`. Each result equals [`ifca_round`] on that
/// replicate alone, bit for bit ([`crate::engine::client_pass`]).
///
/// # Panics
/// When `thetas` and `parts` differ in length.
pub fn ifca_round_batch(
    fed: &Federation,
    thetas: &[&DMatrix<f64>],
    parts: &[&[usize]],
    p: &IfcaParams,
    prox: Option<&[ProxFactor]>,
) -> Vec<(DMatrix<f64>, Vec<usize>)> {
    assert_eq!(
        thetas.len(),
        parts.len(),
        "one participant list per replicate"
    );
    let m = fed.num_clients();
    let masks: Vec<Vec<bool>> = parts.iter().map(|part| mask_of(part, m)).collect();
    let (what, weight) = match p.option {
        IfcaOption::Gradient => (Contribution::Gradient, Weight::InverseSize),
        IfcaOption::Model => (Contribution::Local(&p.local, prox), Weight::One),
    };
    let reps: Vec<Replicate<'_>> = thetas
        .iter()
        .zip(&masks)
        .map(|(theta, mask)| Replicate::new(theta, what, weight).taking_part(Some(mask)))
        .collect();
    batched_sums(fed, &reps)
        .into_iter()
        .zip(thetas.iter().zip(parts))
        .map(|(out, (theta, part))| {
            let next = match p.option {
                IfcaOption::Gradient => {
                    let chosen = out.chosen();
                    apply_sums(theta, &(out.sums * (-p.step / part.len() as f64)), &chosen)
                }
                IfcaOption::Model => average_sums(theta, out.sums, &out.counts),
            };
            (next, out.labels)
        })
        .collect()
}

/// Communication of a round: `k·d` floats to each participant, `d + 1` back (gradient or
/// model, and the cluster index).
pub(crate) fn round_comm(participants: usize, k: usize, d: usize) -> Comm {
    Comm::broadcast_and_upload(participants as u64, (k * d) as u64, d as u64 + 1)
}

/// One restart: `p.local.rounds` rounds from `theta0`, recorded into `rec`.
///
/// # Errors
/// [`FedmixError::Divergence`] with the round when an iterate is non-finite.
pub fn run_restart(
    fed: &Federation,
    p: &IfcaParams,
    theta0: &DMatrix<f64>,
    seed: u64,
    restart: usize,
    rec: &mut Recorder,
) -> Result<(DMatrix<f64>, Vec<usize>)> {
    run_restart_with(fed, p, theta0, seed, restart, None, rec)
}

/// The name IFCA's divergence reports.
const IFCA: &str = "IFCA";

/// One IFCA restart's rounds ([`RoundSolver`]): the parameters, its start, option II's FedProx
/// factors, and where each round's participants come from (the supplied schedule, or the
/// restart's draws from the master seed).
#[derive(Clone, Debug)]
pub struct RestartRounds<'a> {
    p: &'a IfcaParams,
    theta0: &'a DMatrix<f64>,
    prox: Option<Vec<ProxFactor>>,
    seed: u64,
    restart: usize,
    schedule: Option<&'a Schedule>,
}

impl<'a> RestartRounds<'a> {
    /// Restart `restart` from `theta0` under master seed `seed`, its participants from
    /// `schedule` when given (checked against the run by the caller, [`Schedule::check`]).
    ///
    /// # Errors
    /// FedProx's factorisation (option II with the FedProx local solver).
    pub fn new(
        fed: &Federation,
        p: &'a IfcaParams,
        theta0: &'a DMatrix<f64>,
        seed: u64,
        restart: usize,
        schedule: Option<&'a Schedule>,
    ) -> Result<Self> {
        let prox = match (p.option, p.local.local_solver) {
            (IfcaOption::Model, LocalSolver::Fedprox) => Some(prox_factors(fed, p.step)?),
            _ => None,
        };
        Ok(Self {
            p,
            theta0,
            prox,
            seed,
            restart,
            schedule,
        })
    }
}

impl RoundSolver for RestartRounds<'_> {
    type State = ModelState;

    fn name(&self) -> &'static str {
        IFCA
    }

    /// The restart's start and every client's choice at it. The start is given, so neither
    /// the seed nor supplied randomness is read.
    fn init(&self, fed: &Federation, _seed: u64, _given: &Randomness) -> Result<ModelState> {
        let labels = assign_clusters(fed, self.theta0);
        Ok(ModelState::start(self.theta0.clone(), labels, ()))
    }

    /// [`ifca_round`] on round `t`'s participants of this restart.
    fn next_round(&self, fed: &Federation, s: ModelState) -> Result<ModelState> {
        let (p, m) = (self.p, fed.num_clients());
        let part = round_participants(
            self.schedule,
            self.seed,
            self.restart,
            s.round,
            m,
            p.participation,
        );
        let (theta, labels) = ifca_round(fed, &s.theta, &part, p, self.prox.as_deref());
        let comm = round_comm(part.len(), p.k, fed.d());
        Ok(s.advance(theta, labels, comm))
    }
}

/// [`run_restart`] with the participants taken from `schedule` (checked against the run by
/// the caller, [`Schedule::check`]) instead of drawn: [`RestartRounds`] on the [`Executor`].
///
/// # Errors
/// As [`run_restart`].
pub fn run_restart_with(
    fed: &Federation,
    p: &IfcaParams,
    theta0: &DMatrix<f64>,
    seed: u64,
    restart: usize,
    schedule: Option<&Schedule>,
    rec: &mut Recorder,
) -> Result<(DMatrix<f64>, Vec<usize>)> {
    let rounds = RestartRounds::new(fed, p, theta0, seed, restart, schedule)?;
    let ex = Executor::new(fed, &rounds, p.local.rounds);
    let done = ex.run(seed, &Randomness::default(), rec)?;
    Ok((done.state.theta, done.state.labels))
}

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
/// with [`FedmixError::Divergence`]. Each outcome equals [`run_restart_with`] on that restart
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
    let prox = match (p.option, p.local.local_solver) {
        (IfcaOption::Model, LocalSolver::Fedprox) => Some(prox_factors(fed, p.step)?),
        _ => None,
    };
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
        let schedule = given.participation.as_ref().map(|s| &s.value);
        let mut losses = Vec::with_capacity(p.restarts);
        let mut comm_all = Comm::default();
        let mut first_err = None;
        let mut kept = None;
        let mut reused: Vec<Option<(DMatrix<f64>, Vec<usize>)>> = Vec::new();
        if p.restarts == 1 {
            let theta0 = self.start(&p, fed, seed, 0, given)?;
            let before = rec.rows.len();
            let result = run_restart_with(fed, &p, &theta0, seed, 0, schedule, rec);
            comm_all = rec.rows[before..]
                .iter()
                .fold(Comm::default(), |a, row| a.merge(row.comm));
            match result {
                Ok((theta, labels)) => {
                    losses.push(training_loss(fed, &theta));
                    kept = Some((theta, labels));
                }
                Err(e @ FedmixError::Divergence { .. }) => {
                    losses.push(f64::INFINITY);
                    first_err.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        } else {
            // Restarts run quietly in lock-step batches (identical to one at a time); the
            // chosen restart is then re-run with the caller's recorder.
            let starts = (0..p.restarts)
                .map(|r| self.start(&p, fed, seed, r, given))
                .collect::<Result<Vec<_>>>()?;
            let ids: Vec<usize> = (0..p.restarts).collect();
            for group in ids.chunks(self.params.replicate_batch.max(1)) {
                let outcomes = run_restarts_batch(
                    fed,
                    &p,
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
        }
        let chosen = argmin(&losses);
        if !losses[chosen].is_finite() {
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        // A recorder that needs no models gets the chosen restart's batched result (identical
        // to a re-run) with its communication rows instead of a re-run.
        if kept.is_none() && !rec.needs_models() {
            if let Some(done) = reused.get_mut(chosen).and_then(Option::take) {
                for t in 0..p.local.rounds {
                    let m = fed.num_clients();
                    let n = round_participants(schedule, seed, chosen, t, m, p.participation).len();
                    rec.comm_round(Phase::Phase2, round_comm(n, p.k, fed.d()));
                }
                kept = Some(done);
            }
        }
        let (theta_hat, labels) = match kept {
            Some(k) => k,
            None => run_restart_with(
                fed,
                &p,
                &self.start(&p, fed, seed, chosen, given)?,
                seed,
                chosen,
                schedule,
                rec,
            )?,
        };
        let ifca = IfcaSummary {
            params: p,
            restart_training_losses: losses.iter().map(|&l| LossOrDiverged(l)).collect(),
            chosen_restart: chosen,
            selection: "lowest final training loss (ties → lowest restart index)",
            communication_all_restarts: comm_all,
        };
        Ok(RunOutput {
            theta_hat,
            labels,
            termination: Termination::MaxRounds,
            summary: RunSummary::Ifca { ifca },
        })
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::contract::Algorithm;
    use crate::engine::local_update::client_gradient;
    use crate::federation::FederationParts;
    use crate::params::KeyTable;
    use crate::synthetic::{generate_named, sets};
    use nalgebra::DVector;

    /// `sxy-balanced` seed 6 with M = 30 clients of 10 samples, d = 6 (k = 3).
    fn thirty_clients() -> Federation {
        crate::synthetic::train_federation(
            "sxy-balanced",
            6,
            &[("d", "6"), ("clients", "30"), ("samples", "10")],
        )
    }

    /// A tiny federation of hand-picked numbers: d = 2, three clients.
    fn tiny() -> Federation {
        // client 0: x = (1,0),(0,1); client 1: x = (1,1); client 2: x = (2,0),(0,−1),(1,1)
        let x = DMatrix::from_column_slice(
            2,
            6,
            &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 0.0, -1.0, 1.0, 1.0],
        );
        let y = DVector::from_vec(vec![1.0, 2.0, 0.5, -1.0, 3.0, 0.0]);
        Federation::new(FederationParts {
            features: x,
            responses: y,
            sizes: vec![2, 1, 3],
            ..FederationParts::default()
        })
        .unwrap()
    }

    pub(crate) fn cfg_with(option: IfcaOption, eta: f64, k: usize) -> KeyTable {
        KeyTable {
            eta: Some(eta),
            k: Some(k),
            ifca_option: option,
            local_steps: 1,
            rounds: 1,
            ..KeyTable::default()
        }
    }

    /// Option I with all clients on the tiny federation: the gradients worked out by hand.
    /// θ = (θ_1, θ_2) with θ_1 = (0, 0), θ_2 = (1, 1).
    /// Losses F_i(θ_j) = ‖y_i − φ_iθ_j‖²/(2n_i):
    ///   client 0: θ_1: (1 + 4)/4 = 1.25;  θ_2: (0 + 1)/4 = 0.25 → cluster 2
    ///   client 1: θ_1: 0.25/2 = 0.125;    θ_2: (0.5−2)²/2 = 1.125 → cluster 1
    ///   client 2: θ_1: (1+9+0)/6 = 1.667; θ_2: ((−1−2)² + (3+1)² + (0−2)²)/6 = 29/6 → cluster 1
    /// ∇F_0(θ_2) = (1/2)[(1)(1−1) + 0, 0 + (1)(1−2)] = (0, −0.5)
    /// ∇F_1(θ_1) = (1)(0 − 0.5)·(1,1) = (−0.5, −0.5)
    /// ∇F_2(θ_1) = (1/3)[(2,0)(0+1) + (0,−1)(0−3) + (1,1)(0−0)] = (2/3, 1)
    /// γ = 0.3, |M_t| = 3: θ_1' = −0.1·((−0.5,−0.5) + (2/3, 1)) = (−1/60, −0.05),
    ///                      θ_2' = (1,1) − 0.1·(0, −0.5) = (1, 1.05).
    #[test]
    fn option_one_matches_a_hand_computed_step() {
        let fed = tiny();
        let p = IfcaParams::from_config(&cfg_with(IfcaOption::Gradient, 0.3, 2), &fed).unwrap();
        let theta = DMatrix::from_column_slice(2, 2, &[0.0, 0.0, 1.0, 1.0]);
        let (next, labels) = ifca_round(&fed, &theta, &[0, 1, 2], &p, None);
        assert_eq!(labels, vec![1, 0, 0]);
        let expected = DMatrix::from_column_slice(2, 2, &[-1.0 / 60.0, -0.05, 1.0, 1.05]);
        assert!(
            crate::prec::amax_nan(&(&next - &expected)) < 1e-15,
            "{next}"
        );
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

    #[test]
    fn empty_cluster_keeps_its_model_bit_for_bit() {
        let fed = generate_named(
            "sxy-balanced",
            3,
            &sets(&[("d", "4"), ("clients", "10"), ("samples", "8")]),
        )
        .unwrap()
        .train;
        let mut theta = DMatrix::from_fn(4, 3, |r, j| 0.1 * (r + j) as f64);
        theta.set_column(2, &DVector::from_element(4, 1e6)); // no client picks this one
        let all: Vec<usize> = (0..10).collect();
        for option in [IfcaOption::Gradient, IfcaOption::Model] {
            let p = IfcaParams::from_config(&cfg_with(option, 0.01, 3), &fed).unwrap();
            let (next, labels) = ifca_round(&fed, &theta, &all, &p, None);
            assert!(labels.iter().all(|&l| l != 2));
            for r in 0..4 {
                assert_eq!(
                    next[(r, 2)].to_bits(),
                    theta[(r, 2)].to_bits(),
                    "{option:?}"
                );
            }
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
        let RunSummary::Ifca { ifca } = &out.summary else {
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

    /// IFCA Algorithm 1/2 updates only the models some participant chose; the others are kept
    /// bit for bit, as `average_sums` documents — including the sign of a zero entry, which
    /// adding an empty sum would turn from −0 into +0. The chosen model moves by sums/counts:
    /// (2, −3) + (4, 2)/2 = (4, −2).
    #[test]
    fn unchosen_models_are_kept_bit_for_bit() {
        let theta = DMatrix::from_column_slice(2, 2, &[-0.0, 1.5, 2.0, -3.0]);
        let sums = DMatrix::from_column_slice(2, 2, &[0.0, 0.0, 4.0, 2.0]);
        let next = average_sums(&theta, sums, &[0, 2]);
        assert_eq!(next[(0, 0)].to_bits(), (-0.0_f64).to_bits());
        assert_eq!(next[(1, 0)].to_bits(), 1.5_f64.to_bits());
        assert_eq!(next.column(1).as_slice(), &[4.0, -2.0]);
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
            let RunSummary::Ifca { ifca } = &out.summary else {
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
