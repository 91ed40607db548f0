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
//! The modules, from the bottom: `plot` (the figure as data), `axis` (log axes and tick labels),
//! `groups` (the sentinel groups), `geometry` (the drawn marks in pixels), `marks` (a panel's
//! series), `legend` (its entries, drawing and placement), `layout` (the page: title, panel grid,
//! each panel's chart and axes), `render` (one figure to a file); `theory` turns a theory
//! check's record into a [`Plot`].

pub mod axis;
mod geometry;
mod groups;
mod layout;
mod legend;
mod marks;
mod plot;
mod render;
pub mod theory;

pub use axis::{log_axis, log_key_points, tick};
pub use geometry::seg_hits_box;
pub use plot::{AxisRange, Drawn, Panel, Plot, MAX_SERIES};
pub use render::{register_fonts, render};
pub use theory::render_svg;
