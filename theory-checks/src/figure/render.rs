//! Rendering a [`Plot`] to an SVG file: the page laid out by [`super::layout`], the legend inside
//! a panel when one has room for it ([`super::legend::place`]), else a second rendering with the
//! legend below the panels, then the sentinels resolved into groups ([`super::groups`]).
//!
//! The DejaVu Sans font ships in `assets/` with its licence and is registered once, so no
//! system font library is needed.

use super::groups::{resolve, Groups, Res};
use super::layout::{draw_panel, grid, panel_height, TITLE, WIDTH};
use super::legend::{draw_legend, entry_width, legend_entries, place, ROW};
use super::plot::Plot;
use plotters::prelude::*;
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
                // A legend inside a panel speaks for that panel: only a panel that draws every
                // entry may hold it (otherwise it goes below the panels).
                let hosts: Vec<bool> = plot
                    .panels
                    .iter()
                    .map(|panel| {
                        entries.iter().all(|(label, style, ..)| {
                            style.is_none()
                                || panel
                                    .series
                                    .iter()
                                    .any(|s| s.label == *label && Some(s.style) == *style)
                        })
                    })
                    .collect();
                let spot = place(&geoms, &hosts, w, entries.len());
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

/// Render `plot` as an SVG file at `path`: the legend inside a panel that draws every entry,
/// where it covers no drawn mark, otherwise below the panels in columns.
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
