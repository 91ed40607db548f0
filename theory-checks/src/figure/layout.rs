//! The page: a title (and a note under it), panels in a grid of equal cells, each a chart with its
//! axes (linear or logarithmic, ticks by [`tick`]) and mesh.

use super::axis::{log_axis, tick};
use super::geometry::Geom;
use super::groups::{Groups, Res};
use super::marks::draw_series;
use super::plot::{Panel, Plot};
use plotters::coord::Shift;
use plotters::prelude::*;

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

/// Draw one panel in `area`: its chart, axes and series; returns its pixel geometry.
pub(super) fn draw_panel<DB: DrawingBackend>(
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

/// Panel grid `(rows, columns)` for `n` panels.
pub(super) fn grid(n: usize) -> (usize, usize) {
    match n {
        0 | 1 => (1, 1),
        2 => (1, 2),
        3 => (1, 3),
        4 => (2, 2),
        n => (n.div_ceil(3), 3),
    }
}

/// Page width and title height in pixels.
pub(super) const WIDTH: u32 = 1020;
pub(super) const TITLE: u32 = 34;

/// Height in pixels of a panel in a grid of `rows` rows.
pub(super) fn panel_height(rows: usize) -> u32 {
    if rows == 1 {
        440
    } else {
        320
    }
}
