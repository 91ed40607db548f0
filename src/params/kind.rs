//! The algorithms fedmix implements, by their public names (`--algorithm`, the `algorithm` key
//! of experiment files, `summary.json`).

use serde::{Deserialize, Serialize};

/// Declares [`AlgorithmKind`] from one list: each variant once, with its public name and doc;
/// the serde names, [`AlgorithmKind::ALL`] and [`AlgorithmKind::as_str`] all come from it.
macro_rules! algorithm_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// Every algorithm, a public contract: the names are `--algorithm` values and appear in
        /// files.
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        pub enum AlgorithmKind {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl AlgorithmKind {
            /// Every algorithm, in documentation order.
            pub const ALL: [AlgorithmKind; [$(stringify!($variant),)*].len()] = [$(Self::$variant,)*];

            /// The public name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }
    };
}

algorithm_kinds! {
    /// SXY22 Phase 1 (FedMD on anchors) then Phase 2 (FedX + clustering).
    TwoPhase => "two-phase",
    /// SXY22 Phase 2 alone from given or random models.
    Phase2 => "phase2",
    /// SXY22 Phase 2 from the true models `θ*` (the error floor).
    Oracle => "oracle",
    /// IFCA (IFCA Algorithm 2), options I/II, restarts, partial participation.
    Ifca => "ifca",
    /// The IFCA authors' released synthetic protocol (10 inits × a learning-rate grid).
    IfcaOfficial => "ifca-official",
    /// Vanilla FedAvg / FedProx with one model.
    Fedavg => "fedavg",
    /// Per-client least squares / ridge.
    Local => "local",
    /// Local estimates, k-means, FedAvg within the clusters.
    OneShot => "one-shot",
    /// Phase 2 with the true labels fixed.
    OracleLabels => "oracle-labels",
    /// SR-FCA (SRFCA Algorithms 1–4).
    SrFca => "sr-fca",
    /// Clustered FL of Sattler et al. (recursive bipartition).
    Cfl => "cfl",
}

impl AlgorithmKind {
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

    #[test]
    fn names_agree_across_serde_and_display() {
        for k in AlgorithmKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<AlgorithmKind>(&json).unwrap(), k);
            assert_eq!(k.as_str().parse::<AlgorithmKind>().unwrap(), k);
        }
        assert!("two_phase".parse::<AlgorithmKind>().is_err());
    }
}
