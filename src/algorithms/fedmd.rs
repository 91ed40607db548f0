//! SXY22 Phase 1 — Federated Moment Descent (FedMD) on anchor clients (SXY22 §4.1, pseudocode
//! "Phase 1", called Algorithm 1 in these docs; App. C for the practical variant, App. D for the
//! analysis).
//!
//! Residual moment `ε(x, y, θ) = (y − ⟨φ(x), θ⟩) φ(x)`. For a client of cluster j,
//! `E[ε] = Σ_j(θ*_j − θ)` and, for two independent samples of the same client,
//! `E[ε₁ε₂ᵀ] = Σ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_j`. Each anchor `i` repeats: estimate the top-k
//! subspace `Û` of `Y = Σ w U` (other clients' cross moments at `θ_{i,t}`), form the `k × k`
//! projected moment `A` from its own samples (eq. 2), take `β̂` and `σ̂² = σ₁(A)` by power
//! iteration on `AAᵀ`, and step `θ ← θ + (ασ̂/(2β²)) Ûβ̂` unless `σ̂ ≤ εΔ`. Finally anchors closer
//! than `Δ/2` are linked; components are the clusters. (Step numbers below are those of the
//! Phase 1 pseudocode: 9 subspace, 10–11 `A` and power iteration, 12–15 update, 16 linking.)
//!
//! Decisions (the paper leaves these open):
//! - Decision: `σ̂² := σ₁(A) = √λ₁(AAᵀ)`. Step 11 runs power iteration on `AAᵀ`, whose
//!   eigenvalue is `σ₁(A)²`, while §4.1 (after eq. 2) calls `σ̂²` an approximation of `A`'s
//!   leading singular value; we take the square root, because `E A = ÛᵀΣ_j(θ*_j − θ)(θ*_j −
//!   θ)ᵀΣ_jÛ` has leading singular value `≈ ‖Σ_j(θ*_j − θ)‖²`, which is what Prop. 2's eq. 19
//!   compares `σ̂²` with, and the step `ασ̂/(2β²)` then scales with the distance to `θ*_j`.
//! - Decision: the sign of `β̂` makes `β̂ᵀÛᵀḡ ≥ 0`, with `ḡ` the anchor's mean residual moment
//!   over the samples that form `A` (eq. 2). A singular vector's sign is arbitrary, but the
//!   descent needs `r = Ûβ̂` positively correlated with `Σ_j(θ*_j − θ)` (§4.1; proof of Prop. 2,
//!   App. D.5), and `E ḡ = Σ_j(θ*_j − θ)`.
//! - Decision: step 16 assumes exactly k components. With more, the k largest are kept (ties:
//!   lowest anchor client index), because a stray component is an anchor not yet within `Δ/4`
//!   of its `θ*`, backed by fewer anchors than a true cluster; with fewer, a
//!   [`FedmixError::TooFewClusters`] error reporting the count, because k estimates cannot be
//!   formed without inventing one.
//! - Decision: App. C reuses local data but does not say how a client's samples are paired into
//!   the two factors of the cross moment. The practical variant uses every ordered pair of
//!   distinct samples, the U-statistic `U_i = (S_iS_iᵀ − Σ_j ε_ijε_ijᵀ)/(n_i(n_i−1))`,
//!   `S_i = Σ_j ε_ij`, weighted `n_i/Σn` as Algorithm 3: both samples of a pair come from one
//!   client, hence one cluster, so `E U_i = Σ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_j` as for eq. 2's fresh
//!   pairs, and it uses all `n_i(n_i−1)` pairs. Measured in a numpy prototype (k = 3, d = 100,
//!   10 anchors, T = 5): pairing only the first two samples left the anchors 1.2–3.5 Δ from
//!   their `θ*` with wrong cluster counts in 5/5 runs; all pairs, 0.30–0.35 Δ. The faithful
//!   variant keeps step 9's two samples per subspace client and eq. 2's `2ℓ` fresh anchor
//!   samples. Selectable: [`Pairing`].
//!
//! Randomness: the anchors `H` and (faithful) the fresh sets `S_t` come from
//! `stream(seed, Sampling, 0)`; anchor `a`'s start `Q₀` at iteration `t` from
//! `stream(seed, Subspace, 2(t·n_H + a))` and its power-iteration start from the next stream.
//! Each can be supplied instead ([`run_fedmd_with`], `--anchors`, `--q0`, `--power-start`;
//! formats in [`crate::randomness`]); [`phase1_randomness`] lists what a run draws. No sample
//! is drawn at random: the faithful variant's fresh samples are consecutive (`0, 1` for a
//! subspace client, `2ℓt..2ℓ(t+1)` for an anchor).

use super::orthogonal_iteration::{assemble, federated_orthogonal_iteration, ClientMoment};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::linalg::{power_iteration, random_orthonormal, top_k_left_singular, top_k_symmetric};
use crate::randomness::{AnchorsFile, Array, Randomness, Supplied};
use crate::rng::{stream, Purpose, Rng};
use crate::run::{check_finite_iterate, AnchorStats, Comm, Phase, Recorder, RoundRecord};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Phase 1 variant (public names `practical`, `faithful`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase1Variant {
    /// SXY22 App. C: data reuse, all clients with `n_i ≥ 2` in the subspace step, direct SVD.
    Practical,
    /// SXY22 Algorithm 1 as analysed: fresh client sets `S_t`, fresh `2ℓ` anchor samples.
    Faithful,
}

/// How a client turns its samples into a cross-moment estimate (practical variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairing {
    /// Unbiased U-statistic over all ordered pairs of distinct samples (default; the decision
    /// and its measurements are in the module doc).
    AllPairs,
    /// Mean of the first half times mean of the second half.
    Halves,
    /// The first two samples only.
    FirstTwo,
}

/// How `Û` is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubspaceMethod {
    /// Form `Y` and take its top-k left singular vectors (SXY22 App. C).
    Svd,
    /// Federated orthogonal iteration (Algorithm 3) with `t1` steps.
    OrthogonalIteration,
}

