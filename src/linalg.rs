//! Dense linear-algebra building blocks for Phase 1 and the theory checks: sign-fixed QR,
//! uniformly random orthonormal frames, orthogonal iteration [GVL13 §8.2.4], power iteration,
//! and top-k singular subspaces by direct SVD.

use crate::error::{FedmixError, Result};
use crate::rng::Rng;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Thin QR `A = QR` with the signs fixed so that `diag(R) ≥ 0` (unique for full-rank `A`).
pub fn qr_positive(a: DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
    let qr = a.qr();
    let (mut q, mut r) = (qr.q(), qr.r());
    for j in 0..r.nrows().min(r.ncols()) {
        if r[(j, j)] < 0.0 {
            q.column_mut(j).neg_mut();
            r.row_mut(j).neg_mut();
        }
    }
    (q, r)
}

/// Orthonormal part of [`qr_positive`].
pub fn orthonormalize(a: DMatrix<f64>) -> DMatrix<f64> {
    qr_positive(a).0
}

/// A `d × k` matrix uniformly distributed on the Stiefel manifold: the Q factor (signs fixed so
/// `diag(R) > 0`) of a standard Gaussian matrix (SXY22 Algorithm 3, line 1).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] when `k > d` or `k = 0`.
pub fn random_orthonormal(d: usize, k: usize, rng: &mut Rng) -> Result<DMatrix<f64>> {
    if k == 0 || k > d {
        return Err(FedmixError::invalid(
            "k",
            k,
            format!("need 1 ≤ k ≤ d = {d} for a d × k frame"),
        ));
    }
    let g = DMatrix::from_fn(d, k, |_, _| rng.sample::<f64, _>(StandardNormal));
    Ok(orthonormalize(g))
}

/// Orthogonal iteration on a square `Y` [GVL13 §8.2.4]: `Q_{t+1} R_{t+1} = Y Q_t`, returning
/// every iterate `Q_0 … Q_t` (used by the Lemma 4 check).
pub fn orthogonal_iteration_path(
    y: &DMatrix<f64>,
    q0: &DMatrix<f64>,
    steps: usize,
) -> Vec<DMatrix<f64>> {
    let mut path = Vec::with_capacity(steps + 1);
    path.push(q0.clone());
    for t in 0..steps {
        let next = orthonormalize(y * &path[t]);
        path.push(next);
    }
    path
}

/// Orthogonal iteration: the last iterate of [`orthogonal_iteration_path`].
pub fn orthogonal_iteration(y: &DMatrix<f64>, q0: &DMatrix<f64>, steps: usize) -> DMatrix<f64> {
    let mut q = q0.clone();
    for _ in 0..steps {
        q = orthonormalize(y * &q);
    }
    q
}

/// Power iteration on a symmetric positive semidefinite `S` from `v0` for `steps` steps.
/// Returns the unit vector and its Rayleigh quotient `vᵀSv` (≈ `λ₁(S)`). A zero iterate
/// (S v = 0) stops early and returns the previous vector with quotient 0.
pub fn power_iteration(s: &DMatrix<f64>, v0: &DVector<f64>, steps: usize) -> (DVector<f64>, f64) {
    let mut v = v0.normalize();
    for _ in 0..steps {
        let w = s * &v;
        let norm = w.norm();
        if norm == 0.0 || !norm.is_finite() {
            break;
        }
        v = w / norm;
    }
    let lambda = v.dot(&(s * &v));
    (v, lambda)
}

/// Top-`k` left singular vectors of `y` (`d × k`) by direct SVD, sorted by singular value
/// (SXY22 App. C: "we implement all orthogonal iterations by direct singular value
/// decomposition"). Each column's sign is fixed so its largest-magnitude entry is positive.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] when `k` exceeds the dimension; non-convergence of the SVD
/// is reported as [`FedmixError::NotPositiveDefinite`]-free [`FedmixError::Divergence`].
pub fn top_k_left_singular(y: &DMatrix<f64>, k: usize) -> Result<DMatrix<f64>> {
    if k == 0 || k > y.nrows().min(y.ncols()) {
        return Err(FedmixError::invalid("k", k, "exceeds the matrix dimension"));
    }
    let svd =
        y.clone()
            .try_svd(true, false, f64::EPSILON, 10_000)
            .ok_or(FedmixError::Divergence {
                phase: "SVD of the subspace matrix".into(),
                round: 0,
            })?;
    let u = svd.u.ok_or(FedmixError::Divergence {
        phase: "SVD of the subspace matrix".into(),
        round: 0,
    })?;
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|&a, &b| {
        svd.singular_values[b]
            .total_cmp(&svd.singular_values[a])
            .then(a.cmp(&b))
    });
    let mut out = DMatrix::zeros(y.nrows(), k);
    for (c, &j) in order.iter().take(k).enumerate() {
        let mut col = u.column(j).clone_owned();
        let imax = col.iamax();
        if col[imax] < 0.0 {
            col.neg_mut();
        }
        out.set_column(c, &col);
    }
    Ok(out)
}

/// `‖P − P'‖₂` for the orthogonal projectors onto the column spans of orthonormal `a`, `b`.
pub fn projector_distance(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    let diff = a * a.transpose() - b * b.transpose();
    diff.singular_values().max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Purpose};

    #[test]
    fn random_frame_is_orthonormal() {
        let q = random_orthonormal(20, 4, &mut stream(1, Purpose::Subspace, 0)).unwrap();
        let err = (q.transpose() * &q - DMatrix::identity(4, 4)).amax();
        assert!(err < crate::prec::rounding(20, 1.0), "{err}");
    }

    #[test]
    fn orthogonal_iteration_finds_dominant_subspace() {
        // Y = diag(5, 4, 1, 0.5, …): dominant 2-dim subspace = e1, e2.
        let d = 8;
        let y = DMatrix::from_diagonal(&DVector::from_fn(d, |i, _| {
            [5.0, 4.0, 1.0][i.min(2)] / (1 + i.saturating_sub(2)) as f64
        }));
        let q0 = random_orthonormal(d, 2, &mut stream(2, Purpose::Subspace, 0)).unwrap();
        let q = orthogonal_iteration(&y, &q0, 60);
        let u = DMatrix::identity(d, 2);
        assert!(projector_distance(&q, &u) < 1e-12);
    }

    #[test]
    fn power_iteration_top_eigenvalue() {
        let s = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0, 2.0]);
        let (v, l) = power_iteration(&s, &DVector::from_vec(vec![1.0, 0.0]), 100);
        assert!((l - 3.0).abs() < 1e-12);
        assert!((v[0].abs() - v[1].abs()).abs() < 1e-12);
    }
}
