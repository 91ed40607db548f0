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
    ($root:expr, $fig:expr, $xr:expr, $yr:expr, $sx:expr, $sy:expr) => {{
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
            .x_label_formatter(&|v| log_tick(*v, $fig.log_x && $sx))
            .y_label_formatter(&|v| log_tick(*v, $fig.log_y && $sy))
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

/// A short tick label: up to 4 significant digits, scientific outside [1e−3, 1e4).
/// A tick label on a log axis. Plotters places ticks at every 1..9 × 10^k; on an axis spanning
/// at least a decade (`sparse`) only the 1, 2, 5 × 10^k ones are labelled, so the labels between
/// two decades do not run into one another. A shorter axis labels every tick.
pub fn log_tick(v: f64, sparse: bool) -> String {
    if !sparse || v <= 0.0 {
        return tick(v);
    }
    let m = v / 10f64.powf(v.log10().floor());
    let lead = m.round();
    if (m - lead).abs() < 1e-6 * lead.max(1.0) && [1.0, 2.0, 5.0, 10.0].contains(&lead) {
        tick(v)
    } else {
        String::new()
    }
}

/// A tick label: plain decimals between 1e−3 and 1e4, scientific notation outside.
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
    let (sparse_x, sparse_y) = (x1 / x0 >= 10.0, y1 / y0 >= 10.0);
    let root = SVGBackend::new(path, (980, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (plot, legend) = root.split_horizontally(700);
    match (fig.log_x, fig.log_y) {
        (true, true) => draw_chart!(
            &plot,
            fig,
            (x0..x1).log_scale(),
            (y0..y1).log_scale(),
            sparse_x,
            sparse_y
        ),
        (true, false) => draw_chart!(&plot, fig, (x0..x1).log_scale(), y0..y1, sparse_x, sparse_y),
        (false, true) => draw_chart!(&plot, fig, x0..x1, (y0..y1).log_scale(), sparse_x, sparse_y),
        (false, false) => draw_chart!(&plot, fig, x0..x1, y0..y1, sparse_x, sparse_y),
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
    fn tick_labels_are_short() {
        assert_eq!(tick(1e4), "1e4");
        assert_eq!(tick(2.5e-4), "2.5e-4");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(150.0), "150");
        assert_eq!(log_tick(300.0, true), "");
        assert_eq!(log_tick(200.0, true), "200");
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
