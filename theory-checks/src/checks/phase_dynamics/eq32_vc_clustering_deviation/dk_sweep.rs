//! Eq. 32's third series: the VC factor `√(dk log k)` over d ∈ {2, 6, 30} × k ∈ {2, 3, 6} at
//! balanced sizes, with the data-dependent θ (each replicate's own Phase 2 iterates and a
//! random-search ascent of its deviation) added to the sup (SXY22 App. E.2, eq. 32).

use super::*;
/// The (d, k) series: d ∈ `DK_D` × k ∈ `DK_K` (9 points), `dk ln k` from 2.8 to 322
/// (2.07 decades).
pub(super) const DK_D: [usize; 3] = [2, 6, 30];
/// See [`DK_D`].
pub(super) const DK_K: [usize; 3] = [2, 3, 6];
/// Balanced client size of the (d, k) series.
pub(super) const DK_N: usize = 5;
/// Phase 2 rounds run on each replicate's own data from two family members; every iterate joins
/// that replicate's data-dependent θ.
pub(super) const DK_PHASE2_ROUNDS: usize = 3;
/// FedAvg step of those rounds, as a fraction of the largest step the library accepts.
pub(super) const DK_ETA_GAMMA: f64 = 0.5;

/// One point of the (d, k) series.
pub(super) struct DkPoint {
    pub(super) d: usize,
    pub(super) k: usize,
    /// Mean over replicates of `sup_{θ, j} |G_j − Ḡ_j| / N`, the sup over the fixed family and
    /// the replicate's own data-dependent θ.
    pub(super) dev_mean: f64,
    /// The same with the fixed family only.
    pub(super) fixed_mean: f64,
    /// Fraction of replicates whose sup is attained at a data-dependent θ.
    pub(super) dd_share: f64,
}

impl DkPoint {
    /// `dk ln k`, the VC-dimension factor of eq. 32 (Lemma 9: v = O(dk log k)).
    pub(super) fn x(&self) -> f64 {
        (self.d * self.k) as f64 * (self.k as f64).ln()
    }
}

/// For replicate `r`: the largest `|G_r(c) − mean_{r' ≠ r} G_{r'}(c)|` over entries c, and the
/// entry attaining it.
pub(super) fn loo_max(g: &[Vec<f64>], r: usize) -> (f64, usize) {
    loo_devs(g, r)
        .into_iter()
        .enumerate()
        .fold((0.0, 0), |a, (c, x)| if x > a.0 { (x, c) } else { a })
}

/// Replicate `r`'s leave-one-out deviations `|G_r − Ḡ_{−r}|`, one per entry of `g[r]`, where
/// `Ḡ_{−r}` is the mean over the other replicates (independent of `r`'s data, so an unbiased
/// stand-in for `E G` at the same θ).
pub(super) fn loo_devs(g: &[Vec<f64>], r: usize) -> Vec<f64> {
    let others = (g.len() - 1) as f64;
    (0..g[r].len())
        .map(|c| {
            let other = (g.iter().map(|v| v[c]).sum::<f64>() - g[r][c]) / others;
            (g[r][c] - other).abs()
        })
        .collect()
}

/// Whether entry `f·K + j` of a family's weighted counts belongs to a "tie" member (`f mod 3 =
/// 1`: [`family_around`] puts two centres at `θ*_j ± v` around one true centre, so the clients
/// of that cluster sit near the boundary between them).
pub(super) fn is_tie(entry: usize) -> bool {
    (entry / K) % 3 == 1
}

/// From each replicate's leave-one-out deviations: (max over replicates and entries, the same
/// max over tie entries only, mean over replicates of each replicate's max — Lemma 12's
/// `E sup`).
pub(super) fn replicate_summary(devs: &[Vec<f64>]) -> (f64, f64, f64) {
    let max = |v: &mut dyn Iterator<Item = f64>| v.fold(0.0, max_nan);
    let dev = max(&mut devs.iter().flatten().copied());
    let dev_tie = max(&mut devs.iter().flat_map(|v| {
        v.iter()
            .enumerate()
            .filter(|(c, _)| is_tie(*c))
            .map(|(_, x)| *x)
    }));
    let dev_mean = devs
        .iter()
        .map(|v| max(&mut v.iter().copied()))
        .sum::<f64>()
        / devs.len() as f64;
    (dev, dev_tie, dev_mean)
}

