//! The claim ledger of `docs/REPORT.md`: every quantitative claim of the experiment sections of
//! SXY22 (App. C), IFCA (§6.1, Fig. 3) and SR-FCA (§5), measured from the experiment cells with a
//! 95 % interval (each row names its method) and a verdict, and the table of SXY22 App. C's
//! parameters against our defaults.
//!
//! Each claim is declared as data, in its paper's table ([`claims_sxy22`], [`claims_ifca`],
//! [`claims_srfca`]; the vocabulary is [`claim`]): the statistic (from the library in
//! [`statistics`]), the experiments and series it reads, the verdict rule and the rule's printed
//! wording; the interval method follows from the statistic. This module is the engine that
//! evaluates them: [`ledger`] turns every claim into a [`Row`] (measure, fill the claim's text,
//! apply its rule), withholds the verdict of a row whose statistic has too few seeds, and
//! [`render`] writes the table and the rules. [`tables`] holds the report's rate and parameter
//! tables.
//!
//! Adding a claim: a [`claim::Claim`] in its paper's `CLAIMS` (a new statistic goes into
//! [`statistics::Quantity`] or [`claim::SweepStat`], a new rule into [`claim::EstimateRule`] or
//! [`claim::SweepRule`] with its verdict function), nothing here.

pub mod claim;
pub mod claims_ifca;
pub mod claims_srfca;
pub mod claims_sxy22;
pub mod render;
pub mod statistics;
pub mod tables;

use claim::{Cause, Claim, Interval, Note, RuleText, Stat, Summary, Sweep, SweepStat, Test};
pub use render::Row;
pub use statistics::{contraction_rate, load, rounds_to, Loaded};
use statistics::{
    count_by_n, counts_str, dropped, final_over, happened, mean_clusters, median_str, per_seed,
    reduction, rounds_to_oracle, series, success_by_x, success_rule, Count,
};
pub use tables::{parameter_table, rate_table};

use crate::experiment::CellResult;
use crate::stats::wilson;
pub use crate::stats::{geomean_ci, mean, mean_ci, ratio_of_means_ci, Estimate};
use std::collections::BTreeMap;

/// Seeds an estimate needs before its row gets a verdict.
const MIN_SEEDS: usize = 10;

/// The experiments' plans and cells, by name.
type Experiments = BTreeMap<String, Loaded>;

/// The row between SXY22's claims and IFCA's: the papers' experiments on real data.
const OUT_OF_SCOPE: Claim = Claim {
    claim: "Experiments on real data / neural networks",
    source: "SXY22 (none); IFCA §6.2–6.3 (Rotated MNIST, CIFAR, FEMNIST); SR-FCA §5 tables",
    test: Test::Fixed {
        measured: "out of scope: fedmix is a library for mixed linear regression",
        verdict: "not testable",
    },
    cause: Cause::None,
    rule_text: RuleText::None,
};

/// Every claim, in ledger order.
fn claims() -> impl Iterator<Item = &'static Claim> + Clone {
    claims_sxy22::CLAIMS
        .iter()
        .chain(std::iter::once(&OUT_OF_SCOPE))
        .chain(claims_ifca::CLAIMS)
        .chain(claims_srfca::CLAIMS)
}

/// The ledger and the parameter table as markdown, with the rows as data.
pub fn ledger(loaded: &Experiments) -> (String, Vec<Row>) {
    let rows: Vec<Row> = claims()
        .map(|c| {
            let (mut row, fewest) = evaluate(c, loaded);
            if let Some(gated) = seed_gate(fewest) {
                row.verdict = gated;
            }
            row
        })
        .collect();
    (render::markdown(&rows, claims(), MIN_SEEDS), rows)
}

/// The verdict a row gets instead of its rule's when its statistics rest on too few seeds:
/// `fewest` is the smallest number of seeds behind any of them (`None`: the row's verdict
/// does not rest on per-seed statistics — a fixed row, or a sweep, which is gated by its
/// completeness instead). No seed at all: the cells are missing; fewer than [`MIN_SEEDS`]: no
/// verdict yet.
fn seed_gate(fewest: Option<usize>) -> Option<String> {
    match fewest? {
        0 => Some("not measured yet (cells missing)".into()),
        n if n < MIN_SEEDS => Some(format!("not measured yet (fewer than {MIN_SEEDS} seeds)")),
        _ => None,
    }
}

