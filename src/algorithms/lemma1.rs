//! SXY22 Lemma 1: the Phase 2 global iteration in closed form (eq. 11) and the error
//! decomposition (eq. 12), as dense matrices — for tests and theory checks on small federations.
//!
//! Legend (stacked over all clients, `φ(x) ∈ R^{N×d}`, `y ∈ R^N`):
//! - `P = diag(P_i)`, `P_i = Σ_{l=0}^{s−1} (I − η φ_iφ_iᵀ/n_i)^l` (FedAvg) or
//!   `P_i = (I + η φ_iφ_iᵀ/n_i)⁻¹` (FedProx), `n_i × n_i`;
//! - `B = (1/N) φ(x)ᵀ P` (`d × N`);
//! - `Λ_{j,t} = diag(λ_{ij,t} I_{n_i})`, `Λ_j` the true-label version, `E_{j,t} = Λ_{j,t} − Λ_j`;
//! - `K_j = B Λ_j φ(x)`.
//!
//! Eq. 11: `θ_{j,t} = θ_{j,t−1} − η B Λ_{j,t} (φ(x) θ_{j,t−1} − y)`.
//! Eq. 12: `θ_{j,t} − θ*_j = (I − ηK_j)(θ_{j,t−1} − θ*_j) − ηB E_{j,t}(φ(x)θ_{j,t−1} − y) + ηBΛ_jζ`.
#![allow(non_snake_case)]

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{LocalSolver, Phase2Params};
use nalgebra::{Cholesky, DMatrix, DVector};

/// `P_i` for client `i` (`n_i × n_i`).
///
/// # Errors
/// [`FedmixError::NotPositiveDefinite`] for FedProx with non-finite data.
pub fn p_block(fed: &Federation, i: usize, p: &Phase2Params) -> Result<DMatrix<f64>> {
    let x = fed.x(i);
    let n = fed.n(i);
    let c = p.eta / n as f64;
    let gram = x.tr_mul(&x); // φ_i φ_iᵀ, n_i × n_i
    let id = DMatrix::<f64>::identity(n, n);
    match p.local_solver {
        LocalSolver::Fedavg => {
            let step = &id - gram * c;
            let mut power = id.clone();
            let mut sum = DMatrix::zeros(n, n);
            for _ in 0..p.local_steps {
                sum += &power;
                power = &power * &step;
            }
            Ok(sum)
        }
        LocalSolver::Fedprox => {
            let chol =
                Cholesky::new(&id + gram * c).ok_or_else(|| FedmixError::NotPositiveDefinite {
                    what: format!("I + (η/n_i)φφᵀ of client {i}"),
                })?;
            Ok(chol.solve(&id))
        }
    }
}

/// The stacked operators of Lemma 1 for one federation and step configuration.
#[derive(Clone, Debug)]
pub struct GlobalOperator {
    /// `φ(x)`, `N × d`.
    pub phi: DMatrix<f64>,
    /// `y`, `N`.
    pub y: DVector<f64>,
    /// `B = (1/N) φᵀ P`, `d × N`.
    pub B: DMatrix<f64>,
    /// Step size.
    pub eta: f64,
}

impl GlobalOperator {
    /// Build `φ`, `y`, `P` and `B` densely (memory `O(N d + Σ n_i²)`).
    ///
    /// # Errors
    /// As [`p_block`].
    pub fn new(fed: &Federation, p: &Phase2Params) -> Result<Self> {
        let n_total = fed.total_samples();
        let phi = fed.features().transpose();
        let mut B = DMatrix::zeros(fed.d(), n_total);
        for i in 0..fed.num_clients() {
            let off = fed.offsets()[i];
            let Pi = p_block(fed, i, p)?;
            let block = fed.x(i) * Pi / n_total as f64;
            B.columns_mut(off, fed.n(i)).copy_from(&block);
        }
        Ok(Self {
            phi,
            y: fed.responses().clone(),
            B,
            eta: p.eta,
        })
    }

    /// Eq. 11 for cluster model `theta_prev` with the diagonal `lambda` of `Λ_{j,t}`.
    pub fn eq11(&self, theta_prev: &DVector<f64>, lambda: &DVector<f64>) -> DVector<f64> {
        let resid = &self.phi * theta_prev - &self.y;
        theta_prev - &self.B * resid.component_mul(lambda) * self.eta
    }

    /// `K_j = B Λ_j φ(x)` for the diagonal `lambda` of `Λ_j`.
    pub fn K(&self, lambda: &DVector<f64>) -> DMatrix<f64> {
        let mut scaled = self.phi.clone();
        for (mut row, l) in scaled.row_iter_mut().zip(lambda.iter()) {
            row *= *l;
        }
        &self.B * scaled
    }

    /// The three terms of eq. 12 for cluster `j`: `(I − ηK_j)(θ_{t−1} − θ*_j)`,
    /// `−ηB E_{j,t}(φθ_{t−1} − y)`, `ηBΛ_jζ`, with `ζ = y − φ θ*_{z}` the noise vector.
    pub fn eq12(
        &self,
        theta_prev: &DVector<f64>,
        theta_star_j: &DVector<f64>,
        lambda_t: &DVector<f64>,
        lambda_true: &DVector<f64>,
        zeta: &DVector<f64>,
    ) -> [DVector<f64>; 3] {
        let d = theta_prev.len();
        let K = self.K(lambda_true);
        let contraction = (DMatrix::identity(d, d) - K * self.eta) * (theta_prev - theta_star_j);
        let e = lambda_t - lambda_true;
        let resid = &self.phi * theta_prev - &self.y;
        let misclustering = -(&self.B * resid.component_mul(&e)) * self.eta;
        let noise = &self.B * zeta.component_mul(lambda_true) * self.eta;
        [contraction, misclustering, noise]
    }
}

/// Diagonal of `Λ_j` for labels `labels` (1 on the samples of clients labelled `j`).
pub fn lambda_diag(fed: &Federation, labels: &[usize], j: usize) -> DVector<f64> {
    let mut l = DVector::zeros(fed.total_samples());
    for (i, &z) in labels.iter().enumerate() {
        if z == j {
            l.rows_mut(fed.offsets()[i], fed.n(i)).fill(1.0);
        }
    }
    l
}

/// The noise vector `ζ = y − φ(x) θ*_{z}` stacked over clients.
///
/// # Errors
/// Missing labels or `θ*`.
pub fn noise_vector(fed: &Federation) -> Result<DVector<f64>> {
    let labels = fed.require_labels("the noise vector ζ")?;
    let ts = fed.require_theta_star("the noise vector ζ")?;
    let mut z = fed.responses().clone();
    for (i, &c) in labels.iter().enumerate() {
        let pred = fed.x(i).tr_mul(&ts.column(c));
        let mut rows = z.rows_mut(fed.offsets()[i], fed.n(i));
        rows -= pred;
    }
    Ok(z)
}
