//! What a check is: a deterministic, seeded experiment that returns a [`CheckRecord`] — the
//! statistic, the bound it is compared with, the constant used, fitted slopes where the claim is
//! a rate, the grid, pass/fail and the data for its figure — plus the statistics helpers every
//! check shares: log–log slope fits, calibrate-then-validate for unknown universal constants, and
//! binomial tests with a stated α.
//!
//! Decision (the papers state their bounds with unspecified universal constants `C`, `c` and
//! `O(·)`, which no finite experiment can refute if `C` may be fitted per case): a constant is
//! estimated once on a calibration grid and must then hold on a separate validation grid that
//! spans at least two orders of magnitude of the scaling parameter, and where the claim is a
//! rate the log–log slope must match the predicted exponent within a stated tolerance; a
//! probability bound is checked by a statistical test at a stated α (binomial for counts). A
//! sup over all `θ` is
//! approximated by a finite family, which gives a lower bound of the sup — valid for checking
//! an upper bound.

use fedmix::prec::{max_nan, min_nan};
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// Run profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Reduced grids and repetitions (default; all checks in a few minutes on 2 cores).
    Quick,
    /// The full grids.
    Full,
}

/// How a check is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// Profile.
    pub profile: Profile,
    /// Master seed.
    pub seed: u64,
    /// Deliberately break the check (each module documents how: a wrong bound exponent or a
    /// perturbed algorithm). Used once per check in a test to show that the check can fail.
    pub sabotage: bool,
}

impl CheckConfig {
    /// Quick profile, not sabotaged.
    pub fn quick(seed: u64) -> Self {
        Self {
            profile: Profile::Quick,
            seed,
            sabotage: false,
        }
    }
    /// Full profile, not sabotaged.
    pub fn full(seed: u64) -> Self {
        Self {
            profile: Profile::Full,
            ..Self::quick(seed)
        }
    }
    /// The same configuration, sabotaged.
    pub fn sabotaged(self) -> Self {
        Self {
            sabotage: true,
            ..self
        }
    }
    /// `quick` in the quick profile, `full` otherwise.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        match self.profile {
            Profile::Quick => quick,
            Profile::Full => full,
        }
    }
}

/// Reads a number that may have been written as `null`: JSON has no NaN or ±∞, and
/// `serde_json` writes every non-finite `f64` as `null`, so a record of a failed statistic
/// reads back as NaN (an infinity, too, reads back as NaN — a failed value either way).
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A fitted log–log slope with the exponent it is compared with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SlopeFit {
    /// Name of the scaling parameter (x axis).
    pub parameter: String,
    /// Fitted slope of `log statistic` on `log parameter`.
    #[serde(deserialize_with = "nan_if_null")]
    pub slope: f64,
    /// Predicted exponent.
    #[serde(deserialize_with = "nan_if_null")]
    pub predicted: f64,
    /// Allowed distance of the slope from the prediction, on the side(s) [`Side`] says.
    #[serde(deserialize_with = "nan_if_null")]
    pub tolerance: f64,
    /// Which deviations fail.
    pub side: Side,
    /// The points the slope was fitted on.
    pub design: Design,
}

/// The x values behind a fitted slope: how many points, over what range.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Design {
    /// Number of (x, y) points in the fit.
    pub points: usize,
    /// Smallest x.
    #[serde(deserialize_with = "nan_if_null")]
    pub x_min: f64,
    /// Largest x.
    #[serde(deserialize_with = "nan_if_null")]
    pub x_max: f64,
    /// Whether the fit is on log x (a power law) rather than x (an exponential rate).
    pub log_x: bool,
}

impl Design {
    /// The design of a fit on the points `xs`.
    pub fn of(xs: &[f64], log_x: bool) -> Self {
        Self {
            points: xs.len(),
            x_min: xs.iter().copied().fold(f64::INFINITY, min_nan),
            x_max: xs.iter().copied().fold(f64::NEG_INFINITY, max_nan),
            log_x,
        }
    }
    /// Decades spanned by x (`log₁₀(x_max/x_min)`), for a fit on log x.
    pub fn decades(&self) -> Option<f64> {
        (self.log_x && self.x_min > 0.0).then(|| (self.x_max / self.x_min).log10())
    }
}