/// A claim's row: measured, judged, with its cause and interval method; and the fewest seeds
/// behind its per-seed statistics, for [`seed_gate`].
fn evaluate(c: &Claim, loaded: &Experiments) -> (Row, Option<usize>) {
    let row = |measured: String, verdict: &str, cause: &str, interval: Interval| Row {
        claim: c.claim.into(),
        source: c.source.into(),
        measured,
        interval: interval.text().into(),
        verdict: verdict.into(),
        cause: cause.into(),
    };
    let judged = |(measured, verdict): (String, &str)| {
        row(measured, verdict, c.cause.text(verdict), c.test.interval())
    };
    match c.test {
        Test::Estimates { stats, text, rule } => {
            let mut estimates = Vec::new();
            let mut all = Vec::new();
            for (i, s) in stats.iter().enumerate() {
                let (e, value, note) = estimate(s, loaded);
                estimates.push(e);
                all.extend(slots(
                    i,
                    format!("{value}{note}"),
                    &[("value", value), ("note", note)],
                ));
            }
            let fewest = estimates.iter().map(Estimate::seeds).min();
            let measured = judged((fill(text, &all), rule.verdict(&estimates)));
            (measured, fewest)
        }
        Test::Stall { .. } => {
            let (measured, verdict, fewest) = stall(&c.test, loaded);
            (judged((measured, verdict)), fewest)
        }
        Test::Fixed { measured, verdict } => (
            row(
                measured.into(),
                verdict,
                c.cause.text(verdict),
                Interval::None,
            ),
            None,
        ),
        Test::Rise { sweep, .. } | Test::Sweep { sweep, .. } => {
            let Some(l) = at_scale(&sweep, loaded) else {
                let not_run = row(sweep.not_run.into(), "not measured yet", "", Interval::None);
                return (not_run, None);
            };
            let mut fewest = None;
            let measured = match c.test {
                Test::Rise { .. } => {
                    let (measured, verdict, cause) = rise(&c.test, l, loaded);
                    row(measured, verdict, &cause, c.test.interval())
                }
                _ => {
                    let (measured, verdict, few) = sweep_stats(&c.test, l);
                    fewest = few;
                    // A partial sweep gets no verdict; the cause follows the rule's.
                    let gated = if l.complete() {
                        verdict
                    } else {
                        "not measured yet (sweep partial)"
                    };
                    row(measured, gated, c.cause.text(verdict), c.test.interval())
                }
            };
            (measured, fewest)
        }
    }
}

/// Named pieces of a claim's text: `{key}` is replaced by the value.
type Slots = Vec<(String, String)>;

/// `text` with each `{key}` of `slots` replaced by its value (other braces are kept).
fn fill(text: &str, slots: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after
            .find('}')
            .and_then(|close| Some((close, slots.iter().find(|(k, _)| *k == after[..close])?)));
        match value {
            Some((close, (_, v))) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Slots of statistic `i`: `{i}`, and each `{i.name}` of `named`.
fn slots(i: usize, main: String, named: &[(&str, String)]) -> Slots {
    std::iter::once((i.to_string(), main))
        .chain(named.iter().map(|(n, v)| (format!("{i}.{n}"), v.clone())))
        .collect()
}

/// The cells of an experiment (none when it is missing).
fn cells_of<'a>(loaded: &'a Experiments, name: &str) -> &'a [CellResult] {
    loaded.get(name).map_or(&[], |l| l.cells.as_slice())
}

/// The sweep's cells beyond the quick profile, if any.
fn at_scale<'a>(sweep: &Sweep, loaded: &'a Experiments) -> Option<&'a Loaded> {
    loaded
        .get(sweep.experiment)
        .filter(|l| l.plan.profile != "quick" && !l.cells.is_empty())
}

/// What `note` says of `experiment`'s seeds: `seeds` asked, `kept` with a value; `group`
/// prefixes the reason.
fn note_of(
    note: Note,
    loaded: &Experiments,
    experiment: &str,
    seeds: usize,
    kept: usize,
    group: &str,
) -> String {
    match note {
        Note::Dropped(why) => dropped(seeds, kept, &format!("{group}{why}")),
        Note::FailedRuns(label) => {
            let cells = cells_of(loaded, experiment);
            let failed = cells
                .iter()
                .filter(|c| series(c, label).is_some_and(|s| s.error.is_some()))
                .count();
            format!(" ({failed} of {} runs failed)", cells.len())
        }
    }
}

