//! The figure of a theory check ([`Figure`]: observed points and the bound curves they must lie
//! under) as a [`Plot`].
//!
//! A bound line *owns* the point series whose case it names — the point's label (without
//! " (calibration)") appears in the line's label, or both labels end in the same case after
//! their first ", " (the line's trailing constant `, C = …` / ` (C = …)` aside). A line that
//! owns no series is a bound for every point of its panel. With at most
//! [`MAX_SERIES`] series the figure is one panel and a case has one colour: its bound and its
//! points. With more, each owning line is a panel with its points (small multiples, shared
//! axes), the lines owning nothing are repeated in every panel, and the remaining points fill
//! panels of their own; colour then means the kind of point (e.g. product or residual) and the
//! panel the case. Calibration points are hollow, validation points filled, everywhere.

use super::plot::{AxisRange, Drawn, Panel, Plot, MAX_SERIES};
use crate::framework::{Figure, Series};
use crate::style::{Dash, Marker, Style, BOUND, CASES, DASHES};
use std::path::Path;

fn is_calibration(s: &Series) -> bool {
    s.label.contains("calibration")
}

fn name(s: &Series) -> &str {
    s.label.trim_end_matches(" (calibration)")
}

/// The case named after the first ", " of a label (a line's trailing constant removed).
fn case(label: &str) -> Option<&str> {
    let (_, rest) = label.split_once(", ")?;
    let rest = match rest.rfind(", C = ").or_else(|| rest.rfind(", c = ")) {
        Some(i) => &rest[..i],
        None => rest,
    };
    let rest = match rest.rfind(" (C = ") {
        Some(i) => &rest[..i],
        None => rest,
    };
    (!rest.is_empty()).then_some(rest.trim())
}

/// `hay` contains `needle` not followed by a digit or a decimal point (`d=1` is not in `d=12`).
fn contains_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, _)| {
        !hay[i + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.')
    })
}

/// The owning line of each point series (index into `fig.series`).
fn owners(fig: &Figure) -> Vec<Option<usize>> {
    fig.series
        .iter()
        .map(|p| {
            if p.line {
                return None;
            }
            let n = name(p);
            let lines = || fig.series.iter().enumerate().filter(|(_, l)| l.line);
            lines()
                .filter(|(_, l)| !n.is_empty() && contains_word(&l.label, n))
                .max_by_key(|(_, l)| l.label.len())
                .or_else(|| {
                    let c = case(n)?;
                    lines().find(|(_, l)| case(&l.label) == Some(c))
                })
                .map(|(j, _)| j)
        })
        .collect()
}

/// The constant of a bound label (`C = 0.177`), if it states one.
fn constant(label: &str) -> Option<&str> {
    let i = label.rfind("C = ").or_else(|| label.rfind("c = "))?;
    Some(label[i..].trim_end_matches(')'))
}

fn bounds(fig: &Figure) -> (AxisRange, AxisRange) {
    let pts = fig
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| {
            x.is_finite() && y.is_finite() && (!fig.log_x || *x > 0.0) && (!fig.log_y || *y > 0.0)
        });
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    let pad = |lo: f64, hi: f64, log: bool| {
        let (lo, hi) = if !lo.is_finite() {
            (1.0, 10.0)
        } else if log {
            (lo / 1.5, hi * 1.5)
        } else {
            let w = (hi - lo).abs().max(1e-12);
            (lo - 0.05 * w, hi + 0.05 * w)
        };
        AxisRange {
            lo,
            hi,
            log,
            keys: None,
        }
    };
    (pad(x0, x1, fig.log_x), pad(y0, y1, fig.log_y))
}

fn points(s: &Series, style: Style, label: String) -> Drawn {
    Drawn::new(label, style, s.points.clone(), s.line)
}

fn point_style(color: plotters::style::RGBColor, marker: Marker, cal: bool) -> Style {
    Style {
        color,
        dash: Dash::Solid,
        marker: Some(if cal { marker.hollow() } else { marker }),
    }
}

fn line_style(color: plotters::style::RGBColor, dash: Dash) -> Style {
    Style {
        color,
        dash,
        marker: None,
    }
}

