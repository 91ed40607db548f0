//! What a figure is, before it is drawn: a [`Plot`] of [`Panel`]s sharing their axes, each at
//! most [`MAX_SERIES`] [`Drawn`] series.

use crate::style::Style;

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
    /// Labelled values of a log axis (default: [`log_key_points`](super::axis::log_key_points)).
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
