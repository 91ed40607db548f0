//! Rendering figures to SVG with plotters (the library core never plots; this crate renders
//! from saved records). A [`Plot`] is one or more panels sharing their axes (small multiples),
//! each panel at most five series drawn in the styles of [`crate::style`], and one legend:
//! inside a panel where it covers no drawn mark, otherwise below the panels in columns.
//!
//! The SVG groups what it draws so that a reader program can check it
//! (`theory-checks/tests/figures.rs`): `<g class="panel" data-plot="x y w h">` around a panel's
//! series, `<g class="series" data-label=…>` around each series with its `band`, `line` (the
//! line's `stroke-dasharray` on the group) and `marks`, `<g class="legend" data-box="x y w h">`
//! with one `legend-entry` per series. Plotters has no groups: they are written as sentinel
//! texts and replaced after rendering.
//!
//! The DejaVu Sans font ships in `assets/` with its licence and is registered once, so no
//! system font library is needed.

pub mod axis;
pub mod theory;

pub use axis::{log_axis, log_key_points, tick};
pub use theory::render_svg;

use crate::style::{Dash, Marker, Style};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::cell::RefCell;
use std::path::Path;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

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

/// At most this many series (and as many bands) in a panel.
pub const MAX_SERIES: usize = 5;

/// One drawn series.
#[derive(Clone, Debug)]
pub struct Drawn {
    /// Legend label.
    pub label: String,
    /// Style.
    pub style: Style,
    /// Points `(x, y)` (drawn as a line when `style` has no marker or `line` is set).
    pub points: Vec<(f64, f64)>,
    /// Connect the points by a line.
    pub line: bool,
    /// Draw the marker at every `marks_every`-th point (1: every point).
    pub marks_every: usize,
    /// Shaded band `(x, lo, hi)`.
    pub band: Vec<(f64, f64, f64)>,
    /// x values at which the series never reached its target: an arrow at the top of the axis.
    pub never: Vec<f64>,
}

impl Drawn {
    /// A series with no band and no "never reached" values.
    pub fn new(
        label: impl Into<String>,
        style: Style,
        points: Vec<(f64, f64)>,
        line: bool,
    ) -> Self {
        Self {
            label: label.into(),
            style,
            points,
            line,
            marks_every: 1,
            band: Vec::new(),
            never: Vec::new(),
        }
    }
}

/// One panel.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    /// Panel title (the value of the grid dimension it shows; empty for a single panel).
    pub title: String,
    /// Series.
    pub series: Vec<Drawn>,
}

/// An axis range.
#[derive(Clone, Debug)]
pub struct AxisRange {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Logarithmic.
    pub log: bool,
    /// Labelled values of a log axis (default: [`log_key_points`]).
    pub keys: Option<Vec<f64>>,
}

/// A figure: panels sharing their axes and one legend.
#[derive(Clone, Debug)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// x axis.
    pub x: AxisRange,
    /// y axis.
    pub y: AxisRange,
    /// A shaded x range (Phase 1) with its legend label.
    pub shade: Option<(f64, f64, String)>,
    /// Panels.
    pub panels: Vec<Panel>,
    /// A line under the title (e.g. the series that have nothing to draw, and why).
    pub note: String,
}

/// The sentinel groups of one rendering: `open` and `close` draw a text `@@i` that
/// [`resolve`] replaces by the `i`-th tag.
#[derive(Default)]
struct Groups {
    tags: RefCell<Vec<String>>,
}

/// Escape a string for an XML attribute.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

type Res<T> = Result<T, String>;

