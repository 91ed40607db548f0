//! One module per lemma / theorem of SXY22 (§4, App. D–G), IFCA (§5) and SR-FCA (§4). Every
//! module exposes `pub fn run(cfg:
//! &CheckConfig) -> CheckRecord` and documents what `cfg.sabotage` breaks.

pub mod generator_laws;
pub mod lemma1_global_iteration;
pub mod lemma4_orthogonal_iteration_rate;
pub mod linear_algebra;
pub mod p_spectrum;
pub mod phase_dynamics;

use crate::Check;

/// Every check, in report order.
pub fn all() -> Vec<Check> {
    let core: Vec<Check> = vec![
        ("lemma1_global_iteration", lemma1_global_iteration::run),
        ("p_spectrum", p_spectrum::run),
        (
            "lemma4_orthogonal_iteration_rate",
            lemma4_orthogonal_iteration_rate::run,
        ),
    ];
    core.into_iter()
        .chain(linear_algebra::all())
        .chain(phase_dynamics::all())
        .chain(std::iter::once::<Check>((
            "generator_laws",
            generator_laws::run,
        )))
        .collect()
}
