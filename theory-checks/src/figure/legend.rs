//! The legend: one entry per distinct series (and the shading), drawn inside a panel that draws
//! every entry, where it covers no drawn mark ([`place`]), otherwise below the panels in columns.

use super::geometry::Geom;
use super::groups::{Groups, Res};
use super::marks::{dash_attrs, draw_arrow, draw_marker};
use super::plot::Plot;
use crate::style::Style;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Legend geometry: rows of `ROW` pixels, characters of about `CHAR` pixels, samples of
/// `SAMPLE` pixels.
pub(super) const ROW: i32 = 17;
const CHAR: f64 = 6.4;
const SAMPLE: i32 = 30;

/// A legend entry: label, style (`None`: the shading), whether its sample is the arrow of a
/// series that is nowhere drawn but as "never reached", and whether the series is a line.
pub(super) type Entry = (String, Option<Style>, bool, bool);

/// The legend's entries: the shading, then each distinct (label, style) in drawing order.
pub(super) fn legend_entries(plot: &Plot) -> Vec<Entry> {
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

/// Width in pixels of an entry: sample, gap and label.
pub(super) fn entry_width(label: &str) -> i32 {
    SAMPLE + 10 + (label.chars().count() as f64 * CHAR).ceil() as i32
}

/// Draw the legend's entries from pixel `(x, y)` in `cols` columns of `col_w` pixels.
pub(super) fn draw_legend<DB: DrawingBackend>(
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

/// Where a one-column legend of `entries` entries, `w` pixels wide, covers no drawn mark: the
/// top-left pixel of the first free spot, trying the panels that may hold it (`hosts`, by
/// panel) from the last, in each the top, bottom and middle rows from the right, left and
/// centre; `None` when no such panel has room.
pub(super) fn place(geoms: &[Geom], hosts: &[bool], w: i32, entries: usize) -> Option<(f64, f64)> {
    let h = entries as i32 * ROW + 8;
    geoms
        .iter()
        .zip(hosts)
        .rev()
        .filter(|(_, &host)| host)
        .find_map(|(geom, _)| {
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
        })
}