impl Groups {
    fn sentinel<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, tag: String) -> Res<()> {
        let mut tags = self.tags.borrow_mut();
        let i = tags.len();
        tags.push(tag);
        root.draw(&Text::new(
            format!("@@{i}"),
            (0, 0),
            ("sans-serif", 8).into_font(),
        ))
        .map_err(|e| e.to_string())
    }
    fn open<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        class: &str,
        attrs: &[(&str, String)],
    ) -> Res<()> {
        let mut tag = format!("<g class=\"{class}\"");
        for (k, v) in attrs {
            tag.push_str(&format!(" {k}=\"{}\"", xml(v)));
        }
        tag.push('>');
        self.sentinel(root, tag)
    }
    fn close<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Res<()> {
        self.sentinel(root, "</g>".into())
    }
}

/// Replace the sentinel texts of `groups` in `svg` by their tags.
fn resolve(svg: &str, tags: &[String]) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(close) = rest.find("</text>") else {
            break;
        };
        let element = &rest[..close + "</text>".len()];
        let content = element
            .find('>')
            .map(|g| element[g + 1..close].trim())
            .unwrap_or("");
        match content
            .strip_prefix("@@")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| tags.get(n))
        {
            Some(tag) => out.push_str(tag),
            None => out.push_str(element),
        }
        rest = &rest[element.len()..];
    }
    out.push_str(rest);
    out
}

/// Pixel geometry of a panel's drawn marks (for placing the legend off them).
#[derive(Clone, Debug, Default)]
struct Geom {
    /// Plot area `(x0, y0, x1, y1)`.
    rect: (f64, f64, f64, f64),
    segments: Vec<((f64, f64), (f64, f64))>,
    points: Vec<(f64, f64)>,
    polygons: Vec<Vec<(f64, f64)>>,
}

/// Whether the segment `a`–`b` meets the box `r = (x0, y0, x1, y1)` (Liang–Barsky clipping);
/// shared with the figure check, which reads the same geometry back from the SVG.
pub fn seg_hits_box(a: (f64, f64), b: (f64, f64), r: (f64, f64, f64, f64)) -> bool {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.0),
        (dx, r.2 - a.0),
        (-dy, a.1 - r.1),
        (dy, r.3 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

fn inside_polygon(p: (f64, f64), poly: &[(f64, f64)]) -> bool {
    let mut inside = false;
    let n = poly.len();
    for i in 0..n {
        let (a, b) = (poly[i], poly[(i + n - 1) % n]);
        if (a.1 > p.1) != (b.1 > p.1) && p.0 < (b.0 - a.0) * (p.1 - a.1) / (b.1 - a.1) + a.0 {
            inside = !inside;
        }
    }
    inside
}

impl Geom {
    /// Whether the box `r` (pixels) covers none of the marks.
    fn free(&self, r: (f64, f64, f64, f64)) -> bool {
        let within = |p: &(f64, f64), m: f64| {
            p.0 >= r.0 - m && p.0 <= r.2 + m && p.1 >= r.1 - m && p.1 <= r.3 + m
        };
        if self.points.iter().any(|p| within(p, 7.0)) {
            return false;
        }
        if self.segments.iter().any(|&(a, b)| seg_hits_box(a, b, r)) {
            return false;
        }
        let corners = [(r.0, r.1), (r.2, r.1), (r.0, r.3), (r.2, r.3)];
        !self.polygons.iter().any(|poly| {
            poly.iter().any(|p| within(p, 0.0))
                || corners.iter().any(|c| inside_polygon(*c, poly))
                || poly
                    .iter()
                    .zip(poly.iter().cycle().skip(1))
                    .any(|(&a, &b)| seg_hits_box(a, b, r))
        })
    }
}

/// Legend geometry: rows of `ROW` pixels, characters of about `CHAR` pixels.
const ROW: i32 = 17;
const CHAR: f64 = 6.4;
const SAMPLE: i32 = 30;

/// A legend entry: label, style (`None`: the shading), whether its sample is the arrow of a
/// series that is nowhere drawn but as "never reached", and whether the series is a line.
type Entry = (String, Option<Style>, bool, bool);

fn legend_entries(plot: &Plot) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    if let Some((_, _, label)) = &plot.shade {
        out.push((label.clone(), None, false, false));
    }
    for s in plot.panels.iter().flat_map(|p| p.series.iter()) {
        let arrow = s.points.is_empty() && !s.never.is_empty();
        if !out
            .iter()
            .any(|(l, st, _, _)| *l == s.label && *st == Some(s.style))
        {
            out.push((s.label.clone(), Some(s.style), arrow, s.line));
        }
    }
    out
}

