//! The constants SXY22's bounds are stated in: `χ²(n)` (§3), `γ` and `κ` (§4.2, from SXY21),
//! `ρ` (Theorem 2), `p_min` and the separation `Δ`.

use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use nalgebra::DMatrix;

/// Quantity skew `χ²(n) = M Σ_i (n_i/N)² − 1`: the χ² divergence of `p_n(i) = n_i/N` from the
/// uniform distribution on `[M]` (SXY22 §4.2, defined before Theorem 2; it enters `ν`, eq. 10);
/// 0 for balanced data. Computed as `(M Σ n_i² − N²) / N²` with the numerator and denominator
/// exact integers (rounded only when divided), so it is exactly 0 for equal sizes and never
/// negative (the floating-point form `M Σ (n_i/N)² − 1` gave −4.4e-16 on equal sizes).
pub fn chi2(sizes: &[usize]) -> f64 {
    let total: u128 = sizes.iter().map(|&n| n as u128).sum();
    if total == 0 {
        return f64::NAN;
    }
    let squares: u128 = sizes.iter().map(|&n| (n as u128) * (n as u128)).sum();
    let excess = sizes.len() as u128 * squares - total * total;
    excess as f64 / (total * total) as f64
}

/// `‖φ(x_i)‖₂² / n_i` for client `i` (spectral norm, via the smaller Gram matrix:
/// [`Federation::client_curvature`]).
pub fn client_curvature(fed: &Federation, client: usize) -> f64 {
    fed.client_curvature(client)
}

/// `γ = η max_i ‖φ(x_i)‖₂² / n_i` (SXY21), with the client attaining the max (the first, on
/// ties); the maximum is computed once per federation ([`Federation::max_curvature`]).
pub fn gamma(fed: &Federation, eta: f64) -> (f64, usize) {
    let (curv, arg) = fed.max_curvature();
    (eta * curv, arg)
}

/// `γ` or [`FedmixError::StepTooLarge`] when `γ ≥ 1` (divergent local steps).
pub fn checked_gamma(fed: &Federation, eta: f64) -> Result<f64> {
    if !(eta.is_finite() && eta > 0.0) {
        return Err(FedmixError::invalid("eta", eta, "must be finite and > 0"));
    }
    let (g, client) = gamma(fed, eta);
    // Written so that a NaN γ is refused too.
    if !(g < 1.0) {
        return Err(FedmixError::StepTooLarge {
            eta,
            gamma: g,
            eta_max: eta / g,
            client,
        });
    }
    Ok(g)
}

/// `κ = sγ / (1 − (1−γ)^s)` for FedAvg with `s` local steps (SXY21) (→ 1 as γ → 0).
///
/// Defined by the formula wherever its denominator is positive, also for `γ ≥ 1` (outside
/// SXY21's step-size condition `γ < 1`, which the library's runs refuse through
/// [`checked_gamma`]): at `s = 1`, `κ = 1` for every `γ`. Where `(1−γ)^s ≥ 1` (`γ ≥ 2`, `s`
/// even) the lower bound `s/κ ≤ λ(P_i)` it expresses is vacuous, and `κ = ∞`. A NaN `γ` gives NaN.
pub fn kappa_fedavg(gamma: f64, s: usize) -> f64 {
    let s_f = s as f64;
    if gamma == 0.0 {
        return 1.0;
    }
    let denom = if gamma < 1.0 {
        // 1 − (1−γ)^s without cancellation for small γ.
        -(s_f * (-gamma).ln_1p()).exp_m1()
    } else {
        // (1−γ) ≤ 0: no cancellation; an integer power of a negative base is exact in sign.
        1.0 - (1.0 - gamma).powf(s_f)
    };
    if denom <= 0.0 {
        f64::INFINITY
    } else {
        s_f * gamma / denom
    }
}

/// `κ = 1 + γ` for FedProx (SXY21).
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
