//! The ledger's library of statistics: what each claim of [`super::claims_sxy22`],
//! [`super::claims_ifca`] and [`super::claims_srfca`] can measure on the experiment cells.
//!
//! Per data seed (one cell, or for [`Quantity::RateExponentOverAxis`] the cells of one seed
//! along the axis), then a percentile bootstrap over seeds, 4000 resamples from a fixed seed, so
//! the ledger is a deterministic function of the cells:
//! - **Phase 2 contraction rate** λ of a trace `d_t = d(θ_t, θ*)` ([`contraction_rate`]): minus
//!   the least-squares slope of `ln(d_t − d_{t+5})` on `t` over the Phase 2 rounds from where that
//!   difference has fallen below half its maximum (past the relabelling transient) until it falls
//!   below 1e-4·d_t (SXY22 Theorem 2, eq. 9: `d_t − floor ≤ (1 − C₁sηρ/κ)^t (d_0 − floor)`, so
//!   `λ ≈ C₁sηρ/κ`; the differences remove the unknown floor, so a trace need not have
//!   converged). A trace with fewer than 4 rounds in that window has no rate.
//! - **Fitted rate exponent**: the least-squares slope of `ln λ_s` on `ln s` (SXY22 App. C.1:
//!   λ ∝ s gives 1).
//! - **Per-seed ratios** (final error / oracle's final error, final error at s = 10 / s = 1,
//!   Phase 1's rate / Phase 2's) are averaged on the log scale (geometric mean), so a ratio and
//!   its inverse get symmetric intervals.
//! - **Ratios of two settings' rates** (C.3 / C.2) come from independent seeds, so no per-seed
//!   ratio exists: the ratio of the two arithmetic means, both groups resampled independently.
//! - **Proportions** (IFCA Fig. 3 successes, SR-FCA recoveries and collapses, IFCA stalls) use
//!   the Wilson 95 % interval, per value of the sweep's axis ([`count_by_x`]).
//! - **Rounds to a target** ([`rounds_to`]): the first round at or below it, summarised by the
//!   median over the seeds that reach it.
//! - A seed whose run failed (a typed error) or whose trace has no rate is dropped from a
//!   statistic, and the row says how many were ([`dropped`]).

use crate::experiment::{self, CellResult, Plan, SeriesResult};
use crate::stats::{mean, mean_ci, wilson, Estimate};
use fedmix::prec::max_nan;
use std::collections::BTreeMap;
use std::path::Path;

/// An experiment's plan and the cells present on disk.
pub struct Loaded {
    /// The plan (`plan.json`).
    pub plan: Plan,
    /// Cells present, in plan order.
    pub cells: Vec<CellResult>,
}

impl Loaded {
    /// Whether every planned cell is present.
    pub fn complete(&self) -> bool {
        self.cells.len() == self.plan.cells.len()
    }
}

/// Read a work directory's plan and every cell present.
///
/// # Errors
/// A message when the plan or a cell cannot be read or does not match the plan.
pub fn load(work: &Path) -> Result<Loaded, String> {
    let plan = experiment::read_plan(work).map_err(|e| e.to_string())?;
    let mut cells = Vec::new();
    for c in &plan.cells {
        let p = experiment::cell_path(work, c);
        if p.exists() {
            cells.push(experiment::read_cell(&p, c).map_err(|e| e.to_string())?);
        }
    }
    Ok(Loaded { plan, cells })
}

/// Lag of the differences in [`contraction_rate`].
const LAG: usize = 5;