fn entry_width(label: &str) -> i32 {
    SAMPLE + 10 + (label.chars().count() as f64 * CHAR).ceil() as i32
}

/// Draw one marker centred at pixel `at`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    marker: Marker,
    at: (i32, i32),
    color: RGBColor,
) -> Res<()> {
    let pen = color.stroke_width(2);
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let (x, y) = at;
    match marker {
        Marker::Dot => area.draw(&Circle::new(at, 4, color.filled())).map_err(e),
        Marker::Ring => area.draw(&Circle::new(at, 5, pen)).map_err(e),
        Marker::Cross => {
            area.draw(&PathElement::new(vec![(x - 5, y - 5), (x + 5, y + 5)], pen))
                .map_err(e)?;
            area.draw(&PathElement::new(vec![(x - 5, y + 5), (x + 5, y - 5)], pen))
                .map_err(e)
        }
        Marker::Plus => {
            area.draw(&PathElement::new(vec![(x - 6, y), (x + 6, y)], pen))
                .map_err(e)?;
            area.draw(&PathElement::new(vec![(x, y - 6), (x, y + 6)], pen))
                .map_err(e)
        }
        Marker::Square => area
            .draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], pen))
            .map_err(e),
        Marker::FilledSquare => area
            .draw(&Rectangle::new(
                [(x - 4, y - 4), (x + 4, y + 4)],
                color.filled(),
            ))
            .map_err(e),
        Marker::Triangle => area
            .draw(&PathElement::new(
                vec![(x, y - 6), (x - 5, y + 4), (x + 5, y + 4), (x, y - 6)],
                pen,
            ))
            .map_err(e),
        Marker::FilledTriangle => area
            .draw(&Polygon::new(
                vec![(x, y - 6), (x - 5, y + 4), (x + 5, y + 4)],
                color.filled(),
            ))
            .map_err(e),
        Marker::Diamond => area
            .draw(&PathElement::new(
                vec![(x, y - 6), (x - 5, y), (x, y + 6), (x + 5, y), (x, y - 6)],
                pen,
            ))
            .map_err(e),
        Marker::FilledDiamond => area
            .draw(&Polygon::new(
                vec![(x, y - 6), (x - 5, y), (x, y + 6), (x + 5, y)],
                color.filled(),
            ))
            .map_err(e),
    }
}

/// An upward arrow just under the top edge at pixel x (a series that never reached its target).
fn draw_arrow<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: i32,
    top: i32,
    color: RGBColor,
) -> Res<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.draw(&PathElement::new(
        vec![(x, top + 22), (x, top + 8)],
        color.stroke_width(2),
    ))
    .map_err(e)?;
    area.draw(&Polygon::new(
        vec![(x - 5, top + 10), (x + 5, top + 10), (x, top + 2)],
        color.filled(),
    ))
    .map_err(e)
}

fn series_attrs(s: &Drawn) -> Vec<(&'static str, String)> {
    vec![
        ("data-label", s.label.clone()),
        ("data-color", hex(s.style.color)),
        ("data-dash", s.style.dash.name().into()),
        (
            "data-marker",
            s.style.marker.map_or("none".into(), |m| format!("{m:?}")),
        ),
    ]
}

fn dash_attrs(d: Dash) -> Vec<(&'static str, String)> {
    d.array()
        .map(|a| vec![("stroke-dasharray", a.to_string())])
        .unwrap_or_default()
}

