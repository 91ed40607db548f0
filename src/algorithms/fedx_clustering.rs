//! SXY22 Phase 2 — FedX + clustering (SXY22 §4.2, pseudocode "Phase 2", called Algorithm 2 in
//! these docs; analysis in §4.2.1 and App. E).
//!
//! Each round the PS broadcasts `θ_{t−1} = (θ_1..θ_k)`; client `i` picks
//! `z_{i,t} = argmin_j ‖y_i − φ(x_i) θ_{j,t−1}‖²` (eq. 8, ties → lowest `j`), updates only that
//! model with its local solver and keeps the others; the PS averages with weights `n_i/N` over
//! **all** clients: `θ_t = Σ_i (n_i/N) θ_{i,t}`. Because `θ_{i,j,t} = θ_{j,t−1}` for `j ≠ z_{i,t}`,
//! this equals `θ_{j,t} = θ_{j,t−1} + Σ_{i: z_{i,t}=j} (n_i/N)(θ_{i,j,t} − θ_{j,t−1})`, which is
//! what is computed (the client uploads its own model and cluster index only).
//!
//! Local solvers:
//! - FedAvg: `G_i^s(θ)`, `G_i(θ) = θ − (η/n_i) φ(x_i)ᵀ(φ(x_i)θ − y_i)`;
//! - FedProx: `argmin_θ (1/(2n_i))‖y_i − φ(x_i)θ‖² + (1/(2η))‖θ − θ_prev‖²
//!   = (I + (η/n_i) φᵀφ)⁻¹ (θ_prev + (η/n_i) φᵀ y_i)`, solved with a Cholesky factor cached per
//!   client — of the `d × d` matrix when `n_i ≥ d`, otherwise of `I + (η/n_i) φφᵀ` (`n_i × n_i`)
//!   through the push-through identity `(I + cφᵀφ)⁻¹ = I − cφᵀ(I + cφφᵀ)⁻¹φ`. No inverse is formed.
//!
//! Performance (measured in `docs/performance.md`): a round is one fused pass per client through
//! the batched-replicate engine ([`batched_sums`], one replicate) — the predictions `φ_iΘ` of all k
//! models in one GEMM give the choice, the chosen residual is the first local step's, and the `s`
//! local steps run on the client's block while it is in cache — over fixed chunks of
//! [`CLIENT_CHUNK`] clients in parallel (rayon), the chunks added in chunk order. The chunking does
//! not depend on the thread count, so results are bit-identical for any `RAYON_NUM_THREADS`
//! (`tests/determinism.rs`); they differ from a client-by-client sum only by rounding. Several
//! Phase 2 runs over the same data advance together with [`run_phase2_batch`].

use crate::engine::client_pass::{
    assign_clusters_batch, batched_sums, training_losses, Replicate, ReplicateSums, Weight,
};
pub use crate::engine::client_pass::{Contribution, CLIENT_CHUNK};
use crate::engine::contract::LiveRun;
use crate::engine::executor::{check_finite_iterate, Executor, ModelState, RoundSolver};
use crate::engine::live::{Live, Output};
use crate::engine::local_update::{prox_factors, ProxFactor};
use crate::engine::randomness::Randomness;
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{LocalSolver, Phase2Params};
use nalgebra::DMatrix;

/// The general model-averaging step: `θ_j ← θ_j + Σ_{i: labels[i] = Some(j)} w_i Δθ_i`, with
/// `Δθ_i` client `i`'s [`crate::engine::local_update::client_update`] from `θ_j` and `w_i = weights[i]`. Clients labelled
/// `None` do not take part; a model no client chose is returned unchanged (bit for bit).
///
/// With `w_i = n_i/N` and every client labelled this is SXY22 Phase 2's aggregation
/// ([`aggregate`]); with `w_i = 1/|S_j|` over the clients `S_j` that chose `j` it is IFCA's
/// option II (IFCA Algorithm 2 line 15); with `w_i = n_i/N_c` it is FedAvg within a cluster.
pub fn aggregate_weighted(
    fed: &Federation,
    theta: &DMatrix<f64>,
    labels: &[Option<usize>],
    weights: &[f64],
    p: &Phase2Params,
    prox: Option<&[ProxFactor]>,
) -> DMatrix<f64> {
    let fixed: Vec<usize> = labels.iter().map(|l| l.unwrap_or(0)).collect();
    let mask: Vec<bool> = labels.iter().map(Option::is_some).collect();
    let rep = Replicate::new(
        theta,
        Contribution::Local(p, prox),
        Weight::PerClient(weights),
    )
    .fixed(Some(&fixed))
    .taking_part(Some(&mask));
    let out = single(fed, rep);
    apply_sums(theta, &out.sums, &out.chosen())
}

