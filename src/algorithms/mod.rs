//! The algorithms, one file per paper algorithm.
//!
//! - [`fedmd`]: SXY22 Phase 1 (Algorithm 1), both variants.
//! - [`orthogonal_iteration`]: SXY22 Algorithm 3 (federated orthogonal iteration).
//! - [`fedx_clustering`]: SXY22 Phase 2 (FedAvg/FedProx + clustering, Algorithm 2).
//! - [`lemma1`]: SXY22 Lemma 1 closed form (eq. 11/12).
//! - [`two_phase`]: the full pipeline and the `Algorithm` implementations.
//! - [`replicates`]: the one client pass every round is made of, batched over replicates
//!   (restarts, learning-rate grids, several runs over the same data) — identical results.
//!
//! Baselines (those of SXY22 App. C, IFCA §6 and SR-FCA §5): [`ifca`] (IFCA Algorithm 2,
//! options I/II, and the official-code mode), [`fedavg`] (vanilla FedAvg/FedProx), [`local`]
//! (per-client least squares / ridge), [`one_shot`] (local ERM + [`kmeans`] + FedAvg in
//! clusters), [`oracle_labels`], [`sr_fca`] (SRFCA Algorithms 1–4), [`cfl`] (Sattler et al.),
//! with [`participation`] sampling.

pub mod cfl;
pub mod fedavg;
pub mod fedmd;
pub mod fedx_clustering;
pub mod ifca;
pub mod kmeans;
pub mod lemma1;
pub mod local;
pub mod one_shot;
pub mod oracle_labels;
pub mod orthogonal_iteration;
pub mod participation;
pub mod replicates;
pub mod sr_fca;
pub mod two_phase;

/// Data-independent range checks of every baseline field of the run configuration (called by
/// [`two_phase::RunConfig::check`]).
///
/// # Errors
/// [`crate::error::FedmixError::InvalidParameter`] naming the field.
pub fn check_baseline_config(cfg: &two_phase::RunConfig) -> crate::error::Result<()> {
    ifca::check_config(cfg)?;
    one_shot::check_config(cfg)?;
    sr_fca::check_config(cfg)?;
    cfl::check_config(cfg)
}

/// Every public algorithm name (`--algorithm`), a public contract.
pub const ALGORITHMS: &[&str] = &[
    "two-phase",
    "phase2",
    "oracle",
    "ifca",
    "ifca-official",
    "fedavg",
    "local",
    "one-shot",
    "oracle-labels",
    "sr-fca",
    "cfl",
];

/// The algorithm called `name` with configuration `cfg`, initial models `init` (where the
/// algorithm starts from models; `two-phase` takes the `1 × d` Phase 1 start) and, for
/// `ifca-official`, the data's noise scale `data_sigma` (its success rule uses σ).
///
/// # Errors
/// [`crate::error::FedmixError::InvalidParameter`] naming `algorithm` for an unknown name.
pub fn by_name(
    name: &str,
    cfg: &two_phase::RunConfig,
    init: Option<nalgebra::DMatrix<f64>>,
    data_sigma: Option<f64>,
) -> crate::error::Result<Box<dyn crate::run::Algorithm>> {
    use two_phase::{Phase2Only, TwoPhase};
    let cfg = cfg.clone();
    Ok(match name {
        "two-phase" => Box::new(TwoPhase { cfg, init }),
        "phase2" => Box::new(Phase2Only {
            cfg,
            init,
            oracle: false,
        }),
        "oracle" => Box::new(Phase2Only {
            cfg,
            init: None,
            oracle: true,
        }),
        "ifca" => Box::new(ifca::Ifca { cfg, init }),
        "ifca-official" => Box::new(ifca::IfcaOfficial { cfg, data_sigma }),
        "fedavg" => Box::new(fedavg::FedAvg { cfg }),
        "local" => Box::new(local::Local { cfg }),
        "one-shot" => Box::new(one_shot::OneShot { cfg }),
        "oracle-labels" => Box::new(oracle_labels::OracleLabels { cfg }),
        "sr-fca" => Box::new(sr_fca::SrFca { cfg }),
        "cfl" => Box::new(cfl::Cfl { cfg }),
        other => {
            return Err(crate::error::FedmixError::invalid(
                "algorithm",
                other,
                format!("known: {}", ALGORITHMS.join(", ")),
            ))
        }
    })
}
