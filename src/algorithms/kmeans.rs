//! k-means for the one-shot baseline (IFCA Algorithm 1 / Ghosh et al. 2019): k-means++ seeding
//! (Arthur & Vassilvitskii 2007, "D² weighting"), then Lloyd iterations (Lloyd 1982), repeated
//! from several seeded starts, keeping the lowest inertia.
//!
//! Points are the columns of a `d × M` matrix. Inertia = `Σ_i ‖x_i − c_{a(i)}‖²`.
//!
//! Decisions (IFCA Algorithm 1 and SXY22 App. C say only "k-means" and leave these open):
//! - ties in the nearest centroid go to the lowest index (as IFCA's cluster identity rule);
//! - an empty cluster keeps its previous centroid (as IFCA's empty cluster keeps its model),
//!   so Lloyd's inertia never increases;
//! - Lloyd stops when the assignment no longer changes, or after `max_iter` iterations;
//! - among starts with equal inertia the lowest start index wins;
//! - k-means++ with every remaining D² equal to 0 (duplicate points) takes the first point not
//!   yet chosen.
//!
//! Start `s` draws from `stream(seed, Purpose::Init, s)`.

use crate::error::{FedmixError, Result};
use crate::metrics::argmin;
use crate::seed_streams::{stream, Purpose, Rng};
use nalgebra::DMatrix;
use rand::RngExt;
use serde::Serialize;

/// Result of k-means.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KMeansResult {
    /// Centroids, `d × k`.
    #[serde(skip)]
    pub centroids: DMatrix<f64>,
    /// Cluster of each point.
    pub labels: Vec<usize>,
    /// `Σ_i ‖x_i − c_{labels[i]}‖²`.
    pub inertia: f64,
    /// Lloyd iterations of the kept start.
    pub iterations: usize,
    /// Index of the kept start.
    pub start: usize,
    /// Final inertia of every start.
    pub inertias: Vec<f64>,
}

/// Squared distances from every point to every centroid (`M × k`).
fn sq_distances(points: &DMatrix<f64>, centroids: &DMatrix<f64>) -> DMatrix<f64> {
    DMatrix::from_fn(points.ncols(), centroids.ncols(), |i, j| {
        (points.column(i) - centroids.column(j)).norm_squared()
    })
}

/// Nearest centroid of each point (ties → lowest index) and the inertia.
pub fn assign(points: &DMatrix<f64>, centroids: &DMatrix<f64>) -> (Vec<usize>, f64) {
    let d2 = sq_distances(points, centroids);
    let mut inertia = 0.0;
    let labels = (0..points.ncols())
        .map(|i| {
            let row: Vec<f64> = d2.row(i).iter().copied().collect();
            let j = argmin(&row);
            inertia += row[j];
            j
        })
        .collect();
    (labels, inertia)
}

/// k-means++ seeding: the indices of the `k` points chosen as initial centroids. The first is
/// uniform; each next one is drawn with probability proportional to its squared distance to the
/// nearest chosen centroid (D² weighting).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] when `k = 0` or `k > M`.
pub fn kmeans_pp_seeds(points: &DMatrix<f64>, k: usize, rng: &mut Rng) -> Result<Vec<usize>> {
    let m = points.ncols();
    if k == 0 || k > m {
        return Err(FedmixError::invalid(
            "k",
            k,
            format!("k-means needs 1 ≤ k ≤ number of points = {m}"),
        ));
    }
    let mut chosen = vec![rng.random_range(0..m)];
    let dist_to = |c: usize| -> Vec<f64> {
        (0..m)
            .map(|i| (points.column(i) - points.column(c)).norm_squared())
            .collect()
    };
    let mut d2 = dist_to(chosen[0]);
    while chosen.len() < k {
        let total: f64 = d2.iter().sum();
        let next = if total > 0.0 && total.is_finite() {
            let u = rng.random::<f64>() * total;
            let mut acc = 0.0;
            let mut pick = None;
            for (i, &w) in d2.iter().enumerate() {
                acc += w;
                if w > 0.0 && u < acc {
                    pick = Some(i);
                    break;
                }
            }
            // Rounding can leave u ≥ acc at the end: take the last point with positive weight.
            pick.or_else(|| d2.iter().rposition(|&w| w > 0.0))
        } else {
            None
        };
        let next = next
            .or_else(|| (0..m).find(|i| !chosen.contains(i)))
            .unwrap_or(0);
        chosen.push(next);
        for (i, v) in dist_to(next).into_iter().enumerate() {
            d2[i] = d2[i].min(v);
        }
    }
    Ok(chosen)
}

