//! Distances between estimated and true models: SXY22 eq. 6's bottleneck distance
//! `d(θ̂, θ*) = min_π max_j ‖θ̂_{π(j)} − θ*_j‖`, the sum assignment (Hungarian method) and the
//! coverage distance.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use nalgebra::DMatrix;
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

/// `d(θ, θ*)` and per-cluster errors, when `θ*` is known and `theta` has ≥ k finite columns.
pub fn model_distance(fed: &Federation, theta: &DMatrix<f64>) -> (Option<f64>, Vec<f64>) {
    match fed.theta_star().map(|ts| bottleneck_distance(theta, ts)) {
        Some(Ok(a)) => (Some(a.value), a.per_cluster),
        _ => (None, Vec::new()),
    }
}