/// [`batched_sums`] of one replicate.
pub fn single(fed: &Federation, rep: Replicate<'_>) -> ReplicateSums {
    batched_sums(fed, &[rep])
        .pop()
        .unwrap_or_else(|| unreachable!("one replicate in, one out"))
}

/// `θ_j + sums_j` for every model some client chose (`chosen[j]`); the others are kept bit
/// for bit.
pub fn apply_sums(theta: &DMatrix<f64>, sums: &DMatrix<f64>, chosen: &[bool]) -> DMatrix<f64> {
    let mut next = theta.clone();
    for j in (0..theta.ncols()).filter(|&j| chosen[j]) {
        next.column_mut(j).axpy(1.0, &sums.column(j), 1.0);
    }
    next
}

/// The Phase 2 replicate of models `theta`: every client's local update (`p`, FedProx factors
/// `prox`) from its chosen model (eq. 8, or `fixed_labels`), weighted `n_i/N`.
pub fn phase2_replicate<'a>(
    fed: &Federation,
    theta: &'a DMatrix<f64>,
    p: &'a Phase2Params,
    prox: Option<&'a [ProxFactor]>,
    fixed_labels: Option<&'a [usize]>,
) -> Replicate<'a> {
    let total = fed.total_samples() as f64;
    Replicate::new(theta, Contribution::Local(p, prox), Weight::Share(total)).fixed(fixed_labels)
}

/// One fused Phase 2 round ([`batched_sums`] with one replicate): each client's choice at
/// `theta` (or `fixed_labels`), its local update from the chosen model, and
/// `θ_j ← θ_j + Σ_{i: z_i = j} (n_i/N) Δθ_i`. The same round as [`phase2_round`] up to
/// rounding. Returns the new models and the labels used.
pub fn phase2_round_fused(
    fed: &Federation,
    theta: &DMatrix<f64>,
    p: &Phase2Params,
    prox: Option<&[ProxFactor]>,
    fixed_labels: Option<&[usize]>,
) -> (DMatrix<f64>, Vec<usize>) {
    let out = single(fed, phase2_replicate(fed, theta, p, prox, fixed_labels));
    (apply_sums(theta, &out.sums, &out.chosen()), out.labels)
}

/// Eq. 8: every client's cluster choice `argmin_j ‖y_i − φ_i θ_j‖²` (ties → lowest j).
pub fn assign_clusters(fed: &Federation, theta: &DMatrix<f64>) -> Vec<usize> {
    single(fed, Replicate::choice(theta)).labels
}

/// One Phase 2 round from `theta` (`d × k`). Returns the new models and the labels used.
pub fn phase2_round(
    fed: &Federation,
    theta: &DMatrix<f64>,
    p: &Phase2Params,
    prox: Option<&[ProxFactor]>,
) -> (DMatrix<f64>, Vec<usize>) {
    let labels = assign_clusters(fed, theta);
    (aggregate(fed, theta, &labels, p, prox), labels)
}

/// The PS aggregation `θ_t = Σ_i (n_i/N) θ_{i,t}` given the clients' cluster choices.
pub fn aggregate(
    fed: &Federation,
    theta: &DMatrix<f64>,
    labels: &[usize],
    p: &Phase2Params,
    prox: Option<&[ProxFactor]>,
) -> DMatrix<f64> {
    let total = fed.total_samples() as f64;
    let weights: Vec<f64> = (0..fed.num_clients())
        .map(|i| fed.n(i) as f64 / total)
        .collect();
    let labels: Vec<Option<usize>> = labels.iter().map(|&z| Some(z)).collect();
    aggregate_weighted(fed, theta, &labels, &weights, p, prox)
}

