//! Power of the rate checks: how precisely each fitted exponent is measured, and how often the
//! check would reject an implementation whose true exponent is off by a fixed amount.
//!
//! Input: every slope test of every check at every master seed of a `--seeds A..B` run. For a
//! fitted slope `b` on points `(x_l, y_l)`, multiplying every `y_l` by `x_l^Δ` (by `e^{Δ x_l}`
//! for a fit of `ln y` on x) shifts the least-squares slope by exactly Δ and leaves the residuals
//! unchanged. The correct implementation's true exponent is estimated by the mean `b̄` of the
//! fitted slopes over the seeds; the alternative whose true exponent is `predicted ± δ` is
//! therefore the same data moved by `Δ = predicted ± δ − b̄`: at seed i the check would have
//! measured `b_i + Δ` (its own noise `b_i − b̄` kept). The rejection rate at `predicted ± δ` is
//! the fraction of seeds at which that slope fails the check's own test (its predicted value,
//! tolerance and side at that seed). δ = [`SHIFT`] for power laws (log–log fits); for
//! exponential rates (fits of `ln y` on x, whose slopes are rate constants, not exponents)
//! δ = [`SHIFT`] × |predicted|, i.e. a rate 25 % too fast or too slow. Where the prediction is
//! itself measured at each seed (a rate compared with another fitted rate), the alternative at
//! seed i is `predicted_i ± δ_i` plus that seed's noise.
//!
//! A one-sided test guards one direction only: an upper bound (`slope ≤ predicted + tol`) is not
//! violated by a shallower quantity, so its power is measured at `+δ` only (and a lower bound at
//! `−δ` only).

use crate::framework::{ConstantTest, Design, Side, SlopeFit};
use crate::stats::{mean_ci, Estimate};
use fedmix::prec::{max_nan, min_nan};
use serde::Serialize;

/// The exponent error the checks must reject (in exponent units for power laws; relative for
/// exponential rates).
pub const SHIFT: f64 = 0.25;
/// Required rejection rate at `predicted ± SHIFT`.
pub const REQUIRED_POWER: f64 = 0.95;
/// Required 95 % half-width of one run's fitted exponent.
pub const REQUIRED_HALF_WIDTH: f64 = 0.05;
/// Required number of points in a power-law fit…
pub const REQUIRED_POINTS: usize = 6;
/// …over at least this many decades of x.
pub const REQUIRED_DECADES: f64 = 2.0;

/// One slope test of one check across seeds.
#[derive(Clone, Debug, Serialize)]
pub struct PowerRow {
    /// Check name.
    pub check: String,
    /// The slope's parameter (as the check names it).
    pub parameter: String,
    /// Which side the test guards.
    pub side: Side,
    /// Whether the fit is log–log (a power law) rather than semi-log (an exponential rate).
    pub log_x: bool,
    /// Points per fit and the x range: the narrowest over the seeds (fixed by the design where
    /// x is set; measured, and varying by seed, where x is an outcome such as ν).
    pub points: usize,
    /// Smallest x of the fit.
    pub x_min: f64,
    /// Largest x of the fit.
    pub x_max: f64,
    /// Predicted value, mean over seeds (it varies only where the prediction is itself measured).
    pub predicted: f64,
    /// Tolerance, mean over seeds.
    pub tolerance: f64,
    /// Mean fitted slope over seeds, with a bootstrap 95 % interval of the mean.
    pub fitted: Estimate,
    /// Sample SD of the fitted slope across seeds (one run's uncertainty).
    pub sd: f64,
    /// The shift applied (absolute).
    pub shift: f64,
    /// Seeds at which the unshifted slope passes.
    pub passes: usize,
    /// Fraction of seeds rejecting at `predicted + shift` (`None`: direction not guarded).
    pub reject_plus: Option<f64>,
    /// Fraction of seeds rejecting at `predicted − shift`.
    pub reject_minus: Option<f64>,
    /// Number of seeds.
    pub seeds: usize,
}

