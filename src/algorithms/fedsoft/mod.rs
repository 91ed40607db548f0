//! FedSoft — soft clustered federated learning with proximal local updating (Ruan & Joe-Wong,
//! AAAI 2022, "FedSoft: Soft Clustered Federated Learning with Proximal Local Updating"; a
//! baseline of SR-FCA §5). Client i's data is read as a mixture of the k sources, with
//! **importance weights** `u_i = (u_i1 … u_ik)`; every client keeps a **personal model** `w_i`
//! across rounds, and the server keeps k **cluster models** `c_1 … c_k`. One round (`t` counted
//! from 0):
//!
//! ```text
//! if t mod τ = 0, client i (importance estimation, at the broadcast c):
//!     count_is = #{ j : s = argmin_s' (y_ij − ⟨φ_ij, c_s'⟩)² }          (ties → lowest s')
//!     u_is = count_is / n_i,  or σ where count_is = 0
//! client i (proximal local update): s gradient steps of size η on
//!     h_i(w) = F_i(w) + (λ/2) Σ_s u_is ‖w − c_s‖²,   w ← w − η (∇F_i(w) + λ Σ_s u_is (w − c_s))
//! server:   c_s = Σ_i v_si w_i,   v_si = u_is n_i / Σ_i' u_i's n_i'
//! ```
//!
//! The paper is not in this repository's paper set; these rounds are read from the authors'
//! code (`ycruan/FedSoft` at `e71a4ab`: `servers.py` `Server._run_fedsoft` and
//! `_aggregate_fedsoft`, `clients.py` `Client.estimate_importance_weights` and `_local_train`),
//! with `docs/math.md` §3.6 as the specification. Legend: `F_i(w) = ‖y_i − φ_iw‖²/(2n_i)` (SXY22
//! §4.2's loss, fedmix's convention), `λ` = `fedsoft_lambda`, `σ` = `fedsoft_smoother`, `τ` =
//! `fedsoft_interval`, `η`, `s` = Phase 2's `eta`, `local_steps`.
//!
//! Since `Σ_s u_is ‖w − c_s‖² = ū_i ‖w − c̄_i‖² + const` with `ū_i = Σ_s u_is` and
//! `c̄_i = Σ_s u_is c_s / ū_i`, the local update is FedProx's inexact local solver towards `c̄_i`
//! with weight `λ ū_i` ([`gradient_steps`]); `ū_i ≥ 1` (the positive counts' weights sum to 1),
//! so `c̄_i` is always defined.
//!
//! Decisions (the authors' code leaves these open or differs from fedmix's conventions):
//! - **Local solver:** s full-batch gradient steps in fedmix's loss convention (deterministic,
//!   like every other local solver here) instead of the authors' `local_epoch` epochs of
//!   mini-batch Adam on torch's `MSELoss` (`2F_i`); their `(lr, reg_weight)` is fedmix's
//!   `(η, λ) = (2·lr, reg_weight/2)` (docs/math.md §5.2). `local_solver` is not a FedSoft key.
//! - **Start:** `c_s ~ N(0, init_scale² I_d/d)` from `stream(seed, Init, 0)`, the start of
//!   `phase2` (model 0's coordinates first), or the supplied `--init` (`k × d`); every personal
//!   model starts at one `w₀ ~ N(0, init_scale² I_d/d)`, the next `d` draws of the same stream
//!   (whether or not `c` is supplied). The authors also draw the clients' common start
//!   (`Server.client_init_model`) apart from the cluster models. `w₀` cannot be supplied, so
//!   `--export-randomness` refuses `fedsoft`.
//! - **Importance weights before round 1:** the estimate at the start `c`, so that the labels of
//!   a run of 0 rounds are the choice at the start (as Phase 2's); round 1 re-estimates at the
//!   same `c` (t = 0), with the same result.
//! - **Output:** `θ̂ = (c_1 … c_k)` and the hard labels `z_i = argmax_s u_is` (ties → lowest s)
//!   of the last estimation (the labels a round records are those of the estimation it used),
//!   so that fedmix's distance, misclustering and held-out loss apply as for every other
//!   algorithm; the summary adds the final `u` and the personal models' error to their own
//!   cluster's `θ*`.
//! - **Participation:** full. The paper's optional client selection (per cluster, sample
//!   clients with probabilities `v_si`, average them uniformly) saves communication and is not
//!   implemented.
//! - **Communication** per round: the k cluster models to every client (`kd`), from every
//!   client its personal model (`d`), plus its k importance weights (`k`) in an estimation round
//!   (the server needs `u_is n_i` for `v_si`).
//!
//! Not followed (a quirk of the released code): `servers.py` calls
//! `client.estimate_importance_weights('fedsoft')`, whose definition in `clients.py` takes no
//! argument; fedmix follows the evident intent above.

