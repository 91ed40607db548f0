//! SXY22 Theorem 1's parameter choices for a federation: `n_H`, `m`, `ℓ`, `T` from `N`, `p_min`
//! and `d`, with the constants the theory leaves open.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::params::{FedMdParams, Pairing, Phase1Variant, SubspaceMethod};
use serde::Serialize;

/// Constants for [`theorem1_choices`]; the theory fixes only their orders.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Theorem1Constants {
    /// `m = ⌈c_m d log N / p_min²⌉`.
    pub c_m: f64,
    /// `ℓ = ⌈c_ell k log N⌉`.
    pub c_ell: f64,
    /// `T₁ = ⌈c_t1 k log(Nd)⌉` (rounded up to even).
    pub c_t1: f64,
    /// `T₂ = ⌈c_t2 log(Nd)⌉`.
    pub c_t2: f64,
    /// `T = Θ(1)` iterations.
    pub iterations: usize,
    /// `ε < 1/4`.
    pub epsilon: f64,
}

/// Theorem 1's parameter choices for `fed`: `n_H = ⌈log N / p_min⌉`, `m ≥ p_min⁻² Ω̃(d)`,
/// `ℓ = Ω̃(k)`, `T₁ = Ω(k log(Nd))`, `T₂ = Ω(log(Nd))` with the stated constants, `p_min` the
/// empirical fraction of clients of the smallest cluster.
///
/// # Errors
/// [`FedmixError::Missing`] without labels; [`FedmixError::NotEnoughClients`] saying what is
/// missing when the federation is too small for these choices.
pub fn theorem1_choices(fed: &Federation, k: usize, c: &Theorem1Constants) -> Result<FedMdParams> {
    let labels = fed.require_labels("p_min in Theorem 1's choices")?;
    let p_min = crate::metrics::p_min(labels, k);
    if p_min <= 0.0 {
        return Err(FedmixError::invalid(
            "k",
            k,
            "some cluster has no clients (p_min = 0)",
        ));
    }
    let n = fed.total_samples() as f64;
    let d = fed.d() as f64;
    let log_n = n.ln().max(1.0);
    let log_nd = (n * d).ln().max(1.0);
    let anchors = (log_n / p_min).ceil() as usize;
    let m = (c.c_m * d * log_n / (p_min * p_min)).ceil() as usize;
    let ell = (c.c_ell * k as f64 * log_n).ceil() as usize;
    let t1 = ((c.c_t1 * k as f64 * log_nd).ceil() as usize)
        .next_multiple_of(2)
        .max(2);
    let t2 = (c.c_t2 * log_nd).ceil().max(1.0) as usize;
    let p = FedMdParams {
        variant: Phase1Variant::Faithful,
        k,
        anchors: anchors.max(k),
        iterations: c.iterations,
        t1,
        t2,
        m,
        ell,
        epsilon: c.epsilon,
        separation: None,
        alpha: 1.0,
        beta: 1.0,
        pairing: Pairing::FirstTwo,
        subspace: SubspaceMethod::OrthogonalIteration,
        anchor_min_samples: 2 * ell * c.iterations,
    };
    let big = (0..fed.num_clients())
        .filter(|&i| fed.n(i) >= 2 * ell * c.iterations)
        .count();
    if big < p.anchors {
        return Err(FedmixError::NotEnoughClients {
            purpose: format!(
                "Theorem 1 anchors with n_i ≥ 2ℓT = {}",
                2 * ell * c.iterations
            ),
            found: big,
            needed: p.anchors,
        });
    }
    let fresh = (0..fed.num_clients())
        .filter(|&i| fed.n(i) >= 2)
        .count()
        .saturating_sub(p.anchors);
    if fresh < m * c.iterations {
        return Err(FedmixError::NotEnoughClients {
            purpose: format!(
                "Theorem 1 fresh clients (m = {m} per iteration × T = {})",
                c.iterations
            ),
            found: fresh,
            needed: m * c.iterations,
        });
    }
    Ok(p)
}