/// A bootstrap statistic: its estimate, the estimate as printed and what is said of its seeds.
fn estimate(s: &Stat, loaded: &Experiments) -> (Estimate, String, String) {
    let (seeds, v) = s.of.per_seed(loaded.get(s.experiment));
    let note = |group: &str| note_of(s.note, loaded, s.experiment, seeds, v.len(), group);
    let (e, note) = match s.summary {
        Summary::Mean => (mean_ci(&v, s.seed), note("")),
        Summary::GeoMean => (geomean_ci(&v, s.seed), note("")),
        Summary::RatioOfMeans {
            denominator,
            groups: [a, b],
        } => {
            let (seeds_b, w) = s.of.per_seed(loaded.get(denominator));
            let note_b = note_of(
                s.note,
                loaded,
                denominator,
                seeds_b,
                w.len(),
                &format!("{b}, "),
            );
            (
                ratio_of_means_ci(&v, &w, s.seed),
                note(&format!("{a}, ")) + &note_b,
            )
        }
    };
    (e, e.fmt(s.digits), note)
}

/// A [`Test::Stall`] claim: what was measured and the verdict.
fn stall(test: &Test, loaded: &Experiments) -> (String, &'static str, Option<usize>) {
    let Test::Stall {
        series: label,
        reference,
        oracle,
        factor,
        settings,
        text,
        holds_at,
    } = *test
    else {
        return (String::new(), "not measured yet", None);
    };
    let mut parts = Vec::new();
    let (mut stuck_total, mut seeds_total) = (0usize, 0usize);
    let mut fewest: Option<usize> = None;
    for st in settings {
        let cells = cells_of(loaded, st.experiment);
        let ratios = per_seed(cells, |c| final_over(c, label, oracle));
        let ratio = geomean_ci(&ratios, st.seed);
        fewest = Some(fewest.map_or(ratio.seeds(), |f| f.min(ratio.seeds())));
        let stuck = ratios.iter().filter(|r| **r > factor).count();
        stuck_total += stuck;
        seeds_total += ratios.len();
        let (wl, wh) = wilson(stuck, ratios.len());
        let rounds = per_seed(cells, |c| rounds_to_oracle(c, label, oracle, factor));
        let two = per_seed(cells, |c| rounds_to_oracle(c, reference, oracle, factor));
        let pieces = [
            st.name.to_string(),
            ratio.fmt(2),
            format!("{stuck}/{}", ratios.len()),
            format!("[{wl:.2}, {wh:.2}]"),
            median_str(&rounds),
            rounds.len().to_string(),
            median_str(&two),
        ];
        parts.push(fill(text, &numbered(pieces)));
    }
    let frac = stuck_total as f64 / seeds_total.max(1) as f64;
    let verdict = if seeds_total == 0 {
        "not measured yet"
    } else if frac >= holds_at {
        "holds"
    } else if stuck_total > 0 {
        "holds partly"
    } else {
        "does not hold"
    };
    (parts.join("; "), verdict, fewest)
}

/// `{0}`, `{1}`, … of `pieces`.
fn numbered(pieces: impl IntoIterator<Item = String>) -> Slots {
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| (i.to_string(), p))
        .collect()
}

/// `x: s/n` per point of one line.
fn points(by: &BTreeMap<(usize, usize), Count>, v: usize) -> Vec<&Count> {
    by.iter()
        .filter(|((vi, _), _)| *vi == v)
        .map(|(_, p)| p)
        .collect()
}

/// "" for a complete sweep, ", partial" else.
fn partial(l: &Loaded) -> &'static str {
    if l.complete() {
        ""
    } else {
        ", partial"
    }
}