/// Validated Phase 1 parameters (names as in `--set`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FedMdParams {
    /// Variant.
    pub variant: Phase1Variant,
    /// Number of clusters k.
    pub k: usize,
    /// `n_H`: number of anchors.
    pub anchors: usize,
    /// `T`: moment-descent iterations.
    pub iterations: usize,
    /// `T₁`: orthogonal-iteration steps (even).
    pub t1: usize,
    /// `T₂`: power-iteration steps.
    pub t2: usize,
    /// `m`: fresh clients per iteration (faithful).
    pub m: usize,
    /// `ℓ`: fresh sample pairs per anchor per iteration (faithful).
    pub ell: usize,
    /// `ε`: stopping threshold `σ̂ ≤ εΔ` (Theorem 1: ε < 1/4).
    pub epsilon: f64,
    /// `Δ`: separation used by the stopping rule and the `Δ/2` linking (from `θ*` when `None`).
    pub separation: Option<f64>,
    /// `α`: lower covariance bound.
    pub alpha: f64,
    /// `β`: upper covariance bound.
    pub beta: f64,
    /// Pairing of samples (practical).
    pub pairing: Pairing,
    /// Subspace method (practical; the faithful variant always uses orthogonal iteration).
    pub subspace: SubspaceMethod,
    /// Minimum `n_i` of an anchor in the practical variant (default `5k`).
    pub anchor_min_samples: usize,
}

/// Phase 1 result.
#[derive(Clone, Debug)]
pub struct FedMdOutput {
    /// `θ̂`, `d × k` (component means, largest component first).
    pub theta_hat: DMatrix<f64>,
    /// Anchor client indices, in `H` order.
    pub anchors: Vec<usize>,
    /// Final anchor models `θ_{i,T}` (`d × n_H`).
    pub anchor_models: DMatrix<f64>,
    /// Connected components found by the `Δ/2` rule (before keeping the k largest).
    pub components_found: usize,
    /// Clients excluded from the subspace step for having `n_i < 2`.
    pub excluded_clients: usize,
    /// `Δ` used.
    pub separation: f64,
}

/// Residual moments `ε(x_ij, y_ij, θ)` of client `i` over `range`, as columns (`d × |range|`).
pub fn residual_moments(
    fed: &Federation,
    i: usize,
    theta: &DVector<f64>,
    range: std::ops::Range<usize>,
) -> DMatrix<f64> {
    let x = fed.x(i).columns(range.start, range.len()).clone_owned();
    let r = fed.y(i).rows(range.start, range.len()) - x.tr_mul(theta);
    let mut e = x;
    for (mut col, ri) in e.column_iter_mut().zip(r.iter()) {
        col *= *ri;
    }
    e
}

/// The cross-moment estimate of a set of moment columns `e` (`d × n`, `n ≥ 2`) as a factored
/// `A Bᵀ` (see [`Pairing`]).
pub fn pair_moments(e: &DMatrix<f64>, pairing: Pairing) -> (DMatrix<f64>, DMatrix<f64>) {
    let n = e.ncols();
    match pairing {
        Pairing::AllPairs => {
            // U = (S Sᵀ − Σ ε εᵀ)/(n(n−1)) = [S, −E] [S, E]ᵀ / (n(n−1))
            let s = e.column_sum();
            let c = 1.0 / (n as f64 * (n as f64 - 1.0));
            let mut a = DMatrix::zeros(e.nrows(), n + 1);
            let mut b = DMatrix::zeros(e.nrows(), n + 1);
            a.set_column(0, &(&s * c));
            b.set_column(0, &s);
            a.columns_mut(1, n).copy_from(&(e * -c));
            b.columns_mut(1, n).copy_from(e);
            (a, b)
        }
        Pairing::Halves => {
            let h = n / 2;
            let first = e.columns(0, h).column_mean();
            let second = e.columns(h, h).column_mean();
            (
                DMatrix::from_column_slice(e.nrows(), 1, first.as_slice()),
                DMatrix::from_column_slice(e.nrows(), 1, second.as_slice()),
            )
        }
        Pairing::FirstTwo => (e.columns(0, 1).clone_owned(), e.columns(1, 1).clone_owned()),
    }
}

/// Uniform random subset of `k` items of `pool` (partial Fisher–Yates with `rng.random_range`),
/// in draw order. Documented so that other implementations can reproduce it.
pub fn sample_without_replacement(pool: &[usize], k: usize, rng: &mut Rng) -> Vec<usize> {
    let mut v = pool.to_vec();
    let k = k.min(v.len());
    for i in 0..k {
        let j = rng.random_range(i..v.len());
        v.swap(i, j);
    }
    v.truncate(k);
    v
}

impl FedMdParams {
    /// Check the parameters themselves (ranges independent of the data).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the parameter.
    pub fn check(&self) -> Result<()> {
        if self.k == 0 {
            return Err(FedmixError::invalid("k", 0, "must be ≥ 1"));
        }
        if self.anchors < self.k {
            return Err(FedmixError::invalid(
                "anchors",
                self.anchors,
                format!("need at least k = {} anchors", self.k),
            ));
        }
        let needs_t1 = self.variant == Phase1Variant::Faithful
            || self.subspace == SubspaceMethod::OrthogonalIteration;
        if needs_t1 && (self.t1 == 0 || self.t1 % 2 == 1) {
            return Err(FedmixError::invalid("t1", self.t1, "must be even and ≥ 2"));
        }
        if self.t2 == 0 {
            return Err(FedmixError::invalid("t2", 0, "must be ≥ 1"));
        }
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(FedmixError::invalid(
                "epsilon",
                self.epsilon,
                "must be finite and ≥ 0",
            ));
        }
        if !(self.alpha > 0.0 && self.beta >= self.alpha && self.beta.is_finite()) {
            return Err(FedmixError::invalid(
                "alpha",
                self.alpha,
                format!("need 0 < alpha ≤ beta (beta = {})", self.beta),
            ));
        }
        if let Some(s) = self.separation {
            if !(s.is_finite() && s > 0.0) {
                return Err(FedmixError::invalid(
                    "separation",
                    s,
                    "must be finite and > 0",
                ));
            }
        }
        if self.variant == Phase1Variant::Faithful && (self.m == 0 || self.ell == 0) {
            return Err(FedmixError::invalid(
                "m",
                self.m,
                "m and ell must be ≥ 1 in the faithful variant",
            ));
        }
        Ok(())
    }
}