/// One panel: each case its colour, its bound drawn in it.
fn single_panel(fig: &Figure, own: &[Option<usize>]) -> Panel {
    let mut color_of: Vec<Option<usize>> = vec![None; fig.series.len()];
    let mut next = 0;
    let mut global = 0;
    let mut series = Vec::new();
    let owning = |j: usize| own.contains(&Some(j));
    for (i, s) in fig.series.iter().enumerate() {
        if s.line && !owning(i) {
            let dash = DASHES[global % DASHES.len()];
            global += 1;
            series.push(points(s, line_style(BOUND, dash), s.label.clone()));
            continue;
        }
        let key = if s.line { i } else { own[i].unwrap_or(i) };
        let c = *color_of[key].get_or_insert_with(|| {
            next += 1;
            next - 1
        });
        let color = CASES[c % CASES.len()];
        if s.line {
            series.push(points(s, line_style(color, Dash::Solid), s.label.clone()));
        } else {
            // The k-th point series of its case takes the k-th marker.
            let k = (0..i)
                .filter(|&j| {
                    !fig.series[j].line
                        && own[j].unwrap_or(j) == key
                        && is_calibration(&fig.series[j]) == is_calibration(s)
                })
                .count();
            let marker = [
                Marker::Dot,
                Marker::FilledSquare,
                Marker::FilledTriangle,
                Marker::FilledDiamond,
            ][k % 4];
            series.push(points(
                s,
                point_style(color, marker, is_calibration(s)),
                s.label.clone(),
            ));
        }
    }
    Panel {
        title: String::new(),
        series,
    }
}

