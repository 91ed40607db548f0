//! The official-code compatibility mode of IFCA (`ifca-official`; the protocol of IFCA §6.1 and
//! Fig. 3 as the authors ran it): the authors' released synthetic code
//! (`synthetic/train_cluster.py`, `run_p2_*.py`, `run_p4_*.py`) reproduced quirk by quirk, each
//! documented where it is implemented:
//!
//! 1. the loss is torch `MSELoss` (mean squared error, no ½), so its gradient is `2∇F_i`
//!    ([`official_step`]);
//! 2. the gradient sum of a cluster is divided by `m`, the number of **all** machines, not by the
//!    cluster size ([`official_step`]); all machines take part in every iteration;
//! 3. the init is `Bernoulli(0.5)^d`, entries 0/1, **not** rescaled to the data's `r`
//!    ([`official_init`]);
//! 4. the metric `min_dist` is the mean over estimated models of the distance to the nearest
//!    true model — not a matching ([`min_dist`]);
//! 5. a data seed succeeds when the minimum over init seeds (outer loop) and learning rates
//!    (inner loop) of the final `min_dist` is `< 0.6σ + offset`, with `offset = 0.001` in the
//!    r–noise sweeps and 0 in the m–n sweeps (`ifca_official_offset`), σ the generator's noise
//!    scale; NaN runs are skipped, and if all are NaN the sentinel `-1` makes it a success
//!    ([`official_success`]);
//! 6. learning rates {1, 0.1, 0.01} for k = 2 and {2, 1, 0.5} for k = 4, 300 iterations, 10 init
//!    seeds ([`OfficialParams`]);
//! 7. the reported run is chosen by `min_dist`, i.e. with `θ*` (the summary also names the run a
//!    training-loss rule would pick);
//! 8. float32 in the original, float64 here: a diverging run stops at its first non-finite
//!    iterate and reports NaN ([`official_run`]).

use super::params::{IfcaOfficialConfig, OfficialParams};
use crate::algorithms::ifca::algorithm::{bernoulli_init, round_comm};
use crate::params::AlgorithmKind;
use serde::Serialize;

use crate::algorithms::fedx_clustering::{apply_sums, assign_clusters};
use crate::engine::client_pass::training_loss;
use crate::engine::client_pass::{
    assign_clusters_batch, batched_sums, training_losses, Contribution, Replicate, Weight,
};
use crate::engine::contract::{RunOutput, Termination, WithRandomness};
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Phase, Recorder};
use crate::engine::summary::{LossOrDiverged, RunSummary};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::argmin;
use nalgebra::DMatrix;

/// Official init (`initialize_weights`): `θ_j = Bernoulli(0.5)^d`, **not** rescaled (entries 0
/// or 1 whatever `r` is), from `stream(seed, Purpose::Init, init)`.
pub fn official_init(d: usize, k: usize, seed: u64, init: usize) -> DMatrix<f64> {
    bernoulli_init(d, k, 1.0, seed, init)
}

/// The official `min_dist`: the mean over estimated models of the distance to the nearest true
/// model, `(1/k) Σ_j min_l ‖θ̂_j − θ*_l‖` — not a matching (two estimates may share a true
/// model), unlike eq. 6. NaN when any entry of `theta` is non-finite.
pub fn min_dist(theta: &DMatrix<f64>, theta_star: &DMatrix<f64>) -> f64 {
    if theta.iter().any(|v| !v.is_finite()) || theta.ncols() == 0 {
        return f64::NAN;
    }
    theta
        .column_iter()
        .map(|c| {
            theta_star
                .column_iter()
                .map(|t| (c - t).norm())
                .fold(f64::INFINITY, f64::min)
        })
        .sum::<f64>()
        / theta.ncols() as f64
}

/// One official iteration (`TrainCluster.train`, `score = "set"`): every machine takes part,
/// picks `argmin_j MSE_i(θ_j)` (the same choice as `argmin_j F_i`), and
/// `θ_j ← θ_j − (lr/m) Σ_{i: ĵ_i = j} ∇MSE_i(θ_j)` with `∇MSE_i = 2∇F_i` (torch `MSELoss` is the
/// mean squared error, without the ½) and `m` = all machines (`gradient_update` divides by
/// `len(grads)` = m, not by the cluster size). Each machine's choice and gradient come from one
/// fused pass over its data ([`batched_sums`]), machines chunked in parallel: the iteration is
/// memory-bound at d = 1000 — which is why the grid batches its runs ([`official_step_batch`]).
pub fn official_step(
    fed: &Federation,
    theta: &DMatrix<f64>,
    lr: f64,
) -> (DMatrix<f64>, Vec<usize>) {
    official_step_batch(fed, &[(theta, lr)])
        .pop()
        .unwrap_or_else(|| unreachable!("one replicate in, one out"))
}

