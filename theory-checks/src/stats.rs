//! The statistics the reports share: percentile-bootstrap intervals over seeds (the claim
//! ledger, the power analysis) and the Wilson score interval of a proportion (IFCA Fig. 3
//! successes, the checks' fail rates). A lower layer: it imports nothing of this crate.

use rand::{RngExt, SeedableRng};

/// A bootstrap estimate: point value and 95 % percentile interval, over `n` seeds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Point estimate.
    pub value: f64,
    /// 2.5 % quantile of the bootstrap distribution.
    pub lo: f64,
    /// 97.5 % quantile.
    pub hi: f64,
    /// Seeds with a value (the smaller group's, for a statistic of two groups).
    pub n: usize,
    /// The two groups' sizes, for a statistic of two groups (printed both).
    pub groups: Option<(usize, usize)>,
}

impl Estimate {
    /// The seeds behind it: `n`, or none when it has no finite value (printed `— (no seed)`).
    pub fn seeds(&self) -> usize {
        if self.value.is_finite() && self.lo.is_finite() && self.hi.is_finite() {
            self.n
        } else {
            0
        }
    }

    /// `value [lo, hi] (n = …)` to `digits` decimals, or `— (no seed)`.
    pub fn fmt(&self, digits: usize) -> String {
        if self.seeds() == 0 {
            return "— (no seed)".into();
        }
        let n = match self.groups {
            Some((a, b)) => format!("{a} and {b}"),
            None => self.n.to_string(),
        };
        format!(
            "{:.d$} [{:.d$}, {:.d$}] (n = {n})",
            self.value,
            self.lo,
            self.hi,
            d = digits
        )
    }
}

/// Bootstrap resamples.
const BOOTSTRAP: usize = 4000;

/// Percentile bootstrap of `stat` over resampled `groups` (each group resampled with
/// replacement independently; for one group, the usual bootstrap over seeds).
fn bootstrap(groups: &[&[f64]], stat: impl Fn(&[Vec<f64>]) -> f64, seed: u64) -> Estimate {
    let n = groups.iter().map(|g| g.len()).min().unwrap_or(0);
    let owned: Vec<Vec<f64>> = groups.iter().map(|g| g.to_vec()).collect();
    if n == 0 {
        return Estimate {
            value: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n: 0,
            groups: None,
        };
    }
    let value = stat(&owned);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut reps: Vec<f64> = (0..BOOTSTRAP)
        .map(|_| {
            let res: Vec<Vec<f64>> = owned
                .iter()
                .map(|g| {
                    (0..g.len())
                        .map(|_| g[rng.random_range(0..g.len())])
                        .collect()
                })
                .collect();
            stat(&res)
        })
        .filter(|v| v.is_finite())
        .collect();
    reps.sort_by(f64::total_cmp);
    if reps.is_empty() {
        // The statistic is undefined on every resample (e.g. a ratio over zeros): no interval.
        return Estimate {
            value,
            lo: f64::NAN,
            hi: f64::NAN,
            n,
            groups: None,
        };
    }
    let q = |p: f64| reps[((p * reps.len() as f64) as usize).min(reps.len() - 1)];
    Estimate {
        value,
        lo: q(0.025),
        hi: q(0.975),
        n,
        groups: None,
    }
}

/// Arithmetic mean.
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Bootstrap of the mean.
pub fn mean_ci(v: &[f64], seed: u64) -> Estimate {
    bootstrap(&[v], |g| mean(&g[0]), seed)
}

/// Bootstrap of the geometric mean (positive values).
pub fn geomean_ci(v: &[f64], seed: u64) -> Estimate {
    let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
    let e = mean_ci(&logs, seed);
    Estimate {
        value: e.value.exp(),
        lo: e.lo.exp(),
        hi: e.hi.exp(),
        n: e.n,
        groups: None,
    }
}

/// Bootstrap of `mean(a) / mean(b)` for two independent samples.
pub fn ratio_of_means_ci(a: &[f64], b: &[f64], seed: u64) -> Estimate {
    Estimate {
        groups: Some((a.len(), b.len())),
        ..bootstrap(&[a, b], |g| mean(&g[0]) / mean(&g[1]), seed)
    }
}

/// Wilson score interval (95 %) for `x` successes out of `n`.
pub fn wilson(x: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (nf, p) = (n as f64, x as f64 / n as f64);
    let den = 1.0 + z * z / nf;
    let centre = (p + z * z / (2.0 * nf)) / den;
    let half = z * (p * (1.0 - p) / nf + z * z / (4.0 * nf * nf)).sqrt() / den;
    // At x = 0 and x = n the limits are exactly 0 and 1 (rounding would give 1 − 1e−16).
    let lo = if x == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if x == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_brackets_the_proportion() {
        let (lo, hi) = wilson(5, 10);
        assert!(lo < 0.5 && hi > 0.5);
        // Known value: Wilson 95 % for 5/10 is [0.2366, 0.7634] (Agresti–Coull 1998, Table I form).
        assert!((lo - 0.2366).abs() < 1e-4 && (hi - 0.7634).abs() < 1e-4);
        assert!(wilson(0, 10).0.abs() < f64::MIN_POSITIVE);
        assert!((wilson(10, 10).1 - 1.0).abs() < f64::MIN_POSITIVE);
        let (lo, hi) = wilson(0, 10);
        // Wilson upper limit for 0/10: z²/(n + z²) = 3.8415/13.8415 = 0.2775.
        assert!(lo.abs() < f64::MIN_POSITIVE && (hi - 0.2775).abs() < 1e-4);
    }
}