/// Run Phase 1 from the common start `theta0` (`d`), recording one trace row per iteration.
///
/// # Errors
/// Parameter errors, [`FedmixError::NotEnoughClients`] (anchors / fresh clients),
/// [`FedmixError::Missing`] (Δ unknown), [`FedmixError::TooFewClusters`],
/// [`FedmixError::Divergence`].
pub fn run_fedmd(
    fed: &Federation,
    p: &FedMdParams,
    theta0: &DVector<f64>,
    seed: u64,
    rec: &mut Recorder,
) -> Result<FedMdOutput> {
    run_fedmd_with(fed, p, theta0, seed, &Randomness::default(), rec)
}

/// [`run_fedmd`] with randomness supplied from files where `given` has it (anchors and client
/// sets, the starts `Q₀` of the orthogonal iterations, the power-iteration starts); the rest is
/// drawn from `seed` exactly as [`run_fedmd`] draws it.
///
/// # Errors
/// As [`run_fedmd`]; [`FedmixError::InvalidRandomness`] / [`FedmixError::ClientIdOutOfRange`]
/// naming the file and field when a supplied value does not fit the run.
pub fn run_fedmd_with(
    fed: &Federation,
    p: &FedMdParams,
    theta0: &DVector<f64>,
    seed: u64,
    given: &Randomness,
    rec: &mut Recorder,
) -> Result<FedMdOutput> {
    precheck(fed, p)?;
    if theta0.len() != fed.d() {
        return Err(FedmixError::DimensionMismatch {
            what: "theta0 (d)".into(),
            expected: fed.d(),
            found: theta0.len(),
        });
    }
    let separation = match p.separation {
        Some(s) => s,
        None => crate::metrics::separation(
            fed.require_theta_star("the separation Δ of Phase 1 (or set `separation`)")?,
        ),
    };
    let plan = Plan::new(fed, p, seed, given)?;
    let mut models = DMatrix::from_fn(fed.d(), plan.anchors.len(), |r, _| theta0[r]);
    for t in 0..p.iterations {
        let mut stats = AnchorStats::default();
        let mut comm = Comm::default();
        // Anchors move independently (each reads only its own model): one task per anchor,
        // results taken in anchor order, so nothing depends on the thread count.
        let steps: Vec<Result<(Step, Comm)>> = plan
            .anchors
            .par_iter()
            .enumerate()
            .map(|(a, &client)| {
                let theta = models.column(a).clone_owned();
                let mut c = Comm::default();
                let step = anchor_step(
                    fed, p, &plan, t, a, client, &theta, separation, seed, given, &mut c,
                )?;
                Ok((step, c))
            })
            .collect();
        for (a, result) in steps.into_iter().enumerate() {
            let (step, c) = result?;
            comm = comm.merge(c);
            let theta = models.column(a).clone_owned();
            models.set_column(a, &(&theta + &step.direction * step.eta));
            stats.sigma_hat.push(step.sigma_hat);
            stats.step_sizes.push(step.eta);
        }
        check_finite_iterate(&models, "phase 1", t + 1)?;
        stats.errors = anchor_errors(fed, &plan.anchors, &models);
        let max_err = stats
            .errors
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        rec.rows.push(RoundRecord {
            round: rec.rows.len() + 1,
            phase: Phase::Phase1,
            distance: max_err,
            per_cluster: Vec::new(),
            misclustering: None,
            training_loss: None,
            anchors: Some(stats),
            anchor_clusters: None,
            empty_clusters: None,
            comm,
        });
    }
    let (theta_hat, components_found) = cluster_anchors(&models, &plan.anchors, separation, p.k)?;
    if let Some(last) = rec.rows.last_mut() {
        last.anchor_clusters = Some(components_found);
    }
    Ok(FedMdOutput {
        theta_hat,
        anchors: plan.anchors,
        anchor_models: models,
        components_found,
        excluded_clients: plan.excluded,
        separation,
    })
}

/// Parameter checks shared by [`run_fedmd_with`] and [`phase1_randomness`].
fn precheck(fed: &Federation, p: &FedMdParams) -> Result<()> {
    p.check()?;
    if p.k > fed.d() {
        return Err(FedmixError::invalid(
            "k",
            p.k,
            format!("must be ≤ d = {}", fed.d()),
        ));
    }
    Ok(())
}

/// Who takes part: anchors, and for the faithful variant the fresh client sets.
struct Plan {
    anchors: Vec<usize>,
    /// Practical: every client with n_i ≥ 2. Faithful: S_t for each t.
    subspace_sets: Vec<Vec<usize>>,
    excluded: usize,
}

/// Minimum `n_i` of an anchor, and what the requirement is called in errors.
fn anchor_need(p: &FedMdParams) -> (usize, &'static str) {
    match p.variant {
        Phase1Variant::Practical => (
            p.anchor_min_samples.max(2),
            "anchor candidates (n_i ≥ anchor_min_samples)",
        ),
        Phase1Variant::Faithful => (
            2 * p.ell * p.iterations,
            "anchor candidates (n_i ≥ 2ℓT fresh samples)",
        ),
    }
}

/// Whether the subspace step runs the federated orthogonal iteration (and so draws `Q₀`): the
/// faithful variant always, the practical one with `subspace = orthogonal-iteration`.
pub fn uses_orthogonal_iteration(p: &FedMdParams) -> bool {
    p.variant == Phase1Variant::Faithful || p.subspace == SubspaceMethod::OrthogonalIteration
}

/// Draw the anchors `H` (and, faithful, the fresh sets `S_t`) from the Sampling stream 0:
/// `n_H` anchors uniformly without replacement among the eligible clients, then (faithful)
/// `m·T` clients among those with `n_i ≥ 2` outside `H`, cut into `T` consecutive sets of `m`.
fn draw_plan(
    fed: &Federation,
    p: &FedMdParams,
    seed: u64,
) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let mut rng = stream(seed, Purpose::Sampling, 0);
    let m_total = fed.num_clients();
    let (need, purpose) = anchor_need(p);
    let eligible: Vec<usize> = (0..m_total).filter(|&i| fed.n(i) >= need).collect();
    if eligible.len() < p.anchors {
        return Err(FedmixError::NotEnoughClients {
            purpose: purpose.into(),
            found: eligible.len(),
            needed: p.anchors,
        });
    }
    let anchors = sample_without_replacement(&eligible, p.anchors, &mut rng);
    let sets = match p.variant {
        Phase1Variant::Practical => Vec::new(),
        Phase1Variant::Faithful => {
            let pool: Vec<usize> = (0..m_total)
                .filter(|&i| fed.n(i) >= 2 && !anchors.contains(&i))
                .collect();
            if pool.len() < p.m * p.iterations {
                return Err(FedmixError::NotEnoughClients {
                    purpose: "fresh clients S_t (m per iteration, n_i ≥ 2, not anchors)".into(),
                    found: pool.len(),
                    needed: p.m * p.iterations,
                });
            }
            let drawn = sample_without_replacement(&pool, p.m * p.iterations, &mut rng);
            drawn.chunks(p.m).map(<[usize]>::to_vec).collect()
        }
    };
    Ok((anchors, sets))
}

