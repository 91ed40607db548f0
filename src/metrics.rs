//! Metrics: the error and misclustering measures of the experiments, and the constants SXY22's
//! bounds are stated in (§3 and §4.2).
//!
//! - [`bottleneck_distance`]: `d(θ̂, θ*) = min_π max_j ‖θ̂_{π(j)} − θ*_j‖` (SXY22 eq. 6), exact for
//!   any k by binary search over the sorted candidate thresholds with a bipartite
//!   perfect-matching test (Kuhn's augmenting paths). This is a *bottleneck* assignment; the
//!   Hungarian method solves the different sum problem, reported by [`sum_assignment`].
//! - [`misclustering`]: fraction of clients and of samples whose label differs from the truth
//!   after the best label permutation (maximum-weight matching of the confusion matrix).
//! - Losses, per-client errors, and the constants `χ²(n)`, `γ`, `κ`, `ρ`, `p_min`, `Δ`.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use nalgebra::{DMatrix, SymmetricEigen};
use serde::Serialize;

/// An optimal assignment of estimated models to true models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assignment {
    /// The objective (bottleneck: max error; sum: sum of errors).
    pub value: f64,
    /// `perm[j]` = index of the estimate matched to true cluster `j`.
    pub perm: Vec<usize>,
    /// `‖θ̂_{perm[j]} − θ*_j‖` for every true cluster `j`.
    pub per_cluster: Vec<f64>,
}

/// Pairwise distances `C[j][l] = ‖θ̂_l − θ*_j‖` (rows: true clusters, columns: estimates).
///
/// # Errors
/// [`FedmixError::DimensionMismatch`] for different `d` or fewer estimates than true models,
/// [`FedmixError::InvalidParameter`] (`k`) when there are no true models.
pub fn distance_matrix(
    theta_hat: &DMatrix<f64>,
    theta_star: &DMatrix<f64>,
) -> Result<DMatrix<f64>> {
    if theta_hat.nrows() != theta_star.nrows() {
        return Err(FedmixError::DimensionMismatch {
            what: "model dimension d of theta_hat vs theta_star".into(),
            expected: theta_star.nrows(),
            found: theta_hat.nrows(),
        });
    }
    if theta_star.ncols() == 0 {
        return Err(FedmixError::invalid(
            "k",
            0,
            "at least one true model is needed",
        ));
    }
    if theta_hat.ncols() < theta_star.ncols() {
        return Err(FedmixError::DimensionMismatch {
            what: "number of estimated models (must be ≥ k)".into(),
            expected: theta_star.ncols(),
            found: theta_hat.ncols(),
        });
    }
    Ok(DMatrix::from_fn(
        theta_star.ncols(),
        theta_hat.ncols(),
        |j, l| (theta_hat.column(l) - theta_star.column(j)).norm(),
    ))
}

