//! Axis grids and tick labels.

use plotters::prelude::*;

/// The grid of a log axis on `[lo, hi]`: `(labelled, unlabelled)` values. Every `m × 10^k`
/// (m = 1..9) in the range is a grid line; up to 3 decades the 1, 2, 5 × 10^k ones are labelled,
/// up to 6 the powers of 10, beyond that the powers of 10 and no minor lines. An axis shorter
/// than a decade labels 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9 × 10^k, or five geometric
/// steps when fewer than three of those fall in range. (Plotters' own log key points skip a
/// partial decade at the bottom of the axis and crowd light lines into the top one.)
pub fn log_key_points(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return (bold, light);
    }
    let decades = (hi / lo).log10();
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let within = |v: f64| v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12);
    if decades >= 1.0 {
        for k in first..=last {
            for m in 1..=9 {
                let v = f64::from(m) * 10f64.powi(k);
                if !within(v) {
                    continue;
                }
                let labelled = if decades <= 3.0 {
                    [1, 2, 5].contains(&m)
                } else {
                    m == 1
                };
                if labelled {
                    bold.push(v);
                } else if decades <= 6.0 {
                    light.push(v);
                }
            }
        }
    } else {
        for k in first..=last {
            for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0] {
                let v = m * 10f64.powi(k);
                if within(v) {
                    bold.push(v);
                }
            }
        }
        if bold.len() < 3 {
            bold = (0..5)
                .map(|i| {
                    let v = lo * (hi / lo).powf(f64::from(i) / 4.0);
                    let scale = 10f64.powi(v.log10().floor() as i32 - 2);
                    (v / scale).round() * scale
                })
                .filter(|v| within(*v))
                .collect();
        }
    }
    (bold, light)
}

/// A log axis on `[lo, hi]` with the grid of [`log_key_points`].
pub fn log_axis(
    lo: f64,
    hi: f64,
) -> plotters::coord::combinators::WithKeyPoints<plotters::coord::combinators::LogCoord<f64>> {
    let (bold, light) = log_key_points(lo, hi);
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// A tick label: up to 4 significant digits, plain decimals between 1e−3 and 1e4, scientific
/// notation outside.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e4).contains(&a) {
        // "1e4" rather than "1.0e4"; "2.5e-4" keeps its digit.
        format!("{v:.1e}").replace(".0e", "e")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_label_every_decade_including_a_partial_bottom_one() {
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-12 * y)
        };
        // Two decades, off the powers of 10 at both ends (eq. 32's y axis): 1, 2, 5 × 10^k
        // labelled, from the partial decade at the bottom up.
        let (bold, light) = log_key_points(0.013, 1.5);
        assert!(close(&bold, &[0.02, 0.05, 0.1, 0.2, 0.5, 1.0]), "{bold:?}");
        assert!(close(&light[..3], &[0.03, 0.04, 0.06]), "{light:?}");
        assert!(light.iter().all(|v| (0.013..=1.5).contains(v)));
        // Seven decades: powers of 10 only, no minor lines.
        let (bold, light) = log_key_points(1e-6, 10.0);
        assert_eq!(bold.len(), 8);
        assert!(light.is_empty());
        // Under a decade: the finer steps; a very short axis falls back to five values.
        let (bold, _) = log_key_points(50.0, 400.0);
        assert!(
            close(
                &bold,
                &[50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 120.0, 150.0, 200.0, 250.0, 300.0, 400.0]
            ),
            "{bold:?}"
        );
        let (bold, _) = log_key_points(1.01, 1.3);
        assert_eq!(bold.len(), 5, "{bold:?}");
        assert!(log_key_points(0.0, 1.0).0.is_empty());
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(1e4), "1e4");
        assert_eq!(tick(2.5e-4), "2.5e-4");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(150.0), "150");
    }
}