/// A [`Test::Rise`] claim on its sweep `l`: what was measured, the verdict and the cause.
fn rise(test: &Test, l: &Loaded, loaded: &Experiments) -> (String, &'static str, String) {
    let Test::Rise {
        series: label,
        companion,
        compare,
        text,
        high,
        saturated,
        some_flat,
        ..
    } = *test
    else {
        return (String::new(), "not measured yet", String::new());
    };
    let by = success_by_x(l, label);
    let variants: Vec<&str> = l
        .plan
        .experiment
        .variants
        .iter()
        .map(|v| v.label.as_str())
        .collect();
    let name = |v: usize| variants.get(v).copied().unwrap_or("");
    let nv = variants.len().max(1);
    let (mut parts, mut ends, mut flat) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lines, mut rising, mut flat_high) = (0, 0, 0);
    for v in 0..nv {
        let pts = points(&by, v);
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            continue;
        };
        lines += 1;
        let desc: Vec<String> = pts
            .iter()
            .map(|(x, s, n)| format!("{x}: {s}/{n}"))
            .collect();
        // The rise's evidence: the first and last point as Wilson 95 % intervals.
        let (fl, fh) = wilson(first.1, first.2);
        let (ll, lh) = wilson(last.1, last.2);
        ends.push(format!(
            "{}: [{fl:.2}, {fh:.2}] → [{ll:.2}, {lh:.2}]",
            name(v)
        ));
        if ll > fh {
            rising += 1;
        } else {
            let (a, b) = (first, last);
            flat.push(format!("{} ({}/{} → {}/{})", name(v), a.1, a.2, b.1, b.2));
        }
        if pts.iter().all(|(_, s, n)| *s as f64 >= high * *n as f64) {
            flat_high += 1;
        }
        parts.push(format!("{}: {}", name(v), desc.join(", ")));
    }
    // The series beside it, from the sweep or its companion experiment.
    let two_source = loaded
        .get(companion)
        .filter(|c| c.plan.profile == l.plan.profile && !c.cells.is_empty());
    let two = success_by_x(two_source.unwrap_or(l), compare);
    let two_cells = match two_source {
        Some(c) => format!(
            " ({companion}: {} of {} cells{})",
            c.cells.len(),
            c.plan.cells.len(),
            partial(c)
        ),
        None if two.is_empty() => format!(" ({companion}: not run at this profile yet)"),
        None => String::new(),
    };
    let two_desc: Vec<String> = (0..nv)
        .map(|v| {
            let pts: Vec<String> = points(&two, v)
                .iter()
                .map(|(x, s, n)| format!("{x}: {s}/{n}"))
                .collect();
            format!("{}: {}", name(v), pts.join(", "))
        })
        .filter(|d| !d.ends_with(": "))
        .collect();
    let complete = l.complete();
    let (factor, offset) = success_rule(l);
    let measured = fill(
        text,
        &numbered([
            if offset == 0.0 {
                format!("{factor}σ")
            } else {
                format!("{factor}σ + {offset}")
            },
            l.plan
                .experiment
                .axis
                .as_ref()
                .map_or("x", |a| a.parameter.as_str())
                .to_string(),
            l.cells.len().to_string(),
            l.plan.cells.len().to_string(),
            partial(l).to_string(),
            parts.join("; "),
            if complete {
                format!(
                    "; first → last point of each line, Wilson 95 %: {}",
                    ends.join("; ")
                )
            } else {
                String::new()
            },
            two_cells,
            if two_desc.is_empty() {
                "—".to_string()
            } else {
                two_desc.join("; ")
            },
        ]),
    );
    let verdict = if lines == 0 {
        "not measured yet"
    } else if !complete {
        "not measured yet (sweep partial)"
    } else if rising == lines {
        "holds"
    } else if rising > 0 {
        "holds partly"
    } else if flat_high == lines {
        "does not hold"
    } else {
        "unclear"
    };
    let cause = if complete && flat_high > 0 {
        saturated.to_string()
    } else if complete && rising > 0 && rising < lines {
        fill(some_flat, &numbered([flat.join(", ")]))
    } else {
        String::new()
    };
    (measured, verdict, cause)
}