/// One (d, k) point: `θ* ~ N(0, Δ²/(2d) I)` per centre (`Mixture::gaussian`, pairwise
/// `E‖θ*_a − θ*_b‖² = Δ²`), balanced `n_i = DK_N`, labels `i mod k`, `reps` independent
/// replicates of the data. Besides the fixed family (drawn before the data), each replicate r
/// gets **data-dependent θ** computed from its own data only:
/// - the iterates of [`DK_PHASE2_ROUNDS`] rounds of the library's fused Phase 2 round (SXY22
///   Alg. 2: eq. 8 choice, one FedAvg step, `n_i/N` aggregation) from the family's first two
///   perturbations;
/// - a random-search ascent of the deviation, `steps` proposals `θ + τZ/√d` (Z standard
///   normal, τ shrinking on rejection) from the family member with r's largest deviation,
///   accepting ties: the deviation is piecewise constant in θ, so there is no gradient. Its
///   objective compares r with one other replicate (`r + 1`), so the ascent costs two passes
///   per proposal instead of `reps`.
///
/// `Ḡ` at a data-dependent θ of replicate r is the mean over the other replicates (whose data
/// did not choose θ), so it estimates `E G(θ)` at that fixed θ as eq. 32 requires.
pub(super) fn dk_point(
    d: usize,
    k: usize,
    clients: usize,
    reps: usize,
    fam_size: usize,
    steps: usize,
    seed: u64,
) -> DkPoint {
    let mix = Mixture::gaussian(d, k, DELTA / 2f64.sqrt(), SIGMA, child(seed, 0, 0));
    let fam = family_around(&mix.theta_star, child(seed, 1, 0), fam_size);
    let labels: Vec<usize> = (0..clients).map(|i| i % k).collect();
    let sizes = vec![DK_N; clients];
    let feds: Vec<_> = (0..reps)
        .map(|r| mix.federation(&labels, &sizes, child(seed, 2, r as u64)))
        .collect();
    let n_total = (clients * DK_N) as f64;
    let g_fix: Vec<Vec<f64>> = feds.iter().map(|f| weighted_counts(f, &fam)).collect();
    let gap = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, max_nan)
    };
    let mut per_replicate = Vec::with_capacity(reps);
    for r in 0..reps {
        let fed = &feds[r];
        let p = Phase2Params {
            eta: DK_ETA_GAMMA / gamma(fed, 1.0).0,
            local_steps: 1,
            local_solver: LocalSolver::Fedavg,
            rounds: 1,
        };
        let mut dd: Vec<DMatrix<f64>> = Vec::new();
        for start in fam.iter().step_by(3).take(2) {
            let mut th = start.clone();
            for _ in 0..DK_PHASE2_ROUNDS {
                th = phase2_round_fused(fed, &th, &p, None, None).0;
                dd.push(th.clone());
            }
        }
        let (fixed_dev, entry) = loo_max(&g_fix, r);
        let reference = &feds[(r + 1) % reps];
        let objective = |th: &DMatrix<f64>| {
            let one = std::slice::from_ref(th);
            gap(&weighted_counts(fed, one), &weighted_counts(reference, one))
        };
        let mut th = fam[entry / k].clone();
        let mut best = objective(&th);
        let mut tau = 0.3 * DELTA;
        let mut rng = stream(child(seed, 3, r as u64), Purpose::Init, 0);
        let scale = 1.0 / (d as f64).sqrt();
        for _ in 0..steps {
            let prop = &th
                + DMatrix::from_fn(d, k, |_, _| {
                    tau * scale * rng.sample::<f64, _>(StandardNormal)
                });
            let v = objective(&prop);
            if v >= best {
                th = prop;
                best = v;
            } else {
                tau *= 0.97;
            }
        }
        dd.push(th);
        let g_dd: Vec<Vec<f64>> = feds.iter().map(|f| weighted_counts(f, &dd)).collect();
        let (dd_dev, _) = loo_max(&g_dd, r);
        per_replicate.push((fixed_dev, dd_dev));
    }
    DkPoint::from_replicates(d, k, n_total, &per_replicate)
}

impl DkPoint {
    /// The point from each replicate's `(sup over the fixed family, sup over its data-dependent
    /// θ)`: the mean over replicates of the larger of the two and of the fixed family's alone,
    /// each divided by N, and the share of replicates whose data-dependent θ exceed the family.
    pub(super) fn from_replicates(
        d: usize,
        k: usize,
        n_total: f64,
        per_replicate: &[(f64, f64)],
    ) -> Self {
        let reps = per_replicate.len() as f64;
        let (mut dev_sum, mut fixed_sum, mut dd_wins) = (0.0, 0.0, 0usize);
        for &(fixed_dev, dd_dev) in per_replicate {
            dev_sum += max_nan(fixed_dev, dd_dev);
            fixed_sum += fixed_dev;
            dd_wins += usize::from(dd_dev > fixed_dev);
        }
        DkPoint {
            d,
            k,
            dev_mean: dev_sum / reps / n_total,
            fixed_mean: fixed_sum / reps / n_total,
            dd_share: dd_wins as f64 / reps,
        }
    }
}
