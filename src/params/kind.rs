//! The algorithms fedmix implements, by their public names (`--algorithm`, the `algorithm` key
//! of experiment files, `summary.json`).

use serde::{Deserialize, Serialize};

/// Declares [`AlgorithmKind`] from one list: each variant once, with its public name, doc and
/// the run keys it reads — SXY22 Phase 2's keys, Phase 1's, and its own in the order
/// `fedmix validate`'s reference line and the Python `keys()` list them; the serde names,
/// [`AlgorithmKind::ALL`], [`AlgorithmKind::as_str`] and [`AlgorithmKind::reads`] all come from
/// it, as do its update rule, the randomness it accepts and why it has no one step, if it has
/// none.
macro_rules! algorithm_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,
        phase2: $phase2:literal, phase1: $phase1:literal, own: [$($key:literal),* $(,)?],
        rule: $rule:ident, init_starts_rounds: $isr:literal,
        randomness: [$($rnd:literal),* $(,)?],
        live: $live:literal,
        one_step: $one_step:expr;)*) => {
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

            /// The update its rounds apply, for `validate`'s diagnosis.
            pub fn round_rule(self) -> RoundRule {
                match self {
                    $(Self::$variant => RoundRule::$rule,)*
                }
            }

            /// Whether given initial models are the start of its first round (not for
            /// `two-phase`, whose given models start Phase 1).
            pub fn init_starts_rounds(self) -> bool {
                match self {
                    $(Self::$variant => $isr,)*
                }
            }

            /// The kinds of randomness it takes from files (flag names: `--init`, `--anchors`,
            /// `--q0`, `--power-start`, `--participation`); any other supplied file is refused
            /// rather than silently ignored.
            pub fn randomness(self) -> &'static [&'static str] {
                match self {
                    $(Self::$variant => &[$($rnd),*],)*
                }
            }

            /// Its one-paragraph description (the declaration's doc comment).
            pub fn doc(self) -> &'static str {
                match self {
                    $(Self::$variant => concat!($($doc, "\n"),*),)*
                }
            }

            /// Whether its `Session` steps the library round by round (its rounds are one
            /// executor loop, `Algorithm::live`), rather than replaying a finished run; a test
            /// builds every algorithm's session and holds the two to agree.
            pub fn live_session(self) -> bool {
                match self {
                    $(Self::$variant => $live,)*
                }
            }

            /// Why it has no one round from a given state (`fedmix validate --one-step`), or
            /// `None` when it has one.
            pub fn one_step_refusal(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => $one_step,)*
                }
            }

            /// Which run keys it reads, as its declaration states them.
            pub fn reads(self) -> Reads {
                match self {
                    $(Self::$variant => Reads {
                        phase2: $phase2,
                        phase1: $phase1,
                        own: &[$($key),*],
                    },)*
                }
            }
        }
    };
}

/// The update an algorithm's rounds apply, as `validate` names it in a diagnosis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundRule {
    /// SXY22 Phase 2's round (FedAvg / FedProx local steps, `n_i/N` weights, hard clustering).
    Phase2,
    /// IFCA's round (IFCA Algorithm 2, option I or II by the `ifca_option` key).
    Ifca,
    /// A rule `validate` does not diagnose.
    Other,
}

/// The run keys an algorithm reads, as its declaration states them (`params::keys::keys_of`
/// expands the two groups into their keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// SXY22 Phase 2's keys (the algorithms built on a Phase 2 round).
    pub phase2: bool,
    /// SXY22 Phase 1's keys (`two-phase` only).
    pub phase1: bool,
    /// Its own keys, in the order they are listed.
    pub own: &'static [&'static str],
}

