//! The laws of the library's generator (`fedmix::synthetic`, the sampler of every check and
//! experiment), each tested by a goodness-of-fit test with a stated α, in the manner of
//! rand_distr's `distr_test`: the data model of SXY22 §2 / App. C (`x ~ N(0, Σ_{z_i})`,
//! `y = ⟨x, θ*_{z_i}⟩ + σ ξ`, `z_i ~ p`), IFCA §6.1's θ* and the settings' size laws, as
//! documented in `fedmix::synthetic`.
//!
//! Test: each law is compared with the empirical distribution of its draws by the
//! Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant (Massart 1990, Ann. Probab.
//! 18(3), Theorem 1): for `n` i.i.d. draws of any law `F`, `P[sup_x |F_n(x) − F(x)| > ε] ≤
//! 2 exp(−2nε²)` — so the Kolmogorov–Smirnov distance `D_n` exceeds
//! `ε(n, a) = √(ln(2/a)/(2n))` with probability at most `a`, for continuous and discrete `F`
//! alike (for a discrete `F` the bound is conservative). Each of the [`TESTS`] KS tests (one per
//! law, two for laws 5 and 9) spends `a = α/TESTS` of the check's share `α` ([`check_alpha`])
//! of the suite's false-failure probability (Bonferroni), so a correct generator fails the
//! check with probability ≤ α.
//! The statistic is the largest `D_n / ε(n, a)` over the tests (bound 1); the exact identities
//! the generator also promises (sizes, labels and `‖θ*_j‖ = R` of the held-out and rescaled
//! laws, the polynomial map's powers) enter as 0 (held) or ∞ (broken).
//!
//! Laws (one master seed, one data set per law family):
//! 1. noise: `(y − ⟨x, θ*_z⟩)/σ ~ N(0, 1)` over every training sample;
//! 2. features: `x_r / √(Σ_z)_rr ~ N(0, 1)` over every coordinate (`covariance = diagonal`,
//!    `Σ_j` as the generator reports it);
//! 3. covariances: `diag Σ_j ~ U[cov_min, cov_max]` (d = 1000, k = 3);
//! 4. θ* (gaussian): `θ*_jr √d / r ~ N(0, 1)` (same draw);
//! 5. θ* (bernoulli): `θ*_jr / r ~ Bernoulli(½)`; (bernoulli-rescaled): the same support
//!    pattern and `‖θ*_j‖ = R` exactly;
//! 6. labels: `z_i ~ p = (0.2, 0.3, 0.5)` (the categorical CDF);
//! 7. sizes (lognormal): `n_i = clamp(round(n̄ e^{sZ − s²/2}), n_min, n_max)`, whose CDF is
//!    `P[n_i ≤ v] = Φ((ln((v + ½)/n̄) + s²/2)/s)` on `n_min ≤ v < n_max`;
//! 8. sizes (zipf): `n_i = max(n_min, Zipf(n_max, s))`, `P[Zipf = v] ∝ v^{−s}` on `1..=n_max`;
//! 9. held-out split: `test_samples` per client, the training labels, residuals `/σ ~ N(0, 1)`,
//!    and held-out features independent of the training ones — `(x̃_r − x_r)/√(2(Σ_z)_rr) ~
//!    N(0, 1)` for the first held-out and training sample of each client;
//! 10. feature map (polynomial): `u = φ(x)_1 ~ U(−1, 1)` and `φ(x)_j = u^j` exactly.
//!
//! Sabotage: the noise law is tested with `σ²` in place of `σ` (the noise scale read as a
//! variance).

use crate::framework::{check_alpha, CheckConfig, CheckRecord};
use fedmix::federation::Federation;
use fedmix::prec::max_nan;
use fedmix::synthetic::{self, generate_named, Model, SettingParams, SyntheticData, ThetaDist};
use statrs::distribution::{ContinuousCDF, Normal};

/// Number of laws tested.
pub const LAWS: usize = 10;
/// Number of KS tests sharing the check's α (laws 5 and 9 take two each; a law's distance is
/// the larger of its tests', each compared with its own `ε`).
pub const TESTS: usize = 12;