/// `d(θ̂, θ*)` of SXY22 eq. 6: the exact bottleneck assignment. Among bottleneck-optimal
/// matchings the one with the smallest sum is reported (so `per_cluster` is well defined).
/// Estimates may outnumber true models (an injective match is sought).
///
/// # Errors
/// Dimension mismatches, fewer estimates than true models, or non-finite models.
pub fn bottleneck_distance(
    theta_hat: &DMatrix<f64>,
    theta_star: &DMatrix<f64>,
) -> Result<Assignment> {
    let c = distance_matrix(theta_hat, theta_star)?;
    finite_costs(&c)?;
    let mut cands: Vec<f64> = c.iter().copied().collect();
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    // Smallest threshold admitting a perfect matching of the rows (the largest always does).
    let (mut lo, mut hi) = (0usize, cands.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if has_row_perfect_matching(&c, cands[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let thr = cands[lo];
    // Min-sum among matchings using only edges ≤ thr: forbidden edges cost more than any
    // complete allowed matching.
    let penalty = c.sum() + 1.0;
    let restricted = c.map(|v| if v <= thr { v } else { v + penalty });
    let perm = hungarian(&restricted);
    let per_cluster: Vec<f64> = perm.iter().enumerate().map(|(j, &l)| c[(j, l)]).collect();
    Ok(Assignment {
        value: thr,
        perm,
        per_cluster,
    })
}

/// The sum assignment `min_π Σ_j ‖θ̂_{π(j)} − θ*_j‖` (Hungarian method); `value` is the sum.
/// Divide by k for the mean-error assignment.
///
/// # Errors
/// As [`bottleneck_distance`].
pub fn sum_assignment(theta_hat: &DMatrix<f64>, theta_star: &DMatrix<f64>) -> Result<Assignment> {
    let c = distance_matrix(theta_hat, theta_star)?;
    finite_costs(&c)?;
    let perm = hungarian(&c);
    let per_cluster: Vec<f64> = perm.iter().enumerate().map(|(j, &l)| c[(j, l)]).collect();
    Ok(Assignment {
        value: per_cluster.iter().sum(),
        perm,
        per_cluster,
    })
}

fn finite_costs(c: &DMatrix<f64>) -> Result<()> {
    match c.iter().position(|v| !v.is_finite()) {
        Some(pos) => Err(FedmixError::NonFinite {
            field: "model distances".into(),
            location: format!(
                "true cluster {}, estimate {}",
                pos % c.nrows(),
                pos / c.nrows()
            ),
            value: c[pos],
        }),
        None => Ok(()),
    }
}

/// Does the bipartite graph `{(j, l) : C[j][l] ≤ thr}` match every row? (Kuhn's algorithm.)
fn has_row_perfect_matching(c: &DMatrix<f64>, thr: f64) -> bool {
    let mut owner: Vec<Option<usize>> = vec![None; c.ncols()];
    (0..c.nrows()).all(|row| {
        let mut seen = vec![false; c.ncols()];
        augment(c, thr, row, &mut seen, &mut owner)
    })
}

fn augment(
    c: &DMatrix<f64>,
    thr: f64,
    row: usize,
    seen: &mut [bool],
    owner: &mut [Option<usize>],
) -> bool {
    for col in 0..c.ncols() {
        if c[(row, col)] <= thr && !seen[col] {
            seen[col] = true;
            if owner[col].is_none_or(|r| augment(c, thr, r, seen, owner)) {
                owner[col] = Some(row);
                return true;
            }
        }
    }
    false
}

/// Minimum-cost assignment of every row to a distinct column (rows ≤ columns), O(r²c)
/// Hungarian method with potentials. Returns `perm[row] = column`. Deterministic: ties go to
/// the lowest column index.
pub fn hungarian(cost: &DMatrix<f64>) -> Vec<usize> {
    let (n, m) = (cost.nrows(), cost.ncols());
    debug_assert!(n <= m);
    let (mut u, mut v) = (vec![0.0; n + 1], vec![0.0; m + 1]);
    let mut p = vec![0usize; m + 1]; // p[col] = row (1-based), 0 = free
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![f64::INFINITY; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let (mut delta, mut j1) = (f64::INFINITY, 0);
            for j in 1..=m {
                if !used[j] {
                    let cur = cost[(i0 - 1, j - 1)] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut perm = vec![0; n];
    for j in 1..=m {
        if p[j] != 0 {
            perm[p[j] - 1] = j - 1;
        }
    }
    perm
}

/// Misclustering rates up to the best label permutation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Misclustering {
    /// Fraction of clients misclustered.
    pub clients: f64,
    /// Fraction of samples misclustered (clients weighted by `n_i`).
    pub samples: f64,
    /// `map[l]` = true cluster matched to estimated label `l` (`None`: unmatched, all wrong).
    pub map: Vec<Option<usize>>,
}

/// Misclustering of estimated labels `est` (values `0..k_est`) against `truth` (`0..k`), with
/// client sizes `sizes` for the sample-weighted rate. The label map maximises the number of
/// correctly clustered clients, ties broken by the number of correctly clustered samples
/// (maximum-weight matching of the confusion matrix; with `k_est ≠ k` the surplus labels stay
/// unmatched). Both rates are invariant to renumbering the estimated clusters.
///
/// # Errors
/// Length mismatch between the three slices.
pub fn misclustering(est: &[usize], truth: &[usize], sizes: &[usize]) -> Result<Misclustering> {
    for (what, len) in [("true labels", truth.len()), ("client sizes", sizes.len())] {
        if len != est.len() {
            return Err(FedmixError::DimensionMismatch {
                what: format!("{what} vs estimated labels"),
                expected: est.len(),
                found: len,
            });
        }
    }
    check_label_range(est, "estimated labels")?;
    check_label_range(truth, "true labels")?;
    let k_est = est.iter().max().map_or(1, |m| m + 1);
    let k = truth.iter().max().map_or(1, |m| m + 1);
    let confusion = |w: &dyn Fn(usize) -> f64| {
        let mut c = DMatrix::zeros(k_est, k);
        for i in 0..est.len() {
            c[(est[i], truth[i])] += w(i);
        }
        c
    };
    let by_clients = confusion(&|_| 1.0);
    let by_samples = confusion(&|i| sizes[i] as f64);
    // Decision: several maps may tie on correctly clustered clients; among them take the one
    // with the most correctly clustered samples, so that `samples` does not depend on how the
    // estimated clusters happen to be numbered. Weights `clients·(N+1) + samples` make this a
    // single matching; they are integers, exact in f64 while M·(N+1) < 2^53.
    let scale = by_samples.sum() + 1.0;
    let map = best_label_map(&(&by_clients * scale + &by_samples));
    let rate = |c: &DMatrix<f64>| {
        let matched: f64 = map
            .iter()
            .enumerate()
            .filter_map(|(l, t)| t.map(|t| c[(l, t)]))
            .sum();
        let total = c.sum();
        if total > 0.0 {
            1.0 - matched / total
        } else {
            0.0
        }
    };
    Ok(Misclustering {
        clients: rate(&by_clients),
        samples: rate(&by_samples),
        map,
    })
}

/// Largest label value accepted by [`misclustering`]: labels index a confusion matrix, so a
/// label such as [`crate::run::UNASSIGNED`] (`usize::MAX`) must be refused typed rather than
/// overflow or allocate absurdly.
pub const MAX_LABEL: usize = 1 << 20;

fn check_label_range(labels: &[usize], what: &str) -> Result<()> {
    match labels.iter().position(|&l| l > MAX_LABEL) {
        Some(client) => Err(FedmixError::invalid(
            what,
            labels[client],
            format!("client {client}: labels must be ≤ {MAX_LABEL} (unassigned clients need majority_misclustering)"),
        )),
        None => Ok(()),
    }
}

/// Misclustering under SRFCA Definition 3.1 (cluster labels by majority), for clusterings whose
/// number of clusters `K̂` differs from `k` (SR-FCA, CFL) or that leave clients unassigned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MajorityMisclustering {
    /// Fraction of clients misclustered (unassigned clients count as misclustered).
    pub clients: f64,
    /// Fraction of samples misclustered (clients weighted by `n_i`).
    pub samples: f64,
    /// `cluster_label[c]`: the true cluster holding a strict majority (> 1/2) of the clients of
    /// estimated cluster `c`, if any (`None` also for an empty cluster).
    pub cluster_label: Vec<Option<usize>>,
    /// Number of distinct true clusters that are the label of some estimated cluster (SRFCA's
    /// "proxies"; `k` when every true cluster is represented).
    pub proxies: usize,
    /// Clients outside every cluster.
    pub unassigned: usize,
}

/// SRFCA Definition 3.1: estimated cluster `c` has cluster label `j` when more than half of its
/// clients come from true cluster `j`; client `i` is correctly clustered when its cluster has a
/// label and the label is `z_i`. Several estimated clusters may share a label (a true cluster
/// split in two is not penalised: "proxies"); a cluster without a strict majority has no label,
/// so all its clients count as misclustered, and so do unassigned clients (`None`).
/// `k_hat` is the number of estimated clusters (labels must be `< k_hat`).
///
/// Decision: the majority is by client count, as in Definition 3.1 ("majority of users"), also
/// for the sample-weighted rate.
///
/// # Errors
/// Length mismatches; an estimated label `≥ k_hat` ([`FedmixError::LabelOutOfRange`]).
pub fn majority_misclustering(
    est: &[Option<usize>],
    truth: &[usize],
    sizes: &[usize],
    k_hat: usize,
) -> Result<MajorityMisclustering> {
    for (what, len) in [("true labels", truth.len()), ("client sizes", sizes.len())] {
        if len != est.len() {
            return Err(FedmixError::DimensionMismatch {
                what: format!("{what} vs estimated labels"),
                expected: est.len(),
                found: len,
            });
        }
    }
    check_label_range(truth, "true labels")?;
    if let Some(client) = est.iter().position(|l| l.is_some_and(|l| l >= k_hat)) {
        return Err(FedmixError::LabelOutOfRange {
            client,
            label: est[client].unwrap_or(0),
            k: k_hat,
        });
    }
    let k = truth.iter().max().map_or(1, |m| m + 1);
    let mut counts = vec![vec![0usize; k]; k_hat];
    for (e, &z) in est.iter().zip(truth) {
        if let Some(c) = *e {
            counts[c][z] += 1;
        }
    }
    let cluster_label: Vec<Option<usize>> = counts
        .iter()
        .map(|row| {
            let size: usize = row.iter().sum();
            row.iter().position(|&n| 2 * n > size)
        })
        .collect();
    let correct = |i: usize| est[i].is_some_and(|c| cluster_label[c] == Some(truth[i]));
    let (mut wrong_c, mut wrong_s, mut total_s) = (0usize, 0usize, 0usize);
    for (i, &n) in sizes.iter().enumerate() {
        total_s += n;
        if !correct(i) {
            wrong_c += 1;
            wrong_s += n;
        }
    }
    let mut proxies: Vec<usize> = cluster_label.iter().flatten().copied().collect();
    proxies.sort_unstable();
    proxies.dedup();
    let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    Ok(MajorityMisclustering {
        clients: ratio(wrong_c, est.len()),
        samples: ratio(wrong_s, total_s),
        cluster_label,
        proxies: proxies.len(),
        unassigned: est.iter().filter(|e| e.is_none()).count(),
    })
}

/// How a misclustering rate was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MisclusteringMethod {
    /// Best label permutation ([`misclustering`]): `K̂ = k`, every client assigned.
    BestPermutation,
    /// SRFCA Definition 3.1 majority labels ([`majority_misclustering`]).
    Majority,
}

/// Misclustering rates of a clustering with `k_hat` estimated clusters against `k` true ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabelQuality {
    /// Fraction of clients misclustered.
    pub clients: f64,
    /// Fraction of samples misclustered.
    pub samples: f64,
    /// Which rule was used.
    pub method: MisclusteringMethod,
    /// Clients outside every cluster (counted as misclustered).
    pub unassigned: usize,
}

/// Decision (no paper fixes a misclustering rate for a mix of algorithms): the best-permutation
/// rate when `k_hat = k` and every client is assigned, because cluster indices are only
/// identifiable up to a permutation (as in SXY22 eq. 6); otherwise SR-FCA Definition 3.1
/// majority labels, because with `K̂ ≠ k` a permutation cannot match every cluster and would
/// count a correctly split true cluster as wrong.
///
/// # Errors
/// As [`misclustering`] / [`majority_misclustering`].
pub fn label_quality(
    est: &[Option<usize>],
    truth: &[usize],
    sizes: &[usize],
    k_hat: usize,
    k: usize,
) -> Result<LabelQuality> {
    let complete: Option<Vec<usize>> = est.iter().copied().collect();
    match complete {
        Some(est) if k_hat == k => {
            let m = misclustering(&est, truth, sizes)?;
            Ok(LabelQuality {
                clients: m.clients,
                samples: m.samples,
                method: MisclusteringMethod::BestPermutation,
                unassigned: 0,
            })
        }
        _ => {
            let m = majority_misclustering(est, truth, sizes, k_hat)?;
            Ok(LabelQuality {
                clients: m.clients,
                samples: m.samples,
                method: MisclusteringMethod::Majority,
                unassigned: m.unassigned,
            })
        }
    }
}

/// Coverage distance `max_j min_l ‖θ̂_l − θ*_j‖`: the worst error when every true cluster is
/// served by its nearest estimated model (one model may serve several clusters). Defined for
/// any `K̂ ≥ 1`, unlike eq. 6, and never larger than it; for a single global model (FedAvg) it
/// is `max_j ‖θ̄ − θ*_j‖`.
///
/// # Errors
/// Dimension mismatch, no estimated model, non-finite distances.
pub fn coverage_distance(theta_hat: &DMatrix<f64>, theta_star: &DMatrix<f64>) -> Result<f64> {
    if theta_hat.nrows() != theta_star.nrows() {
        return Err(FedmixError::DimensionMismatch {
            what: "model dimension d of theta_hat vs theta_star".into(),
            expected: theta_star.nrows(),
            found: theta_hat.nrows(),
        });
    }
    if theta_hat.ncols() == 0 || theta_star.ncols() == 0 {
        return Err(FedmixError::invalid(
            "k",
            0,
            "at least one estimated and one true model are needed",
        ));
    }
    let c = DMatrix::from_fn(theta_star.ncols(), theta_hat.ncols(), |j, l| {
        (theta_hat.column(l) - theta_star.column(j)).norm()
    });
    finite_costs(&c)?;
    Ok(c.row_iter()
        .map(|r| r.min())
        .fold(0.0, |acc: f64, v| acc.max(v)))
}

/// Label map maximising matched weight of a confusion matrix (rows: estimates, cols: truth).
fn best_label_map(conf: &DMatrix<f64>) -> Vec<Option<usize>> {
    let (r, c) = (conf.nrows(), conf.ncols());
    let mut map = vec![None; r];
    if r <= c {
        for (l, t) in hungarian(&(-conf)).into_iter().enumerate() {
            map[l] = Some(t);
        }
    } else {
        for (t, l) in hungarian(&(-conf.transpose())).into_iter().enumerate() {
            map[l] = Some(t);
        }
    }
    map
}

/// Client `i`'s loss `L_i(θ_j) = ‖y_i − φ_i θ_j‖² / (2 n_i)` for every model `j` (columns of
/// `theta`, `d × k`).
pub fn client_losses(fed: &Federation, client: usize, theta: &DMatrix<f64>) -> Vec<f64> {
    let x = fed.x(client);
    let y = fed.y(client);
    let n = fed.n(client) as f64;
    let pred = x.tr_mul(theta); // n_i × k
    (0..theta.ncols())
        .map(|j| (pred.column(j) - y).norm_squared() / (2.0 * n))
        .collect()
}

/// Index of the smallest value; ties go to the lowest index (SXY22 eq. 8 / IFCA tie rule).
pub fn argmin(values: &[f64]) -> usize {
    let mut best = 0;
    for (j, v) in values.iter().enumerate() {
        if *v < values[best] {
            best = j;
        }
    }
    best
}

/// Training loss `Σ_i (n_i/N) min_j L_i(θ_j)` (use the held-out federation for the held-out
/// loss). One fused pass over the data ([`crate::algorithms::replicates::training_losses`]),
/// so that the losses recorded by batched runs equal those of single runs bit for bit.
pub fn training_loss(fed: &Federation, theta: &DMatrix<f64>) -> f64 {
    crate::algorithms::replicates::training_losses(fed, &[theta])[0]
}

/// Summary of per-client errors `‖θ̂_i − θ*_{z_i}‖`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// Mean.
    pub mean: f64,
    /// Median (lower median for an even count).
    pub median: f64,
    /// 90% quantile (nearest rank).
    pub q90: f64,
    /// Maximum.
    pub max: f64,
}

/// Per-client errors `‖θ̂_{z_i} − θ*_{z_i}‖` where client `i` uses model `assigned[i]` of
/// `theta_hat` (no permutation needed: each client's own estimate is compared with its own
/// true model).
///
/// # Errors
/// Missing labels or `θ*`, length or dimension mismatch, an assigned model index outside
/// `0..theta_hat.ncols()` ([`FedmixError::LabelOutOfRange`]).
pub fn per_client_errors(
    fed: &Federation,
    theta_hat: &DMatrix<f64>,
    assigned: &[usize],
) -> Result<Vec<f64>> {
    let labels = fed.require_labels("per-client errors")?;
    let ts = fed.require_theta_star("per-client errors")?;
    if assigned.len() != labels.len() {
        return Err(FedmixError::DimensionMismatch {
            what: "assigned labels (M)".into(),
            expected: labels.len(),
            found: assigned.len(),
        });
    }
    if theta_hat.nrows() != ts.nrows() {
        return Err(FedmixError::DimensionMismatch {
            what: "model dimension d of theta_hat vs theta_star".into(),
            expected: ts.nrows(),
            found: theta_hat.nrows(),
        });
    }
    if let Some(client) = assigned.iter().position(|&a| a >= theta_hat.ncols()) {
        return Err(FedmixError::LabelOutOfRange {
            client,
            label: assigned[client],
            k: theta_hat.ncols(),
        });
    }
    Ok(assigned
        .iter()
        .zip(labels)
        .map(|(&a, &z)| (theta_hat.column(a) - ts.column(z)).norm())
        .collect())
}

/// Mean, median, 90% quantile and max of a non-empty slice (empty → zeros).
pub fn summarize(values: &[f64]) -> ErrorSummary {
    if values.is_empty() {
        return ErrorSummary {
            mean: 0.0,
            median: 0.0,
            q90: 0.0,
            max: 0.0,
        };
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    ErrorSummary {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        median: rank(0.5),
        q90: rank(0.9),
        max: v[v.len() - 1],
    }
}

/// Quantity skew `χ²(n) = M Σ_i (n_i/N)² − 1`: the χ² divergence of `p_n(i) = n_i/N` from the
/// uniform distribution on `[M]` (SXY22 §4.2, defined before Theorem 2; it enters `ν`, eq. 10);
/// 0 for balanced data.
pub fn chi2(sizes: &[usize]) -> f64 {
    let total: f64 = sizes.iter().map(|&n| n as f64).sum();
    let m = sizes.len() as f64;
    m * sizes
        .iter()
        .map(|&n| (n as f64 / total).powi(2))
        .sum::<f64>()
        - 1.0
}

/// `‖φ(x_i)‖₂² / n_i` for client `i` (spectral norm, via the smaller Gram matrix).
pub fn client_curvature(fed: &Federation, client: usize) -> f64 {
    let x = fed.x(client);
    let gram = if x.nrows() <= x.ncols() {
        x * x.transpose()
    } else {
        x.tr_mul(&x)
    };
    let lmax = SymmetricEigen::new(gram).eigenvalues.max();
    lmax / fed.n(client) as f64
}

/// `γ = η max_i ‖φ(x_i)‖₂² / n_i` [SXY21], with the client attaining the max.
pub fn gamma(fed: &Federation, eta: f64) -> (f64, usize) {
    let curv: Vec<f64> = (0..fed.num_clients())
        .map(|i| client_curvature(fed, i))
        .collect();
    let arg = curv
        .iter()
        .enumerate()
        .fold(0, |b, (i, c)| if *c > curv[b] { i } else { b });
    (eta * curv[arg], arg)
}

/// `γ` or [`FedmixError::StepTooLarge`] when `γ ≥ 1` (divergent local steps).
pub fn checked_gamma(fed: &Federation, eta: f64) -> Result<f64> {
    if !(eta.is_finite() && eta > 0.0) {
        return Err(FedmixError::invalid("eta", eta, "must be finite and > 0"));
    }
    let (g, client) = gamma(fed, eta);
    if g >= 1.0 {
        return Err(FedmixError::StepTooLarge {
            eta,
            gamma: g,
            eta_max: eta / g,
            client,
        });
    }
    Ok(g)
}

/// `κ = sγ / (1 − (1−γ)^s)` for FedAvg with `s` local steps [SXY21] (→ 1 as γ → 0).
pub fn kappa_fedavg(gamma: f64, s: usize) -> f64 {
    let s_f = s as f64;
    // 1 − (1−γ)^s without cancellation for small γ.
    let denom = -(s_f * (-gamma).ln_1p()).exp_m1();
    if denom <= 0.0 {
        1.0
    } else {
        s_f * gamma / denom
    }
}

/// `κ = 1 + γ` for FedProx [SXY21].
pub fn kappa_fedprox(gamma: f64) -> f64 {
    1.0 + gamma
}

/// `N_j = Σ_{i: z_i = j} n_i` for each cluster.
pub fn cluster_samples(sizes: &[usize], labels: &[usize], k: usize) -> Vec<usize> {
    let mut nj = vec![0; k];
    for (n, &z) in sizes.iter().zip(labels) {
        nj[z] += n;
    }
    nj
}

/// `ρ = min_j N_j / N`.
pub fn rho(sizes: &[usize], labels: &[usize], k: usize) -> f64 {
    let nj = cluster_samples(sizes, labels, k);
    let total: usize = nj.iter().sum();
    *nj.iter().min().unwrap_or(&0) as f64 / total.max(1) as f64
}

/// Empirical `p_min`: the smallest fraction of clients in a cluster.
pub fn p_min(labels: &[usize], k: usize) -> f64 {
    let mut counts = vec![0usize; k];
    labels.iter().for_each(|&z| counts[z] += 1);
    *counts.iter().min().unwrap_or(&0) as f64 / labels.len().max(1) as f64
}

/// Separation `Δ = min_{j≠j'} ‖θ*_j − θ*_{j'}‖` (∞ for k = 1).
pub fn separation(theta_star: &DMatrix<f64>) -> f64 {
    let k = theta_star.ncols();
    let mut best = f64::INFINITY;
    for a in 0..k {
        for b in a + 1..k {
            best = best.min((theta_star.column(a) - theta_star.column(b)).norm());
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chi2_balanced_is_zero_and_skewed_positive() {
        assert!(chi2(&[5, 5, 5]).abs() < 1e-15);
        // sizes (1, 3): N = 4, M Σ (n_i/N)² − 1 = 2 (1/16 + 9/16) − 1 = 0.25
        assert!((chi2(&[1, 3]) - 0.25).abs() < 1e-15);
    }

    #[test]
    fn kappa_limits() {
        assert!((kappa_fedavg(1e-12, 5) - 1.0).abs() < 1e-9);
        assert!((kappa_fedavg(0.5, 1) - 1.0).abs() < 1e-15);
        // s = 2, γ = 0.5: 2·0.5 / (1 − 0.25) = 4/3
        assert!((kappa_fedavg(0.5, 2) - 4.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn misclustering_is_permutation_invariant() {
        let truth = [0, 0, 1, 1, 2, 2];
        let est = [2, 2, 0, 0, 1, 0];
        let m = misclustering(&est, &truth, &[1, 1, 1, 1, 1, 5]).unwrap();
        assert!((m.clients - 1.0 / 6.0).abs() < 1e-15);
        assert!((m.samples - 5.0 / 10.0).abs() < 1e-15);
    }

    /// SRFCA Def. 3.1 by hand. Truth: 0 0 0 1 1 2 2 2; estimated clusters:
    /// A = {0, 1, 3} (two of three from 0 → label 0; client 3 wrong),
    /// B = {2} (label 0: a split of true cluster 0 is not penalised),
    /// C = {4, 5} (1 vs 2 — no strict majority → both wrong), client 6 unassigned (wrong),
    /// D = {7} (label 2). Wrong: 3, 4, 5, 6 → 4/8. Samples (sizes 1..=8): wrong 4+5+6+7 = 22/36.
    #[test]
    fn majority_labels_by_hand() {
        let truth = [0, 0, 0, 1, 1, 2, 2, 2];
        let est = [
            Some(0),
            Some(0),
            Some(1),
            Some(0),
            Some(2),
            Some(2),
            None,
            Some(3),
        ];
        let sizes = [1, 2, 3, 4, 5, 6, 7, 8];
        let m = majority_misclustering(&est, &truth, &sizes, 4).unwrap();
        assert_eq!(m.cluster_label, vec![Some(0), Some(0), None, Some(2)]);
        assert!((m.clients - 0.5).abs() < 1e-15);
        assert!((m.samples - 22.0 / 36.0).abs() < 1e-15);
        assert_eq!((m.proxies, m.unassigned), (2, 1));
        // Renumbering the estimated clusters changes nothing.
        let renum: Vec<Option<usize>> = est.iter().map(|e| e.map(|c| 3 - c)).collect();
        let r = majority_misclustering(&renum, &truth, &sizes, 4).unwrap();
        assert_eq!(
            (r.clients.to_bits(), r.samples.to_bits()),
            (m.clients.to_bits(), m.samples.to_bits())
        );
        // Out-of-range labels are typed errors, not panics.
        assert!(majority_misclustering(&est, &truth, &sizes, 3).is_err());
        assert!(misclustering(&[0, usize::MAX], &[0, 1], &[1, 1]).is_err());
    }

    /// With K̂ = k, pure clusters and no unassigned client both rules agree; the dispatcher
    /// picks the permutation rule then and the majority rule otherwise.
    #[test]
    fn label_quality_dispatch() {
        let truth = [0, 0, 1, 1, 2, 2];
        let est = [2, 2, 0, 0, 1, 0];
        let sizes = [1, 1, 1, 1, 1, 5];
        let opts: Vec<Option<usize>> = est.iter().map(|&e| Some(e)).collect();
        let q = label_quality(&opts, &truth, &sizes, 3, 3).unwrap();
        assert_eq!(q.method, MisclusteringMethod::BestPermutation);
        let perm = misclustering(&est, &truth, &sizes).unwrap();
        assert_eq!(q.clients.to_bits(), perm.clients.to_bits());
        let maj = majority_misclustering(&opts, &truth, &sizes, 3).unwrap();
        assert!((maj.clients - perm.clients).abs() < 1e-15);
        let mut with_none = opts.clone();
        with_none[0] = None;
        let q = label_quality(&with_none, &truth, &sizes, 3, 3).unwrap();
        assert_eq!((q.method, q.unassigned), (MisclusteringMethod::Majority, 1));
        let q = label_quality(&opts, &truth, &sizes, 4, 3).unwrap();
        assert_eq!(q.method, MisclusteringMethod::Majority);
    }

    #[test]
    fn coverage_distance_allows_fewer_estimates() {
        let ts = DMatrix::from_column_slice(1, 3, &[0.0, 1.0, 5.0]);
        let one = DMatrix::from_column_slice(1, 1, &[1.5]);
        // max_j |1.5 − θ*_j| = 3.5
        assert!((coverage_distance(&one, &ts).unwrap() - 3.5).abs() < 1e-15);
        assert!(bottleneck_distance(&one, &ts).is_err());
        let three = DMatrix::from_column_slice(1, 3, &[0.1, 4.0, 1.2]);
        let b = bottleneck_distance(&three, &ts).unwrap().value;
        let c = coverage_distance(&three, &ts).unwrap();
        assert!(c <= b && (c - 1.0).abs() < 1e-15, "{c} {b}");
    }

    #[test]
    fn hungarian_small_known_case() {
        // Optimal: row0→col1 (1), row1→col0 (2), row2→col2 (2) = 5.
        let c = DMatrix::from_row_slice(3, 3, &[4.0, 1.0, 3.0, 2.0, 0.0, 5.0, 3.0, 2.0, 2.0]);
        let p = hungarian(&c);
        let total: f64 = p.iter().enumerate().map(|(r, &col)| c[(r, col)]).sum();
        assert_eq!(p, vec![1, 0, 2]);
        assert!((total - 5.0).abs() < 1e-15);
    }
}