/// [`official_step`] for several runs `(θ, lr)` in one pass over the data; each result equals
/// the run's own [`official_step`] bit for bit ([`crate::engine::client_pass`]).
pub fn official_step_batch(
    fed: &Federation,
    runs: &[(&DMatrix<f64>, f64)],
) -> Vec<(DMatrix<f64>, Vec<usize>)> {
    let m = fed.num_clients();
    let reps: Vec<Replicate<'_>> = runs
        .iter()
        .map(|(theta, _)| Replicate::new(theta, Contribution::Gradient, Weight::InverseSize))
        .collect();
    batched_sums(fed, &reps)
        .into_iter()
        .zip(runs)
        .map(|(out, (theta, lr))| {
            let chosen = out.chosen();
            (
                apply_sums(theta, &(out.sums * (-lr * 2.0 / m as f64)), &chosen),
                out.labels,
            )
        })
        .collect()
}

/// Result of one official run.
#[derive(Clone, Debug)]
pub struct OfficialRun {
    /// Final models.
    pub theta: DMatrix<f64>,
    /// Labels of the last iteration.
    pub labels: Vec<usize>,
    /// Final `min_dist` (NaN after divergence).
    pub min_dist: f64,
    /// Final training loss (∞ after divergence).
    pub training_loss: f64,
    /// Iteration at which the iterate became non-finite.
    pub diverged_at: Option<usize>,
}

/// One official run of `iterations` iterations with learning rate `lr` from `theta0`.
///
/// Decision: the official code runs in float32, where a diverging run overflows and ends as
/// NaN; here (float64) a run stops at its first non-finite iterate and reports `min_dist = NaN`,
/// which the success rule then skips exactly as the official summary skips NaN.
pub fn official_run(
    fed: &Federation,
    theta0: &DMatrix<f64>,
    lr: f64,
    iterations: usize,
    rec: &mut Recorder,
) -> Result<OfficialRun> {
    let ts = fed.require_theta_star("ifca-official's min_dist")?;
    let mut theta = theta0.clone();
    let mut labels = assign_clusters(fed, &theta);
    let m = fed.num_clients();
    let mut diverged_at = None;
    for t in 0..iterations {
        let (next, l) = official_step(fed, &theta, lr);
        theta = next;
        labels = l;
        rec.model_round(
            fed,
            Phase::Phase2,
            &theta,
            Some(&labels),
            round_comm(m, theta.ncols(), fed.d()),
        );
        if theta.iter().any(|v| !v.is_finite()) {
            diverged_at = Some(t + 1);
            break;
        }
    }
    let min_dist = min_dist(&theta, ts);
    let training_loss = if diverged_at.is_some() {
        f64::INFINITY
    } else {
        training_loss(fed, &theta)
    };
    Ok(OfficialRun {
        theta,
        labels,
        min_dist,
        training_loss,
        diverged_at,
    })
}

/// Official runs from `(θ₀, lr)` for `iterations` iterations each, in lock-step: one pass over
/// the data per iteration serves every run still going ([`official_step_batch`]); a run leaves
/// the batch at its first non-finite iterate. Each result equals [`official_run`] of that run
/// alone (quiet recorder), bit for bit.
///
/// # Errors
/// Missing `θ*`.
pub fn official_runs_batch(
    fed: &Federation,
    starts: &[(DMatrix<f64>, f64)],
    iterations: usize,
) -> Result<Vec<OfficialRun>> {
    let ts = fed.require_theta_star("ifca-official's min_dist")?;
    let refs: Vec<&DMatrix<f64>> = starts.iter().map(|(t, _)| t).collect();
    let mut state: Vec<(DMatrix<f64>, Vec<usize>, Option<usize>)> = starts
        .iter()
        .zip(assign_clusters_batch(fed, &refs))
        .map(|((t, _), labels)| (t.clone(), labels, None))
        .collect();
    for t in 0..iterations {
        let active: Vec<usize> = (0..state.len()).filter(|&b| state[b].2.is_none()).collect();
        if active.is_empty() {
            break;
        }
        let runs: Vec<(&DMatrix<f64>, f64)> =
            active.iter().map(|&b| (&state[b].0, starts[b].1)).collect();
        let next = official_step_batch(fed, &runs);
        for (&b, (theta, labels)) in active.iter().zip(next) {
            let diverged = theta.iter().any(|v| !v.is_finite());
            state[b] = (theta, labels, diverged.then_some(t + 1));
        }
    }
    let finite: Vec<&DMatrix<f64>> = state
        .iter()
        .filter(|s| s.2.is_none())
        .map(|s| &s.0)
        .collect();
    let mut losses = training_losses(fed, &finite).into_iter();
    Ok(state
        .into_iter()
        .map(|(theta, labels, diverged_at)| OfficialRun {
            min_dist: min_dist(&theta, ts),
            training_loss: match diverged_at {
                Some(_) => f64::INFINITY,
                None => losses.next().expect("one loss per finite run"),
            },
            theta,
            labels,
            diverged_at,
        })
        .collect())
}