/// `ε(n, a) = √(ln(2/a)/(2n))`: `P[D_n > ε] ≤ a` (DKW with Massart's constant).
pub fn dkw_epsilon(n: usize, a: f64) -> f64 {
    ((2.0 / a).ln() / (2.0 * n as f64)).sqrt()
}

/// Kolmogorov–Smirnov distance of the sample `v` from a continuous CDF `cdf` (sorted copy;
/// a NaN sample gives NaN).
pub fn ks_continuous(v: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    s.iter().enumerate().fold(0.0, |worst, (i, &x)| {
        let f = cdf(x);
        max_nan(worst, max_nan((i + 1) as f64 / n - f, f - i as f64 / n))
    })
}

/// Kolmogorov–Smirnov distance of integer draws `v` from the CDF `cdf(t) = P[X ≤ t]` of a law
/// on the integers `lo..=hi` (both empirical and true CDFs are step functions jumping at
/// integers, so the supremum is attained at one of them; a draw outside the support makes
/// the distance 1).
pub fn ks_discrete(v: &[usize], lo: usize, hi: usize, cdf: impl Fn(usize) -> f64) -> f64 {
    if v.iter().any(|&x| x < lo || x > hi) {
        return 1.0;
    }
    let mut counts = vec![0usize; hi - lo + 1];
    v.iter().for_each(|&x| counts[x - lo] += 1);
    let n = v.len() as f64;
    let mut below = 0usize;
    (lo..=hi).fold(0.0, |worst, t| {
        below += counts[t - lo];
        max_nan(worst, (below as f64 / n - cdf(t)).abs())
    })
}

/// One law's test: its name, `D_n`, `n`.
#[derive(Clone, Debug)]
pub struct LawTest {
    /// What is tested.
    pub law: String,
    /// KS distance (0 / ∞ for an exact identity that holds / fails).
    pub distance: f64,
    /// Number of draws.
    pub n: usize,
}

impl LawTest {
    /// `D_n / ε(n, α/TESTS)`: the test rejects above 1.
    pub fn ratio(&self) -> f64 {
        self.distance / dkw_epsilon(self.n, check_alpha() / TESTS as f64)
    }
}

fn law(law: &str, distance: f64, n: usize) -> LawTest {
    LawTest {
        law: law.into(),
        distance,
        n,
    }
}

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("a standard normal")
}

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    crate::checks::phase_dynamics::support::sets(pairs)
}

/// Residuals `(y − ⟨x, θ*_z⟩)/scale` of every sample of `fed`.
fn residuals(fed: &Federation, scale: f64) -> Vec<f64> {
    let ts = fed.theta_star().expect("synthetic");
    let labels = fed.labels().expect("synthetic");
    (0..fed.num_clients())
        .flat_map(|i| {
            let r = fed.y(i) - fed.x(i).tr_mul(&ts.column(labels[i]));
            r.iter().map(|e| e / scale).collect::<Vec<_>>()
        })
        .collect()
}