/// Phase 2 contraction rate λ of a trace (module docs), `None` when it has none.
pub fn contraction_rate(s: &SeriesResult) -> Option<f64> {
    if s.error.is_some() {
        return None;
    }
    let d: Vec<f64> = s.distance.iter().map(|x| x.unwrap_or(f64::NAN)).collect();
    if d.len() < s.phase1_rounds + 4 * LAG || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    // Differences at lag h: for d_t = f + A e^{−λt}, d_t − d_{t+h} = A (1 − e^{−λh}) e^{−λt},
    // so ln(d_t − d_{t+h}) has slope −λ whatever the floor f, converged or not.
    let diff: Vec<f64> = (0..d.len() - LAG).map(|t| d[t] - d[t + LAG]).collect();
    let p1 = s.phase1_rounds;
    let dmax = diff[p1..].iter().copied().fold(0.0, max_nan);
    // The linear regime: after the relabelling transient (the difference has fallen below half
    // its Phase 2 maximum), while the decrease is still resolvable (≥ 1e-4 relative per lag).
    let start = (p1..diff.len()).find(|&t| diff[t] > 0.0 && diff[t] <= 0.5 * dmax)?;
    let pts: Vec<(f64, f64)> = (start..diff.len())
        .take_while(|&t| diff[t] > 1e-4 * d[t])
        .map(|t| (t as f64, diff[t].ln()))
        .collect();
    if pts.len() < 4 {
        return None;
    }
    let (xs, ys): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
    let (slope, _) = crate::framework::linear_fit(&xs, &ys);
    (slope < 0.0).then_some(-slope)
}

/// First round (1-based, Phase 1 rounds included) at which the trace is at or below `target`.
pub fn rounds_to(s: &SeriesResult, target: f64) -> Option<usize> {
    if s.error.is_some() {
        return None;
    }
    s.distance
        .iter()
        .position(|d| d.is_some_and(|d| d <= target))
        .map(|r| r + 1)
}

/// The series of a cell with this label.
pub fn series<'a>(c: &'a CellResult, label: &str) -> Option<&'a SeriesResult> {
    c.series.iter().find(|s| s.label == label)
}

/// Per-seed values of `f` over the cells where it is defined.
pub fn per_seed(cells: &[CellResult], f: impl Fn(&CellResult) -> Option<f64>) -> Vec<f64> {
    cells
        .iter()
        .filter_map(f)
        .filter(|v| v.is_finite())
        .collect()
}

/// Final error of `label` over the final error of `oracle` in one cell.
pub fn final_over(c: &CellResult, label: &str, oracle: &str) -> Option<f64> {
    let a = series(c, label)?.final_distance?;
    let o = series(c, oracle)?.final_distance?;
    Some(a / o)
}

/// Rounds of `label` to `factor` × the final error of `oracle` in one cell.
pub fn rounds_to_oracle(c: &CellResult, label: &str, oracle: &str, factor: f64) -> Option<f64> {
    let o = series(c, oracle)?.final_distance?;
    rounds_to(series(c, label)?, factor * o).map(|r| r as f64)
}

/// Slope of `ln λ` on `ln s` over `(s, λ)` points.
fn log_log_slope(pts: &[(f64, f64)]) -> f64 {
    let (xs, ys): (Vec<f64>, Vec<f64>) = pts.iter().map(|&(s, r)| (s.ln(), r.ln())).unzip();
    crate::framework::linear_fit(&xs, &ys).0
}