/// Lloyd iterations from `centroids`: returns the final centroids, labels, inertia, the
/// number of iterations, and the inertia after each assignment step (non-increasing).
pub fn lloyd(
    points: &DMatrix<f64>,
    centroids: &DMatrix<f64>,
    max_iter: usize,
) -> (DMatrix<f64>, Vec<usize>, f64, usize, Vec<f64>) {
    let mut c = centroids.clone();
    let (mut labels, mut inertia) = assign(points, &c);
    let mut history = vec![inertia];
    let mut iters = 0;
    while iters < max_iter {
        iters += 1;
        // Update step: each non-empty cluster moves to its mean.
        let mut sums = DMatrix::zeros(c.nrows(), c.ncols());
        let mut counts = vec![0usize; c.ncols()];
        for (i, &l) in labels.iter().enumerate() {
            sums.column_mut(l).axpy(1.0, &points.column(i), 1.0);
            counts[l] += 1;
        }
        for (j, &n) in counts.iter().enumerate() {
            if n > 0 {
                c.set_column(j, &(sums.column(j) / n as f64));
            }
        }
        let (next, value) = assign(points, &c);
        history.push(value);
        inertia = value;
        if next == labels {
            break;
        }
        labels = next;
    }
    (c, labels, inertia, iters, history)
}

