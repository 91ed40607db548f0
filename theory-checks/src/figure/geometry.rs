//! Pixel geometry of a panel's drawn marks, so the legend can be placed where it covers none.

/// Pixel geometry of a panel's drawn marks (for placing the legend off them).
#[derive(Clone, Debug, Default)]
pub(super) struct Geom {
    /// Plot area `(x0, y0, x1, y1)`.
    pub(super) rect: (f64, f64, f64, f64),
    /// Line segments.
    pub(super) segments: Vec<((f64, f64), (f64, f64))>,
    /// Markers and arrows.
    pub(super) points: Vec<(f64, f64)>,
    /// Bands and shading.
    pub(super) polygons: Vec<Vec<(f64, f64)>>,
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

/// Whether `p` lies inside `poly` (even–odd rule).
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
    pub(super) fn free(&self, r: (f64, f64, f64, f64)) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
