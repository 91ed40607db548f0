//! Figure data from whatever cells exist: medians with interquartile bands (and the mean beside
//! them), Wilson intervals for success rates, failures accounted per point.

use super::cells::*;
use super::spec::*;
use crate::stats::wilson;
use fedmix::error::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Median, mean and interquartile band of the values present (or a proportion with its Wilson
/// interval for success). The figures plot the median: a few diverging runs (an error of 10⁴
/// among errors of 10⁻¹) move the mean outside the interquartile band, never the median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// x (round or axis value).
    pub x: f64,
    /// Median over seeds (linear interpolation; for success: the proportion). The plotted line.
    pub median: f64,
    /// Mean over seeds (for success: the proportion).
    pub mean: f64,
    /// Lower band (25 % quantile over seeds, linear interpolation; for success: Wilson 95 %
    /// lower limit).
    pub lo: f64,
    /// Upper band (75 % quantile; for success: Wilson 95 % upper limit).
    pub hi: f64,
    /// Number of seeds with a value.
    pub n: usize,
}

/// One line of a merged figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Legend label (series, with the variant).
    pub label: String,
    /// Points.
    pub points: Vec<Band>,
    /// Phase 1 rounds (trace figures of two-phase series; shaded).
    pub phase1_rounds: usize,
    /// Runs of this line that failed (a typed error instead of a result), in cell order.
    pub failures: Vec<Failure>,
}

/// A run of a line that ended in a typed error (e.g. Phase 1 finding fewer than k clusters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Data seed of the cell.
    pub seed: u64,
    /// Axis value of the cell (sweeps); `None` in trace figures, where a failure has no round.
    pub x: Option<f64>,
    /// The error's message.
    pub message: String,
}

/// A merged figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedFigure {
    /// `<experiment>-<figure>`.
    pub name: String,
    /// Title.
    pub title: String,
    /// x label.
    pub x_label: String,
    /// y label.
    pub y_label: String,
    /// Log x.
    pub log_x: bool,
    /// Log y.
    pub log_y: bool,
    /// Lines.
    pub lines: Vec<Line>,
}

/// The merged result of an output directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    /// Experiment name.
    pub experiment: String,
    /// Profile.
    pub profile: String,
    /// Cells found / planned.
    pub cells_found: usize,
    /// Cells planned.
    pub cells_planned: usize,
    /// Cells missing (ids).
    pub missing: Vec<String>,
    /// Figures.
    pub figures: Vec<MergedFigure>,
}

