//! How a claim is declared: the statistic it measures (from [`super::statistics`]), the
//! experiments and series it reads, the interval method (which follows from the statistic) and
//! the verdict rule, with the rule's printed wording beside it. The claim tables
//! ([`super::claims_sxy22`], [`super::claims_ifca`], [`super::claims_srfca`]) are lists of
//! [`Claim`]s; the engine (`ledger.rs`) evaluates them. Each rule's verdict function is here, next
//! to its wording.

use super::statistics::{Event, Quantity};
use crate::stats::{wilson, Estimate};

/// One claim of a paper, as data.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// The claim, quoted short.
    pub claim: &'static str,
    /// Paper, section / figure.
    pub source: &'static str,
    /// What is measured and how it is judged.
    pub test: Test,
    /// The cause printed beside the verdict.
    pub cause: Cause,
    /// The rule's wording in the ledger's list of verdict rules.
    pub rule_text: RuleText,
}

/// What a claim measures, and the rule that judges it.
#[derive(Clone, Copy, Debug)]
pub enum Test {
    /// Bootstrap estimates over data seeds, written into `text` (`{i}`: estimate `i` and its
    /// note; `{i.value}` and `{i.note}` apart), judged by `rule`.
    Estimates {
        /// The estimates.
        stats: &'static [Stat],
        /// What was measured, with a place for each estimate.
        text: &'static str,
        /// The verdict rule.
        rule: EstimateRule,
    },
    /// An error floor (SXY22 App. C.1–C.2): per setting, `series`' final error over `oracle`'s
    /// (geometric mean), the proportion of seeds still above `factor` × the oracle's final error
    /// (Wilson) and the median rounds to reach it, against `reference`'s.
    Stall {
        /// The series judged.
        series: &'static str,
        /// The series whose rounds are printed beside.
        reference: &'static str,
        /// The oracle's series.
        oracle: &'static str,
        /// The floor, a multiple of the oracle's final error.
        factor: f64,
        /// The settings: experiments and bootstrap seeds.
        settings: &'static [Setting],
        /// One setting's text: `{0}` its name, `{1}` final / oracle, `{2}` stuck seeds / seeds,
        /// `{3}` their Wilson interval, `{4}` `series`' median rounds, `{5}` seeds reaching it,
        /// `{6}` `reference`'s median rounds.
        text: &'static str,
        /// Holds when at least this fraction of the seeds, pooled over the settings, is stuck;
        /// holds partly when some are; does not hold when none is.
        holds_at: f64,
    },
    /// Success rises along a sweep's axis on every line (IFCA Fig. 3): a line rises when the
    /// Wilson interval of its last point lies above its first's; holds when every line rises,
    /// holds partly when some do, does not hold when none does and every line stays at or above
    /// `high`, unclear otherwise; a partial sweep gets no verdict.
    Rise {
        /// The sweep.
        sweep: Sweep,
        /// The series judged (the official protocol's own verdict).
        series: &'static str,
        /// The experiment that holds `compare` when the sweep does not (its two-phase companion).
        companion: &'static str,
        /// The series printed beside, judged by the same threshold.
        compare: &'static str,
        /// What was measured: `{0}` threshold, `{1}` axis, `{2}` cells found, `{3}` planned, `{4}`
        /// ", partial" or "", `{5}` each line's points, `{6}` the first → last intervals,
        /// `{7}` the companion's cells, `{8}` `compare`'s points.
        text: &'static str,
        /// A line at or above this proportion everywhere leaves no room to rise.
        high: f64,
        /// The cause when some line stays at or above `high`.
        saturated: &'static str,
        /// The cause when some lines do not rise: `{0}` those lines.
        some_flat: &'static str,
    },
    /// Statistics per value of a sweep's axis (samples per client n), judged at one n.
    Sweep {
        /// The sweep.
        sweep: Sweep,
        /// The statistics.
        stats: &'static [SweepStat],
        /// What was measured: `{cells}` the cells found, `{i}` statistic `i` (and
        /// `{i.pooled}` a [`SweepStat::Reduction`]'s pooled reduction).
        text: &'static str,
        /// The verdict rule, on the first statistic.
        rule: SweepRule,
    },
    /// Not measured: the row says why.
    Fixed {
        /// What the row says instead of a measurement.
        measured: &'static str,
        /// Its verdict.
        verdict: &'static str,
    },
}