/// Reproduces the official loop literally: `min_value = -1`; for each run (init seeds outer,
/// learning rates inner) skip NaN, otherwise take it if `min_value == -1` or it is smaller;
/// success iff `min_value < threshold`.
///
/// Quirk (kept, documented): when every run is NaN, `min_value` stays at the sentinel `-1`,
/// which is below any threshold, so the data seed counts as a **success**; `all_nan` flags it.
/// Only NaN is skipped: an infinite `min_dist` is a (failing) value.
pub fn official_success(values: &[f64], threshold: f64) -> OfficialVerdict {
    let mut min_value = -1.0;
    let mut seen = false;
    for &v in values {
        if v.is_nan() {
            continue;
        }
        if !seen || min_value > v {
            min_value = v;
        }
        seen = true;
    }
    OfficialVerdict {
        min_value,
        success: min_value < threshold,
        all_nan: !seen,
    }
}

/// IFCA in official-code compatibility mode (`ifca-official`): for every init seed (outer) and
/// learning rate (inner), a run of the official iteration ([`official_step`]) from the
/// unscaled Bernoulli init ([`official_init`]); the data seed's verdict is
/// [`official_success`] on the final `min_dist` of all runs.
///
/// The reported `θ̂` is the run with the smallest final `min_dist` (the official protocol's
/// choice, which uses `θ*`: an oracle selection; `extra` also names the run a user would pick by
/// training loss). Its trace is re-run into the caller's recorder; the other runs are quiet.
/// The runs advance in lock-step batches ([`official_runs_batch`]); the result does not
/// depend on the batch size or the thread count.
#[derive(Clone, Debug)]
pub struct IfcaOfficial {
    /// Parameters.
    pub params: crate::params::Valid<IfcaOfficialConfig>,
    /// σ the data were generated with (the CLI takes it from the data set's manifest).
    pub data_sigma: Option<f64>,
}

impl IfcaOfficial {
    /// Every run of the grid, in official order (index = init · |lrs| + lr index), in lock-step
    /// batches of `cfg.replicate_batch` runs ([`official_runs_batch`]; identical for any batch
    /// size), from the drawn starts ([`official_init`]).
    ///
    /// # Errors
    /// As [`official_runs_batch`].
    pub fn grid(
        &self,
        fed: &Federation,
        p: &OfficialParams,
        seed: u64,
    ) -> Result<Vec<OfficialRun>> {
        let starts = self.starts(fed, p, seed, &Randomness::default())?;
        self.grid_from(fed, p, &starts)
    }

    /// [`IfcaOfficial::grid`] from given starts, one `d × k` matrix per init seed (each is run
    /// with every learning rate, as the official loops do).
    fn grid_from(
        &self,
        fed: &Federation,
        p: &OfficialParams,
        starts: &[DMatrix<f64>],
    ) -> Result<Vec<OfficialRun>> {
        let runs: Vec<(DMatrix<f64>, f64)> = (0..p.inits * p.lrs.len())
            .map(|idx| (starts[idx / p.lrs.len()].clone(), p.lrs[idx % p.lrs.len()]))
            .collect();
        let mut out = Vec::with_capacity(runs.len());
        for batch in runs.chunks(self.params.replicate_batch.max(1)) {
            out.extend(official_runs_batch(fed, batch, p.iterations)?);
        }
        Ok(out)
    }