/// Check a supplied `anchors.json` against the run: variant, `n_H` ids in range, distinct and
/// eligible; faithful: `T` sets of `m` clients with `n_i ≥ 2`, no anchor, no client twice.
fn check_plan(
    fed: &Federation,
    p: &FedMdParams,
    file: &Supplied<AnchorsFile>,
) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let (src, f) = (&file.source, &file.value);
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: src.clone(),
        field,
        reason,
    };
    if f.variant != p.variant {
        return Err(bad(
            "variant".into(),
            format!(
                "{:?}, but the run's phase1_variant is {:?}",
                f.variant, p.variant
            )
            .to_lowercase(),
        ));
    }
    if f.anchors.len() != p.anchors {
        return Err(bad(
            "anchors".into(),
            format!(
                "{} ids, but the run uses n_H = {} anchors (set `anchors` = {} to use this file)",
                f.anchors.len(),
                p.anchors,
                f.anchors.len()
            ),
        ));
    }
    let m_total = fed.num_clients();
    let mut seen: Vec<Option<String>> = vec![None; m_total];
    let mut take = |field: String, id: i128, min_n: usize, role: &str| -> Result<usize> {
        let i = usize::try_from(id)
            .ok()
            .filter(|&i| i < m_total)
            .ok_or_else(|| FedmixError::ClientIdOutOfRange {
                path: src.clone(),
                field: field.clone(),
                id,
                clients: m_total,
            })?;
        if let Some(prev) = &seen[i] {
            return Err(bad(
                field,
                format!("client {i} appears twice (also at `{prev}`); every id must be distinct"),
            ));
        }
        if fed.n(i) < min_n {
            return Err(bad(
                field,
                format!(
                    "client {i} has n_i = {} samples, but {role} need n_i ≥ {min_n}",
                    fed.n(i)
                ),
            ));
        }
        seen[i] = Some(field);
        Ok(i)
    };
    let (need, _) = anchor_need(p);
    let anchors = f
        .anchors
        .iter()
        .enumerate()
        .map(|(a, &id)| take(format!("anchors[{a}]"), id, need, "anchors"))
        .collect::<Result<Vec<usize>>>()?;
    let sets = match (p.variant, &f.client_sets) {
        (Phase1Variant::Practical, None) => Vec::new(),
        (Phase1Variant::Practical, Some(_)) => {
            return Err(bad(
                "client_sets".into(),
                "the practical variant draws no client sets (every client with n_i ≥ 2 takes \
                 part); omit the field"
                    .into(),
            ))
        }
        (Phase1Variant::Faithful, None) => {
            return Err(bad(
                "client_sets".into(),
                format!(
                    "missing: the faithful variant needs T = {} sets of m = {} fresh clients",
                    p.iterations, p.m
                ),
            ))
        }
        (Phase1Variant::Faithful, Some(sets)) => {
            if sets.len() != p.iterations {
                return Err(bad(
                    "client_sets".into(),
                    format!(
                        "{} sets, but the run has T = phase1_iterations = {}",
                        sets.len(),
                        p.iterations
                    ),
                ));
            }
            let mut out = Vec::with_capacity(sets.len());
            for (t, set) in sets.iter().enumerate() {
                if set.len() != p.m {
                    return Err(bad(
                        format!("client_sets[{t}]"),
                        format!("{} clients, but the run uses m = {}", set.len(), p.m),
                    ));
                }
                out.push(
                    set.iter()
                        .enumerate()
                        .map(|(j, &id)| {
                            take(format!("client_sets[{t}][{j}]"), id, 2, "fresh clients")
                        })
                        .collect::<Result<Vec<usize>>>()?,
                );
            }
            out
        }
    };
    Ok((anchors, sets))
}

impl Plan {
    fn new(fed: &Federation, p: &FedMdParams, seed: u64, given: &Randomness) -> Result<Self> {
        let m_total = fed.num_clients();
        let excluded = (0..m_total).filter(|&i| fed.n(i) < 2).count();
        let (anchors, sets) = match &given.anchors {
            Some(file) => check_plan(fed, p, file)?,
            None => draw_plan(fed, p, seed)?,
        };
        let subspace_sets = match p.variant {
            Phase1Variant::Practical => vec![(0..m_total).filter(|&i| fed.n(i) >= 2).collect()],
            Phase1Variant::Faithful => sets,
        };
        if let Some(q0) = &given.q0 {
            check_q0(fed, p, anchors.len(), q0)?;
        }
        if let Some(v0) = &given.power_start {
            check_power_start(p, anchors.len(), v0)?;
        }
        Ok(Self {
            anchors,
            subspace_sets,
            excluded,
        })
    }
}

/// Check a supplied `q0.npy`: used at all, shape `T × n_H × d × k`, every `Q₀` orthonormal
/// (finiteness is checked when the file is read).
fn check_q0(fed: &Federation, p: &FedMdParams, h: usize, q0: &Supplied<Array>) -> Result<()> {
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: q0.source.clone(),
        field,
        reason,
    };
    if !uses_orthogonal_iteration(p) {
        return Err(bad(
            "q0".into(),
            "the practical Phase 1 with subspace = svd draws no Q₀ (set \
             subspace=orthogonal-iteration, or drop --q0)"
                .into(),
        ));
    }
    let (d, k) = (fed.d(), p.k);
    let want = [p.iterations, h, d, k];
    if q0.value.shape != want {
        return Err(bad(
            "q0".into(),
            format!(
                "shape {:?}, expected {want:?} (phase1_iterations × anchors × d × k)",
                q0.value.shape
            ),
        ));
    }
    for (idx, chunk) in q0.value.data.chunks_exact(d * k).enumerate() {
        let q = DMatrix::from_row_slice(d, k, chunk);
        let dev = (q.tr_mul(&q) - DMatrix::<f64>::identity(k, k)).amax();
        if dev > crate::prec::ORTHONORMAL_TOL {
            return Err(bad(
                format!("q0[{}][{}]", idx / h, idx % h),
                format!(
                    "columns are not orthonormal (max|QᵀQ − I| = {dev:.3e} > {:e})",
                    crate::prec::ORTHONORMAL_TOL
                ),
            ));
        }
    }
    Ok(())
}

