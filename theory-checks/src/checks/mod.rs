//! One module per lemma / theorem of SXY22 (§4, App. D–G), IFCA (§5) and SR-FCA (§4), grouped
//! in three families: [`linear_algebra`] (concentration, subspaces, spectra), [`phase_dynamics`]
//! (the algorithms' iterations, rates and misclustering) and [`data_model`] (the generator's
//! laws). Every module exposes `pub fn run(cfg: &CheckConfig) -> CheckRecord` and documents
//! what `cfg.sabotage` breaks.

pub mod data_model;
pub mod linear_algebra;
pub mod phase_dynamics;

use crate::framework::Check;

/// Every check, in report order: SXY22 Lemma 1 and the spectrum of its operator `P`, Lemma 4
/// (Phase 1's orthogonal iteration), then the linear-algebra and phase-dynamics families, then
/// the data model.
pub fn all() -> Vec<Check> {
    let first: Vec<Check> = vec![
        (
            "lemma1_global_iteration",
            phase_dynamics::lemma1_global_iteration::run,
        ),
        ("p_spectrum", linear_algebra::p_spectrum::run),
        (
            "lemma4_orthogonal_iteration_rate",
            linear_algebra::lemma4_orthogonal_iteration_rate::run,
        ),
    ];
    first
        .into_iter()
        .chain(linear_algebra::all())
        .chain(phase_dynamics::all())
        .chain(data_model::all())
        .collect()
}