/// Half-width in pixels of the stub that draws a one-point series' line style.
const STUB: i32 = 14;

/// Draw a panel's series on `chart`; returns its pixel geometry.
fn draw_series<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    root: &DrawingArea<DB, Shift>,
    g: &Groups,
    plot: &Plot,
    panel: &Panel,
) -> Res<Geom>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let area = chart.plotting_area();
    let (xr, yr) = area.get_pixel_range();
    let mut geom = Geom {
        rect: (
            f64::from(xr.start),
            f64::from(yr.start),
            f64::from(xr.end),
            f64::from(yr.end),
        ),
        ..Geom::default()
    };
    let px = |p: (f64, f64)| {
        let (x, y) = area.map_coordinate(&p);
        (x, y)
    };
    let ok = |x: f64, y: f64| {
        x.is_finite() && y.is_finite() && (!plot.x.log || x > 0.0) && (!plot.y.log || y > 0.0)
    };
    if let Some((a, b, _)) = &plot.shade {
        g.open(root, "shade", &[])?;
        let r = [(*a, plot.y.lo), (b.min(plot.x.hi), plot.y.hi)];
        area.draw(&Rectangle::new(
            r,
            RGBColor(200, 200, 200).mix(0.35).filled(),
        ))
        .map_err(e)?;
        let (p, q) = (px(r[0]), px(r[1]));
        let poly = vec![
            (f64::from(p.0), f64::from(p.1)),
            (f64::from(q.0), f64::from(p.1)),
            (f64::from(q.0), f64::from(q.1)),
            (f64::from(p.0), f64::from(q.1)),
        ];
        geom.polygons.push(poly);
        g.close(root)?;
    }
    for s in &panel.series {
        g.open(root, "series", &series_attrs(s))?;
        let color = s.style.color;
        let band: Vec<(f64, f64, f64)> = s
            .band
            .iter()
            .copied()
            .filter(|&(x, lo, hi)| ok(x, lo) && ok(x, hi))
            .collect();
        if band.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = band.iter().map(|b| (b.0, b.2)).collect();
            poly.extend(band.iter().rev().map(|b| (b.0, b.1)));
            g.open(root, "band", &[])?;
            geom.polygons.push(
                poly.iter()
                    .map(|&p| {
                        let q = px(p);
                        (f64::from(q.0), f64::from(q.1))
                    })
                    .collect(),
            );
            area.draw(&Polygon::new(poly, color.mix(0.15).filled()))
                .map_err(e)?;
            g.close(root)?;
        }
        let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| ok(p.0, p.1)).collect();
        let pix: Vec<(i32, i32)> = pts.iter().map(|&p| px(p)).collect();
        if s.line && pts.len() >= 2 {
            g.open(root, "line", &dash_attrs(s.style.dash))?;
            area.draw(&PathElement::new(pts.clone(), color.stroke_width(2)))
                .map_err(e)?;
            g.close(root)?;
            for w in pix.windows(2) {
                geom.segments.push((
                    (f64::from(w[0].0), f64::from(w[0].1)),
                    (f64::from(w[1].0), f64::from(w[1].1)),
                ));
            }
        } else if s.line && pix.len() == 1 {
            // A single point has no line to show its style: a short horizontal stub through it,
            // drawn in the line's dash, keeps two one-point series of one colour apart (as the
            // legend's sample draws them).
            let (x, y) = pix[0];
            let stub = [(x - STUB, y), (x + STUB, y)];
            g.open(root, "line", &dash_attrs(s.style.dash))?;
            root.draw(&PathElement::new(stub.to_vec(), color.stroke_width(2)))
                .map_err(e)?;
            g.close(root)?;
            geom.segments.push((
                (f64::from(stub[0].0), f64::from(y)),
                (f64::from(stub[1].0), f64::from(y)),
            ));
        }
        g.open(root, "marks", &[])?;
        if let Some(m) = s.style.marker {
            let every = s.marks_every.max(1);
            for (i, &p) in pix.iter().enumerate() {
                if i % every == every / 2 {
                    draw_marker(root, m, p, color)?;
                    geom.points.push((f64::from(p.0), f64::from(p.1)));
                }
            }
        }
        for &x in &s.never {
            if ok(x, plot.y.hi) {
                let (x, top) = px((x, plot.y.hi));
                draw_arrow(root, x, top, color)?;
                for dy in [2, 12, 22] {
                    geom.points.push((f64::from(x), f64::from(top + dy)));
                }
            }
        }
        g.close(root)?;
        g.close(root)?;
    }
    Ok(geom)
}