/// Check a supplied `power_start.npy`: shape `T × n_H × k`, no zero vector.
fn check_power_start(p: &FedMdParams, h: usize, v0: &Supplied<Array>) -> Result<()> {
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: v0.source.clone(),
        field,
        reason,
    };
    let want = [p.iterations, h, p.k];
    if v0.value.shape != want {
        return Err(bad(
            "power_start".into(),
            format!(
                "shape {:?}, expected {want:?} (phase1_iterations × anchors × k)",
                v0.value.shape
            ),
        ));
    }
    if let Some(idx) = v0
        .value
        .data
        .chunks_exact(p.k)
        .position(|c| c.iter().all(|&x| x == 0.0))
    {
        return Err(bad(
            format!("power_start[{}][{}]", idx / h, idx % h),
            "zero vector (a power-iteration start must be non-zero)".into(),
        ));
    }
    Ok(())
}

/// Stream index of anchor `a`'s draws at iteration `t` (`h` anchors): `Q₀` uses
/// `stream(seed, Subspace, 2(t·h + a))`, the power-iteration start the next index.
fn subspace_index(t: usize, a: usize, h: usize) -> u64 {
    2 * (t * h + a) as u64
}

/// The start `Q₀` (`d × k`) of anchor `a`'s orthogonal iteration at iteration `t`: the
/// supplied `q0[t][a]`, or a uniformly random frame from the Subspace stream.
fn q0_at(
    d: usize,
    p: &FedMdParams,
    t: usize,
    a: usize,
    h: usize,
    seed: u64,
    given: &Randomness,
) -> Result<DMatrix<f64>> {
    match &given.q0 {
        Some(q) => {
            let n = d * p.k;
            let start = (t * h + a) * n;
            Ok(DMatrix::from_row_slice(
                d,
                p.k,
                &q.value.data[start..start + n],
            ))
        }
        None => random_orthonormal(
            d,
            p.k,
            &mut stream(seed, Purpose::Subspace, subspace_index(t, a, h)),
        ),
    }
}

/// The start `v₀` (`k`) of anchor `a`'s power iteration at iteration `t`: the supplied
/// `power_start[t][a]`, or `k` standard normals from the Subspace stream.
fn power_start_at(
    p: &FedMdParams,
    t: usize,
    a: usize,
    h: usize,
    seed: u64,
    given: &Randomness,
) -> DVector<f64> {
    match &given.power_start {
        Some(v) => {
            let start = (t * h + a) * p.k;
            DVector::from_column_slice(&v.value.data[start..start + p.k])
        }
        None => {
            let mut vrng = stream(seed, Purpose::Subspace, subspace_index(t, a, h) + 1);
            DVector::from_fn(p.k, |_, _| vrng.sample::<f64, _>(StandardNormal))
        }
    }
}

/// Every random draw Phase 1 would make (anchors and client sets, `Q₀` when the orthogonal
/// iteration runs, power-iteration starts), taking what `given` supplies as is: what
/// `--export-randomness` writes. [`run_fedmd_with`] fed this result reproduces
/// [`run_fedmd_with`] fed `given` bit for bit.
///
/// # Errors
/// As [`run_fedmd_with`]'s parameter and plan checks.
pub fn phase1_randomness(
    fed: &Federation,
    p: &FedMdParams,
    seed: u64,
    given: &Randomness,
) -> Result<Randomness> {
    precheck(fed, p)?;
    let plan = Plan::new(fed, p, seed, given)?;
    let h = plan.anchors.len();
    let (d, k, tt) = (fed.d(), p.k, p.iterations);
    let drawn = PathBuf::from(format!("<drawn from seed {seed}>"));
    let anchors = AnchorsFile {
        variant: p.variant,
        anchors: plan.anchors.iter().map(|&i| i as i128).collect(),
        client_sets: (p.variant == Phase1Variant::Faithful).then(|| {
            plan.subspace_sets
                .iter()
                .map(|s| s.iter().map(|&i| i as i128).collect())
                .collect()
        }),
    };
    let mut q0 = None;
    if uses_orthogonal_iteration(p) {
        let mut data = Vec::with_capacity(tt * h * d * k);
        for t in 0..tt {
            for a in 0..h {
                let q = q0_at(d, p, t, a, h, seed, given)?;
                data.extend(q.transpose().iter().copied());
            }
        }
        q0 = Some(Supplied {
            source: drawn.clone(),
            value: Array {
                shape: vec![tt, h, d, k],
                data,
            },
        });
    }
    let mut data = Vec::with_capacity(tt * h * k);
    for t in 0..tt {
        for a in 0..h {
            data.extend(power_start_at(p, t, a, h, seed, given).iter().copied());
        }
    }
    Ok(Randomness {
        anchors: Some(given.anchors.clone().unwrap_or_else(|| Supplied {
            source: drawn.clone(),
            value: anchors,
        })),
        q0: given.q0.clone().or(q0),
        power_start: Some(given.power_start.clone().unwrap_or_else(|| Supplied {
            source: drawn.clone(),
            value: Array {
                shape: vec![tt, h, k],
                data,
            },
        })),
        ..Randomness::default()
    })
}

struct Step {
    direction: DVector<f64>,
    eta: f64,
    sigma_hat: f64,
}

