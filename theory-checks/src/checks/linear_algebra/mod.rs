//! Checks of the linear-algebra group (SXY22 Lemma 4's orthogonal-iteration rate, Lemmas 3, 5,
//! 6, 13, 14 of App. D.4–G, Prop. 1 of App. D.1, the spectrum of Lemma 1's operator `P`, and the
//! Phase 2 operator lemmas 7 and 8 of App. E.2). Each module:
//! `pub fn run(cfg: &CheckConfig) -> CheckRecord`; shared pieces (a mixture model with known
//! `Σ_j`, the rate shapes `ξ₁`, `ξ₂`, fit and figure helpers) are in [`common`], the
//! calibrate-then-validate sweeps of Lemmas 3, 6 and Prop. 1 in [`sweep`].
//!
//! - [`lemma5_gap_free_projection`]: Lemma 5, `3√ε` without an eigengap (exact constant).
//! - [`lemma14_random_subspace_angle`]: Lemma 14, `P[σ_min(UᵀQ) small] ≤ Cε` (binomial tests).
//! - [`lemma13_truncated_matrix_bernstein`]: Lemma 13, unbounded sub-exponential vectors.
//! - [`lemma3_subspace_matrix_concentration`]: Lemma 3, `‖Y − E Y‖ ≲ (δ² + σ²)ξ₁`.
//! - [`lemma6_anchor_matrix_concentration`]: Lemma 6, `‖A − E A‖ ≲ (‖θ* − θ‖² + σ²)ξ₂`.
//! - [`prop1_subspace_projection`]: Prop. 1, projection residual `≲ (δ² + σ²)ξ₁/p_j`.
//! - [`lemma7_k_spectrum`]: Lemma 7, the spectrum of `K_j` (exact sandwich + constant).
//! - [`lemma8_noise_term`]: Lemma 8, `‖BΛ_jζ‖² ≲ σ² s d ‖K_j‖/N`.

pub mod common;
pub mod lemma13_truncated_matrix_bernstein;
pub mod lemma14_random_subspace_angle;
pub mod lemma3_subspace_matrix_concentration;
pub mod lemma4_orthogonal_iteration_rate;
pub mod lemma5_gap_free_projection;
pub mod lemma6_anchor_matrix_concentration;
pub mod lemma7_k_spectrum;
pub mod lemma8_noise_term;
pub mod p_spectrum;
pub mod prop1_subspace_projection;
pub mod sweep;

use crate::framework::Check;

/// The checks of this group, in report order.
pub fn all() -> Vec<Check> {
    vec![
        (
            "lemma5_gap_free_projection",
            lemma5_gap_free_projection::run,
        ),
        (
            "lemma14_random_subspace_angle",
            lemma14_random_subspace_angle::run,
        ),
        (
            "lemma13_truncated_matrix_bernstein",
            lemma13_truncated_matrix_bernstein::run,
        ),
        (
            "lemma3_subspace_matrix_concentration",
            lemma3_subspace_matrix_concentration::run,
        ),
        (
            "lemma6_anchor_matrix_concentration",
            lemma6_anchor_matrix_concentration::run,
        ),
        ("prop1_subspace_projection", prop1_subspace_projection::run),
        ("lemma7_k_spectrum", lemma7_k_spectrum::run),
        ("lemma8_noise_term", lemma8_noise_term::run),
    ]
}