macro_rules! panel_chart {
    ($area:expr, $root:expr, $g:expr, $plot:expr, $panel:expr, $caption:expr, $xr:expr, $yr:expr) => {{
        let mut builder = ChartBuilder::on($area);
        builder
            .margin(10)
            .x_label_area_size(42)
            .y_label_area_size(64);
        if !$caption.is_empty() {
            builder.caption($caption, ("sans-serif", 15));
        }
        let mut chart = builder
            .build_cartesian_2d($xr, $yr)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .max_light_lines(4)
            .x_desc($plot.x_label.as_str())
            .y_desc($plot.y_label.as_str())
            .label_style(("sans-serif", 12))
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        draw_series(&mut chart, $root, $g, $plot, $panel)?
    }};
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    root: &DrawingArea<DB, Shift>,
    g: &Groups,
    plot: &Plot,
    panel: &Panel,
) -> Res<Geom> {
    let (x, y) = (&plot.x, &plot.y);
    let log_x = || match &x.keys {
        Some(keys) => (x.lo..x.hi).log_scale().with_key_points(keys.clone()),
        None => log_axis(x.lo, x.hi),
    };
    let cap = panel.title.as_str();
    Ok(match (x.log, y.log) {
        (true, true) => panel_chart!(
            area,
            root,
            g,
            plot,
            panel,
            cap,
            log_x(),
            log_axis(y.lo, y.hi)
        ),
        (true, false) => panel_chart!(area, root, g, plot, panel, cap, log_x(), y.lo..y.hi),
        (false, true) => panel_chart!(
            area,
            root,
            g,
            plot,
            panel,
            cap,
            x.lo..x.hi,
            log_axis(y.lo, y.hi)
        ),
        (false, false) => panel_chart!(area, root, g, plot, panel, cap, x.lo..x.hi, y.lo..y.hi),
    })
}

/// Draw the legend's entries from pixel `(x, y)` in `cols` columns of `col_w` pixels.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    g: &Groups,
    entries: &[Entry],
    at: (i32, i32),
    cols: usize,
    col_w: i32,
    boxed: bool,
) -> Res<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let rows = entries.len().div_ceil(cols.max(1)) as i32;
    let (w, h) = (col_w * cols as i32 + 8, rows * ROW + 8);
    g.open(
        root,
        "legend",
        &[("data-box", format!("{} {} {} {}", at.0, at.1, w, h))],
    )?;
    if boxed {
        root.draw(&Rectangle::new(
            [at, (at.0 + w, at.1 + h)],
            WHITE.mix(0.9).filled(),
        ))
        .map_err(e)?;
        root.draw(&Rectangle::new(
            [at, (at.0 + w, at.1 + h)],
            RGBColor(180, 180, 180).stroke_width(1),
        ))
        .map_err(e)?;
    }
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    for (i, (label, style, arrow, line)) in entries.iter().enumerate() {
        let (c, r) = ((i as i32) / rows, (i as i32) % rows);
        let x = at.0 + 6 + c * col_w;
        let y = at.1 + 4 + r * ROW + ROW / 2;
        g.open(root, "legend-entry", &[("data-label", label.clone())])?;
        match style {
            None => root
                .draw(&Rectangle::new(
                    [(x + 4, y - 5), (x + SAMPLE - 4, y + 5)],
                    RGBColor(200, 200, 200).filled(),
                ))
                .map_err(e)?,
            Some(st) if *arrow => {
                g.open(root, "marks", &[])?;
                draw_arrow(root, x + SAMPLE / 2, y - 11, st.color)?;
                g.close(root)?;
            }
            Some(st) => {
                if *line {
                    g.open(root, "line", &dash_attrs(st.dash))?;
                    root.draw(&PathElement::new(
                        vec![(x, y), (x + SAMPLE, y)],
                        st.color.stroke_width(2),
                    ))
                    .map_err(e)?;
                    g.close(root)?;
                }
                g.open(root, "marks", &[])?;
                if let Some(m) = st.marker {
                    draw_marker(root, m, (x + SAMPLE / 2, y), st.color)?;
                }
                g.close(root)?;
            }
        }
        root.draw(&Text::new(
            label.clone(),
            (x + SAMPLE + 6, y),
            font.clone().pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            )),
        ))
        .map_err(e)?;
        g.close(root)?;
    }
    g.close(root)
}

