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
        // A point or band entry that cannot be drawn (NaN: a grid value with no finished run)
        // breaks the line and the band: each run of drawable ones is drawn on its own.
        let band_runs = runs(&s.band, |&(x, lo, hi)| ok(x, lo) && ok(x, hi));
        if band_runs.iter().any(|r| r.len() >= 2) {
            g.open(root, "band", &[])?;
            for band in band_runs.iter().filter(|r| r.len() >= 2) {
                let mut poly: Vec<(f64, f64)> = band.iter().map(|b| (b.0, b.2)).collect();
                poly.extend(band.iter().rev().map(|b| (b.0, b.1)));
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
            }
            g.close(root)?;
        }
        let line_runs = runs(&s.points, |p| ok(p.0, p.1));
        let pix: Vec<(i32, i32)> = line_runs.iter().flatten().map(|&p| px(p)).collect();
        if s.line && !line_runs.is_empty() {
            g.open(root, "line", &dash_attrs(s.style.dash))?;
            for run in &line_runs {
                if run.len() >= 2 {
                    area.draw(&PathElement::new(run.clone(), color.stroke_width(2)))
                        .map_err(e)?;
                    let rp: Vec<(i32, i32)> = run.iter().map(|&p| px(p)).collect();
                    for w in rp.windows(2) {
                        geom.segments.push((
                            (f64::from(w[0].0), f64::from(w[0].1)),
                            (f64::from(w[1].0), f64::from(w[1].1)),
                        ));
                    }
                } else {
                    // A point with no neighbour to connect has no line to show its style: a
                    // short horizontal stub through it, drawn in the line's dash, keeps two
                    // such series of one colour apart (as the legend's sample draws them).
                    let (x, y) = px(run[0]);
                    let stub = [(x - STUB, y), (x + STUB, y)];
                    root.draw(&PathElement::new(stub.to_vec(), color.stroke_width(2)))
                        .map_err(e)?;
                    geom.segments.push((
                        (f64::from(stub[0].0), f64::from(y)),
                        (f64::from(stub[1].0), f64::from(y)),
                    ));
                }
            }
            g.close(root)?;
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

/// The maximal runs of consecutive items that pass `ok`, in order: a failing item ends a run.
fn runs<T: Copy>(items: &[T], ok: impl Fn(&T) -> bool) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = Vec::new();
    let mut open = false;
    for it in items {
        if ok(it) {
            if !open {
                out.push(Vec::new());
                open = true;
            }
            if let Some(r) = out.last_mut() {
                r.push(*it);
            }
        } else {
            open = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn a_failing_item_ends_a_run() {
        let ok = |x: &f64| x.is_finite();
        assert_eq!(
            runs(&[1.0, f64::NAN, 2.0, 3.0, f64::NAN, f64::NAN, 4.0], ok),
            vec![vec![1.0], vec![2.0, 3.0], vec![4.0]]
        );
        assert!(runs(&[f64::NAN], ok).is_empty());
        assert_eq!(runs(&[1.0, 2.0], ok), vec![vec![1.0, 2.0]]);
    }
}
