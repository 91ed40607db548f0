//! The calibrate-then-validate sweeps of the concentration checks (Lemmas 3 and 6, Prop. 1;
//! SXY22 App. D): the covariances a series runs with, the seeds of its instances and cells, its
//! cells, the calibrated constant and the validation's worst ratio, and the figure of a sweep.

use super::common::{line, markers, slope_fit};
use crate::framework::Series;
use crate::framework::SlopeFit;
use fedmix::seed_streams::child_seed;

/// `Σ_j = βI`: the extreme of the class `αI ⪯ Σ_j ⪯ βI` (α = 0.5, β = 2; largest moments),
/// the calibration series' covariance in the concentration sweeps (Lemmas 3 and 6, Prop. 1).
pub const EXTREME: (f64, f64) = (2.0, 2.0);
/// `Σ_j = diag(U[α, β])`, α = 0.5, β = 2.
pub const RANDOM_DIAG: (f64, f64) = (0.5, 2.0);

/// The covariance part of a sweep series' name.
pub fn cov_name(cov: (f64, f64)) -> &'static str {
    if cov == EXTREME {
        "Σ=βI"
    } else {
        "Σ diag"
    }
}

/// Model seed of instance `instance` of a sweep series: instance 0 keeps the series' own seed
/// (a series drawn once is unchanged), instance `i ≥ 1` draws from `child_seed(series_seed, i)`.
pub fn instance_model_seed(series_seed: u64, instance: usize) -> u64 {
    if instance == 0 {
        series_seed
    } else {
        child_seed(series_seed, instance as u64)
    }
}

/// Data seed of point `point` of an instance: instance 0 takes the next cell number of the
/// sweep (`child_seed(master, tag + cell)`, `cell` counted in sweep order by `next_cell`);
/// instance `i ≥ 1` takes `child_seed(model_seed, 1000 + point)`, so extra instances never
/// shift the cell numbers of the series after them.
pub fn instance_cell_seed(
    master: u64,
    tag: u64,
    next_cell: &mut u64,
    model_seed: u64,
    instance: usize,
    point: usize,
) -> u64 {
    if instance == 0 {
        *next_cell += 1;
        child_seed(master, tag + *next_cell - 1)
    } else {
        child_seed(model_seed, 1_000 + point as u64)
    }
}

/// One cell of a calibrate-then-validate sweep: the statistic and the bound's shape at one
/// value `x` of the scaling parameter.
#[derive(Clone, Debug)]
pub struct SweepCell {
    /// Series the cell belongs to (one marker series per name in the figure).
    pub series: String,
    /// Calibration (`true`) or validation cell.
    pub calibration: bool,
    /// Scaling parameter.
    pub x: f64,
    /// Statistic.
    pub stat: f64,
    /// The bound's shape (without the constant).
    pub shape: f64,
    /// Instance (`θ*`, `Σ_j`, … drawn for the series) the cell was computed on: 0, or
    /// `1..` for the extra instances a series averages its slope over.
    pub instance: usize,
}

/// `(C, worst validation ratio)` of [`crate::framework::calibrate_then_validate`] over `cells`.
pub fn sweep_constant(cells: &[SweepCell], safety: f64) -> (f64, f64) {
    let pick = |cal: bool| -> Vec<(f64, f64)> {
        cells
            .iter()
            .filter(|c| c.calibration == cal)
            .map(|c| (c.stat, c.shape))
            .collect()
    };
    crate::framework::calibrate_then_validate(&pick(true), &pick(false), safety)
}

/// `(x, statistic)` of series `name`: at each `x` (in first-seen order) the geometric mean of
/// the statistic over the series' instances, so that a log–log slope fitted on these points is
/// the mean of the instances' slopes (one point per `x`, whatever the number of instances).
pub fn series_points(cells: &[SweepCell], name: &str) -> Vec<(f64, f64)> {
    geometric_means(
        cells
            .iter()
            .filter(|c| c.series == name)
            .map(|c| (c.x, c.stat)),
    )
}

/// Group `(x, y)` pairs by `x` (first-seen order) and return the geometric mean of `y` per `x`.
pub fn geometric_means(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut groups: Vec<(f64, f64, usize)> = Vec::new();
    for (x, y) in points {
        match groups.iter_mut().find(|g| g.0 == x) {
            Some(g) => {
                g.1 += y.ln();
                g.2 += 1;
            }
            None => groups.push((x, y.ln(), 1)),
        }
    }
    groups
        .into_iter()
        .map(|(x, s, n)| (x, (s / n as f64).exp()))
        .collect()
}

