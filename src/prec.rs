//! Named numerical tolerances, in one place (statrs `prec.rs` style).
//!
//! Linear-algebra tolerances are scaled by problem size where that is the honest yardstick
//! (faer: `eps * n`).

/// Relative tolerance for exact algebraic identities evaluated in floating point
/// (SXY22 Lemma 1, eq. 11/12; federated vs centralised orthogonal iteration).
pub const IDENTITY_RTOL: f64 = 1e-10;

/// Machine epsilon of `f64`.
pub const EPS: f64 = f64::EPSILON;

/// Rounding tolerance for an operation of size `n` on values of magnitude `scale`:
/// `8 · eps · n · scale`.
pub fn rounding(n: usize, scale: f64) -> f64 {
    8.0 * EPS * (n.max(1) as f64) * scale
}

/// Relative difference `|a − b| / max(|a|, |b|, tiny)`.
pub fn rel_diff(a: f64, b: f64) -> f64 {
    let denom = a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
    (a - b).abs() / denom
}

/// Tolerance of `max|Q₀ᵀQ₀ − I|` for a supplied start `Q₀` of the federated orthogonal
/// iteration (`--q0`): loose enough for any float64 QR (≈ 1e-15), tight enough to reject a
/// non-orthonormal or transposed frame.
pub const ORTHONORMAL_TOL: f64 = 1e-8;

/// Convergence tolerance of the block Krylov eigensolver ([`crate::linalg::top_k_symmetric`])
/// used for Phase 1's subspace at large `d`: every chosen Ritz pair must have
/// `‖Yu − θu‖ ≤ KRYLOV_RESIDUAL_RTOL · |θ₁|`. By Davis–Kahan the subspace then lies within
/// `KRYLOV_RESIDUAL_RTOL · |θ₁| / gap` of the exact one — ≈ 1e-12 for the relative gaps of a few
/// percent seen in practice, the accuracy of a dense SVD of the same `Y` (`eps · d · ‖Y‖ / gap`).
pub const KRYLOV_RESIDUAL_RTOL: f64 = 1e-13;
