//! Rendering a check's [`Figure`] to SVG with plotters (the library core never plots; this
//! crate renders from the saved record). The DejaVu Sans font ships in `assets/` with its
//! licence and is registered once, so no system font library is needed.

use crate::framework::Figure;
use plotters::prelude::*;
use std::path::Path;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Register the shipped font for the family names used by the figures. Idempotent.
pub fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            // The font is valid TTF shipped with the crate; failure would only drop labels.
            let _ = plotters::style::register_font(family, FontStyle::Normal, FONT);
        }
    });
}

/// The figures' colours (the first six as before; ten so that a sweep's series do not repeat).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// One colour per series: a line whose label contains an earlier marker series' label (a
/// sweep's bound `C·shape, <series>`) takes that series' colour; every other series the next
/// palette colour.
fn series_colors(fig: &Figure) -> Vec<RGBColor> {
    let mut out: Vec<RGBColor> = Vec::with_capacity(fig.series.len());
    let mut next = 0;
    for (i, s) in fig.series.iter().enumerate() {
        let owner = if s.line {
            // The longest such label, so that `d=12` is not taken for `d=1`.
            fig.series[..i]
                .iter()
                .enumerate()
                .filter_map(|(j, m)| {
                    let name = m.label.trim_end_matches(" (calibration)");
                    (!m.line && !name.is_empty() && s.label.contains(name))
                        .then_some((name.len(), j))
                })
                .max()
                .map(|(_, j)| j)
        } else {
            None
        };
        let color = match owner {
            Some(j) => out[j],
            None => {
                next += 1;
                PALETTE[(next - 1) % PALETTE.len()]
            }
        };
        out.push(color);
    }
    out
}

fn bounds(fig: &Figure) -> ((f64, f64), (f64, f64)) {
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
        if !lo.is_finite() {
            return (1.0, 10.0);
        }
        if log {
            (lo / 1.5, hi * 1.5)
        } else {
            let w = (hi - lo).abs().max(1e-12);
            (lo - 0.05 * w, hi + 0.05 * w)
        }
    };
    (pad(x0, x1, fig.log_x), pad(y0, y1, fig.log_y))
}

macro_rules! draw_chart {
    ($root:expr, $fig:expr, $xr:expr, $yr:expr) => {{
        let mut chart = ChartBuilder::on($root)
            .caption(&$fig.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc($fig.x_label.as_str())
            .y_desc($fig.y_label.as_str())
            .label_style(("sans-serif", 12))
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        let colors = series_colors($fig);
        for (s, &color) in $fig.series.iter().zip(&colors) {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| {
                    x.is_finite()
                        && y.is_finite()
                        && (!$fig.log_x || *x > 0.0)
                        && (!$fig.log_y || *y > 0.0)
                })
                .collect();
            if s.line {
                chart
                    .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                    .map_err(|e| e.to_string())?;
            } else {
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(move |p| Circle::new(p, 3, color.filled())),
                    )
                    .map_err(|e| e.to_string())?;
            }
        }
    }};
}

/// How a legend entry is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A solid line.
    Line,
    /// A dashed line (a floor).
    Dashed,
    /// A point.
    Point,
    /// A filled box (a shaded region).
    Box,
    /// A solid line with the point marker of [`draw_markers`]`(i, ..)`.
    Marked(usize),
}

/// Draw the point markers of a figure's `i`-th line at `pts`: a filled dot, then a ring, a
/// cross, a square and a triangle (cycling), so that lines drawn over one another — equal
/// success curves, say — stay distinguishable: the later, hollow markers frame the earlier ones.
///
/// # Errors
/// A message from plotters.
pub fn draw_markers<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    i: usize,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
) -> Result<(), String>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let pen = color.stroke_width(2);
    let pts = pts.into_iter();
    match i % 5 {
        0 => chart.draw_series(pts.map(|p| Circle::new(p, 3, color.filled()))),
        1 => chart.draw_series(pts.map(|p| Circle::new(p, 6, pen))),
        2 => chart.draw_series(pts.map(|p| Cross::new(p, 6, pen))),
        3 => chart.draw_series(
            pts.map(|p| EmptyElement::at(p) + Rectangle::new([(-5, -5), (5, 5)], pen)),
        ),
        _ => chart.draw_series(pts.map(|p| EmptyElement::at(p) + PathElement::new(TRIANGLE, pen))),
    }
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// A hollow triangle around the origin, in pixels (plotters' `TriangleMarker` is always filled).
const TRIANGLE: [(i32, i32); 4] = [(0, -8), (-7, 5), (7, 5), (0, -8)];