/// A measured constant compared two-sidedly with its exact value for the instance: passes when
/// `measured / exact` lies in `[lo, hi]` (a NaN ratio fails). The interval's source is stated in
/// `interval`; `alpha` is its false-failure probability where it is statistical (`None`: a
/// deterministic interval derived from the neglected terms, failing a correct implementation
/// only through rounding beyond its stated slack).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConstantTest {
    /// What is measured (the tested quantity).
    pub quantity: String,
    /// The paper bound this exact value sits beside (paper, lemma / theorem, equation).
    pub beside: String,
    /// The library's measured value.
    #[serde(deserialize_with = "nan_if_null")]
    pub measured: f64,
    /// The exact value for the instance.
    #[serde(deserialize_with = "nan_if_null")]
    pub exact: f64,
    /// Smallest accepted `measured / exact`.
    #[serde(deserialize_with = "nan_if_null")]
    pub lo: f64,
    /// Largest accepted `measured / exact`.
    #[serde(deserialize_with = "nan_if_null")]
    pub hi: f64,
    /// False-failure probability of the interval (`None`: deterministic).
    pub alpha: Option<f64>,
    /// Where the exact value and the interval come from.
    pub interval: String,
}

impl ConstantTest {
    /// `measured / exact`.
    pub fn ratio(&self) -> f64 {
        self.measured / self.exact
    }
    /// Whether the ratio lies in `[lo, hi]` (NaN fails).
    pub fn ok(&self) -> bool {
        let r = self.ratio();
        self.lo <= r && r <= self.hi
    }
}

/// Which side of the prediction a slope test guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// `|slope − predicted| ≤ tolerance`: the exponent itself is claimed.
    Both,
    /// `slope ≤ predicted + tolerance`: the quantity grows at most like the predicted power
    /// (an upper bound).
    AtMost,
    /// `slope ≥ predicted − tolerance`: the quantity grows at least like the predicted power
    /// (a lower bound).
    AtLeast,
}

impl SlopeFit {
    /// Whether the fitted slope passes its test.
    pub fn ok(&self) -> bool {
        let dev = self.slope - self.predicted;
        match self.side {
            Side::Both => dev.abs() <= self.tolerance,
            Side::AtMost => dev <= self.tolerance,
            Side::AtLeast => -dev <= self.tolerance,
        }
    }

    /// The prediction as printed: `p ± t`, `≤ p + t` or `≥ p − t`.
    pub fn prediction(&self) -> String {
        let p = self.predicted;
        let t = if self.tolerance != 0.0 && self.tolerance.abs() < 1e-3 {
            format!("{:.1e}", self.tolerance)
        } else {
            format!("{:.4}", self.tolerance)
        };
        match self.side {
            Side::Both => format!("{p:.4} ± {t}"),
            Side::AtMost => format!("≤ {p:.4} + {t}"),
            Side::AtLeast => format!("≥ {p:.4} − {t}"),
        }
    }
}

/// Suite-level false-failure probability: the chance that a correct implementation fails at
/// least one check at a given seed, for the tests whose α is stated (Bonferroni over checks).
pub const SUITE_ALPHA: f64 = 0.01;

/// The number of checks among which [`SUITE_ALPHA`] is divided: a design parameter of every
/// stated α (the Student-t references of the checks' tests are computed for it by
/// `tests/data/t_references.py`), declared here so that this layer need not read the registry
/// above it; `the_suite_size_is_the_registrys` (lib.rs) fails when the two differ.
pub const SUITE_SIZE: usize = 24;

/// The false-failure probability each check may spend: `SUITE_ALPHA / SUITE_SIZE` (Bonferroni).
pub fn check_alpha() -> f64 {
    SUITE_ALPHA / SUITE_SIZE as f64
}

/// Tolerance of a slope test derived from the slope's sampling variability: the half-width of
/// a normal prediction interval for one new seed's slope, `t_{n−1, 1−a} · sd · √(1 + 1/n)`,
/// where `sd` is the sample SD of the slope over `n` master seeds *disjoint from those judged*
/// and `a = α/2` for a two-sided test, `α` for a one-sided one. A correct implementation then
/// fails the test with probability ≤ α at a new seed (if the slope is normal and the held-out
/// mean lies on the prediction, or on its safe side for a one-sided test).
pub fn prediction_tolerance(sd: f64, n: usize, alpha: f64, two_sided: bool) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let a = if two_sided { alpha / 2.0 } else { alpha };
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2");
    t.inverse_cdf(1.0 - a) * sd * (1.0 + 1.0 / n as f64).sqrt()
}

