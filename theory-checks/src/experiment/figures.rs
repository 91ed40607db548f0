//! An experiment's merged figure as a [`Plot`] in the report's visual language
//! ([`crate::style`]): colour and marker = the method (from the series' algorithm), line style =
//! a second series of the same method or the variant (σ, n, γ) when the figure has few lines,
//! otherwise one panel per variant (small multiples, shared axes); at most
//! [`MAX_SERIES`] series a panel. A sweep to a target marks with an arrow at the top of the
//! axis the values where the target was never reached, and [`caption`] says what each encoding
//! means, which series coincide and which never reach the target.

use super::spec::{Experiment, FigureKind, Metric};
use super::{Band, Line, MergedFigure};
use crate::figure::{render as render_plot, AxisRange, Drawn, Panel, Plot, MAX_SERIES};
use crate::style::{Dash, Method, Style, DASHES};
use std::path::Path;

fn range(fig: &MergedFigure) -> ((f64, f64), (f64, f64)) {
    let ok = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in fig.lines.iter().flat_map(|l| l.points.iter()) {
        if ok(p.x, fig.log_x) {
            x0 = x0.min(p.x);
            x1 = x1.max(p.x);
        }
        for y in [p.lo, p.median, p.hi] {
            if ok(y, fig.log_y) {
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    if !x0.is_finite() {
        return ((1.0, 10.0), (1.0, 10.0));
    }
    let pad = |lo: f64, hi: f64, log: bool, decade: bool| {
        if log && decade {
            // From a whole decade below, so that the lowest values sit above a labelled tick.
            // Up to a whole decade above too when the axis labels only powers of ten (more
            // than three decades, `figure::log_key_points`), so that the highest values sit
            // below a labelled tick rather than against the plot's top edge.
            let bottom = 10f64.powf((lo / 1.05).log10().floor()) / 1.1;
            let top = if (hi * 1.3 / bottom).log10() > 3.0 {
                10f64.powf((hi * 1.05).log10().ceil()) * 1.1
            } else {
                hi * 1.3
            };
            (bottom, top)
        } else if log {
            (lo / 1.3, hi * 1.3)
        } else {
            if hi == lo {
                // A single value (a partial sweep): ±10 % around it, not a 1e−9-wide axis.
                let h = (0.1 * lo.abs()).max(1e-9);
                return (lo - h, hi + h);
            }
            let w = hi - lo;
            (lo - 0.04 * w, hi + 0.04 * w)
        }
    };
    (pad(x0, x1, fig.log_x, false), pad(y0, y1, fig.log_y, true))
}

/// Which series and variant of `e` each line of `fig` shows (by its label, `series (variant)`).
fn identify(fig: &MergedFigure, e: &Experiment) -> Vec<(usize, Option<usize>)> {
    fig.lines
        .iter()
        .map(|l| {
            for (si, s) in e.series.iter().enumerate() {
                for (vi, v) in e.variants.iter().enumerate() {
                    if l.label == format!("{} ({})", s.label, v.label) {
                        return (si, Some(vi));
                    }
                }
            }
            let si = e.series.iter().position(|s| s.label == l.label);
            (si.unwrap_or(usize::MAX), None)
        })
        .collect()
}

/// The method a series of `e` draws as.
fn method(e: &Experiment, si: usize) -> Method {
    let Some(s) = e.series.get(si) else {
        return Method::Local;
    };
    let option = |t: &toml::Table| {
        t.get("ifca_option")
            .and_then(|v| v.as_str().map(String::from))
    };
    let gradient = option(&s.config)
        .or_else(|| option(&e.config))
        .is_some_and(|o| o == "gradient");
    Method::of(s.algorithm, !gradient)
}

/// The figure's spec in `e`.
fn spec<'a>(fig: &MergedFigure, e: &'a Experiment) -> Option<&'a super::spec::FigureSpec> {
    e.figures
        .iter()
        .find(|f| fig.name == format!("{}-{}", e.name, f.name))
}

/// How a figure is laid out, and what its caption says.
struct Layout {
    plot: Plot,
    notes: Vec<String>,
}

/// Lines that coincide (identical medians at every x) in a panel: `(later, earlier)` indices.
fn overlaps(lines: &[&Line]) -> Vec<(usize, usize)> {
    let same = |a: &[Band], b: &[Band]| {
        !a.is_empty()
            && a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| {
                p.x.to_bits() == q.x.to_bits()
                    && (p.median - q.median).abs() <= 1e-9 * p.median.abs().max(1e-300)
            })
    };
    let mut out = Vec::new();
    for i in 0..lines.len() {
        if let Some(j) = (0..i).find(|&j| same(&lines[i].points, &lines[j].points)) {
            out.push((i, j));
        }
    }
    out
}