/// Figure series of a sweep: markers per series (calibration series marked), and the line
/// `C · shape` for each series in `with_bound`, drawn for the first instance of each series
/// (a series' other instances have their own `θ*` and `Σ_j`, hence other shapes).
pub fn sweep_figure_series(cells: &[SweepCell], c: f64, with_bound: &[&str]) -> Vec<Series> {
    let first: Vec<SweepCell> = cells.iter().filter(|c| c.instance == 0).cloned().collect();
    let cells = &first[..];
    let mut names: Vec<(String, bool)> = Vec::new();
    for cell in cells {
        if !names.iter().any(|(n, _)| *n == cell.series) {
            names.push((cell.series.clone(), cell.calibration));
        }
    }
    let mut out: Vec<Series> = names
        .iter()
        .map(|(n, cal)| {
            let label = if *cal {
                format!("{n} (calibration)")
            } else {
                n.clone()
            };
            let pts = cells
                .iter()
                .filter(|c| c.series == *n)
                .map(|c| (c.x, c.stat))
                .collect();
            markers(label, pts)
        })
        .collect();
    for name in with_bound {
        let pts = cells
            .iter()
            .filter(|cell| cell.series == *name)
            .map(|cell| (cell.x, c * cell.shape))
            .collect();
        out.push(line(format!("C·shape, {name} (C = {c:.3})"), pts));
    }
    out
}

/// One slope fit per named series of a sweep (log–log in `x`), e.g. the validation series.
pub fn series_slopes(
    cells: &[SweepCell],
    names: &[String],
    parameter: &str,
    predicted: f64,
    tolerance: f64,
) -> Vec<SlopeFit> {
    names
        .iter()
        .map(|n| {
            slope_fit(
                &format!("{parameter} ({n})"),
                &series_points(cells, n),
                predicted,
                tolerance,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative agreement to 1e-12 (hand computations in binary floating point).
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs()
    }
    /// A sweep's figure: one marker series per series name (calibration ones labelled so), at
    /// `(x, statistic)` of the first instance only, and for each named series the line
    /// `C · shape` through the same x values.
    #[test]
    fn sweep_figure_draws_the_statistic_and_c_times_shape() {
        let cell = |series: &str, calibration, x: f64, stat, shape, instance| SweepCell {
            series: series.into(),
            calibration,
            x,
            stat,
            shape,
            instance,
        };
        let cells = [
            cell("d=4", true, 10.0, 0.5, 0.25, 0),
            cell("d=4", true, 20.0, 0.4, 0.2, 0),
            cell("d=8", false, 10.0, 0.9, 0.5, 0),
            cell("d=8", false, 10.0, 7.0, 7.0, 1),
        ];
        let out = sweep_figure_series(&cells, 3.0, &["d=8"]);
        type Drawn<'a> = (&'a str, bool, Vec<(f64, f64)>);
        let got: Vec<Drawn<'_>> = out
            .iter()
            .map(|s| (s.label.as_str(), s.line, s.points.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("d=4 (calibration)", false, vec![(10.0, 0.5), (20.0, 0.4)]),
                ("d=8", false, vec![(10.0, 0.9)]),
                ("C·shape, d=8 (C = 3.000)", true, vec![(10.0, 1.5)]),
            ]
        );
    }

    #[test]
    fn sweep_constant_and_geometric_means_by_hand() {
        let cell = |calibration: bool, x: f64, stat: f64, shape: f64, instance: usize| SweepCell {
            series: if calibration { "cal" } else { "val" }.into(),
            calibration,
            x,
            stat,
            shape,
            instance,
        };
        let cells = vec![
            cell(true, 1.0, 2.0, 1.0, 0),
            cell(true, 2.0, 3.0, 2.0, 0),
            cell(false, 1.0, 1.0, 1.0, 0),
            cell(false, 2.0, 6.0, 4.0, 0),
            cell(false, 1.0, 4.0, 1.0, 1),
        ];
        // C = 2 × max(2/1, 3/2) = 4; worst validation ratio max(1, 1.5, 4) = 4.
        let (c, worst) = sweep_constant(&cells, 2.0);
        assert!(close(c, 4.0) && close(worst, 4.0));
        // Geometric mean per x over instances: x = 1: √(1·4) = 2; x = 2: 6.
        let pts = series_points(&cells, "val");
        assert_eq!(pts.len(), 2);
        assert!(pts[0].0.to_bits() == 1f64.to_bits() && close(pts[0].1, 2.0));
        assert!(pts[1].0.to_bits() == 2f64.to_bits() && close(pts[1].1, 6.0));
        let g = geometric_means([(3.0, 2.0), (1.0, 5.0), (3.0, 8.0)]);
        assert_eq!(g.len(), 2);
        assert!(close(g[0].1, 4.0) && close(g[1].1, 5.0));
        assert!(g[0].0.to_bits() == 3f64.to_bits(), "first-seen order");
    }

    #[test]
    fn instance_seeds_by_hand() {
        assert_eq!(instance_model_seed(77, 0), 77);
        assert_eq!(instance_model_seed(77, 2), child_seed(77, 2));
        let mut next = 5;
        assert_eq!(
            instance_cell_seed(9, 100, &mut next, 77, 0, 3),
            child_seed(9, 105)
        );
        assert_eq!(next, 6);
        assert_eq!(
            instance_cell_seed(9, 100, &mut next, 77, 1, 3),
            child_seed(77, 1003)
        );
        assert_eq!(next, 6, "extra instances do not advance the cell count");
        assert_eq!(cov_name(EXTREME), "Σ=βI");
        assert_eq!(cov_name(RANDOM_DIAG), "Σ diag");
    }
}