/// Tolerance of a one-sided test of a mean from its own sample: `t_{n−1, 1−α} · sd/√n`, where
/// `sd` is the sample SD of `n` independent units of the run being judged (e.g. the slopes of
/// `n` independently drawn instances). The mean then passes `mean ≤ predicted + tol` (or `≥
/// predicted − tol`) with probability `≥ 1 − α` when the units are normal and their expectation
/// lies on the prediction or on its safe side: a one-sample t-test, needing no held-out seeds.
pub fn mean_tolerance(sd: f64, n: usize, alpha: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if n < 2 {
        return f64::NAN;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2");
    t.inverse_cdf(1.0 - alpha) * sd / (n as f64).sqrt()
}

/// The standard normal quantile `z_{1−α}` (one-sided critical value at level α).
pub fn normal_upper_quantile(alpha: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::new(0.0, 1.0)
        .expect("unit normal")
        .inverse_cdf(1.0 - alpha)
}

/// A series of the check's figure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points `(x, y)`.
    pub points: Vec<(f64, f64)>,
    /// Draw as a line (bound shapes) rather than markers (observations).
    pub line: bool,
}

/// The data of a check's figure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figure {
    /// Title.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Series.
    pub series: Vec<Series>,
}

/// A check: its name and its function.
pub type Check = (&'static str, fn(&CheckConfig) -> CheckRecord);

/// The outcome of one check.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckRecord {
    /// Check name (module name).
    pub name: String,
    /// What is claimed.
    pub claim: String,
    /// Source: paper, lemma/theorem, equation.
    pub source: String,
    /// The decisive statistic (worst case over the grid, normalised as `details` say).
    pub statistic: f64,
    /// The bound it is compared with (`statistic ≤ bound` passes unless `details` say otherwise).
    pub bound: f64,
    /// The universal constant used, when one is calibrated.
    pub constant: Option<f64>,
    /// Fitted slopes.
    pub slopes: Vec<SlopeFit>,
    /// Measured constants compared with their exact values (empty for most checks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<ConstantTest>,
    /// Whether the check passed: every test it ran held and every guard of its design held.
    pub passed: bool,
    /// Why the check could not test, when a guard of its design (a non-vacuity or power
    /// requirement: the region a bound speaks about was reached, a bound bites, a test has
    /// power) failed while every test it ran held: the verdict is then
    /// [`Verdict::Inconclusive`], counted apart from a fail. `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// Detail lines (grid, seeds, α, what a row means).
    pub details: Vec<String>,
    /// Figure data.
    pub figure: Option<Figure>,
}

/// What a check concluded at one seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Every test and every guard held.
    Pass,
    /// A test failed.
    Fail,
    /// Every test held but a guard failed: the check could not test (see
    /// [`CheckRecord::inconclusive`]).
    Inconclusive,
}

impl Verdict {
    /// The verdict of a record that `passed` or not, and was `inconclusive` (a guard failed
    /// with every test holding) or not.
    pub fn of(passed: bool, inconclusive: bool) -> Self {
        if passed {
            Verdict::Pass
        } else if inconclusive {
            Verdict::Inconclusive
        } else {
            Verdict::Fail
        }
    }

    /// `PASS`, `FAIL` or `INCONCLUSIVE`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Inconclusive => "INCONCLUSIVE",
        }
    }

    /// The verdict in a report's table: `pass`, `**FAIL**` or `*inconclusive*`.
    pub fn markdown(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "**FAIL**",
            Verdict::Inconclusive => "*inconclusive*",
        }
    }
}

/// A requirement of a check's design that is not itself a test of the claim: a non-vacuity
/// guard (the regime the bound speaks about was reached) or a power requirement. When one
/// fails the check could not test, so it reports [`Verdict::Inconclusive`] rather than a pass
/// or a fail.
#[derive(Clone, Debug)]
pub struct Guard {
    /// What is required, as printed when it fails.
    pub requirement: String,
    /// Whether it holds.
    pub holds: bool,
}

