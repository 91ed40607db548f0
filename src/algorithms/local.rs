//! The local baseline (SR-FCA §5's "Local", IFCA §6.2's local model scheme): every client fits
//! its own model on its own data, with no communication. The same estimate is the local ERM of
//! one-shot clustering (IFCA Algorithm 1, step 1).
//!
//! - `ridge = 0` (default): the minimum-norm least-squares solution `θ_i = φ_i⁺ y_i`
//!   (Moore–Penrose pseudo-inverse via the SVD of `φ_i`). Decision (the papers do not say which
//!   ERM): with `n_i < d` plain least squares is underdetermined; the min-norm solution is the
//!   one gradient descent from 0 converges to.
//! - `ridge = λ > 0`: `argmin_θ ‖y_i − φ_iθ‖²/(2n_i) + (λ/2)‖θ‖²`, i.e. the normal equations
//!   `(φ_iᵀφ_i/n_i + λI) θ = φ_iᵀy_i/n_i`, solved by Cholesky on the smaller Gram matrix (the
//!   `n_i × n_i` one through the push-through identity when `n_i < d`).
//!
//! Parameter: `local_ridge` (λ ≥ 0, default 0).

use crate::engine::contract::{Algorithm, RunOutput, Termination};
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::engine::summary::RunSummary;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::AlgorithmKind;
use nalgebra::{Cholesky, DMatrix, DVector};
use serde::Serialize;

/// Client `i`'s local estimate: min-norm least squares (`ridge = 0`) or ridge regression.
///
/// Decision: singular values `≤ ε · max(n_i, d) · σ₁` count as zero (the LAPACK / numpy
/// `lstsq` rank rule), so exactly collinear features give the min-norm solution rather than an
/// amplified rounding error.
///
/// # Errors
/// [`FedmixError::Divergence`] if the SVD fails to converge, [`FedmixError::NotPositiveDefinite`]
/// if the ridge system is not (only with non-finite data), `local_ridge` < 0.
pub fn local_solution(fed: &Federation, i: usize, ridge: f64) -> Result<DVector<f64>> {
    if !(ridge.is_finite() && ridge >= 0.0) {
        return Err(FedmixError::invalid(
            "local_ridge",
            ridge,
            "must be finite and ≥ 0",
        ));
    }
    let x = fed.x(i); // φ_iᵀ, d × n_i
    let y = fed.y(i);
    if ridge > 0.0 {
        return ridge_solution(fed, i, ridge);
    }
    let phi = x.transpose(); // n_i × d
    let svd = phi
        .try_svd(true, true, f64::EPSILON, 10_000)
        .ok_or(FedmixError::Divergence {
            phase: format!("SVD of client {i}'s features (local least squares)"),
            round: 0,
        })?;
    let smax = svd.singular_values.max();
    let tol = f64::EPSILON * fed.n(i).max(fed.d()) as f64 * smax;
    svd.solve(&y, tol).map_err(|_| FedmixError::Divergence {
        phase: format!("SVD solve of client {i} (local least squares)"),
        round: 0,
    })
}

/// `(φᵀφ/n + λI)⁻¹ φᵀy/n`, via the `d × d` system when `n ≥ d`, else
/// `φᵀ(φφᵀ/n + λI)⁻¹ y/n` (push-through identity).
fn ridge_solution(fed: &Federation, i: usize, ridge: f64) -> Result<DVector<f64>> {
    let x = fed.x(i);
    let y = fed.y(i);
    let n = fed.n(i) as f64;
    let not_pd = || FedmixError::NotPositiveDefinite {
        what: format!("ridge system of client {i}"),
    };
    if fed.n(i) >= fed.d() {
        let a = (x * x.transpose()) / n + DMatrix::identity(fed.d(), fed.d()) * ridge;
        let chol = Cholesky::new(a).ok_or_else(not_pd)?;
        Ok(chol.solve(&((x * y) / n)))
    } else {
        let a = x.tr_mul(&x) / n + DMatrix::identity(fed.n(i), fed.n(i)) * ridge;
        let chol = Cholesky::new(a).ok_or_else(not_pd)?;
        Ok(x * chol.solve(&(y / n)))
    }
}

/// Every client's local estimate, as the columns of a `d × M` matrix.
///
/// # Errors
/// As [`local_solution`].
pub fn local_models(fed: &Federation, ridge: f64) -> Result<DMatrix<f64>> {
    let mut w = DMatrix::zeros(fed.d(), fed.num_clients());
    for i in 0..fed.num_clients() {
        w.set_column(i, &local_solution(fed, i, ridge)?);
    }
    Ok(w)
}

/// The local baseline (`local`): `θ̂` is `d × M` (column `i` is client `i`'s own model) and
/// client `i`'s label is `i`. One trace row, no communication.
///
/// Its summary's `per_client_error` is the meaningful accuracy figure: `distance` matches the
/// best `k` of the `M` local models to `θ*`, which flatters this baseline.
#[derive(Clone, Debug)]
pub struct Local {
    /// Parameters (`local_ridge`).
    pub params: crate::params::Valid<LocalParams>,
}