/// The legend's sample of [`draw_markers`]`(i, ..)` at pixel `at`.
fn legend_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    i: usize,
    at: (i32, i32),
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let pen = color.stroke_width(2);
    match i % 5 {
        0 => area.draw(&Circle::new(at, 3, color.filled())),
        1 => area.draw(&Circle::new(at, 6, pen)),
        2 => area.draw(&Cross::new(at, 6, pen)),
        3 => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-5, -5), (5, 5)], pen))),
        _ => area.draw(&(EmptyElement::at(at) + PathElement::new(TRIANGLE, pen))),
    }
}

/// Characters per legend line.
const LEGEND_CHARS: usize = 40;

/// Split a label at spaces into lines of at most `width` characters.
fn wrap(label: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in label.split(' ') {
        let last = lines.last_mut().expect("non-empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// A legend in its own drawing area beside the plot (never over the data): one entry per row,
/// long labels wrapped.
///
/// # Errors
/// A message from plotters.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, RGBColor, Mark)],
) -> Result<(), String> {
    let font = ("sans-serif", 11).into_font().color(&BLACK);
    let mut y = 40;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    for (label, color, mark) in entries {
        let color = *color;
        match mark {
            Mark::Line => area
                .draw(&PathElement::new(
                    vec![(8, y), (26, y)],
                    color.stroke_width(2),
                ))
                .map_err(err)?,
            Mark::Dashed => {
                for x in [8, 20] {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 6, y)],
                        color.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
            }
            Mark::Point => area
                .draw(&Circle::new((17, y), 3, color.filled()))
                .map_err(err)?,
            Mark::Box => area
                .draw(&Rectangle::new([(8, y - 5), (26, y + 5)], color.filled()))
                .map_err(err)?,
            Mark::Marked(i) => {
                area.draw(&PathElement::new(
                    vec![(6, y), (28, y)],
                    color.stroke_width(2),
                ))
                .map_err(err)?;
                legend_marker(area, *i, (17, y), color).map_err(err)?;
            }
        }
        for (j, chunk) in wrap(label, LEGEND_CHARS).iter().enumerate() {
            area.draw(&Text::new(
                chunk.clone(),
                (32, y - 6 + 14 * j as i32),
                font.clone(),
            ))
            .map_err(err)?;
            if j > 0 {
                y += 14;
            }
        }
        y += 20;
    }
    Ok(())
}

/// The grid of a log axis on `[lo, hi]`: `(labelled, unlabelled)` values. Every `m × 10^k`
/// (m = 1..9) in the range is a grid line; up to 3 decades the 1, 2, 5 × 10^k ones are labelled,
/// up to 6 the powers of 10, beyond that the powers of 10 and no minor lines. An axis shorter
/// than a decade labels 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9 × 10^k, or five geometric
/// steps when fewer than three of those fall in range. (Plotters' own log key points skip a
/// partial decade at the bottom of the axis and crowd light lines into the top one.)
pub fn log_key_points(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return (bold, light);
    }
    let decades = (hi / lo).log10();
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let within = |v: f64| v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12);
    if decades >= 1.0 {
        for k in first..=last {
            for m in 1..=9 {
                let v = f64::from(m) * 10f64.powi(k);
                if !within(v) {
                    continue;
                }
                let labelled = if decades <= 3.0 {
                    [1, 2, 5].contains(&m)
                } else {
                    m == 1
                };
                if labelled {
                    bold.push(v);
                } else if decades <= 6.0 {
                    light.push(v);
                }
            }
        }
    } else {
        for k in first..=last {
            for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0] {
                let v = m * 10f64.powi(k);
                if within(v) {
                    bold.push(v);
                }
            }
        }
        if bold.len() < 3 {
            bold = (0..5)
                .map(|i| {
                    let v = lo * (hi / lo).powf(f64::from(i) / 4.0);
                    let scale = 10f64.powi(v.log10().floor() as i32 - 2);
                    (v / scale).round() * scale
                })
                .filter(|v| within(*v))
                .collect();
        }
    }
    (bold, light)
}