/// A setting of a per-setting statistic.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// Its name in the text (`C.1`).
    pub name: &'static str,
    /// The experiment holding its cells.
    pub experiment: &'static str,
    /// Bootstrap seed.
    pub seed: u64,
}

/// A sweep measured only at the paper's scale: its rows say `not_run` while it has no cells
/// beyond the quick profile's.
#[derive(Clone, Copy, Debug)]
pub struct Sweep {
    /// The experiment.
    pub experiment: &'static str,
    /// What the rows say before it has run.
    pub not_run: &'static str,
}

/// One bootstrap estimate over data seeds.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    /// The per-seed quantity.
    pub of: Quantity,
    /// The experiment it reads.
    pub experiment: &'static str,
    /// How the seeds are summarised.
    pub summary: Summary,
    /// Bootstrap seed.
    pub seed: u64,
    /// Decimals printed.
    pub digits: usize,
    /// What is said of the seeds without a value.
    pub note: Note,
}

/// How a statistic summarises the per-seed values.
#[derive(Clone, Copy, Debug)]
pub enum Summary {
    /// Arithmetic mean.
    Mean,
    /// Geometric mean (ratios).
    GeoMean,
    /// Mean over `experiment`'s seeds over the mean of the same quantity over `denominator`'s
    /// (independent seeds); `groups` name the two in the drop notes.
    RatioOfMeans {
        /// The experiment of the denominator.
        denominator: &'static str,
        /// The numerator's and the denominator's names.
        groups: [&'static str; 2],
    },
}

/// What a statistic says of its seeds.
#[derive(Clone, Copy, Debug)]
pub enum Note {
    /// How many seeds gave no value, and why (nothing when none).
    Dropped(&'static str),
    /// How many runs of this series failed, out of the cells (always).
    FailedRuns(&'static str),
}

/// A statistic of a sweep, per value of its axis.
#[derive(Clone, Copy, Debug)]
pub enum SweepStat {
    /// Runs of `series` ending with `event`, Wilson 95 % per n.
    Proportion {
        /// The series.
        series: &'static str,
        /// The event counted.
        event: Event,
    },
    /// Mean number of clusters `series` ends with, per n.
    MeanClusters {
        /// The series.
        series: &'static str,
    },
    /// Misclustering of `series` at its first recorded round (SR-FCA's ONE_SHOT) and its
    /// reduction by the final round: mean per n, and the pooled reduction (bootstrap of the mean
    /// from `seed`; the i-th n's from `seed + 1 + i`).
    Reduction {
        /// The series.
        series: &'static str,
        /// Bootstrap seed of the pooled mean.
        seed: u64,
    },
}

/// The rule of an [`Test::Estimates`] claim.
#[derive(Clone, Copy, Debug)]
pub enum EstimateRule {
    /// Holds when every interval lies above `bound`; otherwise holds partly when `partly` and
    /// some point estimate lies above it, else does not hold.
    EveryAbove {
        /// The bound.
        bound: f64,
        /// Whether a point estimate above the bound gives "holds partly".
        partly: bool,
    },
    /// Holds when every interval lies in `[lo, hi]`; `otherwise` else.
    EveryInside {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
        /// The verdict otherwise.
        otherwise: &'static str,
    },
    /// Holds when the first interval lies in `(lo, hi)`; holds partly when its point estimate
    /// exceeds `lo`; does not hold otherwise.
    Between {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// A proportionality claim (exponent 1) on the first estimate: holds when its interval lies
    /// in `[lo, hi]`, does not hold when it lies entirely outside, holds partly when it overlaps.
    Proportional {
        /// Lower end of the band.
        lo: f64,
        /// Upper end of the band.
        hi: f64,
    },
    /// Holds when the first interval lies entirely below the second; holds partly when only its
    /// point estimate does; does not hold otherwise.
    BelowSecond,
    /// Holds when the first interval covers `value`; holds partly when it lies below
    /// `partly_below`; does not hold otherwise.
    Covers {
        /// The predicted value.
        value: f64,
        /// The bound for "holds partly".
        partly_below: f64,
    },
}

/// The rule of a [`Test::Sweep`] claim, at axis value `at`.
#[derive(Clone, Copy, Debug)]
pub enum SweepRule {
    /// Holds when the Wilson interval of the proportion lies above `bound`, does not hold when
    /// it lies below, holds partly otherwise.
    WilsonAbove {
        /// The axis value judged.
        at: f64,
        /// The bound.
        bound: f64,
    },
    /// Holds when the event happens at least once, does not hold when it never does.
    Some {
        /// The axis value judged.
        at: f64,
    },
    /// On a [`SweepStat::Reduction`]: holds when the interval of the pooled reduction lies
    /// above 0, does not hold at or below 0, holds partly when it contains 0; not testable when
    /// the first round is exact on every seed.
    Reduces,
}

/// The cause printed beside a verdict.
#[derive(Clone, Copy, Debug)]
pub enum Cause {
    /// None.
    None,
    /// This, whatever the verdict.
    Always(&'static str),
    /// The text beside the first list holding the verdict (before a partial sweep's gate).
    When(&'static [(&'static [&'static str], &'static str)]),
}

impl Cause {
    /// The cause for `verdict`.
    pub fn text(&self, verdict: &str) -> &'static str {
        match self {
            Self::None => "",
            Self::Always(t) => t,
            Self::When(cases) => cases
                .iter()
                .find(|(vs, _)| vs.contains(&verdict))
                .map_or("", |(_, t)| t),
        }
    }
}

/// A claim's part of the printed list of verdict rules.
#[derive(Clone, Copy, Debug)]
pub enum RuleText {
    /// A bullet of its own.
    New(&'static str),
    /// Continues the previous claim's bullet (the text carries its own separator).
    Continued(&'static str),
    /// The previous claim's rule.
    Shared,
    /// No rule (a row without a verdict rule).
    None,
}

/// The ledger's interval methods, as its "interval" column names them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interval {
    /// None (a row without a measurement).
    None,
    /// Percentile bootstrap of a mean.
    Mean,
    /// Percentile bootstrap of a geometric mean.
    GeoMean,
    /// Percentile bootstrap of a ratio of two means.
    RatioOfMeans,
    /// Wilson score interval.
    Wilson,
    /// A geometric mean's bootstrap beside a Wilson proportion.
    GeoMeanAndWilson,
}

impl Interval {
    /// The column's text.
    pub fn text(self) -> &'static str {
        match self {
            Self::None => "—",
            Self::Mean => "percentile bootstrap of the mean over data seeds",
            Self::GeoMean => "percentile bootstrap of the geometric mean over data seeds",
            Self::RatioOfMeans => {
                "percentile bootstrap of a ratio of two arithmetic means, each group of seeds \
                 resampled"
            }
            Self::Wilson => "Wilson score interval of a proportion of seeds",
            Self::GeoMeanAndWilson => {
                "percentile bootstrap of the geometric mean over data seeds (final / oracle); \
                 Wilson score interval (seeds stuck)"
            }
        }
    }
}

impl Summary {
    /// Its interval method.
    pub fn interval(self) -> Interval {
        match self {
            Self::Mean => Interval::Mean,
            Self::GeoMean => Interval::GeoMean,
            Self::RatioOfMeans { .. } => Interval::RatioOfMeans,
        }
    }
}

impl Test {
    /// The interval method of the row: the judged statistic's.
    pub fn interval(&self) -> Interval {
        match self {
            Self::Estimates { stats, .. } => stats
                .first()
                .map_or(Interval::None, |s| s.summary.interval()),
            Self::Stall { .. } => Interval::GeoMeanAndWilson,
            Self::Rise { .. } => Interval::Wilson,
            Self::Sweep { stats, .. } => match stats.first() {
                Some(SweepStat::Reduction { .. }) => Interval::Mean,
                Some(_) => Interval::Wilson,
                None => Interval::None,
            },
            Self::Fixed { .. } => Interval::None,
        }
    }
}

/// Whether an interval lies inside `[lo, hi]`.
fn inside(e: &Estimate, lo: f64, hi: f64) -> bool {
    e.n > 0 && e.lo >= lo && e.hi <= hi
}

impl EstimateRule {
    /// The verdict on the claim's estimates, in declaration order.
    pub fn verdict(&self, e: &[Estimate]) -> &'static str {
        let both = |e: &[Estimate]| e.len() > 1 && e[0].n > 0 && e[1].n > 0;
        match *self {
            Self::EveryAbove { bound, partly } => {
                if e.iter().all(|e| e.n > 0 && e.lo > bound) {
                    "holds"
                } else if partly && e.iter().any(|e| e.value > bound) {
                    "holds partly"
                } else {
                    "does not hold"
                }
            }
            Self::EveryInside { lo, hi, otherwise } => {
                if !e.is_empty() && e.iter().all(|e| inside(e, lo, hi)) {
                    "holds"
                } else {
                    otherwise
                }
            }
            Self::Between { lo, hi } => match e.first() {
                Some(e) if e.n > 0 && e.lo > lo && e.hi < hi => "holds",
                Some(e) if e.n > 0 && e.value > lo => "holds partly",
                _ => "does not hold",
            },
            Self::Proportional { lo, hi } => e
                .first()
                .map_or("not measured yet", |e| proportional_verdict(e, lo, hi)),
            Self::BelowSecond if both(e) && e[0].hi < e[1].lo => "holds",
            Self::BelowSecond if both(e) && e[0].value < e[1].value => "holds partly",
            Self::BelowSecond => "does not hold",
            Self::Covers {
                value,
                partly_below,
            } => match e.first() {
                Some(e) if e.n > 0 && e.lo <= value && e.hi >= value => "holds",
                Some(e) if e.n > 0 && e.hi < partly_below => "holds partly",
                _ => "does not hold",
            },
        }
    }
}

/// [`EstimateRule::Proportional`]'s verdict on an exponent's estimate, band `[lo, hi]`.
pub fn proportional_verdict(e: &Estimate, lo: f64, hi: f64) -> &'static str {
    if e.n == 0 || !(e.lo.is_finite() && e.hi.is_finite()) {
        "not measured yet"
    } else if inside(e, lo, hi) {
        "holds"
    } else if e.hi < lo || e.lo > hi {
        "does not hold"
    } else {
        "holds partly"
    }
}

impl SweepRule {
    /// The verdict on the judged statistic's point `(x, events, runs)` at `at` (`None` when the
    /// sweep has no such point) — for [`SweepRule::WilsonAbove`] and [`SweepRule::Some`].
    pub fn verdict_at(&self, point: Option<(usize, usize)>) -> &'static str {
        match (*self, point) {
            (_, None) | (Self::Reduces, _) => "not measured yet",
            (Self::WilsonAbove { bound, .. }, Some((s, n))) => {
                let (lo, hi) = wilson(s, n);
                if lo > bound {
                    "holds"
                } else if hi < bound {
                    "does not hold"
                } else {
                    "holds partly"
                }
            }
            (Self::Some { .. }, Some((s, _))) if s > 0 => "holds",
            (Self::Some { .. }, Some(_)) => "does not hold",
        }
    }