    /// The start of every init seed: the supplied ones (`--init`: `inits × k × d`, one per init
    /// seed) or the official draw ([`official_init`]).
    fn starts(
        &self,
        fed: &Federation,
        p: &OfficialParams,
        seed: u64,
        given: &Randomness,
    ) -> Result<Vec<DMatrix<f64>>> {
        let Some(s) = &given.init else {
            return Ok((0..p.inits)
                .map(|i| official_init(fed.d(), p.k, seed, i))
                .collect());
        };
        let bad = |reason: String| FedmixError::InvalidRandomness {
            path: s.source.clone(),
            field: "init".into(),
            reason,
        };
        if s.value.len() != p.inits {
            return Err(bad(format!(
                "{} starts, but the run has ifca_official_inits = {} (give inits × k × d: one \
                 start per init seed, each run with every learning rate)",
                s.value.len(),
                p.inits
            )));
        }
        if let Some(m) = s
            .value
            .iter()
            .find(|m| m.nrows() != fed.d() || m.ncols() != p.k)
        {
            return Err(bad(format!(
                "a start of {} models of dimension {}, but the run has k = {} and d = {}",
                m.ncols(),
                m.nrows(),
                p.k,
                fed.d()
            )));
        }
        Ok(s.value.clone())
    }
}

impl WithRandomness for IfcaOfficial {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::IfcaOfficial
    }

    fn run_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        let p = OfficialParams::resolve(&self.params, fed, self.data_sigma)?;
        let starts = self.starts(fed, &p, seed, given)?;
        let runs = self.grid_from(fed, &p, &starts)?;
        let values: Vec<f64> = runs.iter().map(|r| r.min_dist).collect();
        let verdict = official_success(&values, p.threshold);
        // The run the official protocol's minimum comes from (first in loop order); all NaN → 0.
        let by_dist = values
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_nan())
            .fold(None, |b: Option<(usize, f64)>, (i, &v)| match b {
                Some((_, bv)) if bv <= v => b,
                _ => Some((i, v)),
            })
            .map_or(0, |b| b.0);
        let losses: Vec<f64> = runs.iter().map(|r| r.training_loss).collect();
        let by_loss = argmin(&losses);
        let (init, lr) = (by_dist / p.lrs.len(), p.lrs[by_dist % p.lrs.len()]);
        // The reported run's trace: re-run it (bit-identical to its batched run) when the
        // recorder wants models; otherwise report the batched result with communication rows.
        let chosen = if rec.needs_models() {
            official_run(fed, &starts[init], lr, p.iterations, rec)?
        } else {
            let run = runs[by_dist].clone();
            let comm = round_comm(fed.num_clients(), p.k, fed.d());
            (0..run.diverged_at.unwrap_or(p.iterations))
                .for_each(|_| rec.comm_round(Phase::Phase2, comm));
            run
        };
        let per_run = runs
            .iter()
            .enumerate()
            .map(|(i, r)| OfficialRunSummary {
                init: i / p.lrs.len(),
                lr: p.lrs[i % p.lrs.len()],
                min_dist: r.min_dist,
                training_loss: LossOrDiverged(r.training_loss),
                diverged_at: r.diverged_at,
            })
            .collect();
        let training_loss_choice = TrainingLossChoice {
            init: by_loss / p.lrs.len(),
            lr: p.lrs[by_loss % p.lrs.len()],
            min_dist: runs[by_loss].min_dist,
            success: runs[by_loss].min_dist < p.threshold,
        };
        let ifca_official = OfficialSummary {
            params: p,
            verdict,
            runs: per_run,
            reported_run: ReportedRun {
                init,
                lr,
                selection: "smallest final min_dist (uses θ*, as the official protocol)",
            },
            training_loss_choice,
        };
        Ok(RunOutput {
            theta_hat: chosen.theta,
            labels: chosen.labels,
            termination: Termination::Completed,
            summary: RunSummary::new().with("ifca_official", ifca_official),
        })
    }

    /// The start of every init seed (`inits × k × d`); the official protocol draws nothing else
    /// (all machines take part in every iteration).
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let p = OfficialParams::resolve(&self.params, fed, self.data_sigma)?;
        let value = self.starts(fed, &p, seed, given)?;
        Ok(Randomness {
            init: Some(Supplied {
                source: given.init.as_ref().map_or_else(
                    || format!("<drawn from seed {seed}>").into(),
                    |s| s.source.clone(),
                ),
                value,
            }),
            ..Randomness::default()
        })
    }
}