/// A log axis on `[lo, hi]` with the grid of [`log_key_points`].
pub fn log_axis(
    lo: f64,
    hi: f64,
) -> plotters::coord::combinators::WithKeyPoints<plotters::coord::combinators::LogCoord<f64>> {
    let (bold, light) = log_key_points(lo, hi);
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// A tick label: up to 4 significant digits, plain decimals between 1e−3 and 1e4, scientific
/// notation outside.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e4).contains(&a) {
        // "1e4" rather than "1.0e4"; "2.5e-4" keeps its digit.
        format!("{v:.1e}").replace(".0e", "e")
    } else {
        let digits = (3 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// Render `fig` as an SVG file at `path`.
///
/// # Errors
/// A message from plotters or the file system.
pub fn render_svg(fig: &Figure, path: &Path) -> Result<(), String> {
    register_fonts();
    let ((x0, x1), (y0, y1)) = bounds(fig);
    let root = SVGBackend::new(path, (980, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (plot, legend) = root.split_horizontally(700);
    match (fig.log_x, fig.log_y) {
        (true, true) => draw_chart!(&plot, fig, log_axis(x0, x1), log_axis(y0, y1)),
        (true, false) => draw_chart!(&plot, fig, log_axis(x0, x1), y0..y1),
        (false, true) => draw_chart!(&plot, fig, x0..x1, log_axis(y0, y1)),
        (false, false) => draw_chart!(&plot, fig, x0..x1, y0..y1),
    }
    let entries: Vec<(String, RGBColor, Mark)> = fig
        .series
        .iter()
        .zip(series_colors(fig))
        .map(|(s, color)| {
            let mark = if s.line { Mark::Line } else { Mark::Point };
            (s.label.clone(), color, mark)
        })
        .collect();
    draw_legend(&legend, &entries)?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Series;

    #[test]
    fn log_axes_label_every_decade_including_a_partial_bottom_one() {
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-12 * y)
        };
        // Two decades, off the powers of 10 at both ends (eq. 32's y axis): 1, 2, 5 × 10^k
        // labelled, from the partial decade at the bottom up.
        let (bold, light) = log_key_points(0.013, 1.5);
        assert!(close(&bold, &[0.02, 0.05, 0.1, 0.2, 0.5, 1.0]), "{bold:?}");
        assert!(close(&light[..3], &[0.03, 0.04, 0.06]), "{light:?}");
        assert!(light.iter().all(|v| (0.013..=1.5).contains(v)));
        // Seven decades: powers of 10 only, no minor lines.
        let (bold, light) = log_key_points(1e-6, 10.0);
        assert_eq!(bold.len(), 8);
        assert!(light.is_empty());
        // Under a decade: the finer steps; a very short axis falls back to five values.
        let (bold, _) = log_key_points(50.0, 400.0);
        assert!(
            close(
                &bold,
                &[50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 120.0, 150.0, 200.0, 250.0, 300.0, 400.0]
            ),
            "{bold:?}"
        );
        let (bold, _) = log_key_points(1.01, 1.3);
        assert_eq!(bold.len(), 5, "{bold:?}");
        assert!(log_key_points(0.0, 1.0).0.is_empty());
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(1e4), "1e4");
        assert_eq!(tick(2.5e-4), "2.5e-4");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(150.0), "150");
    }

    #[test]
    fn a_bound_line_takes_its_series_colour() {
        let s = |label: &str, line: bool| Series {
            label: label.into(),
            points: vec![(1.0, 1.0)],
            line,
        };
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
                s("C·shape, d=12 (C = 0.1)", true),
                s("C·shape, d=8 (C = 0.1)", true),
                s("another line", true),
            ],
        };
        let c = series_colors(&fig);
        assert_eq!(c[3], c[2]);
        assert_eq!(c[4], c[1]);
        assert_eq!(c[..3], PALETTE[..3]);
        assert_eq!(c[5], PALETTE[3]);
    }
}