/// One moment-descent step of anchor `a` (client `client`) at iteration `t`.
#[allow(clippy::too_many_arguments)]
fn anchor_step(
    fed: &Federation,
    p: &FedMdParams,
    plan: &Plan,
    t: usize,
    a: usize,
    client: usize,
    theta: &DVector<f64>,
    separation: f64,
    seed: u64,
    given: &Randomness,
    comm: &mut Comm,
) -> Result<Step> {
    let d = fed.d();
    let h = plan.anchors.len();
    // Phase 1 step 9: the subspace.
    let (set, pairing) = match p.variant {
        Phase1Variant::Practical => (&plan.subspace_sets[0], p.pairing),
        Phase1Variant::Faithful => (&plan.subspace_sets[t], Pairing::FirstTwo),
    };
    // The PS broadcasts this anchor's model to the subspace clients.
    *comm = comm.merge(Comm::broadcast_and_upload(set.len() as u64, d as u64, 0));
    let u_hat = if p.variant == Phase1Variant::Practical && p.subspace == SubspaceMethod::Svd {
        // Clients upload their d × d cross moments; the PS sums them and takes an SVD.
        *comm = comm.merge(Comm {
            floats_up: (set.len() * d * d) as u64,
            messages: set.len() as u64,
            ..Comm::default()
        });
        subspace_basis(fed, set, theta, pairing, p.k)?
    } else {
        let moments = client_moments(fed, set, theta, p.variant, pairing);
        let q0 = q0_at(d, p, t, a, h, seed, given)?;
        federated_orthogonal_iteration(&moments, &q0, p.t1, comm)?
    };
    // Steps 10–11: PS sends Û to the anchor; the anchor forms A (k × k, eq. 2).
    let (a_mat, g_bar) = anchor_moment(fed, p, t, client, theta, &u_hat);
    // Step 11: power iteration on A Aᵀ.
    let v0 = power_start_at(p, t, a, h, seed, given);
    let (mut beta_hat, lambda) = power_iteration(&(&a_mat * a_mat.transpose()), &v0, p.t2);
    if beta_hat.dot(&u_hat.tr_mul(&g_bar)) < 0.0 {
        beta_hat.neg_mut();
    }
    // σ̂² := σ₁(A) = √λ₁(AAᵀ)  ⇒  σ̂ = λ^{1/4}.
    let sigma_hat = lambda.max(0.0).sqrt().sqrt();
    // Anchor receives Û (d·k) and uploads its new model (d).
    *comm = comm.merge(Comm::broadcast_and_upload(1, (d * p.k) as u64, d as u64));
    // Steps 12–15: move unless the stopping rule holds.
    let eta = if sigma_hat > p.epsilon * separation {
        p.alpha * sigma_hat / (2.0 * p.beta * p.beta)
    } else {
        0.0
    };
    Ok(Step {
        direction: u_hat * beta_hat,
        eta,
        sigma_hat,
    })
}

/// The message-level client matrices of the subspace step: client `i` contributes its pairing
/// statistic `M_i = A_iB_iᵀ` at `theta` with weight `n_i / Σ n` (faithful: one pair of fresh
/// samples per client, weight `1/m`).
pub fn client_moments(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    variant: Phase1Variant,
    pairing: Pairing,
) -> Vec<ClientMoment> {
    let faithful = variant == Phase1Variant::Faithful;
    let count = |i: usize| if faithful { 1 } else { fed.n(i) };
    let total: usize = set.iter().map(|&i| count(i)).sum();
    set.iter()
        .map(|&i| {
            let range = if faithful { 0..2 } else { 0..fed.n(i) };
            let (a, b) = pair_moments(&residual_moments(fed, i, theta, range), pairing);
            ClientMoment {
                a,
                b,
                weight: count(i) as f64 / total as f64,
            }
        })
        .collect()
}

/// `Y = Σ_i w_i U_i` (`w_i = n_i/Σn`) of the practical variant, formed centrally. For the
/// all-pairs pairing this is `S̃S̃ᵀ − ẼẼᵀ` with `Ẽ` the residual moments scaled by
/// `√(w_i/(n_i(n_i−1)))` and `S̃_i` their per-client sums: one pass over the data and two
/// products, no per-client allocation. Equal to `assemble(client_moments(..))` up to rounding.
pub fn subspace_matrix(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    pairing: Pairing,
) -> DMatrix<f64> {
    let d = fed.d();
    if pairing != Pairing::AllPairs {
        return assemble(
            &client_moments(fed, set, theta, Phase1Variant::Practical, pairing),
            d,
        );
    }
    let total: usize = set.iter().map(|&i| fed.n(i)).sum();
    let mut e = DMatrix::zeros(d, total);
    let mut s = DMatrix::zeros(d, set.len());
    let mut off = 0;
    for (c, &i) in set.iter().enumerate() {
        let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
        let nf = n as f64;
        let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
        let r = (y - x.tr_mul(theta)) * scale;
        let mut block = e.columns_mut(off, n);
        block.copy_from(&x);
        for (mut col, ri) in block.column_iter_mut().zip(r.iter()) {
            col *= *ri;
        }
        s.set_column(c, &(x * r));
        off += n;
    }
    &s * s.transpose() - &e * e.transpose()
}

/// Largest `d` at which the practical variant's subspace step forms `Y` (`d × d`) and takes its
/// SVD ([`top_k_left_singular`]); above it, [`subspace_basis`] applies `Y` implicitly.
///
/// Decision, measured (`examples/perf_report.rs`, `docs/performance.md`): forming `Y` costs `2d²N`
/// flops and the SVD `O(d³)` — 1.2 s + 1.5 s per anchor and iteration at `d = 1000`, `N = 10⁴` —
/// while one implicit application to a block of `b` vectors costs `4dNb`. At `d ≤ 256` both are
/// milliseconds, and the dense path keeps the SXY22 settings (`d = 100`) and the golden vectors bit
/// for bit as before.
pub const DENSE_SUBSPACE_MAX_D: usize = 256;

/// The practical variant's all-pairs `Y = S̃S̃ᵀ − ẼẼᵀ` (see [`subspace_matrix`]) as an operator
/// that is never formed: `YV = S̃(S̃ᵀV) − X_S (r̃² ⊙ (X_SᵀV))`, with `X_S` the subspace clients'
/// feature columns (read in place) and `r̃_j` sample `j`'s residual times its client's
/// `√(w_i/(n_i(n_i−1)))`, since `Ẽ = X_S diag(r̃)`. One application to a `d × b` block costs
/// two passes over the clients' data and `4dNb` flops.
#[derive(Clone, Debug)]
pub struct MomentOperator<'a> {
    fed: &'a Federation,
    /// Maximal runs of consecutive subspace clients: (first feature column, columns, offset
    /// into `r2`).
    runs: Vec<(usize, usize, usize)>,
    /// `r̃_j²` in set order.
    r2: Vec<f64>,
    /// `S̃` (`d × |set|`), column `c` = `X_i r̃_i` of the set's `c`-th client.
    s: DMatrix<f64>,
}

