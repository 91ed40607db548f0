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

/// `max(a, b)` that propagates NaN (IEEE 754-2019 `maximum`).
///
/// `f64::max` returns the other operand when one is NaN, so `fold(0.0, f64::max)` over a list
/// holding a NaN statistic silently drops it and a later `worst ≤ bound` passes. Every fold or
/// running maximum whose result is compared with a tolerance uses this instead: a NaN anywhere
/// makes the result NaN, and `NaN ≤ bound` fails.
pub fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// `min(a, b)` that propagates NaN (IEEE 754-2019 `minimum`); see [`max_nan`].
pub fn min_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// `max|x|` over `values` (0 when empty), NaN when any entry is NaN.
///
/// nalgebra's `amax` (like `max`, `min` and `f64::max`) skips a NaN entry unless every entry is
/// NaN, so `(a − b).amax() < tol` passes when `a` holds a NaN; use this in such comparisons.
pub fn amax_nan<'a>(values: impl IntoIterator<Item = &'a f64>) -> f64 {
    values.into_iter().fold(0.0, |m, v| max_nan(m, v.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_propagating_extrema() {
        let nan = f64::NAN;
        assert!(max_nan(1.0, nan).is_nan() && max_nan(nan, 1.0).is_nan());
        assert!(min_nan(1.0, nan).is_nan() && min_nan(nan, 1.0).is_nan());
        assert_eq!(max_nan(1.0, 2.0).to_bits(), 2f64.to_bits());
        assert_eq!(min_nan(1.0, 2.0).to_bits(), 1f64.to_bits());
        assert!([0.5, nan, 3.0].iter().copied().fold(0.0, max_nan).is_nan());
        // What f64::max does instead: the NaN disappears.
        assert_eq!(
            [0.5, nan, 3.0]
                .iter()
                .copied()
                .fold(0.0, f64::max)
                .to_bits(),
            3f64.to_bits()
        );
        assert!(amax_nan(&[1.0, -4.0, nan]).is_nan());
        assert_eq!(amax_nan(&[1.0, -4.0]).to_bits(), 4f64.to_bits());
        assert_eq!(amax_nan(&[]).to_bits(), 0f64.to_bits());
    }
}
