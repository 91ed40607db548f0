//! SXY22 Algorithm 3 — federated orthogonal iteration, at message level.
//!
//! Client `i` holds a local matrix `M_i = A_i B_iᵀ` (`A_i, B_i ∈ R^{d×r_i}`; for Algorithm 3's
//! pairs `(a_ij, b_ij)`, `A_i = [a_i1 … a_in_i]/n_i`, `B_i = [b_i1 … b_in_i]`) and an aggregation
//! weight `w_i` (`n_i / Σ n`). The PS wants the top-k left singular subspace of
//! `Y = Σ_i w_i M_i` without ever forming it:
//!
//! ```text
//! PS: Q₀ uniformly random orthonormal (d × k)
//! for t = 0..T−1:  PS broadcasts Q_t
//!    t even: client i sends M_iᵀ Q_t = B_i (A_iᵀ Q_t);  PS: Q_{t+1} = Σ w_i M_iᵀ Q_t      (= Yᵀ Q_t)
//!    t odd:  client i sends M_i Q_t  = A_i (B_iᵀ Q_t);  PS: Q_{t+1} R_{t+1} = Σ w_i M_i Q_t (QR)
//! ```
//! Two steps are one orthogonal-iteration step on `Y Yᵀ`. Each step costs one broadcast of
//! `d·k` floats to every client and one upload of `d·k` floats from each.

use crate::engine::recorder::Comm;
use crate::error::{FedmixError, Result};
use crate::linalg::orthonormalize;
use nalgebra::DMatrix;

/// A client's local matrix `M_i = A_i B_iᵀ` and its aggregation weight.
#[derive(Clone, Debug)]
pub struct ClientMoment {
    /// `A_i`, `d × r_i`.
    pub a: DMatrix<f64>,
    /// `B_i`, `d × r_i`.
    pub b: DMatrix<f64>,
    /// `w_i`.
    pub weight: f64,
}

impl ClientMoment {
    /// The client's message on an odd step: `M_i Q = A_i (B_iᵀ Q)`.
    pub fn apply(&self, q: &DMatrix<f64>) -> DMatrix<f64> {
        &self.a * self.b.tr_mul(q)
    }
    /// The client's message on an even step: `M_iᵀ Q = B_i (A_iᵀ Q)`.
    pub fn apply_transpose(&self, q: &DMatrix<f64>) -> DMatrix<f64> {
        &self.b * self.a.tr_mul(q)
    }
}

/// The centralised matrix `Y = Σ_i w_i A_i B_iᵀ` (`d × d`), formed by one product of the
/// stacked factors.
pub fn assemble(clients: &[ClientMoment], d: usize) -> DMatrix<f64> {
    let r: usize = clients.iter().map(|c| c.a.ncols()).sum();
    let (mut a, mut b) = (DMatrix::zeros(d, r), DMatrix::zeros(d, r));
    let mut off = 0;
    for c in clients {
        let w = c.a.ncols();
        a.columns_mut(off, w).copy_from(&(&c.a * c.weight));
        b.columns_mut(off, w).copy_from(&c.b);
        off += w;
    }
    a * b.transpose()
}

/// Run Algorithm 3 for `steps` (even) steps from `q0`, adding the traffic to `comm`.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] for odd `steps`, no clients, or a `q0` of the wrong height.
pub fn federated_orthogonal_iteration(
    clients: &[ClientMoment],
    q0: &DMatrix<f64>,
    steps: usize,
    comm: &mut Comm,
) -> Result<DMatrix<f64>> {
    if steps % 2 == 1 {
        return Err(FedmixError::invalid(
            "t1",
            steps,
            "Algorithm 3 needs an even number of steps",
        ));
    }
    if clients.is_empty() {
        return Err(FedmixError::NotEnoughClients {
            purpose: "federated orthogonal iteration".into(),
            found: 0,
            needed: 1,
        });
    }
    if let Some(c) = clients
        .iter()
        .find(|c| c.a.nrows() != q0.nrows() || c.b.nrows() != q0.nrows())
    {
        return Err(FedmixError::DimensionMismatch {
            what: "client moment rows vs Q₀ rows (d)".into(),
            expected: q0.nrows(),
            found: c.a.nrows(),
        });
    }
    let (d, k) = (q0.nrows(), q0.ncols());
    let mut q = q0.clone();
    for t in 0..steps {
        let mut sum = DMatrix::zeros(d, k);
        for c in clients {
            let msg = if t % 2 == 0 {
                c.apply_transpose(&q)
            } else {
                c.apply(&q)
            };
            sum += msg * c.weight;
        }
        q = if t % 2 == 0 { sum } else { orthonormalize(sum) };
        *comm = comm.merge(Comm::broadcast_and_upload(
            clients.len() as u64,
            (d * k) as u64,
            (d * k) as u64,
        ));
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::random_orthonormal;
    use crate::seed_streams::{stream, Purpose};
    use rand::RngExt;

    #[test]
    fn federated_equals_centralised() {
        let mut rng = stream(9, Purpose::Sampling, 0);
        let d = 12;
        let clients: Vec<ClientMoment> = (0..5)
            .map(|i| ClientMoment {
                a: DMatrix::from_fn(d, i + 2, |_, _| rng.random::<f64>() - 0.5),
                b: DMatrix::from_fn(d, i + 2, |_, _| rng.random::<f64>() - 0.5),
                weight: (i + 1) as f64 / 15.0,
            })
            .collect();
        let y = assemble(&clients, d);
        let q0 = random_orthonormal(d, 3, &mut stream(9, Purpose::Subspace, 0)).unwrap();
        let mut comm = Comm::default();
        let fed = federated_orthogonal_iteration(&clients, &q0, 8, &mut comm).unwrap();
        // Centralised: Q_{t+1} = Yᵀ Q_t (even), QR(Y Q_t) (odd).
        let mut q = q0.clone();
        for t in 0..8 {
            q = if t % 2 == 0 {
                y.transpose() * &q
            } else {
                orthonormalize(&y * &q)
            };
        }
        let diff = crate::prec::amax_nan(&(&fed - &q));
        assert!(diff < 1e-12, "federated vs centralised: {diff}");
        // Each of the 8 steps broadcasts the d × k iterate to the 5 clients and receives a d × k
        // message from each (SXY22 Algorithm 3).
        assert_eq!(comm.floats_up, 8 * 5 * (d as u64) * 3);
        assert_eq!(comm.floats_down, 8 * 5 * (d as u64) * 3);
        assert_eq!((comm.messages, comm.participants), (8 * 2 * 5, 5));
    }
}