impl<'a> MomentOperator<'a> {
    /// The operator at `theta` for the clients `set` (each with `n_i ≥ 2`).
    pub fn new(fed: &'a Federation, set: &[usize], theta: &DVector<f64>) -> Self {
        let total: usize = set.iter().map(|&i| fed.n(i)).sum();
        let mut r2 = Vec::with_capacity(total);
        let mut s = DMatrix::zeros(fed.d(), set.len());
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (c, &i) in set.iter().enumerate() {
            let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
            let nf = n as f64;
            let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
            let r = (y - x.tr_mul(theta)) * scale;
            s.set_column(c, &(x * &r));
            let start = fed.offsets()[i];
            match runs.last_mut() {
                Some(run) if run.0 + run.1 == start => run.1 += n,
                _ => runs.push((start, n, r2.len())),
            }
            r2.extend(r.iter().map(|v| v * v));
        }
        Self { fed, runs, r2, s }
    }

    /// `Y v` for a `d × b` block `v`.
    pub fn apply(&self, v: &DMatrix<f64>) -> DMatrix<f64> {
        // `Xᵀv` is formed as `(vᵀX)ᵀ`: nalgebra's `tr_mul` is a loop of dot products, while
        // `vᵀ X` and `X (·)ᵀ` are blocked GEMMs that read `X` once per block.
        let vt = v.transpose();
        let mut w = &self.s * (&vt * &self.s).transpose();
        for &(start, len, off) in &self.runs {
            let x = self.fed.features().columns(start, len);
            let mut pt = &vt * x; // b × len, column j = (vᵀ x_j)
            for (mut col, r) in pt.column_iter_mut().zip(&self.r2[off..off + len]) {
                col *= *r;
            }
            w.gemm(-1.0, &x, &pt.transpose(), 1.0);
        }
        w
    }
}

/// The top-`k` left singular subspace `Û` (`d × k`) of the practical variant's `Y` at `theta`
/// (SXY22 App. C's "direct SVD"), sign-fixed as [`top_k_left_singular`]. For `d ≤`
/// [`DENSE_SUBSPACE_MAX_D`] or a pairing other than all-pairs: `Y` is formed
/// ([`subspace_matrix`]) and decomposed, exactly as before. Otherwise `Y` (symmetric) is
/// applied implicitly ([`MomentOperator`]) inside the block Krylov eigensolver
/// [`top_k_symmetric`] (top-k by `|λ|` = top-k singular), run to
/// [`crate::prec::KRYLOV_RESIDUAL_RTOL`]; if it has not converged once the implicit cost
/// reaches that of forming `Y` (a search space of `d/2` vectors), `Y` is formed and the same
/// solver runs on it up to the full space, where it is exact.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] (`k` larger than `d`), [`FedmixError::Divergence`] (SVD),
/// [`FedmixError::NotConverged`] (not expected: the dense fallback ends exact).
pub fn subspace_basis(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    pairing: Pairing,
    k: usize,
) -> Result<DMatrix<f64>> {
    let d = fed.d();
    if pairing != Pairing::AllPairs || d <= DENSE_SUBSPACE_MAX_D {
        return top_k_left_singular(&subspace_matrix(fed, set, theta, pairing), k);
    }
    let tol = crate::prec::KRYLOV_RESIDUAL_RTOL;
    let block = (k + 8).max(2 * k);
    let op = MomentOperator::new(fed, set, theta);
    match top_k_symmetric(|v| op.apply(v), d, k, block, d / 2, tol) {
        Ok(r) => Ok(r.vectors),
        Err(FedmixError::NotConverged { .. }) => {
            let y = subspace_matrix(fed, set, theta, pairing);
            Ok(top_k_symmetric(|v| &y * v, d, k, block, d, tol)?.vectors)
        }
        Err(e) => Err(e),
    }
}

/// Eq. 2: the anchor's projected cross moment `A` (`k × k`) and its mean residual moment `ḡ`
/// over the same samples.
fn anchor_moment(
    fed: &Federation,
    p: &FedMdParams,
    t: usize,
    client: usize,
    theta: &DVector<f64>,
    u_hat: &DMatrix<f64>,
) -> (DMatrix<f64>, DVector<f64>) {
    match p.variant {
        Phase1Variant::Practical => {
            let e = residual_moments(fed, client, theta, 0..fed.n(client));
            let (a, b) = pair_moments(&e, p.pairing);
            (
                (u_hat.tr_mul(&a)) * (u_hat.tr_mul(&b)).transpose(),
                e.column_mean(),
            )
        }
        Phase1Variant::Faithful => {
            // Fresh samples 2ℓt .. 2ℓ(t+1): the first ℓ are x_ij, the next ℓ are x̃_ij.
            let start = 2 * p.ell * t;
            let e1 = residual_moments(fed, client, theta, start..start + p.ell);
            let e2 = residual_moments(fed, client, theta, start + p.ell..start + 2 * p.ell);
            let a = (u_hat.tr_mul(&e1)) * (u_hat.tr_mul(&e2)).transpose() / p.ell as f64;
            (a, (e1.column_sum() + e2.column_sum()) / (2 * p.ell) as f64)
        }
    }
}

fn anchor_errors(fed: &Federation, anchors: &[usize], models: &DMatrix<f64>) -> Vec<f64> {
    match (fed.theta_star(), fed.labels()) {
        (Some(ts), Some(labels)) => anchors
            .iter()
            .enumerate()
            .map(|(a, &i)| (models.column(a) - ts.column(labels[i])).norm())
            .collect(),
        _ => Vec::new(),
    }
}