/// A [`Test::Sweep`] claim on its sweep `l`: what was measured and the verdict (before the
/// gate on a partial sweep).
fn sweep_stats(test: &Test, l: &Loaded) -> (String, &'static str, Option<usize>) {
    let Test::Sweep {
        stats, text, rule, ..
    } = *test
    else {
        return (String::new(), "not measured yet", None);
    };
    // The fewest seeds behind a bootstrap estimate of the row (proportions are judged by their
    // Wilson intervals, whatever their seeds).
    let mut fewest: Option<usize> = None;
    let cells_note = format!(
        "{} of {} cells{}",
        l.cells.len(),
        l.plan.cells.len(),
        partial(l)
    );
    let mut all: Slots = vec![("cells".into(), cells_note)];
    let mut verdict = "not measured yet";
    for (i, stat) in stats.iter().enumerate() {
        let judged = i == 0;
        match *stat {
            SweepStat::Proportion { series, event } => {
                let counts = count_by_n(l, series, |c, s| happened(event, c, s));
                if judged {
                    let at = match rule {
                        claim::SweepRule::WilsonAbove { at, .. }
                        | claim::SweepRule::Some { at } => {
                            counts.iter().find(|(x, _, _)| (*x - at).abs() < 0.5)
                        }
                        claim::SweepRule::Reduces => None,
                    };
                    verdict = rule.verdict_at(at.map(|&(_, s, n)| (s, n)));
                }
                all.extend(slots(i, counts_str(&counts), &[]));
            }
            SweepStat::MeanClusters { series } => {
                all.extend(slots(i, mean_clusters(l, series).join(", "), &[]));
            }
            SweepStat::Reduction { series, seed } => {
                let (by_n, pooled, first_errs, by_n_seeds) = reduction(l, series, seed);
                let few = by_n_seeds.map_or(pooled.seeds(), |s| s.min(pooled.seeds()));
                fewest = Some(fewest.map_or(few, |f| f.min(few)));
                if judged {
                    verdict = claim::SweepRule::reduction_verdict(&pooled, first_errs);
                }
                all.extend(slots(i, by_n, &[("pooled", pooled.fmt(3))]));
            }
        }
    }
    (fill(text, &all), verdict, fewest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bootstrap interval of a mean covers it and shrinks with n; the geometric mean of
    /// `{2, 8}` is 4.
    #[test]
    fn bootstrap_intervals() {
        let v: Vec<f64> = (0..20).map(|i| f64::from(i % 5)).collect();
        let e = mean_ci(&v, 1);
        assert!((e.value - 2.0).abs() < 1e-12 && e.lo < 2.0 && e.hi > 2.0);
        // Standard error of the mean: sd/√n = 1.414/√20 = 0.316; the 95 % interval ≈ ±0.62.
        assert!((e.hi - e.lo - 2.0 * 1.96 * 0.316).abs() < 0.15, "{e:?}");
        let g = geomean_ci(&[2.0, 8.0], 1);
        assert!((g.value - 4.0).abs() < 1e-12);
    }

    /// A two-group estimate prints both sizes, and the seed gate counts the smaller; an
    /// estimate without a finite value counts no seed.
    #[test]
    fn two_group_sizes() {
        let r = ratio_of_means_ci(&[1.0; 15], &[2.0; 19], 3);
        assert_eq!((r.n, r.groups), (15, Some((15, 19))));
        let text = r.fmt(2);
        assert!(text.ends_with("(n = 15 and 19)"), "{text}");
        assert_eq!(r.seeds(), 15);
        let none = mean_ci(&[], 1);
        assert_eq!((none.seeds(), none.fmt(2).as_str()), (0, "— (no seed)"));
    }

    /// The gate: no seed → cells missing, fewer than the minimum → no verdict yet, enough or
    /// no per-seed statistic → the rule's verdict stands.
    #[test]
    fn the_seed_gate() {
        assert_eq!(
            seed_gate(Some(0)).as_deref(),
            Some("not measured yet (cells missing)")
        );
        assert_eq!(
            seed_gate(Some(MIN_SEEDS - 1)),
            Some(format!("not measured yet (fewer than {MIN_SEEDS} seeds)"))
        );
        assert_eq!(seed_gate(Some(MIN_SEEDS)), None);
        assert_eq!(seed_gate(None), None);
    }

    /// Only declared keys are replaced; other braces stay.
    #[test]
    fn filling_a_text() {
        let slots = numbered(["a".to_string(), "b".to_string()]);
        assert_eq!(
            fill("s ∈ {1, 2} {0}{1} {2} {", &slots),
            "s ∈ {1, 2} ab {2} {"
        );
    }

    /// With no cells, every claim is a row saying so, and every place in its text is filled.
    #[test]
    fn every_claim_without_cells() {
        let (md, rows) = ledger(&BTreeMap::new());
        assert_eq!(rows.len(), claims().count());
        for r in &rows {
            assert!(
                r.verdict.starts_with("not ") || r.verdict == "does not hold",
                "{r:?}"
            );
            let unfilled = r.measured.split('{').skip(1).any(|t| {
                t.split('}').next().is_some_and(|k| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                })
            });
            assert!(!unfilled, "{}", r.measured);
        }
        assert!(md.contains("- Every row: a statistic with no seed"));
    }
}