fn band(x: f64, vals: &[f64]) -> Option<Band> {
    if vals.is_empty() {
        return None;
    }
    let n = vals.len();
    let mut sorted = vals.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Quantile with linear interpolation between order statistics (numpy's default).
    let q = |p: f64| {
        let h = p * (n - 1) as f64;
        let (i, f) = (h.floor() as usize, h - h.floor());
        sorted[i] + f * (sorted[(i + 1).min(n - 1)] - sorted[i])
    };
    Some(Band {
        x,
        median: q(0.5),
        mean: vals.iter().sum::<f64>() / n as f64,
        lo: q(0.25),
        hi: q(0.75),
        n,
    })
}

fn scalar(f: &FigureSpec, s: &SeriesResult, sigma: f64) -> Option<f64> {
    if s.error.is_some() {
        return None;
    }
    let reach = |t: f64| s.distance.iter().position(|d| d.is_some_and(|d| d <= t));
    match f.metric {
        Metric::Distance => s.final_distance,
        Metric::Misclustering => s.final_misclustering,
        Metric::Clusters => Some(s.clusters as f64),
        Metric::Success => Some(f64::from(u8::from(s.official_success.unwrap_or_else(
            || {
                s.final_distance
                    .is_some_and(|d| d < f.success_factor * sigma + f.success_offset)
            },
        )))),
        Metric::RoundsToTarget => f.target.and_then(reach).map(|r| (r + 1) as f64),
        Metric::FloatsToTarget => f.target.and_then(reach).map(|r| s.floats[r] as f64),
    }
}

/// Assemble every figure from the cells present in `out`.
///
/// # Errors
/// [`read_plan`] errors; a cell file that does not match the plan.
pub fn merge(out: &Path) -> Result<Merged> {
    let plan = read_plan(out)?;
    let e = &plan.experiment;
    let mut cells: Vec<CellResult> = Vec::new();
    let mut missing = Vec::new();
    for cell in &plan.cells {
        let path = cell_path(out, cell);
        if path.exists() {
            cells.push(read_cell(&path, cell)?);
        } else {
            missing.push(cell.id.clone());
        }
    }
    let mut variants: Vec<Option<usize>> = plan.cells.iter().map(|c| c.variant).collect();
    variants.sort_unstable();
    variants.dedup();
    let mut figures = Vec::new();
    for f in &e.figures {
        let chosen: Vec<usize> = e
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| f.series.as_ref().is_none_or(|l| l.contains(&s.label)))
            .map(|(i, _)| i)
            .collect();
        let mut lines = Vec::new();
        for &v in &variants {
            for &si in &chosen {
                let label = match v {
                    Some(v) => format!("{} ({})", e.series[si].label, e.variants[v].label),
                    None => e.series[si].label.clone(),
                };
                let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.variant == v).collect();
                let failures: Vec<Failure> = mine
                    .iter()
                    .filter_map(|c| {
                        c.series[si].error.as_ref().map(|m| Failure {
                            seed: c.cell.seed,
                            x: match f.kind {
                                FigureKind::Trace => None,
                                FigureKind::Sweep => {
                                    c.cell.x.and_then(|p| plan.axis_values.get(p.0).copied())
                                }
                            },
                            message: m.clone(),
                        })
                    })
                    .collect();
                let mut points = Vec::new();
                let mut phase1_rounds = 0;
                match f.kind {
                    FigureKind::Trace => {
                        let len = mine
                            .iter()
                            .map(|c| c.series[si].distance.len())
                            .max()
                            .unwrap_or(0);
                        phase1_rounds = mine
                            .iter()
                            .map(|c| c.series[si].phase1_rounds)
                            .max()
                            .unwrap_or(0);
                        for r in 0..len {
                            let vals: Vec<f64> = mine
                                .iter()
                                .filter_map(|c| {
                                    let s = &c.series[si];
                                    match f.metric {
                                        Metric::Misclustering => {
                                            s.misclustering.get(r).copied().flatten()
                                        }
                                        _ => s.distance.get(r).copied().flatten(),
                                    }
                                })
                                .collect();
                            points.extend(band((r + 1) as f64, &vals));
                        }
                    }
                    FigureKind::Sweep => {
                        for (xi, &x) in plan.axis_values.iter().enumerate() {
                            let at: Vec<&&CellResult> = mine
                                .iter()
                                .filter(|c| c.cell.x.map(|p| p.0) == Some(xi))
                                .collect();
                            let vals: Vec<f64> = at
                                .iter()
                                .filter_map(|c| scalar(f, &c.series[si], c.sigma))
                                .collect();
                            if f.metric == Metric::Success {
                                let n = at.len();
                                let succ = vals.iter().filter(|&&v| v > 0.5).count();
                                if n > 0 {
                                    let (lo, hi) = wilson(succ, n);
                                    let p = succ as f64 / n as f64;
                                    points.push(Band {
                                        x,
                                        median: p,
                                        mean: p,
                                        lo,
                                        hi,
                                        n,
                                    });
                                }
                            } else {
                                points.extend(band(x, &vals));
                            }
                        }
                    }
                }
                lines.push(Line {
                    label,
                    points,
                    phase1_rounds,
                    failures,
                });
            }
        }
        let (x_label, log_x) = match (f.kind, &e.axis) {
            (FigureKind::Sweep, Some(a)) => (a.label.clone(), a.log),
            _ => ("round".to_string(), false),
        };
        let y_label = match f.metric {
            Metric::Distance => "d(θ, θ*)".to_string(),
            Metric::Misclustering => "misclustering (clients)".to_string(),
            Metric::Success => format!(
                "success probability ({} seeds/point planned)",
                plan.experiment.profiles[&plan.profile].seeds
            ),
            Metric::Clusters => "clusters found".to_string(),
            Metric::RoundsToTarget => format!("rounds to d ≤ {}", f.target.unwrap_or(0.0)),
            Metric::FloatsToTarget => format!("floats sent to d ≤ {}", f.target.unwrap_or(0.0)),
        };
        figures.push(MergedFigure {
            name: format!("{}-{}", e.name, f.name),
            title: format!("{} — {}", e.title, f.name),
            x_label,
            y_label,
            log_x,
            log_y: f.log_y,
            lines,
        });
    }
    Ok(Merged {
        experiment: e.name.clone(),
        profile: plan.profile.clone(),
        cells_found: cells.len(),
        cells_planned: plan.cells.len(),
        missing,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::band;

    /// One diverging seed among ten: the mean leaves the interquartile band, the plotted median
    /// stays inside it. Quantiles by hand (numpy's linear rule, h = p(n − 1)): sorted values
    /// 0.1, 0.2, …, 0.9, 1e4; median at h = 4.5 → (0.5 + 0.6)/2 = 0.55; 25 % at h = 2.25 →
    /// 0.3 + 0.25·0.1 = 0.325; 75 % at h = 6.75 → 0.7 + 0.75·0.1 = 0.775; mean (4.5 + 1e4)/10.
    #[test]
    fn median_and_band_by_hand_with_one_diverging_seed() {
        let mut vals: Vec<f64> = (1..=9).map(|i| f64::from(i) / 10.0).collect();
        vals.push(1e4);
        vals.reverse();
        let b = band(3.0, &vals).unwrap();
        assert_eq!(b.n, 10);
        assert!((b.median - 0.55).abs() < 1e-12, "{b:?}");
        assert!((b.lo - 0.325).abs() < 1e-12, "{b:?}");
        assert!((b.hi - 0.775).abs() < 1e-12, "{b:?}");
        assert!((b.mean - 1000.45).abs() < 1e-9, "{b:?}");
        assert!(b.lo <= b.median && b.median <= b.hi && b.mean > b.hi);
        assert!(band(1.0, &[]).is_none());
    }
}