impl Guard {
    /// A guard `requirement` that `holds` or not.
    pub fn new(requirement: impl Into<String>, holds: bool) -> Self {
        Self {
            requirement: requirement.into(),
            holds,
        }
    }
}

/// `(passed, inconclusive)` of a [`CheckRecord`] from whether every test held and the design's
/// guards: passed when all hold; inconclusive (with the failed guards' requirements) when the
/// tests held but a guard failed; a fail when a test failed, whatever the guards — a failed
/// test is evidence against the claim even where a guard says the design was weak.
pub fn outcome(tests_hold: bool, guards: &[Guard]) -> (bool, Option<String>) {
    let failed: Vec<&str> = guards
        .iter()
        .filter(|g| !g.holds)
        .map(|g| g.requirement.as_str())
        .collect();
    let passed = tests_hold && failed.is_empty();
    let inconclusive = (tests_hold && !failed.is_empty()).then(|| failed.join("; "));
    (passed, inconclusive)
}

impl CheckRecord {
    /// The verdict: [`Verdict::Pass`] when `passed`, [`Verdict::Inconclusive`] when a guard
    /// failed with every test holding, [`Verdict::Fail`] otherwise.
    pub fn verdict(&self) -> Verdict {
        Verdict::of(self.passed, self.inconclusive.is_some())
    }

    /// Print the statistic next to its bound (before any assertion is made).
    pub fn print(&self) {
        println!("{}", self.summary_line());
    }

    /// The printed form: verdict, statistic next to bound, constant, slopes and details.
    pub fn summary_line(&self) -> String {
        let mut s = format!(
            "[{}] {}: statistic {:.6e} vs bound {:.6e}{} — {} [{}]",
            self.verdict().label(),
            self.name,
            self.statistic,
            self.bound,
            self.constant
                .map_or(String::new(), |c| format!(" (C = {c:.4e})")),
            self.claim,
            self.source
        );
        for f in &self.slopes {
            s.push_str(&format!(
                "\n      slope in {}: {:.4} (predicted {}) {}",
                f.parameter,
                f.slope,
                f.prediction(),
                if f.ok() { "ok" } else { "MISMATCH" }
            ));
        }
        for c in &self.constants {
            s.push_str(&format!(
                "\n      constant {}: measured {:.6e}, exact {:.6e}, ratio {:.6} in [{:.6}, {:.6}] {}",
                c.quantity,
                c.measured,
                c.exact,
                c.ratio(),
                c.lo,
                c.hi,
                if c.ok() { "ok" } else { "MISMATCH" }
            ));
        }
        if let Some(why) = self.inconclusive.as_ref().filter(|_| !self.passed) {
            s.push_str(&format!("\n      inconclusive: {why}"));
        }
        for d in &self.details {
            s.push_str(&format!("\n      {d}"));
        }
        s
    }
}

/// Least-squares slope and intercept of `log y` on `log x`.
pub fn loglog_fit(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let lx: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let ly: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    linear_fit(&lx, &ly)
}

/// Least-squares slope and intercept of `y` on `x`.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}

/// Calibrate-then-validate for `statistic ≤ C · shape` with an unknown universal constant C
/// (the decision in the module doc): `C` is the largest ratio `statistic/shape` on the
/// calibration points times the stated `safety` factor; the check then requires every
/// validation ratio to be `≤ C`. Returns `(C, worst validation ratio)`.
///
/// A degenerate calibration — no calibration point, or a largest ratio that is not a positive
/// finite number (every statistic 0, a shape of 0) — gives `C = NaN`, which no validation
/// ratio satisfies (`worst ≤ NaN` is false): the check fails instead of passing vacuously
/// with `0 ≤ 0`.
pub fn calibrate_then_validate(
    calibration: &[(f64, f64)],
    validation: &[(f64, f64)],
    safety: f64,
) -> (f64, f64) {
    let ratio = |(stat, shape): &(f64, f64)| stat / shape;
    let largest = calibration.iter().map(ratio).fold(0.0, max_nan);
    let c = if largest > 0.0 && largest.is_finite() {
        largest * safety
    } else {
        f64::NAN
    };
    let worst = validation.iter().map(ratio).fold(0.0, max_nan);
    (c, worst)
}

