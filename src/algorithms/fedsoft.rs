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
use crate::engine::live::{drive, Live, Output};
use crate::engine::local_update::gradient_steps;
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::{Comm, Recorder};
use crate::engine::summary::{FedSoftSummary, RunSummary};
use crate::error::Result;
use crate::federation::Federation;
use crate::params::{AlgorithmKind, FedSoftConfig, FedSoftParams, Valid};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

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
                summary: RunSummary::FedSoft { fedsoft },
            }
        });
        Ok(Box::new(Live::new(rounds, start, max, output)))
    }
}

impl WithRandomness for FedSoft {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::FedSoft
    }

    fn run_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        drive(self.live_run(fed, seed, given)?, fed, rec)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::executor::Executor;
    use crate::engine::local_update::local_update;
    use crate::federation::FederationParts;
    use crate::params::{LocalSolver, Phase2Params};

    /// `‖a − b‖∞ ≤ rtol · max(‖b‖∞, 1e-300)`, failing on NaN.
    fn close(a: &[f64], b: &[f64], rtol: f64) -> bool {
        let scale = b.iter().fold(1e-300, |m: f64, v| m.max(v.abs()));
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= rtol * scale)
    }

    fn params(k: usize, lambda: f64, smoother: f64, interval: usize) -> FedSoftParams {
        FedSoftParams {
            k,
            lambda,
            smoother,
            interval,
            eta: 0.1,
            local_steps: 2,
            rounds: 1,
            init_scale: 1.0,
        }
    }

    /// A federation of `samples[i]` = client i's `(φ_ij, y_ij)` pairs.
    fn federation(samples: &[Vec<(Vec<f64>, f64)>]) -> Federation {
        let d = samples[0][0].0.len();
        let all: Vec<&(Vec<f64>, f64)> = samples.iter().flatten().collect();
        Federation::new(FederationParts {
            features: DMatrix::from_fn(d, all.len(), |r, j| all[j].0[r]),
            responses: DVector::from_iterator(all.len(), all.iter().map(|s| s.1)),
            sizes: samples.iter().map(Vec::len).collect(),
            ..FederationParts::default()
        })
        .unwrap()
    }

    /// The round of docs/math.md §3.6 written out with plain loops over clients, samples and
    /// coordinates (no shared code with the implementation): `x[i][j]` is `(φ_ij, y_ij)`, `c[s]`
    /// the cluster models, `w[i]` the personal models, `kept` the previous importance weights in
    /// a round without estimation. Returns `(c, w, u)` after the round.
    #[allow(clippy::type_complexity, clippy::needless_range_loop)]
    fn round_by_loops(
        x: &[Vec<(Vec<f64>, f64)>],
        c: &[Vec<f64>],
        w: &[Vec<f64>],
        kept: Option<&[Vec<f64>]>,
        p: &FedSoftParams,
    ) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let (m, k, d) = (x.len(), c.len(), c[0].len());
        let dot = |a: &[f64], b: &[f64]| (0..d).map(|r| a[r] * b[r]).sum::<f64>();
        let mut u = vec![vec![0.0; k]; m];
        let mut w_new = w.to_vec();
        for i in 0..m {
            let n = x[i].len();
            // Importance estimation: count each sample's nearest cluster, ties → lowest.
            let mut counts = vec![0usize; k];
            for (phi, y) in &x[i] {
                let mut best = 0;
                for s in 1..k {
                    if (y - dot(phi, &c[s])).powi(2) < (y - dot(phi, &c[best])).powi(2) {
                        best = s;
                    }
                }
                counts[best] += 1;
            }
            for s in 0..k {
                u[i][s] = match kept {
                    Some(kept) => kept[i][s],
                    None if counts[s] == 0 => p.smoother,
                    None => counts[s] as f64 / n as f64,
                };
            }
            // s gradient steps on F_i(w) + (λ/2) Σ_s u_is ‖w − c_s‖²,
            // F_i(w) = Σ_j (y_ij − ⟨φ_ij, w⟩)²/(2n_i).
            for _ in 0..p.local_steps {
                let wi = w_new[i].clone();
                for r in 0..d {
                    let mut g = 0.0;
                    for (phi, y) in &x[i] {
                        g += phi[r] * (dot(phi, &wi) - y) / n as f64;
                    }
                    for s in 0..k {
                        g += p.lambda * u[i][s] * (wi[r] - c[s][r]);
                    }
                    w_new[i][r] = wi[r] - p.eta * g;
                }
            }
        }
        // Server: c_s = Σ_i v_si w_i, v_si = u_is n_i / Σ_i' u_i's n_i'.
        let mut c_new = vec![vec![0.0; d]; k];
        for s in 0..k {
            let total: f64 = (0..m).map(|i| u[i][s] * x[i].len() as f64).sum();
            for i in 0..m {
                let v = u[i][s] * x[i].len() as f64 / total;
                for r in 0..d {
                    c_new[s][r] += v * w_new[i][r];
                }
            }
        }
        (c_new, w_new, u)
    }

    /// d = 2, M = 3 (n = 3, 2, 4), k = 2. At `c_0 = (1, −0.5)`, `c_1 = (0.5, 2)` the
    /// predictions `(⟨φ, c_0⟩, ⟨φ, c_1⟩)` are, by hand: client 0 (0.75, 1.5), (−1.3, 3.85),
    /// (1.25, −1.85) against y = 0.8, −0.9, 1.6, all nearest c_0: u_0 = (1, σ); client 1
    /// (1.4, 1.15), (−0.25, 2.8) against y = 1.4, 3.1, one each: u_1 = (1/2, 1/2), label 0 by
    /// the tie rule; client 2 (0.5, 2.05), (−1.5, 0.6), (0.5, −0.65), (1.5, 3) against
    /// y = 2.6, 1.1, −0.6, 0.4: c_1, c_1, c_1, c_0, u_2 = (1/4, 3/4).
    fn tiny() -> Vec<Vec<(Vec<f64>, f64)>> {
        vec![
            vec![
                (vec![1.0, 0.5], 0.8),
                (vec![-0.3, 2.0], -0.9),
                (vec![0.7, -1.1], 1.6),
            ],
            vec![(vec![1.5, 0.2], 1.4), (vec![0.4, 1.3], 3.1)],
            vec![
                (vec![0.9, 0.8], 2.6),
                (vec![-1.2, 0.6], 1.1),
                (vec![0.3, -0.4], -0.6),
                (vec![2.0, 1.0], 0.4),
            ],
        ]
    }

    /// (a) One round on the tiny federation equals the plain-loop round to 1e-12 relative: the
    /// importance weights exactly, the personal models, the cluster models, the labels and the
    /// communication (k·d down, d + k up per client in an estimation round).
    #[test]
    fn one_round_equals_the_round_written_with_plain_loops() {
        let data = tiny();
        let fed = federation(&data);
        let c0 = vec![vec![1.0, -0.5], vec![0.5, 2.0]];
        let w0 = vec![vec![0.2, 0.1], vec![-0.4, 0.6], vec![0.8, -0.2]];
        let p = FedSoftParams {
            lambda: 0.7,
            smoother: 0.01,
            ..params(2, 0.0, 0.0, 1)
        };
        let (c_want, w_want, u_want) = round_by_loops(&data, &c0, &w0, None, &p);
        let solver = FedSoftRounds { p, init: None };
        let start = ModelState::start(
            DMatrix::from_fn(2, 2, |r, s| c0[s][r]),
            vec![0; 3],
            Personal {
                models: DMatrix::from_fn(2, 3, |r, i| w0[i][r]),
                importance: DMatrix::zeros(2, 3),
                estimated_after: 0,
            },
        );
        let next = Executor::new(&fed, &solver, 1).step(start).unwrap();
        // The importance weights by hand (see `tiny`), exact: a zero count (σ), a tie, a mixture.
        let by_hand = vec![vec![1.0, 0.01], vec![0.5, 0.5], vec![0.25, 0.75]];
        assert_eq!(u_want, by_hand);
        for (i, want) in by_hand.iter().enumerate() {
            let got: Vec<f64> = next.extra.importance.column(i).iter().copied().collect();
            assert_eq!(&got, want, "client {i}");
        }
        for (i, want) in w_want.iter().enumerate() {
            let got: Vec<f64> = next.extra.models.column(i).iter().copied().collect();
            assert!(close(&got, want, 1e-12), "w_{i}: {got:?} vs {want:?}");
        }
        for (s, want) in c_want.iter().enumerate() {
            let got: Vec<f64> = next.theta.column(s).iter().copied().collect();
            assert!(close(&got, want, 1e-12), "c_{s}: {got:?} vs {want:?}");
        }
        assert_eq!(next.labels, vec![0, 0, 1]);
        assert_eq!(next.round, 1);
        assert_eq!(next.comm, Comm::broadcast_and_upload(3, 2 * 2, 2 + 2));
    }

    /// (b) Importance weights by hand (d = 1, k = 3, c = (1, 3, 10), φ = 1): y = 2 is 1 from
    /// both c_0 and c_1 (squared residuals 1 and 1, exact), a tie that goes to s = 0; y = 0.5
    /// is nearest c_0 (0.25 < 6.25); y = 3.2 nearest c_1 (0.04 < 4.84); no sample chooses
    /// c_2. So counts (2, 1, 0) and u = (2/3, 1/3, σ); the hard label is 0. A second client,
    /// y = (9, 11) (both nearest c_2: 1 < 36), has u = (σ, σ, 1) and label 2; a third with
    /// y = (2, 2) ties twice and has u = (1, σ, σ), label 0.
    #[test]
    fn importance_weights_by_hand_with_a_tie_and_a_zero_count() {
        let one = |ys: &[f64]| ys.iter().map(|&y| (vec![1.0], y)).collect::<Vec<_>>();
        let fed = federation(&[one(&[2.0, 0.5, 3.2]), one(&[9.0, 11.0]), one(&[2.0, 2.0])]);
        let c = DMatrix::from_row_slice(1, 3, &[1.0, 3.0, 10.0]);
        let sigma = 1e-4;
        let u: Vec<Vec<f64>> = (0..3)
            .map(|i| importance_weights(&fed, i, &c, sigma))
            .collect();
        assert_eq!(u[0], vec![2.0 / 3.0, 1.0 / 3.0, sigma]);
        assert_eq!(u[1], vec![sigma, sigma, 1.0]);
        assert_eq!(u[2], vec![1.0, sigma, sigma]);
        let um = DMatrix::from_fn(3, 3, |s, i| u[i][s]);
        assert_eq!(hard_labels(&um), vec![0, 2, 0]);
        // Equal weights (a tie in argmax) go to the lowest s.
        assert_eq!(
            hard_labels(&DMatrix::from_column_slice(3, 1, &[0.5, 0.5, sigma])),
            vec![0]
        );
        // The server's weights by hand (n = 3, 2, 2): cluster 2's masses u_i2 n_i are
        // (3σ, 2, 2σ), so v_2 = (3σ, 2, 2σ)/(2 + 5σ); with personal models w = (1, 2, 4) the
        // new c_2 = (3σ·1 + 2·2 + 2σ·4)/(2 + 5σ).
        let w = DMatrix::from_row_slice(1, 3, &[1.0, 2.0, 4.0]);
        let c_new = aggregate(&fed, &w, &um);
        let want = (3.0 * sigma + 4.0 + 8.0 * sigma) / (2.0 + 5.0 * sigma);
        assert!(
            (c_new[(0, 2)] - want).abs() <= 1e-15 * want,
            "{}",
            c_new[(0, 2)]
        );
        // Cluster 0: masses (2, 2σ, 2): c_0 = (2·1 + 2σ·2 + 2·4)/(4 + 2σ).
        let want0 = (2.0 + 4.0 * sigma + 8.0) / (4.0 + 2.0 * sigma);
        assert!(
            (c_new[(0, 0)] - want0).abs() <= 1e-15 * want0,
            "{}",
            c_new[(0, 0)]
        );
    }

    /// (a, continued) Five rounds with k = 3 and τ = 2 (estimation in rounds 1, 3, 5 only) on
    /// `sxy-balanced` (d = 3, M = 8 clients of log-normal sizes) from the run's own start equal
    /// the plain-loop rounds to 1e-12 relative, round after round.
    #[test]
    fn five_rounds_with_three_clusters_equal_the_plain_loops() {
        let fed = crate::synthetic::train_federation(
            "sxy-balanced",
            4,
            &[
                ("d", "3"),
                ("clients", "8"),
                ("samples", "6"),
                ("sizes", "lognormal"),
            ],
        );
        let data: Vec<Vec<(Vec<f64>, f64)>> = (0..fed.num_clients())
            .map(|i| {
                let (x, y) = (fed.x(i), fed.y(i));
                (0..fed.n(i))
                    .map(|j| (x.column(j).iter().copied().collect(), y[j]))
                    .collect()
            })
            .collect();
        let p = FedSoftParams {
            eta: 0.05,
            local_steps: 3,
            ..params(3, 0.8, 0.05, 2)
        };
        let solver = FedSoftRounds { p, init: None };
        let ex = Executor::new(&fed, &solver, 5);
        let mut state = ex.init(2, &Randomness::default()).unwrap();
        let cols = |mat: &DMatrix<f64>| -> Vec<Vec<f64>> {
            mat.column_iter()
                .map(|c| c.iter().copied().collect())
                .collect()
        };
        let (mut c, mut w, mut u) = (cols(&state.theta), cols(&state.extra.models), Vec::new());
        for t in 0..5 {
            let kept = (t % 2 == 1).then_some(u.as_slice());
            (c, w, u) = round_by_loops(&data, &c, &w, kept, &p);
            state = ex.step(state).unwrap();
            assert_eq!(cols(&state.extra.importance), u, "round {}", t + 1);
            for (got, want) in cols(&state.extra.models).iter().zip(&w) {
                assert!(
                    close(got, want, 1e-12),
                    "round {}: {got:?} vs {want:?}",
                    t + 1
                );
            }
            for (got, want) in cols(&state.theta).iter().zip(&c) {
                assert!(
                    close(got, want, 1e-12),
                    "round {}: {got:?} vs {want:?}",
                    t + 1
                );
            }
        }
    }

    /// Seven clients of unequal (log-normal) sizes, d = 5 (FedAvg's test federation).
    fn unequal() -> Federation {
        crate::algorithms::fedavg::tests::unequal_clients_one_round().0
    }

    /// (c) With λ = 0 and τ larger than the run, the personal models do plain local GD: after
    /// every round, client i's model is `engine::local_update`'s FedAvg steps from its previous
    /// one, bit for bit; the importance weights are those of round 1 (estimated at the start,
    /// never again); the cluster models are the u-weighted means `Σ_i u_is n_i w_i / Σ_i u_is n_i`
    /// (written out here); the upload carries the k weights only in round 1.
    #[test]
    fn without_the_pull_clients_do_local_gd_and_the_server_a_weighted_mean() {
        let fed = unequal();
        let (m, d, k) = (fed.num_clients(), fed.d(), 3);
        let p = FedSoftParams {
            eta: 0.02,
            local_steps: 3,
            rounds: 4,
            ..params(k, 0.0, 1e-3, 1_000_000)
        };
        let solver = FedSoftRounds { p, init: None };
        let ex = Executor::new(&fed, &solver, 4);
        let mut state = ex.init(9, &Randomness::default()).unwrap();
        let u0 = state.extra.importance.clone();
        let gd = Phase2Params {
            eta: p.eta,
            local_steps: p.local_steps,
            local_solver: LocalSolver::Fedavg,
            rounds: 1,
        };
        for t in 1..=4 {
            let before = state.extra.models.clone();
            state = ex.step(state).unwrap();
            assert_eq!(state.extra.importance, u0, "round {t}: re-estimated");
            for i in 0..m {
                let want = local_update(&fed, i, &before.column(i).clone_owned(), &gd, None);
                assert_eq!(
                    state.extra.models.column(i),
                    want.column(0),
                    "round {t}, w_{i}"
                );
            }
            for s in 0..k {
                let total: f64 = (0..m).map(|i| u0[(s, i)] * fed.n(i) as f64).sum();
                let mut want = vec![0.0; d];
                for i in 0..m {
                    for (r, v) in want.iter_mut().enumerate() {
                        *v += u0[(s, i)] * fed.n(i) as f64 * state.extra.models[(r, i)];
                    }
                }
                want.iter_mut().for_each(|v| *v /= total);
                let got: Vec<f64> = state.theta.column(s).iter().copied().collect();
                assert!(close(&got, &want, 1e-13), "round {t}, c_{s}");
            }
            let up = if t == 1 { d + k } else { d } as u64;
            assert_eq!(
                state.comm,
                Comm::broadcast_and_upload(m as u64, (k * d) as u64, up)
            );
        }
    }

    /// The start: `c` is `phase2`'s random start (`stream(seed, Init, 0)`'s first `kd` draws),
    /// every personal model the next `d` draws, whether or not `c` is supplied; the labels of
    /// the start are the argmax of the importance weights at `c`.
    #[test]
    fn the_start_draws_c_then_w0_from_the_init_stream() {
        let fed = unequal();
        let (d, k) = (fed.d(), 3);
        let solver = FedSoftRounds {
            p: params(k, 1.0, 1e-4, 1),
            init: None,
        };
        let s = solver.init(&fed, 4, &Randomness::default()).unwrap();
        let draws = random_init(d, k + 1, 1.0, 4, 0);
        assert_eq!(s.theta, random_init(d, k, 1.0, 4, 0));
        assert_eq!(s.theta, draws.columns(0, k));
        for i in 0..fed.num_clients() {
            assert_eq!(s.extra.models.column(i), draws.column(k));
        }
        assert_eq!(s.labels, hard_labels(&s.extra.importance));
        let given = Randomness {
            init: Some(Supplied {
                source: "c.npy".into(),
                value: vec![DMatrix::from_element(d, k, 0.5)],
            }),
            ..Randomness::default()
        };
        let g = solver.init(&fed, 4, &given).unwrap();
        assert_eq!(g.theta, DMatrix::from_element(d, k, 0.5));
        assert_eq!(g.extra.models, s.extra.models);
    }

    /// Running from the supplied cluster models that the run drew (`resolve`) reproduces the
    /// run bit for bit under the same seed.
    #[test]
    fn the_resolved_start_replays_the_run() {
        let fed = unequal();
        let alg = FedSoft {
            params: crate::params::ParamGuard::check(FedSoftConfig {
                k: Some(3),
                phase2: crate::params::Phase2Config {
                    rounds: 6,
                    ..crate::params::Phase2Config::default()
                },
                ..FedSoftConfig::default()
            })
            .unwrap(),
            init: None,
        };
        let r = alg.resolve(&fed, 8, &Randomness::default()).unwrap();
        let run = |given: &Randomness| {
            let o = alg
                .run_with(&fed, 8, given, &mut Recorder::quiet())
                .unwrap();
            (o.theta_hat, o.labels)
        };
        assert_eq!(run(&Randomness::default()), run(&r));
    }
}
