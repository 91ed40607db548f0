//! The claims of SXY22's experiments (App. C, Figs. 1–3), measured on the cells of
//! `experiments/sxy22-fig{1,2,3}.toml` (settings C.1–C.3) and, for the rate's growth with s where
//! its premise κ ≈ 1 holds, `experiments/communication.toml`.

use super::claim::{Cause, Claim, EstimateRule, Note, RuleText, Setting, Stat, Summary, Test};
use super::statistics::Quantity;

/// The two-phase algorithm at SXY22's s = 5.
pub const TWO_PHASE: &str = "two-phase, FedAvg s=5";
/// The oracle (true labels) at s = 5.
pub const ORACLE: &str = "oracle s=5";
/// The two-phase algorithm at s local steps is `{S_PREFIX}{s}`.
pub const S_PREFIX: &str = "two-phase, FedAvg s=";
/// The values of s of App. C.1's rate comparison.
const S: &[u32] = &[1, 2, 5, 10];

const C1: &str = "sxy22-fig1";
const C2: &str = "sxy22-fig2";
const C3: &str = "sxy22-fig3";

/// Why a rate statistic drops a seed.
const NO_RATE: Note = Note::Dropped("failed run or no rate in the fit window");
/// Why a final-error statistic drops a seed.
const FAILED: Note = Note::Dropped("failed run");
/// What the oracle-ratio claim of the two-phase algorithm says of its seeds.
const TWO_PHASE_FAILS: Note = Note::FailedRuns(TWO_PHASE);
/// The two-phase algorithm's Phase 1 rate over its Phase 2 rate.
const PHASE1: Quantity = Quantity::Phase1OverPhase2(TWO_PHASE);

/// A geometric mean over `experiment`'s seeds.
const fn geo(of: Quantity, experiment: &'static str, seed: u64, digits: usize, note: Note) -> Stat {
    Stat {
        of,
        experiment,
        summary: Summary::GeoMean,
        seed,
        digits,
        note,
    }
}

/// The exponent of λ in s over the series `two-phase, FedAvg s={1, 2, 5, 10}` of
/// `experiment`'s cells, mean over seeds.
const fn exponent(experiment: &'static str, seed: u64) -> Stat {
    Stat {
        of: Quantity::RateExponentOverSeries {
            prefix: S_PREFIX,
            s: S,
        },
        experiment,
        summary: Summary::Mean,
        seed,
        digits: 3,
        note: NO_RATE,
    }
}

/// Final error at s = 10 over s = 1.
const S10_OVER_S1: Quantity =
    Quantity::FinalRatio("two-phase, FedAvg s=10", "two-phase, FedAvg s=1");

/// Final error over the oracle's.
const fn over_oracle(series: &'static str) -> Quantity {
    Quantity::FinalRatio(series, ORACLE)
}

/// The stall claims' settings.
const STALL_SETTINGS: &[Setting] = &[
    Setting {
        name: "C.1",
        experiment: C1,
        seed: 71,
    },
    Setting {
        name: "C.2",
        experiment: C2,
        seed: 72,
    },
    Setting {
        name: "C.3",
        experiment: C3,
        seed: 73,
    },
];

/// A stall claim's text per setting.
const STALL_TEXT: &str = "{0}: final / oracle {1}, stuck above 2× oracle after 400 rounds on \
     {2} seeds (Wilson 95 % {3}); median rounds to 2× oracle {4} (reached on {5} seeds) vs \
     two-phase {6}";