/// The largest count `x` such that `P[Bin(n, p0) ≥ x] > α` — observing more than this many
/// successes rejects `p ≤ p0` at level α (one-sided binomial test).
pub fn binomial_upper_critical(n: u64, p0: f64, alpha: f64) -> u64 {
    let p0 = p0.clamp(0.0, 1.0);
    let Ok(b) = Binomial::new(p0, n) else {
        return n;
    };
    // P[X ≥ x] = 1 − cdf(x − 1); find the smallest x with P[X ≥ x] ≤ α, return x − 1.
    (0..=n)
        .find(|&x| x > 0 && 1.0 - b.cdf(x - 1) <= alpha)
        .map_or(n, |x| x - 1)
}

/// One-sided Clopper–Pearson upper confidence bound at level α for a binomial proportion:
/// the `p_U` with `P[Bin(n, p_U) ≤ x] = α` (`1` when `x = n`), so that `p ≤ p_U` holds with
/// probability ≥ 1 − α. Solved by bisection on the binomial CDF (monotone decreasing in p).
pub fn clopper_pearson_upper(x: u64, n: u64, alpha: f64) -> f64 {
    if x >= n {
        return 1.0;
    }
    let cdf = |p: f64| Binomial::new(p, n).map_or(0.0, |b| b.cdf(x));
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi.max(1e-300) {
            break;
        }
    }
    hi
}

/// Geometric grid of `n` points from `lo` to `hi` inclusive.
pub fn geomspace(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![lo];
    }
    (0..n)
        .map(|i| lo * (hi / lo).powf(i as f64 / (n - 1) as f64))
        .collect()
}