/// Features standardised by the generator's reported `Σ_{z_i}`.
fn standardised_features(data: &SyntheticData) -> Vec<f64> {
    let fed = &data.train;
    let var = data.variances.as_ref().expect("covariance = diagonal");
    let labels = fed.labels().expect("synthetic");
    (0..fed.num_clients())
        .flat_map(|i| {
            let x = fed.x(i);
            let col = var.column(labels[i]);
            x.column_iter()
                .flat_map(|s| {
                    s.iter()
                        .zip(col.iter())
                        .map(|(v, c)| v / c.sqrt())
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The mixture data set of laws 1, 2, 6, 7 and 9.
fn mixture_data(seed: u64) -> SyntheticData {
    generate_named(
        "sxy-unbalanced-both",
        seed,
        &sets(&[
            ("d", "6"),
            ("clients", "4000"),
            ("large_clients", "0"),
            ("samples", "12"),
            ("sizes", "lognormal"),
            ("size_spread", "0.5"),
            ("size_min", "2"),
            ("size_max", "60"),
            ("sigma", "0.3"),
            ("covariance", "diagonal"),
            ("cov_min", "0.5"),
            ("cov_max", "2"),
            ("test_samples", "2"),
        ]),
    )
    .expect("a valid setting")
}

/// Laws 1, 2, 6, 7 and 9 on one data set (law 1 with `σ²` for `σ` when `sabotage`).
fn mixture_laws(seed: u64, sabotage: bool) -> Vec<LawTest> {
    let data = mixture_data(seed);
    let p = &data.params;
    let phi = std_normal();
    let sigma = if sabotage { p.sigma * p.sigma } else { p.sigma };
    let noise = residuals(&data.train, sigma);
    let feats = standardised_features(&data);
    let labels = data.train.labels().expect("synthetic").to_vec();
    let probs = p.probabilities();
    let label_cdf = |t: usize| probs[..=t].iter().sum::<f64>();
    let sizes = data.train.sizes();
    let (nbar, s) = (p.samples as f64, p.size_spread);
    let size_cdf = |v: usize| {
        if v >= p.size_max {
            1.0
        } else {
            phi.cdf((((v as f64 + 0.5) / nbar).ln() + 0.5 * s * s) / s)
        }
    };
    vec![
        law(
            "noise (y − ⟨x, θ*_z⟩)/σ ~ N(0, 1)",
            ks_continuous(&noise, |x| phi.cdf(x)),
            noise.len(),
        ),
        law(
            "features x_r/√Σ_z,rr ~ N(0, 1)",
            ks_continuous(&feats, |x| phi.cdf(x)),
            feats.len(),
        ),
        law(
            "labels z_i ~ p = (0.2, 0.3, 0.5)",
            ks_discrete(&labels, 0, p.k - 1, label_cdf),
            labels.len(),
        ),
        law(
            "sizes lognormal: clamp(round(n̄e^{sZ−s²/2}))",
            ks_discrete(&sizes, p.size_min, p.size_max, size_cdf),
            sizes.len(),
        ),
        held_out_law(&data),
    ]
}

/// Law 9: the held-out federation's shape, labels and noise, and its features' independence
/// of the training features.
fn held_out_law(data: &SyntheticData) -> LawTest {
    let (train, test) = (&data.train, data.test.as_ref().expect("test_samples > 0"));
    let p = &data.params;
    let shape_ok = test.sizes() == vec![p.test_samples; p.clients]
        && test.labels() == train.labels()
        && test.theta_star() == train.theta_star();
    let phi = std_normal();
    let var = data.variances.as_ref().expect("covariance = diagonal");
    let labels = train.labels().expect("synthetic");
    let diffs: Vec<f64> = (0..train.num_clients())
        .flat_map(|i| {
            let (a, b) = (train.x(i), test.x(i));
            let c = var.column(labels[i]);
            (0..train.d())
                .map(|r| (b[(r, 0)] - a[(r, 0)]) / (2.0 * c[r]).sqrt())
                .collect::<Vec<_>>()
        })
        .collect();
    let noise = residuals(test, p.sigma);
    // Both tests on `n = M` draws (the first held-out sample's noise per client, the first
    // M feature differences), so that one `ε(n, a)` applies to both distances.
    let first: Vec<f64> = (0..train.num_clients())
        .map(|i| noise[i * p.test_samples])
        .collect();
    let n = first.len();
    let d = max_nan(
        ks_continuous(&diffs[..n], |x| phi.cdf(x)),
        ks_continuous(&first, |x| phi.cdf(x)),
    );
    law(
        "held-out split: sizes, labels, noise, independent features",
        if shape_ok { d } else { f64::INFINITY },
        first.len(),
    )
}

/// A setting of `k = 3` clusters in `R^1000` with the given θ* law and `r`.
fn theta_setting(theta: ThetaDist, r: f64) -> SettingParams {
    let mut s = crate::checks::phase_dynamics::support::setting(1000, 3, r, 0.1, Some((0.5, 2.0)));
    s.theta = theta;
    s
}

/// Laws 3, 4, 5: `Σ_j` and the three θ* laws.
fn model_laws(seed: u64) -> Vec<LawTest> {
    let phi = std_normal();
    let r = 2.0;
    let g = Model::draw(&theta_setting(ThetaDist::Gaussian, r), seed).expect("valid");
    let (lo, hi) = (0.5, 2.0);
    let var: Vec<f64> = g.variances().expect("diagonal").iter().copied().collect();
    let theta: Vec<f64> = g
        .theta_star()
        .iter()
        .map(|v| v * (1000f64).sqrt() / r)
        .collect();
    let b = Model::draw(&theta_setting(ThetaDist::Bernoulli, r), seed).expect("valid");
    let ones: Vec<usize> = b
        .theta_star()
        .iter()
        .map(|v| usize::from(*v == r))
        .collect();
    let on_support = b.theta_star().iter().all(|v| *v == r || *v == 0.0);
    let br = Model::draw(&theta_setting(ThetaDist::BernoulliRescaled, r), seed).expect("valid");
    let ts = br.theta_star();
    let rescaled_ok = (0..ts.ncols()).all(|j| {
        let col = ts.column(j);
        let top = col.amax();
        (col.norm() / r - 1.0).abs() <= 1e-12 && col.iter().all(|v| *v == 0.0 || *v == top)
    });
    let rescaled: Vec<usize> = ts.iter().map(|v| usize::from(*v > 0.0)).collect();
    let half = |t: usize| if t == 0 { 0.5 } else { 1.0 };
    let bern = max_nan(
        if on_support {
            ks_discrete(&ones, 0, 1, half)
        } else {
            1.0
        },
        if rescaled_ok {
            ks_discrete(&rescaled, 0, 1, half)
        } else {
            f64::INFINITY
        },
    );
    vec![
        law(
            "Σ_j diagonal ~ U[0.5, 2]",
            ks_continuous(&var, |x| ((x - lo) / (hi - lo)).clamp(0.0, 1.0)),
            var.len(),
        ),
        law(
            "θ* gaussian: θ*_jr √d/r ~ N(0, 1)",
            ks_continuous(&theta, |x| phi.cdf(x)),
            theta.len(),
        ),
        law(
            "θ* bernoulli: θ*_jr/r ~ Ber(½); rescaled: ‖θ*_j‖ = R",
            bern,
            ones.len(),
        ),
    ]
}

/// Law 8: the Zipf size law, `n_i = max(n_min, Zipf(n_max, s))`.
fn zipf_law(seed: u64) -> LawTest {
    let mut p = SettingParams::named("sxy-balanced").expect("a named setting");
    (p.clients, p.size_min, p.size_max, p.size_spread) = (20_000, 2, 50, 1.5);
    p.sizes = synthetic::SizeDist::Zipf;
    let sizes = synthetic::draw_sizes(&p, seed);
    let weights: Vec<f64> = (1..=p.size_max)
        .map(|v| (v as f64).powf(-p.size_spread))
        .collect();
    let total: f64 = weights.iter().sum();
    let cdf = |t: usize| weights[..t].iter().sum::<f64>() / total;
    law(
        "sizes zipf: max(n_min, Zipf(n_max, s))",
        ks_discrete(&sizes, p.size_min, p.size_max, cdf),
        sizes.len(),
    )
}

/// Law 10: the polynomial feature map.
fn polynomial_law(seed: u64) -> LawTest {
    let data = generate_named(
        "sxy-balanced",
        seed,
        &sets(&[
            ("d", "5"),
            ("clients", "1000"),
            ("samples", "10"),
            ("feature_map", "polynomial"),
        ]),
    )
    .expect("a valid setting");
    let x = data.train.features();
    let u: Vec<f64> = x.row(1).iter().copied().collect();
    let powers_ok = x.column_iter().all(|c| {
        c[0].to_bits() == 1f64.to_bits()
            && (1..c.len()).all(|j| c[j].to_bits() == (c[j - 1] * c[1]).to_bits())
    });
    let d = ks_continuous(&u, |v| ((v + 1.0) / 2.0).clamp(0.0, 1.0));
    law(
        "feature map polynomial: u ~ U(−1, 1), φ_j = u^j",
        if powers_ok { d } else { f64::INFINITY },
        u.len(),
    )
}

/// Every law's test under `seed` (law 1 with `σ²` for `σ` when `sabotage`).
pub fn all_laws(seed: u64, sabotage: bool) -> Vec<LawTest> {
    let mut out = mixture_laws(seed, sabotage);
    out.extend(model_laws(seed));
    out.push(zipf_law(seed));
    out.push(polynomial_law(seed));
    out
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let seed = fedmix::seed_streams::child_seed(cfg.seed, 23_000);
    let tests = all_laws(seed, cfg.sabotage);
    assert_eq!(tests.len(), LAWS, "one test per law");
    let a = check_alpha() / TESTS as f64;
    let worst = tests.iter().map(LawTest::ratio).fold(0.0, max_nan);
    let mut details = vec![format!(
        "DKW–Massart KS tests ({TESTS}, for {LAWS} laws) at a = α/{TESTS} = {a:.3e} each (α = {:.3e}, the check's share of the suite's 1 %): reject when D_n > ε = √(ln(2/a)/(2n)); master seed child(seed, 23000)",
        check_alpha()
    )];
    details.extend(tests.iter().map(|t| {
        format!(
            "{}: D_n = {:.4e}, n = {}, ε = {:.4e}, D_n/ε = {:.3}",
            t.law,
            t.distance,
            t.n,
            dkw_epsilon(t.n, a),
            t.ratio()
        )
    }));
    CheckRecord {
        name: "generator_laws".into(),
        claim: "the generator draws noise σN(0,1), x ~ N(0, Σ_z), Σ_j, θ* (3 laws), labels ~ p, lognormal and zipf sizes, the held-out split and the polynomial map by their documented laws (DKW tests at α/12 each)".into(),
        source: "SXY22 §2 and App. C (data model), IFCA §6.1 (θ*); DKW inequality with Massart's constant (Massart 1990, Thm 1)".into(),
        statistic: worst,
        bound: 1.0,
        constant: None,
        slopes: Vec::new(),
        constants: Vec::new(),
        passed: worst <= 1.0,
        inconclusive: None,
        details,
        figure: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dkw_epsilon_by_hand() {
        // n = 50, a = 0.05: √(ln 40 / 100) = 0.192064… (ln 40 = 3.6888794541139363).
        let want = (3.688_879_454_113_936_3f64 / 100.0).sqrt();
        assert!((dkw_epsilon(50, 0.05) - want).abs() < 1e-15);
    }

    #[test]
    fn ks_distances_by_hand() {
        // Uniform CDF on [0, 1], sample {0.1, 0.4, 0.9}: max(1/3 − 0.1, 0.4 − 1/3, 2/3 − 0.4,
        // 1 − 0.9, 0.9 − 2/3) = 0.2666….
        let d = ks_continuous(&[0.9, 0.1, 0.4], |x| x.clamp(0.0, 1.0));
        assert!((d - (2.0 / 3.0 - 0.4)).abs() < 1e-15, "{d}");
        assert!(ks_continuous(&[0.2, f64::NAN], |x| x).is_nan());
        // Fair coin, draws {0, 0, 0, 1}: F_n(0) = 0.75 vs 0.5.
        assert!((ks_discrete(&[0, 0, 0, 1], 0, 1, |t| [0.5, 1.0][t]) - 0.25).abs() < 1e-15);
        assert_eq!(
            ks_discrete(&[0, 2], 0, 1, |t| [0.5, 1.0][t]).to_bits(),
            1f64.to_bits()
        );
    }

    /// Planted generator bugs, simulated on the generator's own draws: each moves its law's
    /// test far past ε (the catalogue plants them in the library itself).
    #[test]
    fn the_tests_reject_broken_laws() {
        let a = check_alpha() / TESTS as f64;
        let data = mixture_data(3);
        let phi = std_normal();
        // Noise scale read as a variance: residuals standardised by σ² = 0.09 have SD 3.3.
        let noise = residuals(&data.train, 0.09);
        assert!(ks_continuous(&noise, |x| phi.cdf(x)) > dkw_epsilon(noise.len(), a));
        // Labels uniform instead of p = (0.2, 0.3, 0.5).
        let uniform: Vec<usize> = (0..3000).map(|i| i % 3).collect();
        let p = [0.2, 0.5, 1.0];
        assert!(ks_discrete(&uniform, 0, 2, |t| p[t]) > dkw_epsilon(3000, a));
        // The laws themselves pass at this seed.
        assert!(all_laws(3, false).iter().all(|t| t.ratio() <= 1.0));
    }
}