/// A per-seed quantity, read from the cells of one experiment.
#[derive(Clone, Copy, Debug)]
pub enum Quantity {
    /// Phase 1's per-round log-decrease `ln(d_1/d_T)/(T − 1)` of the series over its Phase 2
    /// rate λ ([`contraction_rate`]); no value when Phase 1 has fewer than 2 rounds.
    Phase1OverPhase2(&'static str),
    /// The series' Phase 2 contraction rate λ.
    Rate(&'static str),
    /// Final error of the first series over the second's.
    FinalRatio(&'static str, &'static str),
    /// The fitted rate exponent within one cell: slope of `ln λ_s` on `ln s` over the series
    /// `{prefix}{s}`, s in `s`; no value unless every s has a rate.
    RateExponentOverSeries {
        /// Series label before the value of s.
        prefix: &'static str,
        /// The values of s.
        s: &'static [u32],
    },
    /// The fitted rate exponent along the axis (the axis is s): per data seed, slope of `ln λ_s`
    /// on `ln s` of `series` over the cells of the first variant whose label contains
    /// `variant`, at axis values `s`; no value unless every s has a rate.
    RateExponentOverAxis {
        /// Part of the variant's label.
        variant: &'static str,
        /// The series.
        series: &'static str,
        /// The axis values of s.
        s: &'static [f64],
    },
}

impl Quantity {
    /// `(seeds, values)`: the data seeds the quantity was asked of, and its finite values.
    pub fn per_seed(&self, l: Option<&Loaded>) -> (usize, Vec<f64>) {
        let cells = l.map_or(&[][..], |l| l.cells.as_slice());
        let of_cells = |f: &dyn Fn(&CellResult) -> Option<f64>| (cells.len(), per_seed(cells, f));
        match *self {
            Self::Phase1OverPhase2(label) => of_cells(&|c| phase1_over_phase2(series(c, label)?)),
            Self::Rate(label) => of_cells(&|c| contraction_rate(series(c, label)?)),
            Self::FinalRatio(a, b) => of_cells(&|c| final_over(c, a, b)),
            Self::RateExponentOverSeries { prefix, s } => of_cells(&|c| {
                let pts = s.iter().map(|&s| {
                    let r = contraction_rate(series(c, &format!("{prefix}{s}"))?)?;
                    Some((f64::from(s), r))
                });
                Some(log_log_slope(&pts.collect::<Option<Vec<_>>>()?))
            }),
            Self::RateExponentOverAxis { variant, series, s } => {
                l.map_or((0, vec![]), |l| exponent_over_axis(l, variant, series, s))
            }
        }
    }
}

/// Phase 1's per-round log-decrease over Phase 2's rate ([`Quantity::Phase1OverPhase2`]).
fn phase1_over_phase2(s: &SeriesResult) -> Option<f64> {
    let p1 = s.phase1_rounds;
    if s.error.is_some() || p1 < 2 {
        return None;
    }
    let phase1 = -(s.distance[p1 - 1]? / s.distance[0]?).ln() / (p1 - 1) as f64;
    Some(phase1 / contraction_rate(s)?)
}

/// [`Quantity::RateExponentOverAxis`]: `(seeds present, slopes of the seeds with every rate)`.
fn exponent_over_axis(
    l: &Loaded,
    variant: &str,
    label: &str,
    s_values: &[f64],
) -> (usize, Vec<f64>) {
    let Some(v) = l
        .plan
        .experiment
        .variants
        .iter()
        .position(|v| v.label.contains(variant))
    else {
        return (0, vec![]);
    };
    let mut by_seed: BTreeMap<u64, Vec<(f64, Option<f64>)>> = BTreeMap::new();
    for c in l.cells.iter().filter(|c| c.cell.variant == Some(v)) {
        let Some((_, s)) = c.cell.x.filter(|(_, s)| s_values.contains(s)) else {
            continue;
        };
        let rate = series(c, label).and_then(contraction_rate);
        by_seed.entry(c.cell.seed).or_default().push((s, rate));
    }
    let slopes = by_seed
        .values()
        .filter_map(|pts| {
            let pts: Option<Vec<(f64, f64)>> =
                pts.iter().map(|&(s, r)| r.map(|r| (s, r))).collect();
            Some(log_log_slope(&pts.filter(|p| p.len() == s_values.len())?))
        })
        .collect();
    (by_seed.len(), slopes)
}

/// "" when every seed gave a value, else how many were dropped and why.
pub fn dropped(seeds: usize, kept: usize, why: &str) -> String {
    if kept >= seeds {
        String::new()
    } else {
        format!(" ({} of {seeds} seeds dropped: {why})", seeds - kept)
    }
}

/// The median to whole rounds, `—` for none.
pub fn median_str(v: &[f64]) -> String {
    if v.is_empty() {
        return "—".into();
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    format!("{:.0}", s[s.len() / 2])
}

/// A proportion at one point of a sweep: `(axis value, seeds with the event, seeds)`.
pub type Count = (f64, usize, usize);

/// Per key of each cell holding `label` (from the cell and its axis index): the axis value, the
/// cells where `event` holds and the cells.
fn tally<K: Ord>(
    l: &Loaded,
    label: &str,
    key: impl Fn(&CellResult, usize) -> K,
    event: impl Fn(&CellResult, &SeriesResult) -> bool,
) -> BTreeMap<K, Count> {
    let mut out: BTreeMap<K, Count> = BTreeMap::new();
    for c in &l.cells {
        let Some((xi, x)) = c.cell.x else { continue };
        let Some(s) = series(c, label) else { continue };
        let e = out.entry(key(c, xi)).or_insert((x, 0, 0));
        e.1 += usize::from(event(c, s));
        e.2 += 1;
    }
    out
}

/// Per (variant, axis index) of a sweep: the axis value, the cells of `label` where `event`
/// holds and the cells.
pub fn count_by_x(
    l: &Loaded,
    label: &str,
    event: impl Fn(&CellResult, &SeriesResult) -> bool,
) -> BTreeMap<(usize, usize), Count> {
    tally(l, label, |c, xi| (c.cell.variant.unwrap_or(0), xi), event)
}

/// Per axis value (samples per client n), variants pooled: `(n, cells where `event` holds,
/// cells)` of one series; a failed run counts as not satisfying `event`.
pub fn count_by_n(
    l: &Loaded,
    label: &str,
    event: impl Fn(&CellResult, &SeriesResult) -> bool,
) -> Vec<Count> {
    tally(
        l,
        label,
        |_, xi| xi,
        |c, s| s.error.is_none() && event(c, s),
    )
    .into_values()
    .collect()
}

/// `n = x: s/n [lo, hi]` (Wilson 95 %) per point, comma-separated.
pub fn counts_str(v: &[Count]) -> String {
    v.iter()
        .map(|(x, s, n)| {
            let (lo, hi) = wilson(*s, *n);
            format!("n = {x}: {s}/{n} [{lo:.2}, {hi:.2}]")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `(factor, offset)` of the experiment's success rule `d < factor·σ + offset`: its success
/// figure's, the rule the official protocol's verdict uses in these cells (IFCA's
/// `run_p2_r_noise.py` adds 0.001, `run_p2_m_n.py` does not); `(0.6, 0)` without one.
pub fn success_rule(l: &Loaded) -> (f64, f64) {
    l.plan
        .experiment
        .figures
        .iter()
        .find(|f| matches!(f.metric, experiment::Metric::Success))
        .map_or((0.6, 0.0), |f| (f.success_factor, f.success_offset))
}

/// Successes of `label` per variant and axis value: the official protocol's own verdict where the
/// series has one, else a run without error whose final error is below the success rule.
pub fn success_by_x(l: &Loaded, label: &str) -> BTreeMap<(usize, usize), Count> {
    let (factor, offset) = success_rule(l);
    count_by_x(l, label, |c, s| {
        s.official_success.unwrap_or_else(|| {
            s.error.is_none()
                && s.final_distance
                    .is_some_and(|d| d < factor * c.sigma + offset)
        })
    })
}

/// An event counted per run.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Final misclustering 0.
    ExactRecovery,
    /// All clients but at most one in one of two balanced clusters: final misclustering ≥
    /// 0.5 − 1/M, M the cell's `clients` or `clients` here.
    Collapse {
        /// M when the cell does not set it.
        clients: f64,
    },
}

/// Whether `event` happened in a run.
pub fn happened(event: Event, c: &CellResult, s: &SeriesResult) -> bool {
    match event {
        Event::ExactRecovery => s.final_misclustering == Some(0.0),
        Event::Collapse { clients } => {
            let m = c
                .cell
                .data
                .iter()
                .find(|(k, _)| k == "clients")
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .unwrap_or(clients);
            s.final_misclustering
                .is_some_and(|v| v >= 0.5 - 1.0 / m - 1e-12)
        }
    }
}

/// `n = x: K̂` (mean clusters of the runs without error) per axis value.
pub fn mean_clusters(l: &Loaded, label: &str) -> Vec<String> {
    let mut by: BTreeMap<usize, (f64, Vec<f64>)> = BTreeMap::new();
    for c in &l.cells {
        let (Some((xi, x)), Some(s)) = (c.cell.x, series(c, label)) else {
            continue;
        };
        if s.error.is_none() {
            by.entry(xi)
                .or_insert((x, vec![]))
                .1
                .push(s.clusters as f64);
        }
    }
    by.into_values()
        .map(|(x, v)| format!("n = {x}: {:.1}", mean(&v)))
        .collect()
}

/// The reduction statistic of a sweep (`claim::SweepStat::Reduction`): the text per axis value, the pooled reduction, whether the
/// first round misclusters on some seed, and the fewest seeds behind a value's estimate.
pub fn reduction(l: &Loaded, label: &str, seed: u64) -> (String, Estimate, bool, Option<usize>) {
    let mut all = Vec::new();
    let mut first_errs = false;
    let mut by: BTreeMap<usize, (f64, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for c in &l.cells {
        let (Some((xi, x)), Some(s)) = (c.cell.x, series(c, label)) else {
            continue;
        };
        if s.error.is_some() {
            continue;
        }
        let (Some(Some(first)), Some(last)) = (s.misclustering.first(), s.final_misclustering)
        else {
            continue;
        };
        let e = by.entry(xi).or_insert((x, vec![], vec![]));
        e.1.push(*first);
        e.2.push(first - last);
        all.push(first - last);
        first_errs |= *first > 0.0;
    }
    let mut fewest: Option<usize> = None;
    let parts: Vec<String> = by
        .values()
        .enumerate()
        .map(|(i, (x, first, red))| {
            let e = mean_ci(red, seed + 1 + i as u64);
            fewest = Some(fewest.map_or(e.seeds(), |f| f.min(e.seeds())));
            format!(
                "n = {x}: ONE_SHOT {:.3}, reduction {}",
                mean(first),
                e.fmt(3)
            )
        })
        .collect();
    (parts.join("; "), mean_ci(&all, seed), first_errs, fewest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(d: Vec<f64>, p1: usize) -> SeriesResult {
        SeriesResult {
            label: "t".into(),
            error: None,
            phase1_rounds: p1,
            distance: d.iter().map(|&x| Some(x)).collect(),
            misclustering: vec![],
            floats: vec![],
            final_distance: d.last().copied(),
            final_misclustering: None,
            clusters: 3,
            official_success: None,
        }
    }

    /// The rate estimator recovers λ of `f + A e^{−λt}` (exactly, up to rounding) and rejects a
    /// trace that has not converged.
    #[test]
    fn contraction_rate_of_an_exponential() {
        for lambda in [0.01, 0.05, 0.2] {
            let d: Vec<f64> = (0..400)
                .map(|t| 0.02 + 1.0 * (-lambda * t as f64).exp())
                .collect();
            let r = contraction_rate(&trace(d, 0)).expect("rate");
            assert!((r - lambda).abs() < 1e-3 * lambda + 1e-12, "{lambda}: {r}");
        }
        // A trace far from its floor after 400 rounds still has its rate (differences remove the
        // floor); a flat trace has none.
        let slow: Vec<f64> = (0..400).map(|t| 0.02 + (-0.004 * t as f64).exp()).collect();
        let r = contraction_rate(&trace(slow, 0)).expect("rate");
        assert!((r - 0.004).abs() < 1e-6, "{r}");
        assert!(contraction_rate(&trace(vec![0.5; 400], 0)).is_none());
    }

    /// Drops are counted, and nothing is said when none was dropped.
    #[test]
    fn drops() {
        assert_eq!(dropped(20, 20, "x"), "");
        assert_eq!(
            dropped(20, 15, "failed run"),
            " (5 of 20 seeds dropped: failed run)"
        );
    }
}
