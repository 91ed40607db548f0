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
//! formats in [`crate::engine::randomness`]); [`phase1_randomness`] lists what a run draws. No sample
//! is drawn at random: the faithful variant's fresh samples are consecutive (`0, 1` for a
//! subspace client, `2ℓt..2ℓ(t+1)` for an anchor).

mod anchors;
mod moment_operator;
mod moments;
mod theorem1;

pub use anchors::{phase1_randomness, sample_without_replacement, uses_orthogonal_iteration};
use anchors::{power_start_at, precheck, q0_at, Plan};
pub use moment_operator::*;
pub use moments::*;
pub use theorem1::*;

use super::orthogonal_iteration::federated_orthogonal_iteration;
use crate::engine::executor::check_finite_iterate;
use crate::engine::randomness::Randomness;
use crate::engine::recorder::{AnchorStats, Comm, Phase, Recorder, RoundRecord};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::linalg::{power_iteration, top_k_left_singular};
use crate::params::{FedMdParams, Pairing, Phase1Variant, SubspaceMethod};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

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
        let shared = shared_subspace_step(fed, p, &plan, &models)?;
        // Anchors move independently (each reads only its own model): one task per anchor,
        // results taken in anchor order, so nothing depends on the thread count.
        let steps: Vec<Result<(Step, Comm)>> = plan
            .anchors
            .par_iter()
            .enumerate()
            .map(|(a, &client)| {
                let theta = models.column(a).clone_owned();
                let mut c = Comm::default();
                let shared = shared.as_ref().map(|s| &s[a]);
                let step = anchor_step(
                    fed, p, &plan, t, a, client, &theta, shared, separation, seed, given, &mut c,
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
        let round = rec.rows.len() + 1;
        rec.push_row(RoundRecord {
            round,
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

/// What Phase 1 step 9 computes for every anchor of an iteration at once, before the anchors'
/// own steps.
enum Shared {
    /// The practical variant's subspace matrix `Y` at the anchor's model (`d ≤`
    /// [`DENSE_SUBSPACE_MAX_D`]), to be decomposed by [`top_k_left_singular`].
    Formed(DMatrix<f64>),
    /// The anchor's subspace `Û` itself (above [`DENSE_SUBSPACE_MAX_D`]).
    Basis(DMatrix<f64>),
}

/// The practical variant's step 9 (all-pairs pairing, direct SVD) for every anchor at its
/// current model, or `None` where Phase 1 goes another way (orthogonal iteration, the faithful
/// variant). Each anchor gets the same bits as from its own [`subspace_matrix`] /
/// [`subspace_basis`]; what is shared is the reading of the data:
/// - `d ≤` [`DENSE_SUBSPACE_MAX_D`]: the matrices `Y`, the anchors split into one group per
///   thread and each group's matrices formed in one pass over the data ([`subspace_matrices`]),
///   so the data are read once per thread and iteration rather than once per anchor;
/// - above: the anchors' implicit eigenproblems advanced together ([`subspace_bases`]), each
///   pass over the data serving every anchor's Krylov block, the products split between the
///   threads.
fn shared_subspace_step(
    fed: &Federation,
    p: &FedMdParams,
    plan: &Plan,
    models: &DMatrix<f64>,
) -> Result<Option<Vec<Shared>>> {
    let applies = p.variant == Phase1Variant::Practical
        && p.subspace == SubspaceMethod::Svd
        && p.pairing == Pairing::AllPairs;
    if !applies {
        return Ok(None);
    }
    let thetas: Vec<DVector<f64>> = models.column_iter().map(|c| c.clone_owned()).collect();
    let set = &plan.subspace_sets[0];
    if fed.d() > DENSE_SUBSPACE_MAX_D {
        let bases = subspace_bases(fed, set, &thetas, p.pairing, p.k)?;
        return Ok(Some(bases.into_iter().map(Shared::Basis).collect()));
    }
    let group = thetas.len().div_ceil(rayon::current_num_threads()).max(1);
    Ok(Some(
        thetas
            .par_chunks(group)
            .flat_map_iter(|g| subspace_matrices(fed, set, g))
            .map(Shared::Formed)
            .collect(),
    ))
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
    shared: Option<&Shared>,
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
        match shared {
            // Computed for all anchors at once: the same bits as `subspace_basis` gives.
            Some(Shared::Formed(y)) => top_k_left_singular(y, p.k)?,
            Some(Shared::Basis(u)) => u.clone(),
            None => subspace_basis(fed, set, theta, pairing, p.k)?,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::projector_distance;
    use crate::linalg::top_k_left_singular;

    /// The per-anchor errors of the Phase 1 summary: `‖θ̂_a − θ*_{z_a}‖` for each anchor `a`
    /// (its column of the models, the true model of its cluster), empty without `θ*`.
    #[test]
    fn anchor_errors_are_distances_to_each_anchors_own_true_model() {
        let f = fed(4);
        let (ts, labels) = (
            f.theta_star().unwrap().clone(),
            f.labels().unwrap().to_vec(),
        );
        let anchors = [3usize, 17, 30];
        let mut models = DMatrix::from_fn(4, 3, |r, c| 0.1 * (r + 2 * c) as f64);
        let errs = anchor_errors(&f, &anchors, &models);
        assert_eq!(errs.len(), 3);
        for (a, &i) in anchors.iter().enumerate() {
            let want = (models.column(a) - ts.column(labels[i])).norm();
            assert_eq!(errs[a].to_bits(), want.to_bits());
        }
        // An anchor exactly at its true model has error 0.
        models.set_column(1, &ts.column(labels[17]));
        assert_eq!(
            anchor_errors(&f, &anchors, &models)[1].to_bits(),
            0f64.to_bits()
        );
    }

    fn fed(d: usize) -> Federation {
        let d = d.to_string();
        crate::synthetic::train_federation("sxy-balanced", 2, &[("d", &d), ("clients", "40")])
    }

    /// The default Phase 1 parameters for `k = 2` on `f`.
    fn default_phase1(f: &Federation) -> FedMdParams {
        crate::params::Phase1Config::default().resolve(2, f)
    }

    /// A supplied `power_start.npy` (the starts of SXY22 Algorithm 2's power iterations, one per
    /// iteration, anchor and coordinate of the k-dimensional subspace) must have shape
    /// `T × n_H × k` and no zero vector: the right shape passes; a wrong shape and a zero start
    /// are typed errors naming the file and the offending entry.
    #[test]
    fn a_supplied_power_start_is_checked() {
        use crate::engine::randomness::{Array, Supplied};
        let f = fed(4);
        let p = default_phase1(&f);
        let (t, h, k) = (p.iterations, 3, p.k);
        assert!(t >= 2 && k >= 2, "{t} {k}");
        let supplied = |shape: Vec<usize>, data: Vec<f64>| Supplied {
            source: "v0.npy".into(),
            value: Array { shape, data },
        };
        let ok = supplied(vec![t, h, k], vec![1.0; t * h * k]);
        assert!(anchors::check_power_start(&p, h, &ok).is_ok());
        let field_of = |r: Result<()>| match r {
            Err(FedmixError::InvalidRandomness { path, field, .. }) => {
                assert_eq!(path, std::path::PathBuf::from("v0.npy"));
                field
            }
            other => panic!("{other:?}"),
        };
        let wrong = supplied(vec![t, h + 1, k], vec![1.0; t * (h + 1) * k]);
        assert_eq!(
            field_of(anchors::check_power_start(&p, h, &wrong)),
            "power_start"
        );
        // Iteration 1, anchor 2 starts at zero.
        let mut data = vec![1.0; t * h * k];
        let at = (h + 2) * k;
        data[at..at + k].fill(0.0);
        assert_eq!(
            field_of(anchors::check_power_start(
                &p,
                h,
                &supplied(vec![t, h, k], data)
            )),
            "power_start[1][2]"
        );
    }

    /// Every (iteration, anchor) of SXY22 Algorithm 2 draws its own orthogonal-iteration start
    /// `Q₀` and its own power-iteration start from seeded streams: no two of `T × n_H` draws
    /// coincide (a shared stream would give every anchor the same start, which no result would
    /// show at once), the same seed replays them bit for bit, and a supplied file is read at
    /// `[t][a]`.
    #[test]
    fn each_iteration_and_anchor_draws_its_own_starts() {
        use crate::engine::randomness::{Array, Supplied};
        let f = fed(6);
        let p = default_phase1(&f);
        let (h, k, none) = (3, p.k, Randomness::default());
        let mut q0s: Vec<Vec<u64>> = Vec::new();
        let mut v0s: Vec<Vec<u64>> = Vec::new();
        for t in 0..3 {
            for a in 0..h {
                let q = anchors::q0_at(6, &p, t, a, h, 7, &none).unwrap();
                let v = anchors::power_start_at(&p, t, a, h, 7, &none);
                let again = anchors::q0_at(6, &p, t, a, h, 7, &none).unwrap();
                assert_eq!(q, again, "replay at t = {t}, a = {a}");
                q0s.push(q.iter().map(|x| x.to_bits()).collect());
                v0s.push(v.iter().map(|x| x.to_bits()).collect());
            }
        }
        for (name, draws) in [("Q0", &q0s), ("power start", &v0s)] {
            for i in 0..draws.len() {
                for j in 0..i {
                    assert_ne!(draws[i], draws[j], "{name}: draws {j} and {i} coincide");
                }
            }
        }
        let data: Vec<f64> = (0..3 * h * k).map(|i| i as f64 + 1.0).collect();
        let given = Randomness {
            power_start: Some(Supplied {
                source: "v0.npy".into(),
                value: Array {
                    shape: vec![3, h, k],
                    data: data.clone(),
                },
            }),
            ..Randomness::default()
        };
        let at = (h + 2) * k;
        assert_eq!(
            anchors::power_start_at(&p, 1, 2, h, 7, &given).as_slice(),
            &data[at..at + k]
        );
    }

    /// The anchors are drawn among the eligible clients (`n_i ≥ anchor_min_samples`): exactly
    /// as many eligible clients as anchors makes every eligible client an anchor; one anchor
    /// more than that is the typed error naming both counts.
    #[test]
    fn anchors_at_the_eligibility_boundary() {
        // 40 clients, every fourth with 8 samples and the rest with 3; anchors need 5.
        let sizes: Vec<usize> = (0..40).map(|i| if i % 4 == 0 { 8 } else { 3 }).collect();
        let n: usize = sizes.iter().sum();
        let small = Federation::new(crate::federation::FederationParts {
            features: DMatrix::from_fn(4, n, |r, c| (r + c % 7) as f64),
            responses: DVector::from_element(n, 1.0),
            sizes,
            ..crate::federation::FederationParts::default()
        })
        .unwrap();
        let eligible: Vec<usize> = (0..40).step_by(4).collect();
        let mut p = default_phase1(&small);
        p.variant = Phase1Variant::Practical;
        p.anchor_min_samples = 5;
        p.anchors = eligible.len();
        let (mut anchors, sets) = anchors::draw_plan(&small, &p, 1).unwrap();
        anchors.sort_unstable();
        assert_eq!(anchors, eligible);
        assert!(sets.is_empty());
        p.anchors = eligible.len() + 1;
        match anchors::draw_plan(&small, &p, 1) {
            Err(FedmixError::NotEnoughClients { found, needed, .. }) => {
                assert_eq!((found, needed), (eligible.len(), eligible.len() + 1));
            }
            other => panic!("{other:?}"),
        }
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
            crate::prec::amax_nan(&(&got - &want)) <= 1e-12 * crate::prec::amax_nan(&want),
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

    /// Several operators applied in one pass give each operator's own product bit for bit:
    /// two runs of clients (client 7 left out), blocks of the Krylov width and of ≤ 5 columns
    /// (nalgebra's small-matrix path, applied alone), at a `d` the threads split and one they
    /// do not.
    #[test]
    fn one_pass_applies_every_operator_bit_for_bit() {
        let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for d in [30, DENSE_SUBSPACE_MAX_D + 44] {
            let f = fed(d);
            let set: Vec<usize> = (0..40).filter(|&i| i != 7).collect();
            let thetas: Vec<DVector<f64>> = (0..4)
                .map(|a| DVector::from_fn(d, |r, _| (0.05 * (r + a) as f64).sin()))
                .collect();
            let ops: Vec<MomentOperator<'_>> = thetas
                .iter()
                .map(|t| MomentOperator::new(&f, &set, t))
                .collect();
            let blocks: Vec<DMatrix<f64>> = [10, 5, 12, 10]
                .iter()
                .enumerate()
                .map(|(a, &b)| DMatrix::from_fn(d, b, |r, c| ((r * b + c + a) as f64).cos()))
                .collect();
            let refs: Vec<&MomentOperator<'_>> = ops.iter().collect();
            let brefs: Vec<&DMatrix<f64>> = blocks.iter().collect();
            let many = MomentOperator::apply_many(&refs, &brefs);
            for ((op, v), w) in ops.iter().zip(&blocks).zip(&many) {
                assert_eq!(bits(w), bits(&op.apply(v)), "d = {d}, b = {}", v.ncols());
            }
        }
    }

    /// The anchors' eigenproblems advanced together give each anchor's own basis bit for bit.
    #[test]
    fn bases_advanced_together_equal_each_anchors_own() {
        let d = DENSE_SUBSPACE_MAX_D + 44;
        let f = fed(d);
        let set: Vec<usize> = (0..40).filter(|&i| i != 7).collect();
        let ts = f.theta_star().unwrap();
        let thetas = vec![
            DVector::zeros(d),
            ts.column(0).clone_owned(),
            ts.column(1).map(|v| 0.5 * v),
        ];
        let together = subspace_bases(&f, &set, &thetas, Pairing::AllPairs, 3).unwrap();
        let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for (theta, b) in thetas.iter().zip(&together) {
            let own = subspace_basis(&f, &set, theta, Pairing::AllPairs, 3).unwrap();
            assert_eq!(bits(b), bits(&own));
        }
    }
}