impl PowerRow {
    /// One run's 95 % half-width (normal: 1.96 × SD across seeds).
    pub fn half_width(&self) -> f64 {
        1.96 * self.sd
    }
    /// Decades spanned by x, for a power-law fit.
    pub fn decades(&self) -> Option<f64> {
        (self.log_x && self.x_min > 0.0).then(|| (self.x_max / self.x_min).log10())
    }
    /// Smallest rejection rate over the guarded directions.
    pub fn power(&self) -> f64 {
        [self.reject_plus, self.reject_minus]
            .into_iter()
            .flatten()
            .fold(1.0, min_nan)
    }
    /// Which of the requirements (points, decades, half-width, power) the row misses.
    pub fn shortfalls(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.log_x && self.points < REQUIRED_POINTS {
            v.push("points");
        }
        // Each requirement is met only when provably met: a NaN (one seed's SD, an undefined
        // range) is a shortfall.
        if self
            .decades()
            .is_some_and(|d| !(d >= REQUIRED_DECADES - 1e-9))
        {
            v.push("decades");
        }
        if self.log_x && !(self.half_width() <= REQUIRED_HALF_WIDTH) {
            v.push("half-width");
        }
        if !(self.power() >= REQUIRED_POWER) {
            v.push("power");
        }
        v
    }
}

/// Whether `fit` fails its test when its slope is replaced by `slope`.
fn rejects(fit: &SlopeFit, slope: f64) -> bool {
    let mut f = fit.clone();
    f.slope = slope;
    !f.ok()
}