/// Small multiples: a panel per owning line, global lines in every panel, the other points in
/// panels of their own.
fn panels(fig: &Figure, own: &[Option<usize>]) -> Vec<Panel> {
    let mut kinds: Vec<String> = Vec::new();
    let mut kind_style = |kind: &str, cal: bool| {
        let i = kinds.iter().position(|k| k == kind).unwrap_or_else(|| {
            kinds.push(kind.to_string());
            kinds.len() - 1
        });
        point_style(CASES[i % CASES.len()], Marker::Dot, cal)
    };
    let globals: Vec<Drawn> = fig
        .series
        .iter()
        .enumerate()
        .filter(|(j, s)| s.line && !own.contains(&Some(*j)))
        .enumerate()
        .map(|(k, (_, s))| {
            points(
                s,
                line_style(BOUND, DASHES[(k + 1) % DASHES.len()]),
                s.label.clone(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (j, l) in fig.series.iter().enumerate() {
        if !(l.line && own.contains(&Some(j))) {
            continue;
        }
        let members: Vec<&Series> = fig
            .series
            .iter()
            .enumerate()
            .filter(|(i, _)| own[*i] == Some(j))
            .map(|(_, s)| s)
            .collect();
        let title = case(&l.label)
            .map(str::to_string)
            .unwrap_or_else(|| name(members[0]).to_string());
        let title = if members.iter().all(|s| is_calibration(s)) {
            format!("{title} (calibration)")
        } else {
            title
        };
        let mut series = Vec::new();
        for s in &members {
            let n = name(s);
            let kind = match case(n) {
                Some(c) if case(&l.label) == Some(c) => {
                    n[..n.len() - c.len()].trim_end_matches(", ").to_string()
                }
                _ => "observed".to_string(),
            };
            let cal = is_calibration(s);
            let label = if cal {
                format!("{kind} (calibration)")
            } else {
                kind.clone()
            };
            series.push(points(s, kind_style(&kind, cal), label));
        }
        let bound = match (l.label.split_once(", "), constant(&l.label)) {
            (Some((head, _)), Some(c)) => format!("{head}, {c}"),
            (Some((head, _)), None) => head.to_string(),
            _ => l.label.clone(),
        };
        series.push(points(l, line_style(BOUND, Dash::Solid), bound));
        series.extend(globals.iter().cloned());
        out.push(Panel { title, series });
    }
    // The points no line owns: calibration cases together, the others a colour each.
    let loose: Vec<&Series> = fig
        .series
        .iter()
        .enumerate()
        .filter(|(i, s)| !s.line && own[*i].is_none())
        .map(|(_, s)| s)
        .collect();
    let cal: Vec<&&Series> = loose.iter().filter(|s| is_calibration(s)).collect();
    let mut rest: Vec<Drawn> = loose
        .iter()
        .filter(|s| !is_calibration(s))
        .map(|s| points(s, kind_style(&s.label, false), s.label.clone()))
        .collect();
    if !cal.is_empty() {
        let pts = cal.iter().flat_map(|s| s.points.iter().copied()).collect();
        let label = if cal.len() == 1 {
            cal[0].label.clone()
        } else {
            format!("calibration ({} cases)", cal.len())
        };
        let style = point_style(BOUND, Marker::Dot, true);
        rest.push(Drawn::new(label, style, pts, false));
    }
    let room = MAX_SERIES.saturating_sub(globals.len()).max(1);
    let chunks = rest.len().div_ceil(room);
    for c in 0..chunks {
        // Balanced chunks: 5 points in two panels are 3 + 2, not 4 + 1.
        let (a, b) = (c * rest.len() / chunks, (c + 1) * rest.len() / chunks);
        let own_points: Vec<Drawn> = rest[a..b].to_vec();
        // A panel of one kind of point says which (its legend lists several).
        let title = if own_points.iter().all(|s| s.label.contains("calibration")) {
            "calibration".into()
        } else if let [one] = own_points.as_slice() {
            one.label.clone()
        } else {
            String::new()
        };
        let mut series = own_points;
        series.extend(globals.iter().cloned());
        out.push(Panel { title, series });
    }
    out
}

/// The plot of a check's figure.
pub fn plot_of(fig: &Figure) -> Plot {
    // A series with nothing to draw is not listed: the note under the title names it.
    let plottable = |s: &Series| {
        s.points.iter().any(|&(x, y)| {
            x.is_finite() && y.is_finite() && (!fig.log_x || x > 0.0) && (!fig.log_y || y > 0.0)
        })
    };
    let empty: Vec<&str> = fig
        .series
        .iter()
        .filter(|s| !plottable(s))
        .map(|s| s.label.as_str())
        .collect();
    let note = if empty.is_empty() {
        String::new()
    } else {
        format!("not drawn (no point on these axes): {}", empty.join("; "))
    };
    let fig = &Figure {
        series: fig
            .series
            .iter()
            .filter(|s| plottable(s))
            .cloned()
            .collect(),
        ..fig.clone()
    };
    let own = owners(fig);
    let (x, y) = bounds(fig);
    let panels = if fig.series.len() <= MAX_SERIES {
        vec![single_panel(fig, &own)]
    } else {
        panels(fig, &own)
    };
    Plot {
        title: fig.title.clone(),
        x_label: fig.x_label.clone(),
        y_label: fig.y_label.clone(),
        x,
        y,
        shade: None,
        panels,
        note,
    }
}

/// Render a check's figure as an SVG file at `path`.
///
/// # Errors
/// A message from plotters or the file system.
pub fn render_svg(fig: &Figure, path: &Path) -> Result<(), String> {
    super::render::render(&plot_of(fig), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(label: &str, line: bool) -> Series {
        Series {
            label: label.into(),
            points: vec![(1.0, 1.0)],
            line,
        }
    }

    #[test]
    fn each_point_series_is_owned_by_the_bound_of_its_case() {
        let fig = Figure {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            log_x: true,
            log_y: true,
            series: vec![
                s("d=1 (calibration)", false),
                s("d=8", false),
                s("d=12", false),
                s("Product, d = 4", false),
                s("Residual, d = 6 (calibration)", false),
                s("C·shape, d=12 (C = 0.1)", true),
                s("C·shape, d=8 (C = 0.1)", true),
                s("C·(…), d = 4, C = 0.2", true),
                s("C·(…), d = 6, C = 0.2", true),
                s("another line", true),
            ],
        };
        let own = owners(&fig);
        assert_eq!(own[..5], [None, Some(6), Some(5), Some(7), Some(8)]);
        assert_eq!(case("C·(…), d = 4, C = 0.2"), Some("d = 4"));
        assert_eq!(constant("C·shape, d=12 (C = 0.1)"), Some("C = 0.1"));
    }
}