/// Panel grid `(rows, columns)` for `n` panels.
fn grid(n: usize) -> (usize, usize) {
    match n {
        0 | 1 => (1, 1),
        2 => (1, 2),
        3 => (1, 3),
        4 => (2, 2),
        n => (n.div_ceil(3), 3),
    }
}

const WIDTH: u32 = 1020;
const TITLE: u32 = 34;

fn panel_height(rows: usize) -> u32 {
    if rows == 1 {
        440
    } else {
        320
    }
}

/// One rendering; `below`: the legend's rows below the panels (`None`: inside a panel, or
/// `Ok(None)` when no panel has room for it).
fn render_once(plot: &Plot, below: Option<(usize, i32)>) -> Res<Option<String>> {
    let (rows, cols) = grid(plot.panels.len());
    let entries = legend_entries(plot);
    let legend_h = below.map_or(0, |(lines, _)| lines as i32 * ROW + 20);
    let top = TITLE + if plot.note.is_empty() { 0 } else { 16 };
    let height = top + rows as u32 * panel_height(rows) + legend_h as u32;
    let g = Groups::default();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        root.draw(&Text::new(
            plot.title.clone(),
            (WIDTH as i32 / 2, 10),
            ("sans-serif", 17).into_font().color(&BLACK).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ),
            ),
        ))
        .map_err(|e| e.to_string())?;
        if !plot.note.is_empty() {
            root.draw(&Text::new(
                plot.note.clone(),
                (WIDTH as i32 / 2, 30),
                ("sans-serif", 12).into_font().color(&BLACK).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    ),
                ),
            ))
            .map_err(|e| e.to_string())?;
        }
        let top = TITLE + if plot.note.is_empty() { 0 } else { 16 };
        let body = root.margin(top, legend_h as u32, 0, 0);
        let areas = body.split_evenly((rows, cols));
        let mut geoms = Vec::new();
        for (i, (panel, area)) in plot.panels.iter().zip(&areas).enumerate() {
            g.open(&root, "panel", &[("data-index", i.to_string())])?;
            let geom = draw_panel(area, &root, &g, plot, panel)?;
            g.close(&root)?;
            geoms.push(geom);
        }
        let w = entries
            .iter()
            .map(|(l, ..)| entry_width(l))
            .max()
            .unwrap_or(60);
        match below {
            Some((lines, col_w)) => {
                let cols = entries.len().div_ceil(lines.max(1));
                let x = (WIDTH as i32 - col_w * cols as i32) / 2;
                let y = (top + rows as u32 * panel_height(rows)) as i32 + 4;
                draw_legend(&root, &g, &entries, (x, y), cols, col_w, false)?;
            }
            None => {
                let h = entries.len() as i32 * ROW + 8;
                let spot = geoms.iter().rev().find_map(|geom| {
                    let (x0, y0, x1, y1) = geom.rect;
                    let (w, h) = (f64::from(w + 8), f64::from(h));
                    let inset = 6.0;
                    let xs = [x1 - w - inset, x0 + inset, (x0 + x1 - w) / 2.0];
                    let ys = [y0 + inset, y1 - h - inset, (y0 + y1 - h) / 2.0];
                    ys.iter()
                        .flat_map(|&y| xs.iter().map(move |&x| (x, y)))
                        .find(|&(x, y)| {
                            x >= x0
                                && x + w <= x1
                                && geom.free((x - 3.0, y - 3.0, x + w + 3.0, y + h + 3.0))
                        })
                });
                let Some((x, y)) = spot else {
                    return Ok(None);
                };
                draw_legend(&root, &g, &entries, (x as i32, y as i32), 1, w, true)?;
            }
        }
        root.present().map_err(|e| e.to_string())?;
    }
    let tags = g.tags.into_inner();
    Ok(Some(resolve(&buf, &tags)))
}