/// Communication of one Phase 2 round: `k·d` floats to each of `M` clients, `d + 1` back
/// (the updated model and the cluster index).
pub fn phase2_comm(fed: &Federation, k: usize) -> Comm {
    let d = fed.d() as u64;
    Comm::broadcast_and_upload(fed.num_clients() as u64, k as u64 * d, d + 1)
}

/// The name Phase 2's divergence reports.
const PHASE2: &str = "phase 2";

/// SXY22 Phase 2's rounds ([`RoundSolver`]) from a given start: parameters, FedProx factors,
/// and the oracle labels when the clients do not re-cluster.
#[derive(Clone, Debug)]
pub struct Phase2Rounds {
    theta0: DMatrix<f64>,
    p: Phase2Params,
    prox: Option<Vec<ProxFactor>>,
    fixed_labels: Option<Vec<usize>>,
}

impl Phase2Rounds {
    /// The rounds from `theta0` (`d × k`) under `p`; `fixed_labels` (oracle labels) skips
    /// re-clustering.
    ///
    /// # Errors
    /// `theta0` of another dimension than the data; `p`'s checks; FedProx's factorisation.
    pub fn new(
        fed: &Federation,
        theta0: DMatrix<f64>,
        p: &Phase2Params,
        fixed_labels: Option<Vec<usize>>,
    ) -> Result<Self> {
        check_phase2_start(fed, &theta0, p)?;
        let prox = match p.local_solver {
            LocalSolver::Fedprox => Some(prox_factors(fed, p.eta)?),
            LocalSolver::Fedavg => None,
        };
        Ok(Self {
            theta0,
            p: *p,
            prox,
            fixed_labels,
        })
    }
}

impl Phase2Rounds {
    /// The resolved Phase 2 parameters.
    pub fn params(&self) -> &Phase2Params {
        &self.p
    }

    /// These rounds as a [`LiveRun`] from their start ([`RoundSolver::init`]), `p.rounds`
    /// rounds at most; `output` makes the final state the run's output.
    ///
    /// # Errors
    /// As [`RoundSolver::init`] (none today).
    pub fn live(self, fed: &Federation, output: Output<ModelState>) -> Result<Box<dyn LiveRun>> {
        let start = self.init(fed, 0, &Randomness::default())?;
        let rounds = self.p.rounds;
        Ok(Box::new(Live::new(self, start, rounds, output)))
    }
}

impl RoundSolver for Phase2Rounds {
    type State = ModelState;

    fn name(&self) -> &'static str {
        PHASE2
    }

    /// The given start and the clients' eq. 8 choices at it. Phase 2's start is given, so
    /// neither the seed nor supplied randomness is read.
    fn init(&self, fed: &Federation, _seed: u64, _given: &Randomness) -> Result<ModelState> {
        let labels = assign_clusters(fed, &self.theta0);
        Ok(ModelState::start(self.theta0.clone(), labels, ()))
    }

    /// One fused Phase 2 round ([`phase2_round_fused`]).
    fn next_round(&self, fed: &Federation, s: ModelState) -> Result<ModelState> {
        let prox = self.prox.as_deref();
        let (theta, labels) =
            phase2_round_fused(fed, &s.theta, &self.p, prox, self.fixed_labels.as_deref());
        let comm = phase2_comm(fed, theta.ncols());
        Ok(s.advance(theta, labels, comm))
    }
}

/// Run `p.rounds` Phase 2 rounds from `theta0`, recording each ([`Phase2Rounds`] on the
/// [`Executor`]). `fixed_labels` (oracle labels) skips re-clustering. Returns the final models
/// and labels.
///
/// # Errors
/// Parameter errors, and [`FedmixError::Divergence`] with the round if an iterate is non-finite.
pub fn run_phase2(
    fed: &Federation,
    theta0: &DMatrix<f64>,
    p: &Phase2Params,
    fixed_labels: Option<&[usize]>,
    rec: &mut Recorder,
) -> Result<(DMatrix<f64>, Vec<usize>)> {
    let rounds = Phase2Rounds::new(fed, theta0.clone(), p, fixed_labels.map(<[usize]>::to_vec))?;
    let done = Executor::new(fed, &rounds, p.rounds).run(0, &Randomness::default(), rec)?;
    Ok((done.state.theta, done.state.labels))
}