/// IFCA's official protocol (`ifca-official`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfficialSummary {
    /// Parameters.
    pub params: OfficialParams,
    /// The data seed's verdict.
    pub verdict: OfficialVerdict,
    /// Every run, in official loop order.
    pub runs: Vec<OfficialRunSummary>,
    /// The run reported.
    pub reported_run: ReportedRun,
    /// The run chosen by training loss.
    pub training_loss_choice: TrainingLossChoice,
}

/// One run of the official protocol's grid.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OfficialRunSummary {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// Final official `min_dist` (`null` when NaN).
    pub min_dist: f64,
    /// Final training loss.
    pub training_loss: LossOrDiverged,
    /// Iteration at which the run diverged, if it did.
    pub diverged_at: Option<usize>,
}

/// The run the official protocol reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReportedRun {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// How it was chosen.
    pub selection: &'static str,
}

/// The run a user without `θ*` would pick: lowest training loss.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingLossChoice {
    /// Init seed.
    pub init: usize,
    /// Learning rate.
    pub lr: f64,
    /// Its final official `min_dist`.
    pub min_dist: f64,
    /// `min_dist < threshold`.
    pub success: bool,
}

/// The official summary's verdict for one data seed (`run_p2_r_noise.py::summarize`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OfficialVerdict {
    /// The official `min_value`: the smallest non-NaN final `min_dist`, or the sentinel `-1`
    /// when every run is NaN.
    pub min_value: f64,
    /// `min_value < threshold`.
    pub success: bool,
    /// Every run ended NaN.
    pub all_nan: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::fedx_clustering::assign_clusters;
    use crate::algorithms::ifca::algorithm::tests::cfg_with;
    use crate::algorithms::ifca::algorithm::{gradient_step, ifca_round};
    use crate::algorithms::ifca::IfcaParams;
    use crate::error::FedmixError;
    use crate::params::IfcaOption;
    use crate::params::KeyTable;
    use crate::synthetic::{generate_named, sets};

    #[test]
    fn official_success_rule_is_literal() {
        let v = official_success(&[f64::NAN, 0.5, 0.05, f64::NAN], 0.061);
        assert_eq!(v.min_value.to_bits(), 0.05f64.to_bits());
        assert!(v.success && !v.all_nan);
        let v = official_success(&[0.07, f64::INFINITY], 0.061);
        assert!(!v.success);
        // The quirk: all NaN → sentinel −1 → success.
        let v = official_success(&[f64::NAN, f64::NAN], 0.061);
        assert!(v.success && v.all_nan);
        assert_eq!(v.min_value.to_bits(), (-1.0f64).to_bits());
    }

    #[test]
    fn min_dist_is_a_mean_of_nearest_distances() {
        let ts = DMatrix::from_column_slice(2, 2, &[0.0, 0.0, 3.0, 4.0]);
        // Both estimates near θ*_1: (1/2)(1 + 2) — no matching, unlike eq. 6.
        let th = DMatrix::from_column_slice(2, 2, &[1.0, 0.0, 0.0, 2.0]);
        assert!((min_dist(&th, &ts) - 1.5).abs() < 1e-15);
        let bad = DMatrix::from_column_slice(2, 2, &[f64::NAN, 0.0, 0.0, 2.0]);
        assert!(min_dist(&bad, &ts).is_nan());
    }

    #[test]
    fn official_init_is_unscaled_bernoulli() {
        let a = official_init(50, 2, 3, 0);
        assert!(a
            .iter()
            .all(|&v| v.to_bits() == 0f64.to_bits() || v.to_bits() == 1f64.to_bits()));
        let ones = a.iter().filter(|&&v| v > 0.5).count();
        assert!((30..=70).contains(&ones), "{ones}");
        assert_eq!(a, official_init(50, 2, 3, 0));
        assert_ne!(a, official_init(50, 2, 3, 1));
    }

    #[test]
    fn official_grid_does_not_depend_on_the_batch_size() {
        let data = generate_named(
            "ifca-official",
            2,
            &sets(&[("d", "8"), ("clients", "10"), ("samples", "12"), ("r", "1")]),
        )
        .unwrap();
        let cfg = KeyTable {
            ifca_official_inits: 3,
            ifca_official_iterations: 20,
            ..KeyTable::default()
        };
        let p = OfficialParams::from_config(&cfg, &data.train, Some(0.001)).unwrap();
        let all = IfcaOfficial {
            params: cfg.group::<IfcaOfficialConfig>().unwrap(),
            data_sigma: Some(0.001),
        };
        let one = IfcaOfficial {
            params: KeyTable {
                replicate_batch: 1,
                ..cfg.clone()
            }
            .group::<IfcaOfficialConfig>()
            .unwrap(),
            data_sigma: Some(0.001),
        };
        let a = all.grid(&data.train, &p, 5).unwrap();
        let b = one.grid(&data.train, &p, 5).unwrap();
        assert_eq!(a.len(), 9);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x.theta, y.theta);
            assert_eq!(x.labels, y.labels);
            assert_eq!(x.min_dist.to_bits(), y.min_dist.to_bits());
            assert_eq!(x.training_loss.to_bits(), y.training_loss.to_bits());
            // …and equals the plain single run of the same (init, lr).
            let (init, lr) = (i / p.lrs.len(), p.lrs[i % p.lrs.len()]);
            let alone = official_run(
                &data.train,
                &official_init(8, 2, 5, init),
                lr,
                20,
                &mut Recorder::quiet(),
            )
            .unwrap();
            assert_eq!(alone.theta, x.theta);
            assert_eq!(alone.diverged_at, x.diverged_at);
        }
    }

    #[test]
    fn official_needs_sigma_and_a_grid() {
        let data = generate_named(
            "sxy-balanced",
            2,
            &sets(&[("d", "4"), ("clients", "9"), ("samples", "5")]),
        )
        .unwrap();
        let cfg = KeyTable::default();
        assert!(
            matches!(OfficialParams::from_config(&cfg, &data.train, Some(0.1)), Err(FedmixError::InvalidParameter { ref name, .. }) if name == "ifca_official_lrs")
        );
        let cfg = KeyTable {
            k: Some(2),
            ..KeyTable::default()
        };
        assert!(matches!(
            OfficialParams::from_config(&cfg, &data.train, None),
            Err(FedmixError::Missing { .. })
        ));
        let p = OfficialParams::from_config(&cfg, &data.train, Some(0.1)).unwrap();
        assert!((p.threshold - (0.06 + 0.001)).abs() < 1e-15);
        assert_eq!(p.lrs, vec![1.0, 0.1, 0.01]);
    }

    /// The exact relations of the module docs: option II (τ = 1, step γ') on cluster j equals
    /// option I with γ = γ'|M_t|/|S_j|; with k = 1 (|S_1| = |M_t| = M) option I and II agree at
    /// the same γ, and the official step with lr equals option I with γ = 2 lr.
    #[test]
    fn options_agree_when_they_should() {
        let fed = generate_named(
            "sxy-balanced",
            4,
            &sets(&[("d", "5"), ("clients", "9"), ("samples", "7")]),
        )
        .unwrap()
        .train;
        let all: Vec<usize> = (0..9).collect();
        let g = 0.05;
        // k = 1.
        let theta = DMatrix::from_fn(5, 1, |r, _| 0.1 * r as f64);
        let p1 = IfcaParams::from_config(&cfg_with(IfcaOption::Gradient, g, 1), &fed).unwrap();
        let p2 = IfcaParams::from_config(&cfg_with(IfcaOption::Model, g, 1), &fed).unwrap();
        let (a, _) = ifca_round(&fed, &theta, &all, &p1, None);
        let (b, _) = ifca_round(&fed, &theta, &all, &p2, None);
        assert!(
            crate::prec::amax_nan(&(&a - &b)) < 1e-14,
            "{}",
            crate::prec::amax_nan(&(&a - &b))
        );
        let (c, _) = official_step(&fed, &theta, g / 2.0);
        assert!(crate::prec::amax_nan(&(&a - &c)) < 1e-14);
        // k = 2: cluster-wise rescaled step.
        let theta = DMatrix::from_fn(5, 2, |r, j| if j == 0 { 0.2 * r as f64 } else { -0.3 });
        let labels = assign_clusters(&fed, &theta);
        let (b, _) = ifca_round(
            &fed,
            &theta,
            &all,
            &IfcaParams::from_config(&cfg_with(IfcaOption::Model, g, 2), &fed).unwrap(),
            None,
        );
        for j in 0..2 {
            let sj = labels.iter().filter(|&&l| l == j).count();
            assert!(sj > 0, "both clusters chosen");
            let gj = g * all.len() as f64 / sj as f64;
            let a = gradient_step(&fed, &theta, &all, &labels, gj, all.len() as f64, 1.0);
            assert!(
                crate::prec::amax_nan(&(a.column(j) - b.column(j))) < 1e-14,
                "cluster {j}"
            );
        }
    }
}
