//! SR-FCA's numerical building blocks (Vardhan, Ghosh, Mazumdar, TMLR 2024): the coordinate-wise
//! trimmed mean `TrMean_β` (Definition 3.2) of TrimmedMeanGD (Algorithm 3), the projection onto
//! the ball `W`, the connected components of ONE_SHOT's and MERGE's graphs (Algorithms 1, 4),
//! and ONE_SHOT's threshold λ (the authors' `dist_fraction` rule). Pure functions of their
//! arguments; the algorithm is in the parent module.

use crate::error::{FedmixError, Result};
use nalgebra::{DMatrix, DVector};

/// `TrMean_β` (SRFCA Definition 3.2) of the columns of `values` (`d × J`): per coordinate, sort,
/// drop the `⌊βJ⌋` smallest and largest, average the remaining `J − 2⌊βJ⌋`. `β = 0` is the mean.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] for `β ∉ [0, 1/2)` or no values.
pub fn trimmed_mean(values: &DMatrix<f64>, beta: f64) -> Result<DVector<f64>> {
    if !((0.0..0.5).contains(&beta)) {
        return Err(FedmixError::invalid(
            "srfca_beta",
            beta,
            "β must be in [0, 1/2)",
        ));
    }
    let j = values.ncols();
    if j == 0 {
        return Err(FedmixError::invalid(
            "trimmed mean",
            0,
            "needs at least one vector",
        ));
    }
    let drop = (beta * j as f64).floor() as usize;
    let kept = j - 2 * drop;
    Ok(DVector::from_fn(values.nrows(), |r, _| {
        let mut row: Vec<f64> = values.row(r).iter().copied().collect();
        row.sort_by(f64::total_cmp);
        row[drop..j - drop].iter().sum::<f64>() / kept as f64
    }))
}

/// Projection onto the closed ball of diameter `diameter` centred at 0 (`None`: identity).
pub fn project_ball(v: DVector<f64>, diameter: Option<f64>) -> DVector<f64> {
    match diameter {
        Some(dm) if v.norm() > dm / 2.0 => {
            let n = v.norm();
            v * (dm / 2.0 / n)
        }
        _ => v,
    }
}

/// Connected components of the graph on `0..n` with an edge `(a, b)` when `linked(a, b)`; each
/// sorted, ordered by smallest member.
pub fn components(n: usize, linked: impl Fn(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut a: usize) -> usize {
        while p[a] != a {
            p[a] = p[p[a]];
            a = p[a];
        }
        a
    }
    for a in 0..n {
        for b in a + 1..n {
            if linked(a, b) {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                if ra != rb {
                    parent[ra.max(rb)] = ra.min(rb);
                }
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut slot = vec![usize::MAX; n];
    for a in 0..n {
        let r = root(&mut parent, a);
        if slot[r] == usize::MAX {
            slot[r] = groups.len();
            groups.push(Vec::new());
        }
        groups[slot[r]].push(a);
    }
    groups
}

/// The threshold: explicit, or the `⌈q·P⌉`-th smallest pairwise distance (0-based index, clamped
/// to the largest; the authors' `dist_fraction` rule). `None` with fewer than two clients.
pub fn threshold(d: &DMatrix<f64>, lambda: Option<f64>, q: f64) -> Option<f64> {
    if lambda.is_some() {
        return lambda;
    }
    let m = d.nrows();
    let mut v: Vec<f64> = (0..m)
        .flat_map(|a| (a + 1..m).map(move |b| (a, b)))
        .map(|(a, b)| d[(a, b)])
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let idx = ((q * v.len() as f64).ceil() as usize).min(v.len() - 1);
    Some(v[idx])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TrMean_β drops ⌊βJ⌋ values on each side: J = 7, β = 0.3 → ⌊2.1⌋ = 2 dropped per side.
    /// Coordinate 0: {5, −1, 3, 100, 2, −50, 4} → sorted −50, −1, 2, 3, 4, 5, 100 → keep
    /// 2, 3, 4 → 3. Coordinate 1: all 1 → 1.
    #[test]
    fn trimmed_mean_hand_example() {
        let v = DMatrix::from_row_slice(
            2,
            7,
            &[
                5.0, -1.0, 3.0, 100.0, 2.0, -50.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            ],
        );
        let t = trimmed_mean(&v, 0.3).unwrap();
        assert!(
            (t[0] - 3.0).abs() < 1e-15 && (t[1] - 1.0).abs() < 1e-15,
            "{t}"
        );
        // β just below a multiple: J = 7, β = 0.28 → ⌊1.96⌋ = 1 per side: mean of −1, 2, 3, 4, 5.
        let t = trimmed_mean(&v, 0.28).unwrap();
        assert!((t[0] - 13.0 / 5.0).abs() < 1e-15);
    }

    #[test]
    fn trimmed_mean_equals_sort_and_average_and_beta_zero_is_the_mean() {
        let v = DMatrix::from_fn(4, 11, |r, c| {
            ((r * 13 + c * 7) as f64 * 0.61).sin() * (c as f64 + 1.0)
        });
        for beta in [0.0, 0.1, 0.2, 0.35, 0.49] {
            let t = trimmed_mean(&v, beta).unwrap();
            let drop = (beta * 11.0).floor() as usize;
            for r in 0..4 {
                let mut row: Vec<f64> = v.row(r).iter().copied().collect();
                row.sort_by(f64::total_cmp);
                let naive: f64 = row[drop..11 - drop].iter().sum::<f64>() / (11 - 2 * drop) as f64;
                assert!((t[r] - naive).abs() < 1e-14);
            }
        }
        let mean = v.column_mean();
        assert!(crate::prec::amax_nan(&(trimmed_mean(&v, 0.0).unwrap() - mean)) < 1e-14);
        assert!(matches!(
            trimmed_mean(&v, 0.5),
            Err(FedmixError::InvalidParameter { .. })
        ));
    }

    #[test]
    fn projection_onto_the_ball() {
        let v = DVector::from_vec(vec![3.0, 4.0]);
        let p = project_ball(v.clone(), Some(4.0));
        assert!((p.norm() - 2.0).abs() < 1e-15 && (p[0] / p[1] - 0.75).abs() < 1e-15);
        assert_eq!(project_ball(v.clone(), Some(20.0)), v);
        assert_eq!(project_ball(v.clone(), None), v);
    }

    #[test]
    fn components_and_quantile_threshold() {
        // 0–2 and 1–3 linked, 4 alone.
        let c = components(5, |a, b| matches!((a, b), (0, 2) | (1, 3)));
        assert_eq!(c, vec![vec![0, 2], vec![1, 3], vec![4]]);
        let d = DMatrix::from_fn(3, 3, |a, b| (a as f64 - b as f64).abs());
        // pairs: 1, 2, 1 → sorted 1, 1, 2; q = 0.5 → index ⌈1.5⌉ = 2 → 2.
        assert_eq!(threshold(&d, None, 0.5), Some(2.0));
        assert_eq!(threshold(&d, Some(0.7), 0.5), Some(0.7));
        // q = 1 → index ⌈3⌉ = 3, clamped to the last (2): the largest distance.
        assert_eq!(threshold(&d, None, 1.0), Some(2.0));
        // q = 0.2 → index ⌈0.6⌉ = 1 → 1; q = 0 → index 0 → 1.
        assert_eq!(threshold(&d, None, 0.2), Some(1.0));
        assert_eq!(threshold(&d, None, 0.0), Some(1.0));
        // One client: no pair, no threshold.
        assert_eq!(threshold(&DMatrix::zeros(1, 1), None, 0.5), None);
    }
}
