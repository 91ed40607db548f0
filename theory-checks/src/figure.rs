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

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

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
        for (i, s) in $fig.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
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
                    .map_err(|e| e.to_string())?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
            } else {
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(move |p| Circle::new(p, 3, color.filled())),
                    )
                    .map_err(|e| e.to_string())?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| Circle::new((x + 9, y), 3, color.filled()));
            }
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }};
}

/// A short tick label: up to 4 significant digits, scientific outside [1e−3, 1e4).
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e4).contains(&a) {
        format!("{v:.1e}")
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
    let root = SVGBackend::new(path, (720, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match (fig.log_x, fig.log_y) {
        (true, true) => draw_chart!(&root, fig, (x0..x1).log_scale(), (y0..y1).log_scale()),
        (true, false) => draw_chart!(&root, fig, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_chart!(&root, fig, x0..x1, (y0..y1).log_scale()),
        (false, false) => draw_chart!(&root, fig, x0..x1, y0..y1),
    }
    root.present().map_err(|e| e.to_string())
}