fn layout(fig: &MergedFigure, e: &Experiment, profile: &str) -> Layout {
    // A log axis spanning less than a decade gets at most one tick label from plotters: a y
    // axis like that is drawn linearly (the values are printed in the report's tables either
    // way); an x axis like that (a sweep's grid, e.g. m ∈ [50, 400]) stays logarithmic with a
    // tick at every grid value.
    let ys: Vec<f64> = fig
        .lines
        .iter()
        .flat_map(|l| l.points.iter().flat_map(|p| [p.lo, p.median, p.hi]))
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    let ly0 = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let ly1 = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut fig = fig.clone();
    let xs: Vec<f64> = {
        let mut xs: Vec<f64> = fig
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.x))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    };
    let (lx0, lx1) = (
        xs.first().copied().unwrap_or(f64::INFINITY),
        xs.last().copied().unwrap_or(f64::NEG_INFINITY),
    );
    // A partial sweep (x is the experiment's axis and some of its values have no point yet):
    // the axis spans all the experiment's own axis values, so that it keeps its ticks and
    // shows where the missing points will go.
    let planned: Vec<f64> = e
        .plan(profile)
        .map(|p| p.axis_values)
        .unwrap_or_default()
        .into_iter()
        .filter(|x| x.is_finite() && (!fig.log_x || *x > 0.0))
        .collect();
    let on_axis = |x: &f64| planned.iter().any(|p| (p - x).abs() <= 1e-12 * p.abs());
    let widen = planned.len() >= 2
        && fig.x_label != "round"
        && xs.iter().all(on_axis)
        && planned
            .iter()
            .any(|p| !xs.iter().any(|x| (p - x).abs() <= 1e-12 * p.abs()));
    let xs = if widen {
        let mut all: Vec<f64> = xs.iter().copied().chain(planned).collect();
        all.sort_by(f64::total_cmp);
        all.dedup();
        all
    } else {
        xs
    };
    let (lx0, lx1) = if widen {
        (xs[0], xs[xs.len() - 1])
    } else {
        (lx0, lx1)
    };
    let x_keys: Option<Vec<f64>> = (fig.log_x && lx1 / lx0 < 10.0).then_some(xs.clone());
    let trace = fig.x_label == "round";
    let ids = identify(&fig, e);
    let methods: Vec<Method> = ids.iter().map(|&(si, _)| method(e, si)).collect();
    // Trace figures: the oracle is drawn as its floor, a dashed line at its final error over
    // the whole round axis (its own trace starts at θ* and rises to that floor).
    let floor: Vec<bool> = methods
        .iter()
        .map(|m| trace && *m == Method::Oracle)
        .collect();
    if trace {
        let last_round = lx1.max(1.0);
        for (l, _) in fig.lines.iter_mut().zip(&floor).filter(|(_, f)| **f) {
            if let (Some(first), Some(last)) = (l.points.first(), l.points.last()) {
                let at = |x: f64| Band { x, ..*last };
                l.points = vec![at(first.x.min(1.0)), at(last_round)];
            }
        }
    }
    fig.log_y &= ly1 / ly0 >= 10.0;
    let ((mut x0, mut x1), (y0, y1)) = range(&fig);
    if widen {
        (x0, x1) = if fig.log_x {
            (lx0 / 1.3, lx1 * 1.3)
        } else {
            let w = lx1 - lx0;
            (lx0 - 0.04 * w, lx1 + 0.04 * w)
        };
    }
    let spec = spec(&fig, e);
    let target = spec.and_then(|s| match s.metric {
        Metric::RoundsToTarget | Metric::FloatsToTarget => s.target,
        _ => None,
    });
    let sweep = spec.is_some_and(|s| s.kind == FigureKind::Sweep);
    let mut notes = Vec::new();
    // The grid dimension the lines differ in besides the series: the variants.
    let mut variants: Vec<usize> = ids.iter().filter_map(|&(_, v)| v).collect();
    variants.sort_unstable();
    variants.dedup();
    let mut series: Vec<usize> = ids.iter().map(|&(s, _)| s).collect();
    series.sort_unstable();
    series.dedup();
    let distinct_methods = {
        let mut m: Vec<Method> = series.iter().map(|&s| method(e, s)).collect();
        m.sort();
        m.dedup();
        m.len() == series.len()
    };
    let vlabel = |v: usize| e.variants.get(v).map_or(String::new(), |v| v.label.clone());
    let slabel = |s: usize| e.series.get(s).map_or(String::new(), |s| s.label.clone());
    let style_by_variant = variants.len() > 1 && fig.lines.len() <= MAX_SERIES && distinct_methods;
    let one_series = series.len() == 1;
    // Panels: (title, line indices).
    let mut groups: Vec<(String, Vec<usize>)> = if variants.len() > 1 && !style_by_variant {
        variants
            .iter()
            .map(|&v| {
                let idx = (0..fig.lines.len())
                    .filter(|&i| ids[i].1 == Some(v))
                    .collect();
                (vlabel(v), idx)
            })
            .collect()
    } else {
        vec![(String::new(), (0..fig.lines.len()).collect())]
    };
    // More than MAX_SERIES lines in a panel: the first line and the floors in every panel, the
    // others spread over as few panels as needed.
    let mut split = Vec::new();
    for (title, idx) in groups.drain(..) {
        if idx.len() <= MAX_SERIES {
            split.push((title, idx));
            continue;
        }
        let floors: Vec<usize> = idx.iter().copied().filter(|&i| floor[i]).collect();
        let first = idx.iter().copied().find(|&i| !floor[i]);
        let others: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|&i| !floor[i] && Some(i) != first)
            .collect();
        let room = MAX_SERIES - floors.len() - 1;
        let n = others.len().div_ceil(room);
        for c in 0..n {
            let (a, b) = (c * others.len() / n, (c + 1) * others.len() / n);
            let mut p: Vec<usize> = first.into_iter().collect();
            p.extend(&others[a..b]);
            p.extend(&floors);
            split.push((title.clone(), p));
        }
    }
    // Line style: the variant when it is drawn by style, else the rank of the series among
    // those of its method (fixed over the figure, so a series keeps its style in every panel).
    let dash_of = |i: usize| -> Dash {
        if floor[i] {
            return Dash::Dashed;
        }
        let (si, v) = ids[i];
        if style_by_variant {
            let k = variants.iter().position(|&w| Some(w) == v).unwrap_or(0);
            return DASHES[k % DASHES.len()];
        }
        let k = series
            .iter()
            .filter(|&&s| method(e, s) == methods[i] && s < si)
            .count();
        DASHES[k % DASHES.len()]
    };
    let label_of = |i: usize| -> String {
        let (si, v) = ids[i];
        if si == usize::MAX {
            return fig.lines[i].label.clone();
        }
        let base = match (style_by_variant, v) {
            (true, Some(v)) if one_series => vlabel(v),
            (true, Some(v)) => format!("{}, {}", slabel(si), vlabel(v)),
            _ => slabel(si),
        };
        if floor[i] {
            format!("{base}: final error")
        } else {
            base
        }
    };
    let mut panels = Vec::new();
    for (title, idx) in &split {
        let lines: Vec<&Line> = idx.iter().map(|&i| &fig.lines[i]).collect();
        let over = overlaps(&lines);
        // The panel a note speaks of (none for a single panel).
        let in_panel = if title.is_empty() {
            String::new()
        } else {
            format!(" ({title})")
        };
        let mut drawn = Vec::new();
        for (k, &i) in idx.iter().enumerate() {
            let l = &fig.lines[i];
            let mut label = label_of(i);
            let style = Style {
                color: methods[i].color(),
                dash: dash_of(i),
                marker: (!floor[i]).then(|| methods[i].marker()),
            };
            // A grid value inside the line's range with no point (every seed's run failed
            // there, or none reached the target) breaks the line: a NaN point, which the
            // renderer does not connect across, so no segment suggests a value at that x.
            let has = |x: f64| l.points.iter().any(|p| p.x == x);
            let inside = |x: f64| {
                l.points.first().is_some_and(|p| p.x < x)
                    && l.points.last().is_some_and(|p| x < p.x)
            };
            let gaps: Vec<f64> = if sweep {
                xs.iter()
                    .copied()
                    .filter(|&x| inside(x) && !has(x))
                    .collect()
            } else {
                Vec::new()
            };
            let mut pts: Vec<(f64, f64)> = l.points.iter().map(|p| (p.x, p.median)).collect();
            let mut band: Vec<(f64, f64, f64)> =
                l.points.iter().map(|p| (p.x, p.lo, p.hi)).collect();
            pts.extend(gaps.iter().map(|&x| (x, f64::NAN)));
            band.extend(gaps.iter().map(|&x| (x, f64::NAN, f64::NAN)));
            pts.sort_by(|p, q| p.0.total_cmp(&q.0));
            band.sort_by(|p, q| p.0.total_cmp(&q.0));
            let never: Vec<f64> = match target {
                Some(_) if sweep => xs
                    .iter()
                    .copied()
                    .filter(|&x| {
                        !l.points.iter().any(|p| p.x == x)
                            && !l.failures.iter().any(|f| f.x == Some(x))
                    })
                    .collect(),
                _ => Vec::new(),
            };
            if let Some(t) = target.filter(|_| !never.is_empty()) {
                let what = if l.points.is_empty() {
                    "never reached"
                } else {
                    "▲ not reached"
                };
                label = format!("{label} ({what})");
                notes.push(format!(
                    "{}{} does not reach d ≤ {t} within its rounds at {} (arrows at the top)",
                    label_of(i),
                    in_panel,
                    if l.points.is_empty() {
                        "any x".to_string()
                    } else {
                        format!(
                            "x = {}",
                            never
                                .iter()
                                .map(|x| crate::figure::tick(*x))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                ));
            }
            let failed_gaps: Vec<f64> = gaps
                .iter()
                .copied()
                .filter(|x| !never.contains(x))
                .collect();
            if !failed_gaps.is_empty() {
                notes.push(format!(
                    "{}{} has no point at x = {}, where every seed's run failed (the table's \
                     failed runs): its line is broken there",
                    label_of(i),
                    in_panel,
                    failed_gaps
                        .iter()
                        .map(|x| crate::figure::tick(*x))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if let Some(&(_, j)) = over.iter().find(|(a, _)| *a == k) {
                let other = label_of(idx[j]);
                notes.push(format!(
                    "{} coincides with {other}{}",
                    label_of(i),
                    in_panel
                ));
                label = format!("{label} (= {other})");
            }
            let marks_every = if pts.len() > 30 { pts.len() / 8 } else { 1 };
            drawn.push(Drawn {
                label,
                style,
                line: true,
                marks_every,
                band: if floor[i] { Vec::new() } else { band },
                points: pts,
                never,
            });
        }
        panels.push(Panel {
            title: title.clone(),
            series: drawn,
        });
    }
    let p1 = fig.lines.iter().map(|l| l.phase1_rounds).max().unwrap_or(0);
    let title = if one_series && !series.is_empty() {
        format!("{}: {}", fig.title, slabel(series[0]))
    } else {
        fig.title.clone()
    };
    let plot = Plot {
        title,
        x_label: fig.x_label.clone(),
        y_label: fig.y_label.clone(),
        x: AxisRange {
            lo: x0,
            hi: x1,
            log: fig.log_x,
            keys: x_keys,
        },
        y: AxisRange {
            lo: y0,
            hi: y1,
            log: fig.log_y,
            keys: None,
        },
        shade: (p1 > 0).then(|| (0.5, p1 as f64 + 0.5, "Phase 1 (shaded)".to_string())),
        panels,
        note: String::new(),
    };
    // What each encoding means.
    let mut used: Vec<Method> = methods.clone();
    used.sort();
    used.dedup();
    let mut enc = vec![format!(
        "Colour and marker = method ({})",
        used.iter()
            .map(|m| format!("{} {}", m.name(), color_name(*m)))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    if style_by_variant {
        enc.push(format!(
            "line style = {} ({})",
            variant_dimension(e),
            variants
                .iter()
                .enumerate()
                .map(|(k, &v)| format!("{} {}", DASHES[k % DASHES.len()].name(), vlabel(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    } else if variants.len() > 1 {
        enc.push(format!(
            "one panel per {} (shared axes)",
            variant_dimension(e)
        ));
    }
    if !style_by_variant && (0..fig.lines.len()).any(|i| !floor[i] && dash_of(i) != Dash::Solid) {
        enc.push(
            "line style = the series of one method (solid first, then dashed, dotted, dash-dot)"
                .into(),
        );
    }
    if floor.iter().any(|f| *f) {
        enc.push("the oracle is drawn dashed at its final error (its floor)".into());
    }
    if split.len() > variants.len().max(1) {
        enc.push(
            "more than five lines are split over panels, the first line repeated in each".into(),
        );
    }
    if p1 > 0 {
        enc.push("grey shading = Phase 1".into());
    }
    enc.push(
        if spec.is_some_and(|s| s.metric == Metric::Success) {
            "bands = Wilson 95 % intervals"
        } else {
            "bands = interquartile range over seeds"
        }
        .into(),
    );
    let mut all = vec![enc.join("; ") + "."];
    all.extend(notes.into_iter().map(|n| n + "."));
    Layout { plot, notes: all }
}

/// The name of the variants' dimension: the part before " =" of their labels when they share
/// it (`σ`, `n`, `γ`), else "variant".
fn variant_dimension(e: &Experiment) -> String {
    let heads: Vec<&str> = e
        .variants
        .iter()
        .filter_map(|v| v.label.split_once(" =").map(|(h, _)| h))
        .collect();
    match heads.first() {
        Some(h) if heads.len() == e.variants.len() && heads.iter().all(|x| x == h) => h.to_string(),
        _ => "variant".into(),
    }
}

fn color_name(m: Method) -> &'static str {
    match m {
        Method::TwoPhase => "blue ●",
        Method::Ifca => "red ×",
        Method::IfcaAveraging => "purple □",
        Method::Oracle => "grey ◇",
        Method::FedAvg => "orange △",
        Method::OneShot => "green ○",
        Method::SrFca => "brown ■",
        Method::Cfl => "pink +",
        Method::Local => "olive ▲",
        Method::FedSoft => "cyan ◆",
    }
}

/// Render one merged figure of experiment `e` as an SVG file at `path`.
///
/// # Errors
/// A message from plotters or the file system.
pub fn render(
    fig: &MergedFigure,
    e: &Experiment,
    profile: &str,
    path: &Path,
) -> Result<(), String> {
    render_plot(&layout(fig, e, profile).plot, path)
}

/// The figure's caption in the report: what colour, line style, panels, shading and bands
/// mean, which lines coincide and which never reach their target.
pub fn caption(fig: &MergedFigure, e: &Experiment, profile: &str) -> String {
    layout(fig, e, profile).notes.join(" ")
}

/// An axis as drawn: its quantity, its scale, and the extent of the data on it.
fn drawn_axis(label: &str, log: bool, values: impl Iterator<Item = f64>) -> String {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let scale = if log { "log" } else { "linear" };
    if lo <= hi {
        format!(
            "{label}; {scale}; data from {} to {}",
            crate::figure::tick(lo),
            crate::figure::tick(hi)
        )
    } else {
        format!("{label}; {scale}; no data yet")
    }
}

/// Where the drawn figure's axis scales differ from the paper's (where the paper shows one).
pub fn scale_differences(fig: &MergedFigure, e: &Experiment, profile: &str) -> Vec<String> {
    let Some(paper) = spec(fig, e).and_then(|s| s.paper.as_ref()) else {
        return Vec::new();
    };
    let plot = layout(fig, e, profile).plot;
    let mut out = Vec::new();
    for (axis, theirs, ours) in [
        ("x", paper.log_x, plot.x.log),
        ("y", paper.log_y, plot.y.log),
    ] {
        if let Some(t) = theirs {
            if t != ours {
                let name = |l: bool| if l { "log" } else { "linear" };
                out.push(format!(
                    "{axis} axis: the paper's is {}, ours is {}",
                    name(t),
                    name(ours)
                ));
            }
        }
    }
    out
}

/// The paper's figure beside ours, as a markdown table (none when the spec describes none).
pub fn beside_paper(fig: &MergedFigure, e: &Experiment, profile: &str) -> Option<String> {
    let paper = spec(fig, e)?.paper.as_ref()?;
    let plot = layout(fig, e, profile).plot;
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let ours_curves = fig
        .lines
        .iter()
        .map(|l| l.label.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let mut md = format!(
        "| | the paper: {} | ours |\n|---|---|---|\n",
        cell(&paper.figure)
    );
    md.push_str(&format!(
        "| x axis | {} | {} |\n",
        cell(&paper.x),
        cell(&drawn_axis(
            &fig.x_label,
            plot.x.log,
            fig.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x))
        ))
    ));
    md.push_str(&format!(
        "| y axis | {} | {} |\n",
        cell(&paper.y),
        cell(&drawn_axis(
            &fig.y_label,
            plot.y.log,
            fig.lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.median))
        ))
    ));
    md.push_str(&format!(
        "| curves | {} | {} |\n",
        cell(&paper.curves),
        cell(&ours_curves)
    ));
    let diff = scale_differences(fig, e, profile);
    md.push_str(&format!(
        "\nThe paper's figure as described by {}. {}\n",
        paper.source,
        if diff.is_empty() {
            "Axis scales: the same as the paper's where it shows them.".to_string()
        } else {
            format!("Axis scales differ: {}.", diff.join("; "))
        }
    ));
    Some(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log y axis over more than three decades labels only powers of ten: its range reaches a
    /// whole decade beyond the data at both ends, so the highest and lowest values sit between
    /// labelled ticks (not against the plot's edge, as 6e8 did under a top tick of 1e8); a
    /// short one keeps the tight 1.3× top (its 1, 2, 5 labels are at most 2.5× apart).
    #[test]
    fn a_long_log_axis_has_a_labelled_tick_beyond_the_data_at_both_ends() {
        let fig = |lo: f64, hi: f64| MergedFigure {
            name: "t-floats".into(),
            title: "t".into(),
            x_label: "local steps s".into(),
            y_label: "floats".into(),
            log_x: true,
            log_y: true,
            lines: vec![Line {
                label: "a".into(),
                points: vec![
                    Band {
                        x: 1.0,
                        median: lo,
                        mean: lo,
                        lo,
                        hi: lo,
                        n: 1,
                    },
                    Band {
                        x: 20.0,
                        median: hi,
                        mean: hi,
                        lo: hi,
                        hi,
                        n: 1,
                    },
                ],
                phase1_rounds: 0,
                failures: vec![],
            }],
        };
        let (_, (y0, y1)) = range(&fig(8e4, 6e8));
        let (labels, _) = crate::figure::log_key_points(y0, y1);
        assert_eq!(labels.first().map(|v| v.to_bits()), Some(1e4f64.to_bits()));
        assert_eq!(labels.last().map(|v| v.to_bits()), Some(1e9f64.to_bits()));
        let (_, (y0, y1)) = range(&fig(0.02, 0.9));
        assert_eq!(y1.to_bits(), (0.9f64 * 1.3).to_bits());
        let (labels, _) = crate::figure::log_key_points(y0, y1);
        assert!(labels.iter().any(|&v| v >= 0.9) && labels.iter().any(|&v| v <= 0.02));
    }
}
