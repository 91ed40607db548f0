//! Drawing a panel's series: its band, its line in the series' dash, its markers, and the arrows
//! of x values where it never reached its target; each wrapped in the groups of
//! [`super::groups`] and recorded in the panel's [`Geom`].

use super::geometry::Geom;
use super::groups::{hex, Groups, Res};
use super::plot::{Drawn, Panel, Plot};
use crate::style::{Dash, Marker};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Draw one marker centred at pixel `at`.
pub(super) fn draw_marker<DB: DrawingBackend>(
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
pub(super) fn draw_arrow<DB: DrawingBackend>(
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

/// The series' group attributes: label, colour, dash, marker.
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

/// A line group's dash attribute.
pub(super) fn dash_attrs(d: Dash) -> Vec<(&'static str, String)> {
    d.array()
        .map(|a| vec![("stroke-dasharray", a.to_string())])
        .unwrap_or_default()
}

/// Half-width in pixels of the stub that draws a one-point series' line style.
const STUB: i32 = 14;

/// Draw a panel's series on `chart`; returns its pixel geometry.
pub(super) fn draw_series<DB, CT>(
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
