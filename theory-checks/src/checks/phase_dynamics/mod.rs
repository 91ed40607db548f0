//! Checks of the phase_dynamics group: Phase 1 (Prop. 2, Theorem 1) and Phase 2 / clustering
//! (Lemma 1's global iteration, Lemma 10, eq. 32, Lemma 9, Theorem 2, Theorem 3) of SXY22, the
//! exact first-order contraction constants, and the baselines' guarantees
//! (IFCA Theorem 1, SR-FCA Theorem 4.8). Each module:
//! `pub fn run(cfg: &CheckConfig) -> CheckRecord`; [`support`] holds their shared pieces.

pub mod eq32_vc_clustering_deviation;
pub mod exact_contraction_constants;
pub mod ifca_theorem1_contraction;
pub mod lemma10_misclustering_probability;
pub mod lemma11_subset_norms;
pub mod lemma1_global_iteration;
pub mod lemma9_sign_patterns;
pub mod prop2_moment_descent_contraction;
pub mod srfca_refine_misclustering;
pub mod support;
pub mod theorem1_phase1_from_any_init;
pub mod theorem2_misclustering_term;
pub mod theorem2_phase2_contraction;
pub mod theorem3_final_error;

use crate::framework::Check;

/// The checks of this group, in report order.
pub fn all() -> Vec<Check> {
    vec![
        (
            "prop2_moment_descent_contraction",
            prop2_moment_descent_contraction::run,
        ),
        (
            "theorem1_phase1_from_any_init",
            theorem1_phase1_from_any_init::run,
        ),
        (
            "lemma10_misclustering_probability",
            lemma10_misclustering_probability::run,
        ),
        (
            "eq32_vc_clustering_deviation",
            eq32_vc_clustering_deviation::run,
        ),
        ("lemma9_sign_patterns", lemma9_sign_patterns::run),
        (
            "theorem2_phase2_contraction",
            theorem2_phase2_contraction::run,
        ),
        (
            "theorem2_misclustering_term",
            theorem2_misclustering_term::run,
        ),
        ("theorem3_final_error", theorem3_final_error::run),
        ("lemma11_subset_norms", lemma11_subset_norms::run),
        ("ifca_theorem1_contraction", ifca_theorem1_contraction::run),
        (
            "srfca_refine_misclustering",
            srfca_refine_misclustering::run,
        ),
        (
            "exact_contraction_constants",
            exact_contraction_constants::run,
        ),
    ]
}