use crate::engine::contract::{LiveRun, RunOutput, WithRandomness};
use crate::engine::executor::{ModelState, RoundSolver};
use crate::engine::init::{check_init, random_init, single_init};
use crate::engine::live::{Live, Output};
use crate::engine::local_update::gradient_steps;
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Comm, Recorder};
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::metrics::ErrorSummary;
use crate::params::{AlgorithmKind, Valid};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use serde::Serialize;

/// Client `i`'s importance weights at the cluster models `c` (`d × k`): per sample, the model
/// with the smallest squared residual (ties → lowest s); `u_is` = the fraction of its samples
/// choosing `s`, or `smoother` where none does.
pub fn importance_weights(fed: &Federation, i: usize, c: &DMatrix<f64>, smoother: f64) -> Vec<f64> {
    let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
    let pred = x.tr_mul(c); // n_i × k
    let mut counts = vec![0usize; c.ncols()];
    let mut sq = vec![0.0; c.ncols()];
    for j in 0..n {
        for (s, v) in sq.iter_mut().enumerate() {
            let r = pred[(j, s)] - y[j];
            *v = r * r;
        }
        counts[crate::metrics::argmin(&sq)] += 1;
    }
    counts
        .iter()
        .map(|&m| match m {
            0 => smoother,
            m => m as f64 / n as f64,
        })
        .collect()
}

/// `argmax_s u_is` of every client (column i of `u`, `k × M`), ties → lowest s.
pub fn hard_labels(u: &DMatrix<f64>) -> Vec<usize> {
    u.column_iter()
        .map(|col| {
            (0..col.len()).fold(0, |best, s| match col[s] > col[best] {
                true => s,
                false => best,
            })
        })
        .collect()
}

/// Client `i`'s proximal local update from its personal model `w` ([`gradient_steps`] on
/// `F_i(w) + (λ/2) Σ_s u_s ‖w − c_s‖²`, i.e. towards `c̄ = Σ_s u_s c_s / ū` with weight `λū`).
pub fn proximal_update(
    fed: &Federation,
    i: usize,
    w: &DVector<f64>,
    c: &DMatrix<f64>,
    u: &[f64],
    p: &FedSoftParams,
) -> DVector<f64> {
    if !(p.lambda > 0.0) {
        return gradient_steps(fed, i, w, p.eta, p.local_steps, None);
    }
    let total: f64 = u.iter().sum();
    let centre = (c * DVector::from_column_slice(u)) / total;
    gradient_steps(
        fed,
        i,
        w,
        p.eta,
        p.local_steps,
        Some((p.lambda * total, &centre)),
    )
}

/// The server step: `c_s = Σ_i v_si w_i`, `v_si = u_is n_i / Σ_i' u_i's n_i'` (sums in client
/// order). `w` is `d × M`, `u` is `k × M`.
pub fn aggregate(fed: &Federation, w: &DMatrix<f64>, u: &DMatrix<f64>) -> DMatrix<f64> {
    let (d, k, m) = (w.nrows(), u.nrows(), w.ncols());
    let mut c = DMatrix::zeros(d, k);
    for s in 0..k {
        let mass: Vec<f64> = (0..m).map(|i| u[(s, i)] * fed.n(i) as f64).collect();
        let total: f64 = mass.iter().sum();
        let mut col = c.column_mut(s);
        for (i, a) in mass.iter().enumerate() {
            col.axpy(a / total, &w.column(i), 1.0);
        }
    }
    c
}