/// SXY22's claims, in ledger order.
pub const CLAIMS: &[Claim] = &[
    Claim {
        claim: "Phase 1 (5 rounds) drops the error exponentially with a larger rate than Phase 2",
        source: "SXY22 App. C.1, Fig. 1 left",
        test: Test::Estimates {
            stats: &[
                geo(PHASE1, C1, 12, 2, NO_RATE),
                geo(PHASE1, C2, 13, 2, NO_RATE),
                geo(PHASE1, C3, 14, 2, NO_RATE),
            ],
            text: "Phase 1's per-round log-decrease ln(d_1/d_5)/4 over Phase 2's fitted rate λ \
                   (s = 5), geometric mean: C.1: {0}; C.2: {1}; C.3: {2}",
            rule: EstimateRule::EveryAbove {
                bound: 1.0,
                partly: false,
            },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*Phase 1 faster than Phase 2*: holds when the interval of the geometric mean of \
             (Phase 1's per-round log-decrease) / (Phase 2's rate λ) lies above 1 in every \
             setting; does not hold otherwise.",
        ),
    },
    // The claim's premise is κ ≈ 1 (SXY22 App. C.1): C.1's cells run at γ = 0.8, where κ grows
    // with sγ, so the verdict is taken where the premise holds — the communication experiment's
    // γ = 0.1 cells — and C.1's exponent is an observation beside it.
    Claim {
        claim: "C.1: the Phase 2 convergence rate grows proportionally to s (κ ≈ 1)",
        source: "SXY22 App. C.1, Fig. 1",
        test: Test::Estimates {
            stats: &[
                Stat {
                    of: Quantity::RateExponentOverAxis {
                        variant: "κ ≈ 1",
                        series: "two-phase (FedAvg)",
                        s: &[1.0, 2.0, 5.0, 10.0],
                    },
                    experiment: "communication",
                    summary: Summary::Mean,
                    seed: 26,
                    digits: 3,
                    note: NO_RATE,
                },
                exponent(C1, 21),
            ],
            text: "exponent of the fitted per-round contraction rate λ_s in s ∈ {1, 2, 5, 10} \
                   (proportional = 1), where κ ≈ 1 (the communication experiment's γ = 0.1 \
                   cells, sxy-balanced, two-phase with FedAvg): {0}. Observation outside the \
                   premise, C.1's cells at γ = 0.8: {1}",
            rule: EstimateRule::Proportional { lo: 0.8, hi: 1.2 },
        },
        cause: Cause::Always(
            "the observation at γ = 0.8 (not the verdict) is ours, through a choice the paper \
             leaves open: at η = 0.8/max_i λ_max(Φ_iᵀΦ_i)/n_i a client's s local steps travel \
             far along its own loss (η·λ_max(Σ̂_i) up to 0.8 per step), so local drift — SXY22 \
             Theorem 2's κ, which grows with sγ — caps the gain from s; at γ = 0.1 (κ ≈ 1) the \
             communication experiment needs 7.3× fewer rounds to its target at s = 10 than at \
             s = 1, against 2.6× at γ = 0.8",
        ),
        rule_text: RuleText::New(
            "*Rate ∝ s (κ ≈ 1)*: judged where κ ≈ 1 (the communication experiment's γ = 0.1 \
             cells): holds when the exponent's interval lies in [0.8, 1.2], does not hold when \
             it lies entirely outside that band, holds partly when it overlaps the band. C.1's \
             own cells (γ = 0.8) are reported as an observation. (Before: C.1's cells, and holds \
             partly whenever the interval excluded 0.)",
        ),
    },
    Claim {
        claim: "C.1: … while the final error stays the same",
        source: "SXY22 App. C.1, Fig. 1",
        test: Test::Estimates {
            stats: &[geo(S10_OVER_S1, C1, 22, 3, FAILED)],
            text: "final error s = 10 / s = 1 (geometric mean): {0}",
            rule: EstimateRule::EveryInside {
                lo: 0.9,
                hi: 1.1,
                otherwise: "holds partly",
            },
        },
        cause: Cause::Always(
            "FedAvg's fixed point moves with s (local drift); the effect is a few percent",
        ),
        rule_text: RuleText::New(
            "*The same final error*: holds when the ratio's interval lies in [0.9, 1.1]; holds \
             partly otherwise.",
        ),
    },
    Claim {
        claim: "C.2: larger s improves the rate only slightly …",
        source: "SXY22 App. C.2, Fig. 2",
        test: Test::Estimates {
            stats: &[exponent(C2, 23), exponent(C1, 21)],
            text: "rate exponent in s (both at γ = 0.8): C.2 {0} vs C.1 {1}",
            rule: EstimateRule::BelowSecond,
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*Only slightly* (C.2's rate against s): holds when C.2's exponent interval lies \
             entirely below C.1's; holds partly when only its point estimate does; does not \
             hold otherwise.",
        ),
    },
    Claim {
        claim: "C.2: … and inflates the final error slightly",
        source: "SXY22 App. C.2, Fig. 2",
        test: Test::Estimates {
            stats: &[geo(S10_OVER_S1, C2, 24, 3, FAILED)],
            text: "final error s = 10 / s = 1 (geometric mean): {0}",
            rule: EstimateRule::Between { lo: 1.0, hi: 1.5 },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*Inflates slightly* (C.2's final error): holds when the ratio's interval lies in \
             (1, 1.5); holds partly when its point estimate exceeds 1; does not hold otherwise.",
        ),
    },
    // Theorem 2's ρ is p_min: λ(C.3)/λ(C.2) at s = 5 against 0.2/(1/3).
    Claim {
        claim: "C.3: convergence rates are smaller, proportional to p_min (Theorem 2's ρ)",
        source: "SXY22 App. C.3, Fig. 3",
        test: Test::Estimates {
            stats: &[Stat {
                of: Quantity::Rate(TWO_PHASE),
                experiment: C3,
                summary: Summary::RatioOfMeans {
                    denominator: C2,
                    groups: ["C.3", "C.2"],
                },
                seed: 25,
                digits: 3,
                note: NO_RATE,
            }],
            text: "λ(C.3) / λ(C.2) at s = 5: {0.value} against p_min ratio 0.2 / (1/3) = 0.6 \
                   (independent seeds, ratio of the two arithmetic means; n = C.3's and C.2's \
                   seeds with a rate){0.note}",
            rule: EstimateRule::Covers {
                value: 0.6,
                partly_below: 1.0,
            },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*∝ p_min* (C.3): holds when the interval of the rate ratio covers the predicted \
             0.6; holds partly when it lies below 1; does not hold otherwise.",
        ),
    },
    Claim {
        claim: "The two-phase algorithm converges to the oracle's estimation error (C.1–C.3)",
        source: "SXY22 App. C, Figs. 1–3 right",
        test: Test::Estimates {
            stats: &[
                geo(over_oracle(TWO_PHASE), C1, 31, 3, TWO_PHASE_FAILS),
                geo(over_oracle(TWO_PHASE), C2, 32, 3, TWO_PHASE_FAILS),
                geo(over_oracle(TWO_PHASE), C3, 33, 3, TWO_PHASE_FAILS),
            ],
            text: "final error / oracle's (s = 5, 400 rounds): C.1: {0}; C.2: {1}; C.3: {2}",
            rule: EstimateRule::EveryInside {
                lo: 0.0,
                hi: 1.1,
                otherwise: "holds partly",
            },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*Reaches the oracle*: holds when final/oracle's interval lies below 1.1 in every \
             setting; holds partly otherwise.",
        ),
    },
    Claim {
        claim: "Vanilla FedAvg does not converge to small error",
        source: "SXY22 App. C, Figs. 1–3 right",
        test: Test::Estimates {
            stats: &[
                geo(over_oracle(FEDAVG), C1, 41, 1, FAILED),
                geo(over_oracle(FEDAVG), C2, 42, 1, FAILED),
                geo(over_oracle(FEDAVG), C3, 43, 1, FAILED),
            ],
            text: "final error / oracle's: C.1: {0}; C.2: {1}; C.3: {2}",
            rule: EstimateRule::EveryAbove {
                bound: 5.0,
                partly: false,
            },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*Does not converge to small error*: holds when final/oracle's interval lies above \
             5 in every setting; does not hold otherwise.",
        ),
    },
    Claim {
        claim: "One-shot clustering performs well in C.1 …",
        source: "SXY22 App. C.1, Fig. 1",
        test: Test::Estimates {
            stats: &[geo(over_oracle(ONE_SHOT), C1, 51, 3, FAILED)],
            text: "final error / oracle's: {0}",
            rule: EstimateRule::EveryInside {
                lo: 0.0,
                hi: 1.1,
                otherwise: "does not hold",
            },
        },
        cause: Cause::None,
        rule_text: RuleText::New(
            "*One-shot performs well* (C.1): holds when final/oracle's interval lies below 1.1; \
             does not hold otherwise.",
        ),
    },
    Claim {
        claim: "… and poorly in C.2 and C.3 (clustering errors of data-scarce clients are never \
                corrected)",
        source: "SXY22 App. C.2, C.3",
        test: Test::Estimates {
            stats: &[
                geo(over_oracle(ONE_SHOT), C2, 52, 3, FAILED),
                geo(over_oracle(ONE_SHOT), C3, 53, 3, FAILED),
            ],
            text: "final error / oracle's: C.2 {0}; C.3 {1}",
            rule: EstimateRule::EveryAbove {
                bound: 1.1,
                partly: true,
            },
        },
        cause: Cause::None,
        rule_text: RuleText::Continued(
            " *Poor* (C.2, C.3): holds when both intervals lie above 1.1; holds partly when \
             either point estimate does; does not hold otherwise.",
        ),
    },
    Claim {
        claim: "With a random initialisation IFCA gets stuck on an error floor — IFCA as SXY22 \
                ran it (Phase 2 from a random init)",
        source: STALL_SOURCE,
        test: stall("IFCA as SXY22 ran it (Phase 2, random init) s=5"),
        cause: Cause::Always(
            "not a disagreement where it stalls long: the paper's own C.2 paragraph says IFCA \
             \"eventually also converges … [but] gets stuck on an error floor for a long \
             time\", which is what C.2 and C.3 show",
        ),
        rule_text: RuleText::New(
            "*Stuck on a floor*: holds when at least half of the seeds, pooled over the \
             settings, end above 2× the oracle's error after 400 rounds; holds partly when some \
             do; does not hold when none does.",
        ),
    },
    Claim {
        claim: "With a random initialisation IFCA gets stuck on an error floor — IFCA model \
                averaging (GCYR20 Alg. 2)",
        source: STALL_SOURCE,
        test: stall("IFCA model averaging (GCYR20 Alg. 2) s=5"),
        cause: Cause::Always(
            "a different algorithm from the one SXY22 ran: each cluster averages over its own \
             clients, a step ≈ 1/p_j larger than Phase 2's n_i/N weights",
        ),
        rule_text: RuleText::Shared,
    },
];

/// Vanilla FedAvg at s = 5.
const FEDAVG: &str = "vanilla FedAvg s=5";
/// One-shot clustering.
const ONE_SHOT: &str = "one-shot";
/// The stall claims' source.
const STALL_SOURCE: &str = "SXY22 App. C.1 (C.2: \"stuck for a long time\")";

/// A stall claim on `series`: stuck above 2× the oracle after 400 rounds.
const fn stall(series: &'static str) -> Test {
    Test::Stall {
        series,
        reference: TWO_PHASE,
        oracle: ORACLE,
        factor: 2.0,
        settings: STALL_SETTINGS,
        text: STALL_TEXT,
        holds_at: 0.5,
    }
}