/// The power table from `(check, seed, fits)` triples: one row per (check, parameter), in the
/// order first seen.
pub fn power_table(runs: &[(String, u64, Vec<SlopeFit>)]) -> Vec<PowerRow> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (check, _, fits) in runs {
        for f in fits {
            let k = (check.clone(), f.parameter.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .enumerate()
        .map(|(i, (check, parameter))| {
            let fits: Vec<&SlopeFit> = runs
                .iter()
                .filter(|(c, _, _)| *c == check)
                .flat_map(|(_, _, f)| f.iter().filter(|f| f.parameter == parameter))
                .collect();
            let n = fits.len();
            let slopes: Vec<f64> = fits.iter().map(|f| f.slope).collect();
            let m = slopes.iter().sum::<f64>() / n as f64;
            let sd = if n > 1 {
                (slopes.iter().map(|s| (s - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
            } else {
                f64::NAN
            };
            let first = fits[0];
            // The narrowest design over the seeds: where x is measured (e.g. a misclustered
            // fraction) its range varies by seed, and the requirement holds only if it holds at
            // every seed.
            let narrowest = fits
                .iter()
                .map(|f| &f.design)
                .min_by(|a, b| {
                    // An undefined (NaN) span counts as the narrowest, not as equal to any.
                    let span = |d: &Design| {
                        let s = d.decades().unwrap_or(d.x_max - d.x_min);
                        if s.is_nan() {
                            f64::NEG_INFINITY
                        } else {
                            s
                        }
                    };
                    a.points
                        .cmp(&b.points)
                        .then_with(|| span(a).total_cmp(&span(b)))
                })
                .unwrap_or(&first.design);
            let predicted = fits.iter().map(|f| f.predicted).sum::<f64>() / n as f64;
            let shift_of = |f: &SlopeFit| {
                if f.design.log_x {
                    SHIFT
                } else {
                    SHIFT * f.predicted.abs()
                }
            };
            // Alternative at seed i: predicted_i ± δ_i plus the seed's noise b_i − b̄.
            let rate = |sign: f64| {
                fits.iter()
                    .filter(|f| rejects(f, f.predicted + sign * shift_of(f) + (f.slope - m)))
                    .count() as f64
                    / n as f64
            };
            let (plus, minus) = match first.side {
                Side::Both => (Some(rate(1.0)), Some(rate(-1.0))),
                Side::AtMost => (Some(rate(1.0)), None),
                Side::AtLeast => (None, Some(rate(-1.0))),
            };
            PowerRow {
                check,
                parameter,
                side: first.side,
                log_x: first.design.log_x,
                points: narrowest.points,
                x_min: narrowest.x_min,
                x_max: narrowest.x_max,
                predicted,
                tolerance: fits.iter().map(|f| f.tolerance).sum::<f64>() / n as f64,
                fitted: mean_ci(&slopes, 0x5eed_0000 + i as u64),
                sd,
                shift: if first.design.log_x {
                    SHIFT
                } else {
                    SHIFT * predicted.abs()
                },
                passes: fits.iter().filter(|f| f.ok()).count(),
                reject_plus: plus,
                reject_minus: minus,
                seeds: n,
            }
        })
        .collect()
}

/// The power table as markdown.
pub fn power_markdown(rows: &[PowerRow], header: &str) -> String {
    let pct = |r: Option<f64>| r.map_or("—".into(), |r| format!("{:.0} %", 100.0 * r));
    let mut md = format!(
        "# Theory checks: power of the rate tests\n\n{header}\n\n\
         For each slope test: the design (points, x range; where x is measured, the narrowest \
         over the seeds), the fitted exponent (mean over seeds \
         with a bootstrap 95 % interval of the mean; one run's 95 % half-width = 1.96 × its SD \
         across seeds), and the rejection rate when the true exponent is predicted ± δ — each \
         seed's data moved so that the mean slope lands there (its y values multiplied by x^Δ, \
         which keeps the seed's noise), then the check's own test applied. δ = {SHIFT} for power \
         laws; for exponential rates (fits of ln y on x) δ = {SHIFT} × |predicted|. A one-sided \
         test guards one direction (—: not guarded). Where a bound is slack (the fitted mean lies \
         inside it, e.g. an upper bound whose true exponent is lower), the alternative predicted + δ \
         is further from the data than δ. Requirements: ≥ {REQUIRED_POINTS} points over \
         ≥ {REQUIRED_DECADES} decades, half-width ≤ {REQUIRED_HALF_WIDTH}, rejection ≥ {:.0} %.\n\n\
         | check | slope | points | x range | test | fitted (95 % CI of mean) | one run ±95 % | passes | reject at +δ | reject at −δ | short of |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        100.0 * REQUIRED_POWER
    );
    for r in rows {
        let range = match r.decades() {
            Some(d) => format!("{:.3}–{:.3} ({d:.1} dec.)", r.x_min, r.x_max),
            None => format!("{:.3}–{:.3} (linear)", r.x_min, r.x_max),
        };
        let test = match r.side {
            Side::Both => format!("{:.3} ± {:.3}", r.predicted, r.tolerance),
            Side::AtMost => format!("≤ {:.3} + {:.3}", r.predicted, r.tolerance),
            Side::AtLeast => format!("≥ {:.3} − {:.3}", r.predicted, r.tolerance),
        };
        let short = r.shortfalls();
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.3} [{:.3}, {:.3}] | {:.3} | {}/{} | {} | {} | {} |\n",
            r.check,
            r.parameter,
            r.points,
            range,
            test,
            r.fitted.value,
            r.fitted.lo,
            r.fitted.hi,
            r.half_width(),
            r.passes,
            r.seeds,
            pct(r.reject_plus),
            pct(r.reject_minus),
            if short.is_empty() {
                "—".into()
            } else {
                short.join(", ")
            },
        ));
    }
    let ok = rows.iter().filter(|r| r.shortfalls().is_empty()).count();
    let powered = rows.iter().filter(|r| r.power() >= REQUIRED_POWER).count();
    md.push_str(&format!(
        "\n{ok} of {} slope tests meet every requirement; {powered} reject the alternative in \
         ≥ {:.0} % of seeds.\n\n\
         Rows with a linear x range are rate constants of exponential laws compared with another \
         rate measured in the same run (a test of the exponential form, or of one algorithm's \
         rate against another's), not exponents the papers state; the alternative there is a \
         rate 25 % off, and those checks' primary decisions are per-point binomial tests. \
         Requirements on points and half-width are judged at the profile of the run.\n",
        rows.len(),
        100.0 * REQUIRED_POWER
    ));
    md
}

/// Required power of a constant test against a scale error (the detectable effect is the
/// smallest scale error rejected at this rate).
pub const EFFECT_POWER: f64 = 0.9;
/// The scale error every constant test should detect.
pub const TARGET_EFFECT: f64 = 1.25;

/// One constant test of one check across seeds: the smallest multiplicative error of the tested
/// quantity it detects with power ≥ [`EFFECT_POWER`].
///
/// At seed i with measured/exact ratio `r_i` and accepted interval `[lo_i, hi_i]`, the quantity
/// scaled by `f > 1` is rejected iff `f r_i > hi_i`, i.e. `f > hi_i / r_i`; scaled by `1/f`
/// iff `f > r_i / lo_i` (the seed's own noise kept, as in [`power_table`]). The detectable effect
/// in a direction is the [`EFFECT_POWER`]-quantile over seeds of those thresholds (the smallest
/// `f` that ≥ 90 % of the seeds reject); the row's effect is the larger of the two directions.
#[derive(Clone, Debug, Serialize)]
pub struct EffectRow {
    /// Check name.
    pub check: String,
    /// The tested quantity.
    pub quantity: String,
    /// The paper bound it sits beside.
    pub beside: String,
    /// Mean of the exact values over seeds.
    pub exact: f64,
    /// Mean measured/exact ratio.
    pub ratio: f64,
    /// Mean accepted interval of the ratio.
    pub lo: f64,
    /// Mean upper end.
    pub hi: f64,
    /// The interval's α (`None`: deterministic).
    pub alpha: Option<f64>,
    /// Smallest `f` such that `× f` is rejected at ≥ 90 % of the seeds.
    pub effect_up: f64,
    /// Smallest `f` such that `÷ f` is rejected at ≥ 90 % of the seeds.
    pub effect_down: f64,
    /// Seeds at which the test passes.
    pub passes: usize,
    /// Seeds.
    pub seeds: usize,
}

impl EffectRow {
    /// The detectable effect: the larger of the two directions.
    pub fn effect(&self) -> f64 {
        max_nan(self.effect_up, self.effect_down)
    }
    /// Whether a [`TARGET_EFFECT`] error is detected in both directions (NaN: not met).
    pub fn meets_target(&self) -> bool {
        self.effect() <= TARGET_EFFECT
    }
}

/// The [`EFFECT_POWER`]-quantile (nearest rank, upper) of `v`; NaN if any entry is NaN.
fn power_quantile(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_nan()) || v.is_empty() {
        return f64::NAN;
    }
    crate::framework::quantile(v, EFFECT_POWER)
}

/// The detectable-effect table from `(check, seed, constant tests)` triples: one row per
/// (check, quantity), in the order first seen. A quantity's name may carry an instance suffix
/// `(instance i)`; rows are keyed by the full name.
pub fn effect_table(runs: &[(String, u64, Vec<ConstantTest>)]) -> Vec<EffectRow> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (check, _, tests) in runs {
        for t in tests {
            let k = (check.clone(), t.quantity.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .map(|(check, quantity)| {
            let tests: Vec<&ConstantTest> = runs
                .iter()
                .filter(|(c, _, _)| *c == check)
                .flat_map(|(_, _, t)| t.iter().filter(|t| t.quantity == quantity))
                .collect();
            let n = tests.len() as f64;
            let mean =
                |f: &dyn Fn(&ConstantTest) -> f64| tests.iter().map(|t| f(t)).sum::<f64>() / n;
            let up: Vec<f64> = tests.iter().map(|t| t.hi / t.ratio()).collect();
            let down: Vec<f64> = tests.iter().map(|t| t.ratio() / t.lo).collect();
            EffectRow {
                check: check.clone(),
                quantity: quantity.clone(),
                beside: tests[0].beside.clone(),
                exact: mean(&|t| t.exact),
                ratio: mean(&|t| t.ratio()),
                lo: mean(&|t| t.lo),
                hi: mean(&|t| t.hi),
                alpha: tests[0].alpha,
                // A threshold below 1 means the unscaled quantity already fails there: any
                // error in that direction is detected.
                effect_up: max_nan(power_quantile(&up), 1.0),
                effect_down: max_nan(power_quantile(&down), 1.0),
                passes: tests.iter().filter(|t| t.ok()).count(),
                seeds: tests.len(),
            }
        })
        .collect()
}

/// The detectable-effect table as markdown (a section of `power.md`).
pub fn effect_markdown(rows: &[EffectRow]) -> String {
    let mut md = format!(
        "\n## Detectable effect of the constant tests\n\n\
         Each measured constant is compared two-sidedly with its exact value for the instance \
         (ratio measured/exact inside the stated interval). Detectable effect: the smallest \
         factor f such that the quantity multiplied by f, and divided by f, is rejected at \
         ≥ {:.0} % of the seeds (each seed's own ratio scaled, its interval kept). Target: \
         {TARGET_EFFECT}×.\n\n\
         | check | quantity | beside | exact (mean) | ratio (mean) | interval (mean) | α | × f detected from | ÷ f detected from | detectable effect | meets {TARGET_EFFECT}× | passes |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
        100.0 * EFFECT_POWER
    );
    for r in rows {
        md.push_str(&format!(
            "| {} | {} | {} | {:.4e} | {:.6} | [{:.6}, {:.6}] | {} | {:.4} | {:.4} | {:.4} | {} | {}/{} |\n",
            r.check,
            r.quantity,
            r.beside,
            r.exact,
            r.ratio,
            r.lo,
            r.hi,
            r.alpha.map_or("deterministic".into(), |a| format!("{a:.2e}")),
            r.effect_up,
            r.effect_down,
            r.effect(),
            if r.meets_target() { "yes" } else { "**no**" },
            r.passes,
            r.seeds
        ));
    }
    let met = rows.iter().filter(|r| r.meets_target()).count();
    md.push_str(&format!(
        "\n{met} of {} constant tests detect a {TARGET_EFFECT}× error with power ≥ {:.0} %.\n",
        rows.len(),
        100.0 * EFFECT_POWER
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Design;

    fn fit(slope: f64, side: Side, log_x: bool) -> SlopeFit {
        SlopeFit {
            parameter: "x".into(),
            slope,
            predicted: 1.0,
            tolerance: 0.1,
            side,
            design: Design::of(&[1.0, 10.0, 100.0], log_x),
        }
    }

    /// A requirement is met only when provably met: one seed (SD NaN) misses the half-width.
    #[test]
    fn an_undefined_half_width_is_a_shortfall() {
        let runs = vec![("c".to_string(), 0, vec![fit(1.0, Side::Both, true)])];
        let r = &power_table(&runs)[0];
        assert!(r.sd.is_nan());
        assert!(
            r.shortfalls().contains(&"half-width"),
            "{:?}",
            r.shortfalls()
        );
    }

    #[test]
    fn shifted_tests_reject_as_their_side_says() {
        // Slopes 0.95 and 1.05 around the prediction 1 ± 0.1 (mean 1): the alternatives 1.25 ± 0.05
        // and 0.75 ± 0.05 all fail — power 1 both ways.
        let runs: Vec<(String, u64, Vec<SlopeFit>)> = [0.95, 1.05]
            .iter()
            .enumerate()
            .map(|(i, &s)| ("c".to_string(), i as u64, vec![fit(s, Side::Both, true)]))
            .collect();
        let r = &power_table(&runs)[0];
        assert_eq!((r.reject_plus, r.reject_minus), (Some(1.0), Some(1.0)));
        assert_eq!(r.passes, 2);
        assert!((r.fitted.value - 1.0).abs() < 1e-12);
        // An upper bound ≤ 1 + 0.1 guards +δ only. Slopes 0.6 and 1.0 (mean 0.8): the
        // alternative with true exponent 1.25 gives 1.05 (passes) and 1.45 (fails).
        let runs = vec![
            ("u".to_string(), 1, vec![fit(0.6, Side::AtMost, true)]),
            ("u".to_string(), 2, vec![fit(1.0, Side::AtMost, true)]),
        ];
        let r = &power_table(&runs)[0];
        assert_eq!((r.reject_plus, r.reject_minus), (Some(0.5), None));
        assert!(r.shortfalls().contains(&"power"));
        // A slack upper bound (slopes 0.5, far below 1.1) still rejects the alternative 1.25.
        let runs = vec![("s".to_string(), 1, vec![fit(0.5, Side::AtMost, true)])];
        assert_eq!(power_table(&runs)[0].reject_plus, Some(1.0));
        // A semi-log rate: δ = 0.25 × |predicted| = 0.25.
        let runs = vec![("e".to_string(), 1, vec![fit(1.0, Side::AtLeast, false)])];
        let r = &power_table(&runs)[0];
        assert_eq!((r.reject_plus, r.reject_minus), (None, Some(1.0)));
        assert!((r.shift - 0.25).abs() < 1e-12 && r.decades().is_none());
    }

    #[test]
    fn a_loose_tolerance_has_no_power() {
        // Tolerance 0.3 > δ: slopes at the prediction, moved by ±0.25, still pass.
        let mut f = fit(1.0, Side::Both, true);
        f.tolerance = 0.3;
        let r = &power_table(&[("c".to_string(), 1, vec![f])])[0];
        assert_eq!((r.reject_plus, r.reject_minus), (Some(0.0), Some(0.0)));
    }

    fn constant(ratio: f64, lo: f64, hi: f64) -> ConstantTest {
        ConstantTest {
            quantity: "q".into(),
            beside: "b".into(),
            measured: ratio * 2.0,
            exact: 2.0,
            lo,
            hi,
            alpha: None,
            interval: "i".into(),
        }
    }

    /// Ratios 1.0 and 1.1 in [0.9, 1.2]: × f is rejected from f = 1.2 (ratio 1) and 1.2/1.1;
    /// the 0.9-quantile of the thresholds over two seeds is the larger, 1.2. ÷ f: 1/0.9 and
    /// 1.1/0.9, the larger 1.2222.
    #[test]
    fn the_detectable_effect_is_the_ninety_percent_quantile_of_the_thresholds() {
        let runs = vec![
            ("c".to_string(), 1, vec![constant(1.0, 0.9, 1.2)]),
            ("c".to_string(), 2, vec![constant(1.1, 0.9, 1.2)]),
        ];
        let r = &effect_table(&runs)[0];
        assert!((r.effect_up - 1.2).abs() < 1e-12, "{}", r.effect_up);
        assert!(
            (r.effect_down - 1.1 / 0.9).abs() < 1e-12,
            "{}",
            r.effect_down
        );
        assert!((r.effect() - 1.1 / 0.9).abs() < 1e-12 && r.meets_target());
        assert_eq!(r.passes, 2);
        // A wide interval misses the target; a NaN ratio never meets it.
        let wide = vec![("c".to_string(), 1, vec![constant(1.0, 0.7, 1.3)])];
        assert!(!effect_table(&wide)[0].meets_target());
        let nan = vec![("c".to_string(), 1, vec![constant(f64::NAN, 0.9, 1.1)])];
        let r = &effect_table(&nan)[0];
        assert!(r.effect().is_nan() && !r.meets_target() && r.passes == 0);
    }
}