impl Algorithm for Local {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::Local
    }
    fn run(&self, fed: &Federation, _seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        let ridge = self.params.ridge;
        let theta_hat = local_models(fed, ridge)?;
        let labels: Vec<usize> = (0..fed.num_clients()).collect();
        rec.model_round(
            fed,
            Phase::Phase2,
            &theta_hat,
            Some(&labels),
            Comm::default(),
        );
        let local = LocalSummary {
            ridge,
            estimator: if ridge > 0.0 { "ridge" } else { "min-norm least squares" },
            note: "theta_hat holds one model per client; compare per_client_error (distance matches the best k of M local models)",
        };
        Ok(RunOutput {
            theta_hat,
            labels,
            termination: Termination::Completed,
            summary: RunSummary::new().with("local", local),
        })
    }
}

/// The local baseline's estimator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocalSummary {
    /// Ridge penalty (0: min-norm least squares).
    pub ridge: f64,
    /// "ridge" or "min-norm least squares".
    pub estimator: &'static str,
    /// How to read its distance.
    pub note: &'static str,
}

/// Validated parameters of the local baseline (`local`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LocalParams {
    /// Ridge `λ ≥ 0` of the local estimate (0 = min-norm least squares).
    pub ridge: f64,
}

crate::params::groups::bind_keys! {
    LocalParams { ridge: local_ridge }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::FederationParts;

    fn fed_from(x: DMatrix<f64>, y: DVector<f64>) -> Federation {
        let n = x.ncols();
        Federation::new(FederationParts {
            features: x,
            responses: y,
            sizes: vec![n],
            ..FederationParts::default()
        })
        .unwrap()
    }

    /// Gaussian features and responses (full rank with probability 1).
    fn det(d: usize, n: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
        use rand::RngExt;
        let mut rng = crate::seed_streams::stream(seed, crate::seed_streams::Purpose::Replicate, 0);
        let mut g = || rng.sample::<f64, _>(rand_distr::StandardNormal);
        let x = DMatrix::from_fn(d, n, |_, _| g());
        let y = DVector::from_fn(n, |_, _| g());
        (x, y)
    }

    /// n < d (full row rank): the min-norm solution is `φᵀ(φφᵀ)⁻¹y`; it interpolates and
    /// lies in the row space. n > d: it is `(φᵀφ)⁻¹φᵀy`.
    #[test]
    fn min_norm_equals_the_pseudo_inverse_closed_forms() {
        let (x, y) = det(6, 4, 1);
        let fed = fed_from(x.clone(), y.clone());
        let th = local_solution(&fed, 0, 0.0).unwrap();
        let reference = &x * (x.tr_mul(&x)).try_inverse().unwrap() * &y;
        assert!(
            crate::prec::amax_nan(&(&th - &reference)) < 1e-12,
            "{}",
            crate::prec::amax_nan(&(&th - &reference))
        );
        assert!(crate::prec::amax_nan(&(x.tr_mul(&th) - &y)) < 1e-12);
        let (x, y) = det(3, 9, 2);
        let fed = fed_from(x.clone(), y.clone());
        let th = local_solution(&fed, 0, 0.0).unwrap();
        let reference = (&x * x.transpose()).try_inverse().unwrap() * (&x * &y);
        assert!(crate::prec::amax_nan(&(&th - &reference)) < 1e-12);
    }

    /// Rank-deficient features (a duplicated coordinate): the solution satisfies the normal
    /// equations and has no component in the null space (equal weight on the duplicates).
    #[test]
    fn min_norm_with_collinear_features() {
        let (mut x, y) = det(4, 8, 3);
        let row = x.row(0).clone_owned();
        x.set_row(3, &row);
        let fed = fed_from(x.clone(), y.clone());
        let th = local_solution(&fed, 0, 0.0).unwrap();
        let normal = &x * (x.tr_mul(&th) - &y);
        assert!(
            crate::prec::amax_nan(&normal) < 1e-10,
            "{}",
            crate::prec::amax_nan(&normal)
        );
        assert!((th[0] - th[3]).abs() < 1e-10, "{} vs {}", th[0], th[3]);
    }

    #[test]
    fn ridge_solves_its_normal_equations() {
        for (d, n) in [(6, 4), (3, 9)] {
            let (x, y) = det(d, n, 4);
            let fed = fed_from(x.clone(), y.clone());
            let lambda = 0.3;
            let th = local_solution(&fed, 0, lambda).unwrap();
            let lhs = (&x * x.tr_mul(&th)) / n as f64 + &th * lambda;
            let rhs = (&x * &y) / n as f64;
            assert!(crate::prec::amax_nan(&(lhs - rhs)) < 1e-12, "d={d} n={n}");
        }
    }

    #[test]
    fn negative_ridge_is_typed() {
        let (x, y) = det(3, 4, 5);
        let fed = fed_from(x, y);
        assert!(matches!(
            local_solution(&fed, 0, -1.0),
            Err(FedmixError::InvalidParameter { .. })
        ));
    }
}