algorithm_kinds! {
    /// SXY22 Phase 1 (FedMD on anchors) then Phase 2 (FedX + clustering).
    TwoPhase => "two-phase", phase2: true, phase1: true, own: ["init_scale", "k"],
        rule: Phase2, init_starts_rounds: false,
        randomness: ["init", "anchors", "q0", "power-start"],
        live: true,
        one_step: None;
    /// SXY22 Phase 2 alone from given or random models.
    Phase2 => "phase2", phase2: true, phase1: false, own: ["init_scale", "k"],
        rule: Phase2, init_starts_rounds: true,
        randomness: ["init"],
        live: true,
        one_step: None;
    /// SXY22 Phase 2 from the true models `θ*` (the error floor).
    Oracle => "oracle", phase2: true, phase1: false, own: ["k"],
        rule: Phase2, init_starts_rounds: true,
        randomness: [],
        live: true,
        one_step: None;
    /// IFCA (IFCA Algorithm 2), options I/II, restarts, partial participation.
    Ifca => "ifca", phase2: true, phase1: false, own: [
        "ifca_option",
        "ifca_init",
        "init_scale",
        "participation",
        "replicate_batch",
        "k",
        "restarts",
    ],
        rule: Ifca, init_starts_rounds: true,
        randomness: ["init", "participation"],
        live: true,
        one_step: None;
    /// The IFCA authors' released synthetic protocol (10 inits × a learning-rate grid).
    IfcaOfficial => "ifca-official", phase2: false, phase1: false, own: [
        "ifca_official_inits",
        "ifca_official_lrs",
        "ifca_official_iterations",
        "ifca_official_sigma",
        "ifca_official_offset",
        "replicate_batch",
        "k",
    ],
        rule: Other, init_starts_rounds: true,
        randomness: ["init"],
        live: false,
        one_step: None;
    /// Vanilla FedAvg / FedProx with one model.
    Fedavg => "fedavg", phase2: true, phase1: false, own: ["init_scale", "participation"],
        rule: Other, init_starts_rounds: true,
        randomness: ["init", "participation"],
        live: true,
        one_step: None;
    /// Per-client least squares / ridge.
    Local => "local", phase2: false, phase1: false, own: ["local_ridge"],
        rule: Other, init_starts_rounds: true,
        randomness: [],
        live: false,
        one_step: Some("it has no rounds (each client solves its own least squares once)");
    /// Local estimates, k-means, FedAvg within the clusters.
    OneShot => "one-shot", phase2: true, phase1: false,
        own: ["kmeans_inits", "kmeans_max_iter", "local_ridge", "k"],
        rule: Phase2, init_starts_rounds: true,
        randomness: [],
        live: true,
        one_step: Some(
            "its clusters come from k-means on local estimates (seeded k-means++), not from \
             the broadcast models; one step of its within-cluster FedAvg is not implemented",
        );
    /// Phase 2 with the true labels fixed.
    OracleLabels => "oracle-labels", phase2: true, phase1: false, own: [],
        rule: Phase2, init_starts_rounds: true,
        randomness: [],
        live: true,
        one_step: None;
    /// SR-FCA (SRFCA Algorithms 1–4). Its TrimmedMeanGD step is Phase 2's η (SRFCA Algorithm
    /// 3), read as its own key with `eta_gamma`: it has its own rounds, not Phase 2's.
    SrFca => "sr-fca", phase2: false, phase1: false, own: [
        "eta",
        "eta_gamma",
        "srfca_lambda",
        "srfca_lambda_quantile",
        "srfca_size",
        "srfca_beta",
        "srfca_refine_steps",
        "srfca_local_iterations",
        "srfca_refine_rounds",
        "srfca_dist",
        "srfca_diameter",
    ],
        rule: Other, init_starts_rounds: true,
        randomness: [],
        live: true,
        one_step: Some(
            "its rounds merge and refine clusters (SRFCA Algorithms 3–4), so the number of \
             models and the clusters change with a state beyond the broadcast models",
        );
    /// Clustered FL of Sattler et al. (recursive bipartition).
    Cfl => "cfl", phase2: true, phase1: false, own: [
        "init_scale",
        "cfl_eps1",
        "cfl_eps2",
        "cfl_gamma_max",
        "cfl_warmup_rounds",
    ],
        rule: Other, init_starts_rounds: true,
        randomness: [],
        live: true,
        one_step: Some(
            "its rounds split clusters from the clients' update similarities (Sattler et \
             al.), a state beyond the broadcast models",
        );
    /// FedSoft (Ruan & Joe-Wong 2022): importance weights, personal models with a proximal
    /// pull to the cluster models. Its local step is Phase 2's `η` and `s`, read as its own keys
    /// with `eta_gamma` and `rounds`: its local solver is always gradient steps.
    FedSoft => "fedsoft", phase2: false, phase1: false, own: [
        "eta",
        "eta_gamma",
        "local_steps",
        "rounds",
        "init_scale",
        "k",
        "fedsoft_lambda",
        "fedsoft_smoother",
        "fedsoft_interval",
    ],
        rule: Other, init_starts_rounds: true,
        randomness: ["init"],
        live: true,
        one_step: Some(
            "its round starts from every client's personal model and importance weights \
             (Ruan & Joe-Wong 2022), a state beyond the broadcast models",
        );
}

impl AlgorithmKind {
    /// Every public name, joined by `sep` (the help texts list them from here).
    pub fn names(sep: &str) -> String {
        Self::ALL.map(Self::as_str).join(sep)
    }

    /// The public names of the algorithms without a one-step round
    /// ([`AlgorithmKind::one_step_refusal`]), joined by `sep`.
    pub fn names_without_one_step(sep: &str) -> String {
        Self::ALL
            .into_iter()
            .filter(|k| k.one_step_refusal().is_some())
            .map(Self::as_str)
            .collect::<Vec<_>>()
            .join(sep)
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
