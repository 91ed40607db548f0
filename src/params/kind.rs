//! The algorithms fedmix implements, by their public names (`--algorithm`, the `algorithm` key
//! of experiment files, `summary.json`).

use serde::{Deserialize, Serialize};

/// Every algorithm, a public contract: the names are `--algorithm` values and appear in files.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum AlgorithmKind {
    /// SXY22 Phase 1 (FedMD on anchors) then Phase 2 (FedX + clustering).
    #[value(name = "two-phase")]
    TwoPhase,
    /// SXY22 Phase 2 alone from given or random models.
    #[value(name = "phase2")]
    #[serde(rename = "phase2")]
    Phase2,
    /// SXY22 Phase 2 from the true models `θ*` (the error floor).
    #[value(name = "oracle")]
    Oracle,
    /// IFCA (IFCA Algorithm 2), options I/II, restarts, partial participation.
    #[value(name = "ifca")]
    Ifca,
    /// The IFCA authors' released synthetic protocol (10 inits × a learning-rate grid).
    #[value(name = "ifca-official")]
    IfcaOfficial,
    /// Vanilla FedAvg / FedProx with one model.
    #[value(name = "fedavg")]
    Fedavg,
    /// Per-client least squares / ridge.
    #[value(name = "local")]
    Local,
    /// Local estimates, k-means, FedAvg within the clusters.
    #[value(name = "one-shot")]
    OneShot,
    /// Phase 2 with the true labels fixed.
    #[value(name = "oracle-labels")]
    OracleLabels,
    /// SR-FCA (SRFCA Algorithms 1–4).
    #[value(name = "sr-fca")]
    SrFca,
    /// Clustered FL of Sattler et al. (recursive bipartition).
    #[value(name = "cfl")]
    Cfl,
}

impl AlgorithmKind {
    /// Every algorithm, in documentation order.
    pub const ALL: [AlgorithmKind; 11] = [
        Self::TwoPhase,
        Self::Phase2,
        Self::Oracle,
        Self::Ifca,
        Self::IfcaOfficial,
        Self::Fedavg,
        Self::Local,
        Self::OneShot,
        Self::OracleLabels,
        Self::SrFca,
        Self::Cfl,
    ];

    /// The public name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TwoPhase => "two-phase",
            Self::Phase2 => "phase2",
            Self::Oracle => "oracle",
            Self::Ifca => "ifca",
            Self::IfcaOfficial => "ifca-official",
            Self::Fedavg => "fedavg",
            Self::Local => "local",
            Self::OneShot => "one-shot",
            Self::OracleLabels => "oracle-labels",
            Self::SrFca => "sr-fca",
            Self::Cfl => "cfl",
        }
    }

    /// The algorithm called `name`.
    ///
    /// # Errors
    /// [`crate::error::FedmixError::InvalidParameter`] naming `algorithm` and listing the names.
    pub fn parse(name: &str) -> crate::error::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                crate::error::FedmixError::invalid(
                    "algorithm",
                    name,
                    format!("known: {}", Self::ALL.map(Self::as_str).join(", ")),
                )
            })
    }
}

impl std::fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AlgorithmKind {
    type Err = crate::error::FedmixError;
    fn from_str(s: &str) -> crate::error::Result<Self> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn names_agree_across_serde_clap_and_display() {
        for k in AlgorithmKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<AlgorithmKind>(&json).unwrap(), k);
            let clap_name = k.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(clap_name, k.as_str());
            assert_eq!(k.as_str().parse::<AlgorithmKind>().unwrap(), k);
        }
        assert_eq!(
            AlgorithmKind::value_variants().len(),
            AlgorithmKind::ALL.len()
        );
        assert!("two_phase".parse::<AlgorithmKind>().is_err());
    }
}
