//! One module per lemma / theorem (SPEC §7). Every module exposes `pub fn run(cfg:
//! &CheckConfig) -> CheckRecord` and documents what `cfg.sabotage` breaks.

pub mod lemma1_global_iteration;
pub mod linear_algebra;
pub mod phase_dynamics;
pub mod lemma4_orthogonal_iteration_rate;
pub mod p_spectrum;

use crate::Check;

/// Every check, in report order.
pub fn all() -> Vec<Check> {
    vec![
        ("lemma1_global_iteration", lemma1_global_iteration::run),
        ("p_spectrum", p_spectrum::run),
        ("lemma4_orthogonal_iteration_rate", lemma4_orthogonal_iteration_rate::run),
    ]
    .into_iter()
    .chain(linear_algebra::all())
    .chain(phase_dynamics::all())
    .collect()
}