/// FedSoft (`fedsoft`).
#[derive(Clone, Debug)]
pub struct FedSoft {
    /// Configuration (`fedsoft_*`, `eta`, `local_steps`, `rounds`, `k`, `init_scale`).
    pub params: Valid<FedSoftConfig>,
    /// Initial cluster models (`d × k`), when given here rather than as `--init`.
    pub init: Option<DMatrix<f64>>,
}

impl FedSoft {
    /// The rounds of this run on `fed`: the parameters resolved against the data.
    ///
    /// # Errors
    /// `k` unknown or `k > M`; the step's checks.
    pub fn rounds(&self, fed: &Federation) -> Result<FedSoftRounds> {
        Ok(FedSoftRounds {
            p: FedSoftParams::resolve(&self.params, fed)?,
            init: self.init.clone(),
        })
    }
}

/// What FedSoft carries from round to round besides the cluster models.
#[derive(Clone, Debug, PartialEq)]
pub struct Personal {
    /// The personal models `w_i` (`d × M`, column i).
    pub models: DMatrix<f64>,
    /// The importance weights of the last estimation (`k × M`, column i is `u_i`).
    pub importance: DMatrix<f64>,
    /// Rounds done when the last estimation was made (it started round this + 1; 0 also for
    /// the estimate at the start, before any round).
    pub estimated_after: usize,
}

/// FedSoft's rounds ([`RoundSolver`]) for one run.
#[derive(Clone, Debug)]
pub struct FedSoftRounds {
    p: FedSoftParams,
    init: Option<DMatrix<f64>>,
}

impl FedSoftRounds {
    /// The resolved parameters.
    pub fn params(&self) -> &FedSoftParams {
        &self.p
    }

    /// The cluster models' start: supplied (`k × d`), given to the algorithm, or drawn from
    /// `stream(seed, Init, 0)` (its first `kd` draws).
    fn clusters0(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<DMatrix<f64>> {
        let (d, k) = (fed.d(), self.p.k);
        match (&given.init, &self.init) {
            (Some(s), _) => single_init(s, d, k),
            (None, Some(m)) => {
                check_init(m, d, k)?;
                Ok(m.clone())
            }
            (None, None) => Ok(random_init(d, k, self.p.init_scale, seed, 0)),
        }
    }

    /// Every client's importance weights at `c` (`k × M`), clients in parallel.
    fn estimate(&self, fed: &Federation, c: &DMatrix<f64>) -> DMatrix<f64> {
        let cols: Vec<Vec<f64>> = (0..fed.num_clients())
            .into_par_iter()
            .map(|i| importance_weights(fed, i, c, self.p.smoother))
            .collect();
        DMatrix::from_fn(c.ncols(), cols.len(), |s, i| cols[i][s])
    }
}

impl RoundSolver for FedSoftRounds {
    type State = ModelState<Personal>;

    fn name(&self) -> &'static str {
        "FedSoft"
    }