/// Empirical `q`-quantile (nearest rank) of `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failed_guard_is_inconclusive_only_when_every_test_held() {
        use super::{outcome, Guard};
        let weak = [
            Guard::new("region reached", false),
            Guard::new("bites", true),
        ];
        let strong = [Guard::new("region reached", true)];
        assert_eq!(outcome(true, &strong), (true, None));
        assert_eq!(outcome(true, &weak), (false, Some("region reached".into())));
        assert_eq!(outcome(false, &weak), (false, None));
        assert_eq!(outcome(false, &strong), (false, None));
        assert_eq!(outcome(true, &[]), (true, None));
    }

    use super::*;

    #[test]
    fn loglog_slope_of_power_law() {
        let xs = geomspace(1.0, 1000.0, 7);
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 * x.powf(-0.5)).collect();
        let (s, b) = loglog_fit(&xs, &ys);
        assert!((s + 0.5).abs() < 1e-12 && (b - 3f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn prediction_tolerance_reference_values() {
        // t_{19, 0.975} = 2.093024 and t_{9, 0.95} = 1.833113 (scipy.stats.t.ppf; standard
        // tables): two-sided α = 0.05 with n = 20, one-sided α = 0.05 with n = 10.
        let a = prediction_tolerance(1.0, 20, 0.05, true);
        assert!((a - 2.093_024 * 1.05f64.sqrt()).abs() < 1e-5, "{a}");
        let b = prediction_tolerance(2.0, 10, 0.05, false);
        assert!((b - 2.0 * 1.833_113 * 1.1f64.sqrt()).abs() < 1e-5, "{b}");
    }

    #[test]
    fn mean_tolerance_and_normal_quantile_reference_values() {
        // t_{9, 0.95} = 1.833113 (scipy.stats.t.ppf; standard tables): one-sided α = 0.05 with
        // n = 10 units of SD 2 gives 1.833113 × 2/√10; z_{0.975} = 1.959964 (standard tables).
        let a = mean_tolerance(2.0, 10, 0.05);
        assert!((a - 1.833_113 * 2.0 / 10f64.sqrt()).abs() < 1e-5, "{a}");
        assert!(mean_tolerance(1.0, 1, 0.05).is_nan());
        let z = normal_upper_quantile(0.025);
        assert!((z - 1.959_964).abs() < 1e-6, "{z}");
    }

    #[test]
    fn slope_fit_sides() {
        let f = |slope, side| SlopeFit {
            parameter: "x".into(),
            slope,
            predicted: 0.5,
            tolerance: 0.1,
            side,
            design: Design::of(&[1.0, 10.0], true),
        };
        assert!(f(0.2, Side::AtMost).ok() && f(0.6, Side::AtMost).ok());
        assert!(!f(0.61, Side::AtMost).ok());
        assert!(f(0.8, Side::AtLeast).ok() && f(0.4, Side::AtLeast).ok());
        assert!(!f(0.39, Side::AtLeast).ok());
        assert!(f(0.4, Side::Both).ok() && f(0.6, Side::Both).ok());
        assert!(!f(0.39, Side::Both).ok() && !f(0.61, Side::Both).ok());
    }

    #[test]
    fn calibrate_then_validate_by_hand_and_never_vacuous() {
        // Ratios 0.5 and 2 calibrate C = 2 × 3 = 6; validation ratios 1 and 4: worst 4.
        let (c, worst) =
            calibrate_then_validate(&[(1.0, 2.0), (4.0, 2.0)], &[(1.0, 1.0), (8.0, 2.0)], 3.0);
        assert_eq!(
            (c.to_bits(), worst.to_bits()),
            (6f64.to_bits(), 4f64.to_bits())
        );
        // Every calibration statistic 0, a zero shape, or no calibration point: C is NaN and
        // the check's `worst ≤ C` fails, even for a worst of 0.
        for cal in [&[(0.0, 1.0), (0.0, 2.0)][..], &[(1.0, 0.0)][..], &[][..]] {
            let (c, worst) = calibrate_then_validate(cal, &[(0.0, 1.0)], 2.0);
            assert!(c.is_nan() && worst.to_bits() == 0f64.to_bits());
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let fails = !(worst <= c);
            assert!(fails);
        }
        // A NaN ratio (a NaN statistic, 0/0) is never dropped: in validation it makes the worst
        // ratio NaN, in calibration the constant NaN — the check fails either way.
        let (c, worst) = calibrate_then_validate(
            &[(1.0, 1.0)],
            &[(1.0, 2.0), (f64::NAN, 1.0), (1.0, 4.0)],
            2.0,
        );
        assert!(c.to_bits() == 2f64.to_bits() && worst.is_nan());
        let (c, _) = calibrate_then_validate(&[(1.0, 1.0), (0.0, 0.0)], &[(0.0, 1.0)], 2.0);
        assert!(c.is_nan());
    }

    #[test]
    fn binomial_critical_value() {
        // Bin(100, 0.05): P[X ≥ 11] ≈ 0.0115, P[X ≥ 10] ≈ 0.0282 (scipy.stats.binom.sf(9, 100, 0.05)),
        // so at α = 0.025 the critical count is 10 (reject above 10).
        assert_eq!(binomial_upper_critical(100, 0.05, 0.025), 10);
    }

    #[test]
    fn clopper_pearson_closed_forms() {
        // x = 0: (1 − p)^n = α  ⇒  p_U = 1 − α^{1/n}; x = n − 1: 1 − p^n = α  ⇒  p_U = (1 − α)^{1/n}
        // (both exact from the binomial CDF); x = n: p_U = 1.
        for (n, alpha) in [(10u64, 0.05), (1000, 0.01), (200_000, 0.05)] {
            let a = clopper_pearson_upper(0, n, alpha);
            assert!(
                (a - (1.0 - alpha.powf(1.0 / n as f64))).abs() < 1e-10,
                "{n}: {a}"
            );
            let b = clopper_pearson_upper(n - 1, n, alpha);
            assert!(
                (b - (1.0 - alpha).powf(1.0 / n as f64)).abs() < 1e-10,
                "{n}: {b}"
            );
        }
        assert!((clopper_pearson_upper(5, 5, 0.05) - 1.0).abs() < 1e-15);
        // Interior: the exact two-sided 95% Clopper–Pearson interval for 5 of 20 is
        // (0.0866, 0.4910) (standard tables); its upper end is the one-sided α = 0.025 bound.
        // Reproduced with exact binomial sums in Python (math.comb, bisection): 0.4910458717.
        let p = clopper_pearson_upper(5, 20, 0.025);
        assert!((p - 0.491_045_871_7).abs() < 1e-9, "{p}");
        let cdf = Binomial::new(p, 20).unwrap().cdf(5);
        assert!((cdf - 0.025).abs() < 1e-9, "{cdf}");
    }
}
