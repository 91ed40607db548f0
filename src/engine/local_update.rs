//! One client's local computation in a round (SXY22 §4.2): the FedAvg steps
//! `G_i(θ) = θ − (η/n_i) φ(x_i)ᵀ(φ(x_i)θ − y_i)` applied `s` times, or the FedProx proximal step
//! solved with a cached Cholesky factor, and the cluster choice of eq. 8.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics::argmin;
use crate::params::{LocalSolver, Phase2Params};
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

/// Cached per-client Cholesky factors for FedProx.
#[derive(Clone, Debug)]
pub enum ProxFactor {
    /// Factor of `I_d + (η/n_i) φᵀφ` (used when `n_i ≥ d`).
    Primal(Cholesky<f64, Dyn>),
    /// Factor of `I_{n_i} + (η/n_i) φφᵀ` (used when `n_i < d`).
    Dual(Cholesky<f64, Dyn>),
}

/// The per-client FedProx factors, built once per (federation, η).
///
/// # Errors
/// [`FedmixError::NotPositiveDefinite`] naming the client (only possible with non-finite data).
pub fn prox_factors(fed: &Federation, eta: f64) -> Result<Vec<ProxFactor>> {
    (0..fed.num_clients())
        .map(|i| {
            let x = fed.x(i);
            let c = eta / fed.n(i) as f64;
            let (gram, primal) = if fed.n(i) >= fed.d() {
                (x * x.transpose(), true)
            } else {
                (x.tr_mul(&x), false)
            };
            let m = DMatrix::identity(gram.nrows(), gram.ncols()) + gram * c;
            let chol = Cholesky::new(m).ok_or_else(|| FedmixError::NotPositiveDefinite {
                what: format!("FedProx system I + (η/n_i)φᵀφ of client {i}"),
            })?;
            Ok(if primal {
                ProxFactor::Primal(chol)
            } else {
                ProxFactor::Dual(chol)
            })
        })
        .collect()
}

/// Client `i`'s local update of `theta` (FedAvg: `s` GD steps; FedProx: exact proximal step).
pub fn local_update(
    fed: &Federation,
    i: usize,
    theta: &DVector<f64>,
    p: &Phase2Params,
    prox: Option<&ProxFactor>,
) -> DVector<f64> {
    let x = fed.x(i);
    let y = fed.y(i);
    let c = p.eta / fed.n(i) as f64;
    match (p.local_solver, prox) {
        (LocalSolver::Fedprox, Some(f)) => {
            let rhs = theta + (x * y) * c;
            match f {
                ProxFactor::Primal(ch) => ch.solve(&rhs),
                ProxFactor::Dual(ch) => {
                    // (I + cφᵀφ)⁻¹ v = v − c φᵀ (I + cφφᵀ)⁻¹ φ v  (here φᵀ = x, φ = xᵀ)
                    let inner = ch.solve(&x.tr_mul(&rhs));
                    &rhs - (x * inner) * c
                }
            }
        }
        _ => gradient_steps(fed, i, theta, p.eta, p.local_steps, None),
    }
}

/// `steps` gradient steps of size `eta` from `start` on client `i`'s loss: on `F_i` alone
/// (`pull = None`: FedAvg's `G_i^s`, SXY22 §4.2, what [`local_update`] takes), or on the
/// proximal objective `F_i(w) + (μ/2)‖w − centre‖²` (`pull = Some((μ, centre))`: FedProx's
/// inexact local solver, Li et al. 2020 §3, and FedSoft's proximal local update, Ruan &
/// Joe-Wong 2022), each step at one point `w`:
///
/// ```text
/// w ← w − (η/n_i) φ_iᵀ(φ_i w − y_i) − ημ (w − centre)
/// ```
pub fn gradient_steps(
    fed: &Federation,
    i: usize,
    start: &DVector<f64>,
    eta: f64,
    steps: usize,
    pull: Option<(f64, &DVector<f64>)>,
) -> DVector<f64> {
    let (x, y) = (fed.x(i), fed.y(i));
    let step = eta / fed.n(i) as f64;
    let mut th = start.clone();
    let mut r = DVector::zeros(fed.n(i));
    let mut towards = pull.map(|_| DVector::zeros(start.len()));
    for _ in 0..steps {
        r.gemv_tr(1.0, &x, &th, 0.0);
        r -= &y;
        if let (Some((_, centre)), Some(t)) = (pull, towards.as_mut()) {
            t.copy_from(&th);
            *t -= centre;
        }
        th.gemv(-step, &x, &r, 1.0);
        if let (Some((mu, _)), Some(t)) = (pull, towards.as_ref()) {
            th.axpy(-eta * mu, t, 1.0);
        }
    }
    th
}

/// `∇F_i(θ) = (1/n_i) φ(x_i)ᵀ(φ(x_i)θ − y_i)`, the gradient of client `i`'s loss
/// `F_i(θ) = ‖y_i − φ(x_i)θ‖²/(2n_i)` (SXY22 §4.2's `L(θ, λ; D_i)` at a one-hot `λ`; IFCA
/// Algorithm 2 line 9; SR-FCA Algorithm 3).
pub fn client_gradient(fed: &Federation, i: usize, theta: &DVector<f64>) -> DVector<f64> {
    let x = fed.x(i);
    let mut r = x.tr_mul(theta);
    r -= &fed.y(i);
    let mut g = x * r;
    g /= fed.n(i) as f64;
    g
}

/// Client `i`'s cluster choice `ĵ = argmin_j F_i(θ_j)` (eq. 8, ties → lowest `j`) and
/// `∇F_i(θ_ĵ)`, from one pass over its data: the predictions `φ_iΘ` for all models give the
/// losses, and the chosen model's residual is reused for the gradient `φ_iᵀ r / n_i` (while the
/// client's block is still in cache). Same values as the eq. 8 assignment followed by [`client_gradient`]
/// up to rounding.
pub fn choice_and_gradient(
    fed: &Federation,
    i: usize,
    theta: &DMatrix<f64>,
) -> (usize, DVector<f64>) {
    let x = fed.x(i);
    let y = fed.y(i);
    let mut pred = x.tr_mul(theta); // n_i × k
    for mut col in pred.column_iter_mut() {
        col -= &y;
    }
    let losses: Vec<f64> = pred.column_iter().map(|r| r.norm_squared()).collect();
    let j = argmin(&losses);
    let mut g = x * pred.column(j);
    g /= fed.n(i) as f64;
    (j, g)
}

/// Client `i`'s model update `Δθ_i = LocalUpdate_i(θ) − θ` ([`local_update`]).
pub fn client_update(
    fed: &Federation,
    i: usize,
    theta: &DVector<f64>,
    p: &Phase2Params,
    prox: Option<&ProxFactor>,
) -> DVector<f64> {
    local_update(fed, i, theta, p, prox) - theta
}