    /// The cluster models `c`, every personal model at `w₀` (the `d` draws of
    /// `stream(seed, Init, 0)` after the first `kd`), the importance weights at `c` and their
    /// hard labels.
    fn init(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Self::State> {
        let (d, k, m) = (fed.d(), self.p.k, fed.num_clients());
        let c = self.clusters0(fed, seed, given)?;
        let w0 = random_init(d, k + 1, self.p.init_scale, seed, 0)
            .column(k)
            .clone_owned();
        let importance = self.estimate(fed, &c);
        let labels = hard_labels(&importance);
        let extra = Personal {
            models: DMatrix::from_fn(d, m, |r, _| w0[r]),
            importance,
            estimated_after: 0,
        };
        Ok(ModelState::start(c, labels, extra))
    }

    /// One round of the module's pseudocode as round `state.round + 1`.
    fn next_round(&self, fed: &Federation, s: Self::State) -> Result<Self::State> {
        let (m, d, k) = (fed.num_clients(), fed.d() as u64, self.p.k as u64);
        let estimating = s.round % self.p.interval == 0;
        let u = match estimating {
            true => self.estimate(fed, &s.theta),
            false => s.extra.importance.clone(),
        };
        let cols: Vec<DVector<f64>> = (0..m)
            .into_par_iter()
            .map(|i| {
                let ui: Vec<f64> = u.column(i).iter().copied().collect();
                let wi = s.extra.models.column(i).clone_owned();
                proximal_update(fed, i, &wi, &s.theta, &ui, &self.p)
            })
            .collect();
        let w = DMatrix::from_columns(&cols);
        let c = aggregate(fed, &w, &u);
        let labels = hard_labels(&u);
        let up = if estimating { d + k } else { d };
        let comm = Comm::broadcast_and_upload(m as u64, k * d, up);
        let estimated_after = match estimating {
            true => s.round,
            false => s.extra.estimated_after,
        };
        let mut next = s.advance(c, labels, comm);
        next.extra = Personal {
            models: w,
            importance: u,
            estimated_after,
        };
        Ok(next)
    }
}

impl FedSoft {
    /// FedSoft's rounds ([`FedSoftRounds`]) from their start, live.
    fn live_run(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
    ) -> Result<Box<dyn LiveRun>> {
        let rounds = self.rounds(fed)?;
        let start = rounds.init(fed, seed, given)?;
        let (params, max) = (rounds.p, rounds.p.rounds);
        let truth = fed
            .labels()
            .map(<[usize]>::to_vec)
            .zip(fed.theta_star().cloned());
        let output: Output<ModelState<Personal>> = Box::new(move |_, done| {
            let Personal {
                models,
                importance,
                estimated_after,
            } = done.state.extra;
            let personal_model_error = truth.map(|(z, ts)| {
                let errors: Vec<f64> = models
                    .column_iter()
                    .zip(&z)
                    .map(|(w, &zi)| (w - ts.column(zi)).norm())
                    .collect();
                crate::metrics::summarize(&errors)
            });
            let fedsoft = FedSoftSummary {
                params,
                importance_weights: importance
                    .column_iter()
                    .map(|u| u.iter().copied().collect())
                    .collect(),
                last_estimation_round: match done.state.round {
                    0 => 0,
                    _ => estimated_after + 1,
                },
                personal_model_error,
            };
            RunOutput {
                theta_hat: done.state.theta,
                labels: done.state.labels,
                termination: done.termination,
                summary: RunSummary::new().with("fedsoft", fedsoft),
            }
        });
        Ok(Box::new(Live::new(rounds, start, max, output)))
    }
}

impl WithRandomness for FedSoft {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::FedSoft
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

    /// The cluster models' start (`k × d`). The personal models' start `w₀` is drawn from the
    /// seed and cannot be supplied, so `--export-randomness` refuses `fedsoft`
    /// (`registry::resolve`); under the same seed, running from this reproduces the run.
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let rounds = self.rounds(fed)?;
        let value = vec![rounds.clusters0(fed, seed, given)?];
        let source = given.init.as_ref().map_or_else(
            || format!("<drawn from seed {seed}>").into(),
            |s| s.source.clone(),
        );
        Ok(Randomness {
            init: Some(Supplied { source, value }),
            ..Randomness::default()
        })
    }
}

/// FedSoft's parameters, its final importance weights and how far the personal models are from
/// their own clusters' true models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedSoftSummary {
    /// Parameters.
    pub params: FedSoftParams,
    /// Every client's importance weights `(u_i1 … u_ik)` from the last estimation (row i is
    /// client i; the output labels are their argmax, ties → lowest s).
    pub importance_weights: Vec<Vec<f64>>,
    /// The round whose start made the last estimation (1-based; 0 with no round run: the
    /// estimate at the start).
    pub last_estimation_round: usize,
    /// `‖w_i − θ*_{z_i}‖` over the clients (personal model against the client's own true
    /// cluster model), when `θ*` and the true labels are known.
    pub personal_model_error: Option<ErrorSummary>,
}

mod params;
pub use params::*;

#[cfg(test)]
mod tests;