/// A running (or failed) job of [`run_phase2_batch`]: its models and labels so far.
type Phase2State = Result<(DMatrix<f64>, Vec<usize>)>;

/// One Phase 2 run of [`run_phase2_batch`].
#[derive(Clone, Copy, Debug)]
pub struct Phase2Job<'a> {
    /// Initial models (`d × k`).
    pub theta0: &'a DMatrix<f64>,
    /// Step size, local steps, solver, rounds.
    pub params: Phase2Params,
    /// Oracle labels (no re-clustering), as in [`run_phase2`].
    pub fixed_labels: Option<&'a [usize]>,
}

/// Several Phase 2 runs over the same federation — other starts, step sizes, local-step counts,
/// FedProx — in lock-step: each round one pass over the data serves every run still going
/// ([`batched_sums`]), and one more pass gives the training losses of all recorded runs. Run
/// `j` is recorded into `recs[j]`; each result and trace equals [`run_phase2`] of that job
/// alone, bit for bit ([`crate::engine::client_pass`]). A run that fails (parameters,
/// divergence) leaves the batch with its error; the others go on.
///
/// # Panics
/// When `jobs` and `recs` differ in length.
pub fn run_phase2_batch(
    fed: &Federation,
    jobs: &[Phase2Job<'_>],
    recs: &mut [Recorder],
) -> Vec<Result<(DMatrix<f64>, Vec<usize>)>> {
    assert_eq!(jobs.len(), recs.len(), "one recorder per job");
    let mut factors: Vec<(u64, Vec<ProxFactor>)> = Vec::new();
    let mut prox_of: Vec<Option<usize>> = vec![None; jobs.len()];
    let mut checks: Vec<Result<()>> = Vec::with_capacity(jobs.len());
    for (j, job) in jobs.iter().enumerate() {
        let checked = check_phase2_start(fed, job.theta0, &job.params).and_then(|()| {
            if job.params.local_solver == LocalSolver::Fedprox {
                let key = job.params.eta.to_bits();
                let at = match factors.iter().position(|(k, _)| *k == key) {
                    Some(at) => at,
                    None => {
                        factors.push((key, prox_factors(fed, job.params.eta)?));
                        factors.len() - 1
                    }
                };
                prox_of[j] = Some(at);
            }
            Ok(())
        });
        checks.push(checked);
    }
    // The starting labels of every valid job in one pass (as `run_phase2`'s `assign_clusters`).
    let valid: Vec<&DMatrix<f64>> = jobs
        .iter()
        .zip(&checks)
        .filter(|(_, c)| c.is_ok())
        .map(|(job, _)| job.theta0)
        .collect();
    let mut labels0 = assign_clusters_batch(fed, &valid).into_iter();
    let mut state: Vec<Phase2State> = jobs
        .iter()
        .zip(checks)
        .map(|(job, checked)| {
            checked.map(|()| {
                let labels = labels0.next().expect("one labelling per valid job");
                (job.theta0.clone(), labels)
            })
        })
        .collect();
    let rounds = jobs.iter().map(|j| j.params.rounds).max().unwrap_or(0);
    for round in 1..=rounds {
        let active: Vec<usize> = (0..jobs.len())
            .filter(|&j| state[j].is_ok() && round <= jobs[j].params.rounds)
            .collect();
        if active.is_empty() {
            break;
        }
        let reps: Vec<Replicate<'_>> = active
            .iter()
            .map(|&j| {
                let theta = match &state[j] {
                    Ok((theta, _)) => theta,
                    Err(_) => unreachable!("only running jobs are active"),
                };
                let prox = prox_of[j].map(|at| factors[at].1.as_slice());
                phase2_replicate(fed, theta, &jobs[j].params, prox, jobs[j].fixed_labels)
            })
            .collect();
        let sums = batched_sums(fed, &reps);
        let next: Vec<(usize, Phase2State)> = active
            .iter()
            .zip(reps.iter().zip(sums))
            .map(|(&j, (rep, out))| {
                let theta = apply_sums(rep.theta, &out.sums, &out.chosen());
                let checked = check_finite_iterate(&theta, PHASE2, round);
                (j, checked.map(|()| (theta, out.labels)))
            })
            .collect();
        for (j, r) in next {
            state[j] = r;
        }
        let recorded: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&j| state[j].is_ok())
            .collect();
        let wants_loss: Vec<&DMatrix<f64>> = recorded
            .iter()
            .filter(|&&j| recs[j].records_metrics())
            .filter_map(|&j| state[j].as_ref().ok().map(|(t, _)| t))
            .collect();
        let mut losses = training_losses(fed, &wants_loss).into_iter();
        for &j in &recorded {
            if let Ok((theta, labels)) = &state[j] {
                let loss = if recs[j].records_metrics() {
                    losses.next()
                } else {
                    None
                };
                recs[j].model_round_with_loss(
                    fed,
                    Phase::Phase2,
                    theta,
                    Some(labels),
                    phase2_comm(fed, theta.ncols()),
                    loss,
                );
            }
        }
    }
    state
}