/// Phase 1 step 16: link anchors with `‖θ_i − θ_i'‖ < Δ/2`; components are clusters. Keeps
/// the k largest (ties: lowest anchor client index; the decision is in the module doc) and
/// returns their means and the number of components found.
///
/// # Errors
/// [`FedmixError::TooFewClusters`] when fewer than k components exist.
pub fn cluster_anchors(
    models: &DMatrix<f64>,
    anchors: &[usize],
    separation: f64,
    k: usize,
) -> Result<(DMatrix<f64>, usize)> {
    let h = models.ncols();
    let mut parent: Vec<usize> = (0..h).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        p[x] = r;
        r
    }
    for a in 0..h {
        for b in a + 1..h {
            if (models.column(a) - models.column(b)).norm() < separation / 2.0 {
                let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut comps: Vec<Vec<usize>> = Vec::new();
    let mut root_of: Vec<Option<usize>> = vec![None; h];
    for a in 0..h {
        let r = find(&mut parent, a);
        match root_of[r] {
            Some(c) => comps[c].push(a),
            None => {
                root_of[r] = Some(comps.len());
                comps.push(vec![a]);
            }
        }
    }
    let found = comps.len();
    if found < k {
        return Err(FedmixError::TooFewClusters { found, k });
    }
    let min_client = |c: &Vec<usize>| c.iter().map(|&a| anchors[a]).min().unwrap_or(usize::MAX);
    comps.sort_by(|x, y| {
        y.len()
            .cmp(&x.len())
            .then(min_client(x).cmp(&min_client(y)))
    });
    let mut theta = DMatrix::zeros(models.nrows(), k);
    for (j, c) in comps.iter().take(k).enumerate() {
        let mean = c.iter().fold(DVector::zeros(models.nrows()), |acc, &a| {
            acc + models.column(a)
        }) / c.len() as f64;
        theta.set_column(j, &mean);
    }
    Ok((theta, found))
}

/// Constants for [`theorem1_choices`]; the theory fixes only their orders.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Theorem1Constants {
    /// `m = ⌈c_m d log N / p_min²⌉`.
    pub c_m: f64,
    /// `ℓ = ⌈c_ell k log N⌉`.
    pub c_ell: f64,
    /// `T₁ = ⌈c_t1 k log(Nd)⌉` (rounded up to even).
    pub c_t1: f64,
    /// `T₂ = ⌈c_t2 log(Nd)⌉`.
    pub c_t2: f64,
    /// `T = Θ(1)` iterations.
    pub iterations: usize,
    /// `ε < 1/4`.
    pub epsilon: f64,
}

/// Theorem 1's parameter choices for `fed`: `n_H = ⌈log N / p_min⌉`, `m ≥ p_min⁻² Ω̃(d)`,
/// `ℓ = Ω̃(k)`, `T₁ = Ω(k log(Nd))`, `T₂ = Ω(log(Nd))` with the stated constants, `p_min` the
/// empirical fraction of clients of the smallest cluster.
///
/// # Errors
/// [`FedmixError::Missing`] without labels; [`FedmixError::NotEnoughClients`] saying what is
/// missing when the federation is too small for these choices.
pub fn theorem1_choices(fed: &Federation, k: usize, c: &Theorem1Constants) -> Result<FedMdParams> {
    let labels = fed.require_labels("p_min in Theorem 1's choices")?;
    let p_min = crate::metrics::p_min(labels, k);
    if p_min <= 0.0 {
        return Err(FedmixError::invalid(
            "k",
            k,
            "some cluster has no clients (p_min = 0)",
        ));
    }
    let n = fed.total_samples() as f64;
    let d = fed.d() as f64;
    let log_n = n.ln().max(1.0);
    let log_nd = (n * d).ln().max(1.0);
    let anchors = (log_n / p_min).ceil() as usize;
    let m = (c.c_m * d * log_n / (p_min * p_min)).ceil() as usize;
    let ell = (c.c_ell * k as f64 * log_n).ceil() as usize;
    let t1 = ((c.c_t1 * k as f64 * log_nd).ceil() as usize)
        .next_multiple_of(2)
        .max(2);
    let t2 = (c.c_t2 * log_nd).ceil().max(1.0) as usize;
    let p = FedMdParams {
        variant: Phase1Variant::Faithful,
        k,
        anchors: anchors.max(k),
        iterations: c.iterations,
        t1,
        t2,
        m,
        ell,
        epsilon: c.epsilon,
        separation: None,
        alpha: 1.0,
        beta: 1.0,
        pairing: Pairing::FirstTwo,
        subspace: SubspaceMethod::OrthogonalIteration,
        anchor_min_samples: 2 * ell * c.iterations,
    };
    let big = (0..fed.num_clients())
        .filter(|&i| fed.n(i) >= 2 * ell * c.iterations)
        .count();
    if big < p.anchors {
        return Err(FedmixError::NotEnoughClients {
            purpose: format!(
                "Theorem 1 anchors with n_i ≥ 2ℓT = {}",
                2 * ell * c.iterations
            ),
            found: big,
            needed: p.anchors,
        });
    }
    let fresh = (0..fed.num_clients())
        .filter(|&i| fed.n(i) >= 2)
        .count()
        .saturating_sub(p.anchors);
    if fresh < m * c.iterations {
        return Err(FedmixError::NotEnoughClients {
            purpose: format!(
                "Theorem 1 fresh clients (m = {m} per iteration × T = {})",
                c.iterations
            ),
            found: fresh,
            needed: m * c.iterations,
        });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::projector_distance;
    use crate::synthetic::generate_named;

    fn fed(d: usize) -> Federation {
        let sets: Vec<(String, String)> = [("d", d.to_string()), ("clients", "40".into())]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b))
            .collect();
        generate_named("sxy-balanced", 2, &sets).unwrap().train
    }

    /// The implicit operator applies the same `Y` as the formed matrix.
    #[test]
    fn moment_operator_applies_the_formed_matrix() {
        let f = fed(30);
        let set: Vec<usize> = (0..40).filter(|&i| i != 7).collect(); // two runs
        let theta = DVector::from_fn(30, |r, _| 0.05 * r as f64);
        let y = subspace_matrix(&f, &set, &theta, Pairing::AllPairs);
        let v = DMatrix::from_fn(30, 5, |r, c| ((r * 5 + c) as f64).sin());
        let got = MomentOperator::new(&f, &set, &theta).apply(&v);
        let want = &y * &v;
        assert!(
            (&got - &want).amax() <= 1e-12 * want.amax(),
            "{}",
            (got - want).amax()
        );
    }

    /// Above [`DENSE_SUBSPACE_MAX_D`] the implicit Krylov path spans the dense SVD's subspace.
    #[test]
    fn implicit_subspace_matches_the_dense_svd() {
        let d = DENSE_SUBSPACE_MAX_D + 44;
        let f = fed(d);
        let set: Vec<usize> = (0..40).collect();
        let ts = f.theta_star().unwrap();
        for theta in [DVector::zeros(d), ts.column(0).clone_owned()] {
            let dense =
                top_k_left_singular(&subspace_matrix(&f, &set, &theta, Pairing::AllPairs), 3)
                    .unwrap();
            let fast = subspace_basis(&f, &set, &theta, Pairing::AllPairs, 3).unwrap();
            let dist = projector_distance(&dense, &fast);
            assert!(dist <= 1e-10, "{dist:e}");
        }
    }
}
