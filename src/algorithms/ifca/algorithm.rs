//! IFCA's round and one run from one start (Ghosh, Chung, Yin, Ramchandran 2020, Algorithm 2):
//! the initial models (Gaussian, or `Bernoulli(0.5)^d` as in IFCA §6.1), the round — every
//! client's choice `argmin_j F_i(θ_j)` (line 6), then on the round's participants (line 4)
//! option I's gradient step (lines 9, 14) or option II's model average (lines 11, 15, 18–21) —
//! and [`RestartRounds`], one restart's rounds on the round executor. The `ifca` algorithm, its
//! restarts and their selection are in [`super::restarts`]; the rules and decisions in the
//! [module docs](super).

use super::params::IfcaParams;
use crate::algorithms::fedx_clustering::{apply_sums, assign_clusters, single};
use crate::params::{IfcaOption, InitDist};

use crate::engine::local_update::{prox_factors, ProxFactor};

use crate::engine::client_pass::{batched_sums, Contribution, Replicate, Weight};
use crate::engine::executor::{Executor, ModelState, RoundSolver};
use crate::engine::init::random_init;
use crate::engine::participation::{round_participants, Schedule};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::{Comm, Recorder};
use crate::error::Result;
use crate::federation::Federation;
use crate::params::LocalSolver;
use crate::seed_streams::{stream, Purpose};
use nalgebra::DMatrix;
use rand::RngExt;
use std::borrow::Cow;

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
/// [`FedmixError::Divergence`](crate::error::FedmixError::Divergence) with the round when an
/// iterate is non-finite.
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

/// Option II's FedProx factors (IFCA Algorithm 2, option II with the FedProx local solver),
/// computed once per run and shared by every round and restart; `None` for the other options.
///
/// # Errors
/// The factorisation's.
pub(crate) fn ifca_prox_factors(
    fed: &Federation,
    p: &IfcaParams,
) -> Result<Option<Vec<ProxFactor>>> {
    Ok(match (p.option, p.local.local_solver) {
        (IfcaOption::Model, LocalSolver::Fedprox) => Some(prox_factors(fed, p.step)?),
        _ => None,
    })
}

/// The name IFCA's divergence reports.
pub(crate) const IFCA: &str = "IFCA";

/// One IFCA restart's rounds ([`RoundSolver`]): the parameters, its start, option II's FedProx
/// factors, and where each round's participants come from (the supplied schedule, or the
/// restart's draws from the master seed).
#[derive(Clone, Debug)]
pub struct RestartRounds<'a> {
    p: Cow<'a, IfcaParams>,
    theta0: Cow<'a, DMatrix<f64>>,
    prox: Option<Vec<ProxFactor>>,
    seed: u64,
    restart: usize,
    schedule: Option<Cow<'a, Schedule>>,
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
        Self::from_parts(
            fed,
            Cow::Borrowed(p),
            Cow::Borrowed(theta0),
            seed,
            restart,
            schedule.map(Cow::Borrowed),
        )
    }

    fn from_parts(
        fed: &Federation,
        p: Cow<'a, IfcaParams>,
        theta0: Cow<'a, DMatrix<f64>>,
        seed: u64,
        restart: usize,
        schedule: Option<Cow<'a, Schedule>>,
    ) -> Result<Self> {
        let prox = ifca_prox_factors(fed, &p)?;
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

impl RestartRounds<'static> {
    /// [`RestartRounds::new`] owning its parameters, start and schedule, so that a live run
    /// ([`crate::engine::live::Live`]) can hold it between rounds.
    ///
    /// # Errors
    /// As [`RestartRounds::new`].
    pub fn owned(
        fed: &Federation,
        p: IfcaParams,
        theta0: DMatrix<f64>,
        seed: u64,
        restart: usize,
        schedule: Option<Schedule>,
    ) -> Result<Self> {
        Self::from_parts(
            fed,
            Cow::Owned(p),
            Cow::Owned(theta0),
            seed,
            restart,
            schedule.map(Cow::Owned),
        )
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
        let labels = assign_clusters(fed, &self.theta0);
        Ok(ModelState::start(
            self.theta0.clone().into_owned(),
            labels,
            (),
        ))
    }

    /// [`ifca_round`] on round `t`'s participants of this restart.
    fn next_round(&self, fed: &Federation, s: ModelState) -> Result<ModelState> {
        let (p, m) = (&*self.p, fed.num_clients());
        let part = round_participants(
            self.schedule.as_deref(),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::federation::FederationParts;
    use crate::params::KeyTable;
    use crate::synthetic::{generate_named, sets};
    use nalgebra::DVector;

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
}