/// The checks [`run_phase2`] makes before its first round.
fn check_phase2_start(fed: &Federation, theta0: &DMatrix<f64>, p: &Phase2Params) -> Result<()> {
    if theta0.nrows() != fed.d() {
        return Err(FedmixError::DimensionMismatch {
            what: "initial models (d)".into(),
            expected: fed.d(),
            found: theta0.nrows(),
        });
    }
    p.check(fed).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::local_update::{choice_and_gradient, client_gradient, local_update};
    use nalgebra::DVector;

    fn small() -> Federation {
        crate::synthetic::train_federation(
            "sxy-balanced",
            3,
            &[("d", "6"), ("clients", "12"), ("samples", "4")],
        )
    }

    #[test]
    fn fedprox_first_order_condition() {
        // ∇L_i(θ) + (θ − θ_prev)/η = 0 at the FedProx solution, for n_i < d and n_i ≥ d.
        for samples in ["4", "9"] {
            let fed = crate::synthetic::train_federation(
                "sxy-balanced",
                5,
                &[("d", "6"), ("samples", samples)],
            );
            let p = Phase2Params {
                eta: 0.3,
                local_steps: 1,
                local_solver: LocalSolver::Fedprox,
                rounds: 1,
            };
            let f = prox_factors(&fed, p.eta).unwrap();
            let prev = DVector::from_fn(6, |r, _| 0.1 * r as f64 - 0.2);
            for (i, fi) in f.iter().enumerate().take(5) {
                let th = local_update(&fed, i, &prev, &p, Some(fi));
                let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i) as f64);
                let grad = x * (x.tr_mul(&th) - y) / n;
                let foc = grad + (&th - &prev) / p.eta;
                assert!(
                    crate::prec::amax_nan(&foc) < 1e-10,
                    "client {i}: first-order residual {}",
                    crate::prec::amax_nan(&foc)
                );
            }
        }
    }

    /// The fused one-pass choice + gradient equals eq. 8's choice and `∇F_i` at that model.
    #[test]
    fn fused_choice_and_gradient_matches_the_separate_passes() {
        let fed = small();
        let theta = DMatrix::from_fn(6, 3, |r, c| ((r * 3 + c) as f64 * 0.7).sin());
        let labels = assign_clusters(&fed, &theta);
        for (i, &z) in labels.iter().enumerate() {
            let (j, g) = choice_and_gradient(&fed, i, &theta);
            assert_eq!(j, z);
            let reference = client_gradient(&fed, i, &theta.column(z).clone_owned());
            assert!(
                crate::prec::amax_nan(&(g - &reference))
                    <= 1e-14 * crate::prec::amax_nan(&reference).max(1.0)
            );
        }
    }

    #[test]
    fn step_too_large_is_typed() {
        let fed = small();
        let p = Phase2Params {
            eta: 1e6,
            local_steps: 2,
            local_solver: LocalSolver::Fedavg,
            rounds: 1,
        };
        assert!(matches!(
            p.check(&fed),
            Err(FedmixError::StepTooLarge { .. })
        ));
    }
}