    /// [`SweepRule::Reduces`]' verdict on the pooled reduction; `first_errs`: whether the first
    /// round misclusters on some seed.
    pub fn reduction_verdict(pooled: &Estimate, first_errs: bool) -> &'static str {
        if pooled.n == 0 {
            "not measured yet"
        } else if !first_errs {
            "not testable"
        } else if pooled.lo > 0.0 {
            "holds"
        } else if pooled.hi <= 0.0 {
            "does not hold"
        } else {
            "holds partly"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proportionality claim holds inside [0.8, 1.2], does not hold entirely outside it (an
    /// exponent of 0.55 [0.51, 0.59] is not proportional), holds partly when it overlaps.
    #[test]
    fn proportionality_verdicts() {
        let e = |value, lo, hi| Estimate {
            value,
            lo,
            hi,
            n: 10,
            groups: None,
        };
        let v = |e: Estimate| proportional_verdict(&e, 0.8, 1.2);
        assert_eq!(v(e(1.07, 1.05, 1.09)), "holds");
        assert_eq!(v(e(0.55, 0.51, 0.59)), "does not hold");
        assert_eq!(v(e(1.4, 1.25, 1.6)), "does not hold");
        assert_eq!(v(e(0.75, 0.6, 0.9)), "holds partly");
        assert_eq!(v(e(f64::NAN, f64::NAN, f64::NAN)), "not measured yet");
        let none = Estimate {
            n: 0,
            ..e(1.0, 0.9, 1.1)
        };
        assert_eq!(v(none), "not measured yet");
    }
}
