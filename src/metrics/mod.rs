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

mod clustering;
mod constants;
mod distance;

pub use clustering::*;
pub use constants::*;
pub use distance::*;

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use nalgebra::DMatrix;
use serde::Serialize;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `L_i(θ_j) = ‖y_i − φ_iθ_j‖²/(2n_i)` by hand: client 1 of two (sizes 1 and 2, d = 2) with
    /// rows φ = [(1, 0), (0, 2)], y = (1, 1); θ_1 = (1, 0.5) fits exactly, θ_2 = (0, 0) leaves
    /// residuals (1, 1): loss 2/4 = 0.5.
    #[test]
    fn client_losses_by_hand() {
        let fed = Federation::new(crate::federation::FederationParts {
            features: DMatrix::from_column_slice(2, 3, &[9.0, 9.0, 1.0, 0.0, 0.0, 2.0]),
            responses: nalgebra::DVector::from_column_slice(&[5.0, 1.0, 1.0]),
            sizes: vec![1, 2],
            labels: None,
            theta_star: None,
            k: Some(2),
        })
        .unwrap();
        let theta = DMatrix::from_column_slice(2, 2, &[1.0, 0.5, 0.0, 0.0]);
        assert_eq!(client_losses(&fed, 1, &theta), vec![0.0, 0.5]);
        // Client 0 (φ = (9, 9), y = 5): residuals 9 + 4.5 − 5 = 8.5 and −5, n = 1.
        assert_eq!(client_losses(&fed, 0, &theta), vec![8.5 * 8.5 / 2.0, 12.5]);
    }

    #[test]
    fn chi2_balanced_is_zero_and_skewed_positive() {
        assert_eq!(chi2(&[5, 5, 5]).to_bits(), 0.0f64.to_bits());
        assert_eq!(chi2(&[7; 60]).to_bits(), 0.0f64.to_bits());
        // sizes (1, 3): N = 4, M Σ (n_i/N)² − 1 = 2 (1/16 + 9/16) − 1 = 0.25
        assert!((chi2(&[1, 3]) - 0.25).abs() < 1e-15);
    }

    #[test]
    fn kappa_limits() {
        assert!((kappa_fedavg(1e-12, 5) - 1.0).abs() < 1e-9);
        assert!((kappa_fedavg(0.5, 1) - 1.0).abs() < 1e-15);
        // s = 2, γ = 0.5: 2·0.5 / (1 − 0.25) = 4/3
        assert!((kappa_fedavg(0.5, 2) - 4.0 / 3.0).abs() < 1e-15);
        assert_eq!(kappa_fedavg(0.0, 3).to_bits(), 1.0_f64.to_bits());
        // γ ≥ 1 (outside SXY21's γ < 1): s = 1 gives 1γ/(1 − (1 − γ)) = 1 exactly; s = 2,
        // γ = 1.5: 3/(1 − 0.25) = 4; s = 2, γ = 2.5: 1 − 2.25 < 0, the bound is vacuous.
        assert_eq!(kappa_fedavg(1.5, 1).to_bits(), 1.0_f64.to_bits());
        assert_eq!(kappa_fedavg(1.0, 1).to_bits(), 1.0_f64.to_bits());
        assert!((kappa_fedavg(1.5, 2) - 4.0).abs() < 1e-15);
        assert!(kappa_fedavg(2.5, 2).is_infinite() && kappa_fedavg(2.5, 2) > 0.0);
        assert!(kappa_fedavg(f64::NAN, 2).is_nan());
    }

    /// `Δ = min_{j≠j'} ‖θ*_j − θ*_{j'}‖` by hand: θ* = (1, 0), (2, 0), (10, 0) are 1, 9 and 8
    /// apart, so Δ = 1 (the sums' norms would give 3); a single model has Δ = ∞ (SXY22 §3).
    #[test]
    fn separation_by_hand() {
        let t = DMatrix::from_column_slice(2, 3, &[1.0, 0.0, 2.0, 0.0, 10.0, 0.0]);
        assert_eq!(separation(&t).to_bits(), 1.0_f64.to_bits());
        let t = DMatrix::from_column_slice(2, 3, &[0.0, 0.0, 3.0, 4.0, 0.0, -2.0]);
        assert_eq!(separation(&t).to_bits(), 2.0_f64.to_bits());
        assert_eq!(
            separation(&DMatrix::from_element(2, 1, 1.0)).to_bits(),
            f64::INFINITY.to_bits()
        );
    }

    /// `N_j`, `ρ = min_j N_j / N` (SXY22 Theorem 2) and `p_min` (fraction of clients) by hand:
    /// sizes (3, 5, 2, 7) in clusters (0, 1, 0, 1) give N_j = (5, 12), ρ = 5/17, p_min = 1/2;
    /// an empty third cluster gives ρ = p_min = 0. `κ = 1 + γ` for FedProx (SXY21).
    #[test]
    fn cluster_constants_by_hand() {
        let (sizes, labels) = ([3, 5, 2, 7], [0, 1, 0, 1]);
        assert_eq!(cluster_samples(&sizes, &labels, 2), vec![5, 12]);
        assert_eq!(
            rho(&sizes, &labels, 2).to_bits(),
            (5.0_f64 / 17.0).to_bits()
        );
        assert_eq!(p_min(&labels, 2).to_bits(), (0.5_f64).to_bits());
        assert_eq!(rho(&sizes, &labels, 3).to_bits(), (0.0_f64).to_bits());
        assert_eq!(p_min(&labels, 3).to_bits(), (0.0_f64).to_bits());
        assert_eq!(
            p_min(&[0, 1, 1, 2, 2, 2], 3).to_bits(),
            (1.0_f64 / 6.0).to_bits()
        );
        assert_eq!(kappa_fedprox(0.25).to_bits(), (1.25_f64).to_bits());
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

    /// The documented tie rule of [`hungarian`]: among equal-cost assignments the lowest column
    /// goes first, so an all-ties matrix gives the identity (it decides which of two equally
    /// distant estimates is reported as a cluster's model, e.g. duplicated estimates).
    #[test]
    fn hungarian_ties_go_to_the_lowest_column() {
        assert_eq!(hungarian(&DMatrix::zeros(2, 2)), vec![0, 1]);
        assert_eq!(hungarian(&DMatrix::from_element(3, 3, 7.0)), vec![0, 1, 2]);
        assert_eq!(hungarian(&DMatrix::zeros(2, 4)), vec![0, 1]);
        // Two identical estimates at equal distance from both true models.
        let est = DMatrix::from_column_slice(1, 2, &[0.0, 0.0]);
        let truth = DMatrix::from_column_slice(1, 2, &[-1.0, 1.0]);
        assert_eq!(sum_assignment(&est, &truth).unwrap().perm, vec![0, 1]);
    }
}