/// Render `plot` as an SVG file at `path`: the legend inside a panel where it covers no drawn
/// mark, otherwise below the panels in columns.
///
/// # Errors
/// A message from plotters or the file system.
pub fn render(plot: &Plot, path: &Path) -> Res<()> {
    register_fonts();
    // A series with nothing to draw (no point, no "never reached" arrow: e.g. a variant whose
    // cells a partial sweep has not reached) is named under the title instead of in the legend.
    let mut empty: Vec<String> = Vec::new();
    let mut plot = plot.clone();
    for panel in &mut plot.panels {
        panel.series.retain(|s| {
            let keep = !(s.points.is_empty() && s.never.is_empty());
            if !keep && !empty.contains(&s.label) {
                empty.push(s.label.clone());
            }
            keep
        });
    }
    if !empty.is_empty() {
        let line = format!("not drawn (nothing to draw yet): {}", empty.join("; "));
        plot.note = if plot.note.is_empty() {
            line
        } else {
            format!("{}; {line}", plot.note)
        };
    }
    let plot = &plot;
    let svg = match render_once(plot, None)? {
        Some(svg) => svg,
        None => {
            let entries = legend_entries(plot);
            let col_w = entries
                .iter()
                .map(|(l, ..)| entry_width(l))
                .max()
                .unwrap_or(60)
                + 14;
            let cols = ((WIDTH as i32 - 20) / col_w).clamp(1, 4) as usize;
            let lines = entries.len().div_ceil(cols);
            render_once(plot, Some((lines, col_w)))?
                .ok_or_else(|| "legend below the plot failed".to_string())?
        }
    };
    fedmix::io::write_atomic(path, svg.as_bytes()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_become_groups_and_other_texts_stay() {
        let svg = "<svg><text x=\"0\" y=\"0\">\n@@1\n</text><text x=\"3\">\nkeep\n</text>\
                   <text>\n@@0\n</text></svg>";
        let out = resolve(svg, &["</g>".into(), "<g class=\"a\">".into()]);
        assert_eq!(
            out,
            "<svg><g class=\"a\"><text x=\"3\">\nkeep\n</text></g></svg>"
        );
    }

    #[test]
    fn a_segment_through_a_box_hits_it_one_beside_it_does_not() {
        let r = (10.0, 10.0, 20.0, 20.0);
        assert!(seg_hits_box((0.0, 15.0), (30.0, 15.0), r));
        assert!(!seg_hits_box((0.0, 25.0), (30.0, 25.0), r));
        assert!(seg_hits_box((12.0, 12.0), (13.0, 13.0), r));
        assert!(inside_polygon(
            (1.0, 1.0),
            &[(0.0, 0.0), (2.0, 0.0), (2.0, 2.0), (0.0, 2.0)]
        ));
    }
}