/// k-means with `starts` seeded k-means++ starts (start `s` uses
/// `stream(seed, Purpose::Init, s)`), keeping the lowest final inertia (ties → lowest start).
///
/// # Errors
/// `k = 0`, `k > M`, `starts = 0`, non-finite points.
pub fn kmeans(
    points: &DMatrix<f64>,
    k: usize,
    starts: usize,
    max_iter: usize,
    seed: u64,
) -> Result<KMeansResult> {
    if starts == 0 {
        return Err(FedmixError::invalid("kmeans_inits", 0, "must be ≥ 1"));
    }
    if let Some(pos) = points.iter().position(|v| !v.is_finite()) {
        return Err(FedmixError::NonFinite {
            field: "k-means points".into(),
            location: format!(
                "point {}, coordinate {}",
                pos / points.nrows().max(1),
                pos % points.nrows().max(1)
            ),
            value: points[pos],
        });
    }
    let mut best: Option<KMeansResult> = None;
    let mut inertias = Vec::with_capacity(starts);
    for s in 0..starts {
        let mut rng = stream(seed, Purpose::Init, s as u64);
        let seeds = kmeans_pp_seeds(points, k, &mut rng)?;
        let c0 = DMatrix::from_fn(points.nrows(), k, |r, j| points[(r, seeds[j])]);
        let (centroids, labels, inertia, iterations, _) = lloyd(points, &c0, max_iter);
        inertias.push(inertia);
        if best.as_ref().is_none_or(|b| inertia < b.inertia) {
            best = Some(KMeansResult {
                centroids,
                labels,
                inertia,
                iterations,
                start: s,
                inertias: Vec::new(),
            });
        }
    }
    let mut best = best.ok_or_else(|| FedmixError::invalid("kmeans_inits", 0, "must be ≥ 1"))?;
    best.inertias = inertias;
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::StandardNormal;

    fn cloud(seed: u64, d: usize, m: usize) -> DMatrix<f64> {
        let mut rng = stream(seed, Purpose::Replicate, 0);
        DMatrix::from_fn(d, m, |_, c| {
            rng.sample::<f64, _>(StandardNormal) + 3.0 * (c % 3) as f64
        })
    }

    #[test]
    fn lloyd_never_increases_inertia() {
        for seed in 0..20 {
            let pts = cloud(seed, 3, 40);
            // Deliberately poor start: the first k points.
            let c0 = pts.columns(0, 4).clone_owned();
            let (_, _, _, _, hist) = lloyd(&pts, &c0, 100);
            assert!(hist.len() >= 2);
            for w in hist.windows(2) {
                assert!(w[1] <= w[0] * (1.0 + 1e-12), "seed {seed}: {hist:?}");
            }
        }
    }

    #[test]
    fn seeding_is_deterministic_per_seed() {
        let pts = cloud(1, 4, 60);
        let a = kmeans_pp_seeds(&pts, 5, &mut stream(9, Purpose::Init, 0)).unwrap();
        let b = kmeans_pp_seeds(&pts, 5, &mut stream(9, Purpose::Init, 0)).unwrap();
        let c = kmeans_pp_seeds(&pts, 5, &mut stream(10, Purpose::Init, 0)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut u = a.clone();
        u.sort_unstable();
        u.dedup();
        assert_eq!(u.len(), 5, "distinct seeds: {a:?}");
    }

    /// Permuting the initial centroids permutes the labels and nothing else.
    #[test]
    fn relabelling_invariance() {
        let pts = cloud(2, 3, 45);
        let c0 = pts.columns(10, 3).clone_owned();
        let perm = [2usize, 0, 1];
        let c0p = DMatrix::from_fn(3, 3, |r, j| c0[(r, perm[j])]);
        let (c, l, inertia, _, _) = lloyd(&pts, &c0, 100);
        let (cp, lp, inertia_p, _, _) = lloyd(&pts, &c0p, 100);
        assert_eq!(inertia.to_bits(), inertia_p.to_bits());
        for i in 0..pts.ncols() {
            assert_eq!(perm[lp[i]], l[i]);
        }
        for (j, &pj) in perm.iter().enumerate() {
            assert!(crate::prec::amax_nan(&(cp.column(j) - c.column(pj))) <= 0.0);
        }
    }

    /// Exhaustive search over all k^M labelings of tiny inputs: k-means with several starts
    /// reaches the optimal inertia.
    #[test]
    fn tiny_inputs_match_exhaustive_search() {
        for seed in 0..8 {
            let pts = cloud(100 + seed, 2, 7);
            for k in [2usize, 3] {
                let res = kmeans(&pts, k, 10, 100, seed).unwrap();
                let m = pts.ncols();
                let mut best = f64::INFINITY;
                for code in 0..k.pow(m as u32) {
                    let labels: Vec<usize> = (0..m).map(|i| code / k.pow(i as u32) % k).collect();
                    let mut cost = 0.0;
                    for j in 0..k {
                        let members: Vec<usize> = (0..m).filter(|&i| labels[i] == j).collect();
                        if members.is_empty() {
                            continue;
                        }
                        let mut mean = nalgebra::DVector::zeros(2);
                        for &i in &members {
                            mean += pts.column(i);
                        }
                        mean /= members.len() as f64;
                        cost += members
                            .iter()
                            .map(|&i| (pts.column(i) - &mean).norm_squared())
                            .sum::<f64>();
                    }
                    best = best.min(cost);
                }
                assert!(
                    (res.inertia - best).abs() <= 1e-9 * best.max(1.0),
                    "seed {seed} k={k}: k-means {} vs exhaustive {best}",
                    res.inertia
                );
            }
        }
    }

    #[test]
    fn bad_k_is_typed() {
        let pts = cloud(3, 2, 4);
        assert!(matches!(
            kmeans(&pts, 5, 2, 10, 0),
            Err(FedmixError::InvalidParameter { .. })
        ));
        assert!(kmeans(&pts, 0, 2, 10, 0).is_err());
        assert!(kmeans(&pts, 2, 0, 10, 0).is_err());
        // k = M is allowed: every point is a seed (D² weighting never picks a chosen point).
        let mut seeds = kmeans_pp_seeds(&pts, 4, &mut stream(5, Purpose::Replicate, 1)).unwrap();
        seeds.sort_unstable();
        assert_eq!(seeds, vec![0, 1, 2, 3]);
    }
}
