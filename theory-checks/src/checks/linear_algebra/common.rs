//! Shared pieces of the linear-algebra checks: a mixed-linear-regression model with known
//! per-cluster diagonal covariances (so that the Phase 1 moments have closed forms), the rate
//! shapes `ξ₁`, `ξ₂` of SXY22 Prop. 1–2, and small numerical and figure helpers.
//!
//! Every draw goes through the library's generator ([`fedmix::synthetic`], the sampler of every
//! experiment): `θ*_j ~ N(0, r² I/d)` and `Σ_j = diag(c_j)`, `c_j ~ U[α, β]^d`, by
//! [`synthetic::Model::draw`] (`theta = gaussian`, `covariance = diagonal`), labels i.i.d. from
//! `p` by [`synthetic::draw_labels`], and `x ~ N(0, Σ_{z})`, `y = ⟨x, θ*_z⟩ + σ N(0, 1)` by
//! [`synthetic::Model::federation`]. Lemma 3 / Lemma 6 / Prop. 1 need `Σ_j` for `E Y`: the
//! generator returns the `Σ_j` it drew.

use crate::framework::{Series, Side, SlopeFit};
use fedmix::algorithms::fedmd::subspace_matrix;
use fedmix::federation::Federation;
use fedmix::params::Pairing;
use fedmix::prec::{amax_nan, max_nan};
use fedmix::seed_streams::child_seed;
use fedmix::synthetic::{self, FeatureMap, LabelRule};
use nalgebra::{DMatrix, DVector};

/// A mixture of `k` linear regressions in `R^d` with diagonal feature covariances.
#[derive(Clone, Debug)]
pub struct Mixture {
    /// `θ*`, `d × k` (column `j` is `θ*_j`).
    pub theta_star: DMatrix<f64>,
    /// Cluster probabilities `p_j`.
    pub p: Vec<f64>,
    /// Diagonals of `Σ_j`, `d × k` (column `j` is `diag Σ_j`).
    pub cov: DMatrix<f64>,
    /// Noise level `σ`.
    pub sigma: f64,
}

impl Mixture {
    /// Draw `θ*_j ~ N(0, r² I/d)` (stream `ThetaStar`) and `diag Σ_j ~ U[α, β]^d` (stream
    /// `Covariance`) under `seed`, by the library's generator ([`synthetic::Model::draw`]).
    ///
    /// # Panics
    /// For parameters the generator rejects (`α ≤ 0`, `β < α`, σ or r negative or not finite).
    pub fn draw(d: usize, p: &[f64], r: f64, cov_range: (f64, f64), sigma: f64, seed: u64) -> Self {
        let law =
            crate::checks::phase_dynamics::support::setting(d, p.len(), r, sigma, Some(cov_range));
        let model = synthetic::Model::draw(&law, seed).expect("a valid mixture setting");
        Self {
            theta_star: model.theta_star().clone(),
            p: p.to_vec(),
            cov: model.variances().expect("covariance = diagonal").clone(),
            sigma,
        }
    }

    /// Dimension `d`.
    pub fn d(&self) -> usize {
        self.theta_star.nrows()
    }

    /// `Σ_j (θ*_j − θ)` (the mean residual moment of cluster `j`).
    pub fn mean_moment(&self, j: usize, theta: &DVector<f64>) -> DVector<f64> {
        (self.theta_star.column(j) - theta).component_mul(&self.cov.column(j))
    }

    /// `Σ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_j` — the cross moment of two samples of cluster `j`.
    pub fn cluster_cross_moment(&self, j: usize, theta: &DVector<f64>) -> DMatrix<f64> {
        let g = self.mean_moment(j, theta);
        &g * g.transpose()
    }

    /// `E Y = Σ_j p_j Σ_j(θ*_j − θ)(θ*_j − θ)ᵀΣ_j` (SXY22 App. D.4).
    pub fn expected_cross_moment(&self, theta: &DVector<f64>) -> DMatrix<f64> {
        let d = self.d();
        (0..self.p.len()).fold(DMatrix::zeros(d, d), |acc, j| {
            acc + self.cluster_cross_moment(j, theta) * self.p[j]
        })
    }

    /// `δ = max_j ‖θ*_j − θ‖`.
    pub fn delta(&self, theta: &DVector<f64>) -> f64 {
        (0..self.p.len())
            .map(|j| (self.theta_star.column(j) - theta).norm())
            .fold(0.0, max_nan)
    }

    /// A federation of clients with sizes `sizes`; client `i` belongs to `labels[i]` when
    /// given, otherwise labels are drawn i.i.d. from `p` ([`synthetic::draw_labels`]). Replicate
    /// `index` of `seed` is the library's federation ([`synthetic::Model::federation`]) under
    /// the seed `child_seed(seed, index)`.
    ///
    /// # Panics
    /// Only if the generated data were invalid (non-finite), which the model excludes.
    pub fn federation(
        &self,
        sizes: &[usize],
        labels: Option<Vec<usize>>,
        seed: u64,
        index: u64,
    ) -> Federation {
        let seed = child_seed(seed, index);
        let labels = labels.unwrap_or_else(|| {
            let mut law = crate::checks::phase_dynamics::support::setting(
                self.d(),
                self.p.len(),
                1.0,
                self.sigma,
                None,
            );
            (law.clients, law.p, law.labels) = (sizes.len(), self.p.clone(), LabelRule::Iid);
            synthetic::draw_labels(&law, seed)
        });
        synthetic::Model::new(
            self.theta_star.clone(),
            Some(self.cov.clone()),
            self.sigma,
            FeatureMap::Identity,
        )
        .and_then(|m| m.federation(&labels, sizes, seed))
        .expect("the mixture model generates finite, consistent data")
    }
}

/// Where `θ` sits.
#[derive(Clone, Copy, Debug)]
pub enum ThetaAt {
    /// `θ = 0`.
    Origin,
    /// `θ = 3 · (unit vector)`: far from every `θ*_j` (`δ ≈ 3`).
    Far,
    /// `θ = θ*_0 + 0.05 · (unit vector)`: next to one centre.
    Near,
}

impl ThetaAt {
    /// The point `θ` for `mix`.
    pub fn theta(self, mix: &Mixture) -> DVector<f64> {
        let d = mix.d();
        let unit = DVector::from_fn(d, |i, _| if i % 2 == 0 { 1.0 } else { -1.0 }).normalize();
        match self {
            Self::Origin => DVector::zeros(d),
            Self::Far => unit * 3.0,
            Self::Near => mix.theta_star.column(0) + unit * 0.05,
        }
    }
}

/// The rate shape `√(D log N / n) + (D/n) log³ N` of SXY22 Prop. 1 (`ξ₁`: `D = d`, `n = m`)
/// and Prop. 2 (`ξ₂`: `D = k`, `n = ℓ`).
pub fn xi(dim: usize, count: usize, n_total: usize) -> f64 {
    let (dim, count, ln) = (dim as f64, count as f64, (n_total as f64).ln());
    (dim * ln / count).sqrt() + dim / count * ln.powi(3)
}

/// The shape `(δ² + σ²) ξ(D, n, 2n)` of SXY22 Lemma 3 and Prop. 1 (`D = d`, `n = m` clients of
/// two samples, `δ` the distance of `θ` to the nearest centre) and Lemma 6 (`D = k`, `n = ℓ`
/// sample pairs, `δ = ‖θ*_j − θ‖`); `delta2` is `δ²`.
pub fn moment_shape(delta2: f64, sigma: f64, dim: usize, count: usize) -> f64 {
    (delta2 + sigma * sigma) * xi(dim, count, 2 * count)
}

/// Sizes of the clients of an unbiasedness test, cycled: small and unequal, so that a U-statistic
/// normalised by `n²` instead of `n(n − 1)` (expectation scaled by `(n − 1)/n`, between ½ and
/// ⅘ here) is far from its expectation.
pub const UNBIASED_SIZES: [usize; 4] = [2, 3, 4, 5];

/// Mean `|μ|²` and variance of the U-statistic `u_n = (1/(n(n−1))) Σ_{a≠b} y_aᵀy_b` of `n`
/// i.i.d. projected residual moments `y = Pᵀε(x, y, θ)` of cluster `j` (`P`: `d × k`, `I` for
/// no projection). With `μ = E y = PᵀΣ_j(θ*_j − θ)` and `S = E yyᵀ = Pᵀ E[εεᵀ] P`, where for
/// `x ~ N(0, Σ_j)` and independent noise Isserlis' theorem gives `E[εεᵀ] = (δᵀΣ_jδ + σ²)Σ_j +
/// 2Σ_jδδᵀΣ_j` (`δ = θ*_j − θ`), Hoeffding's decomposition of a U-statistic of order 2 gives
/// `Var u_n = (4(n − 2)ζ₁ + 2ζ₂)/(n(n − 1))` with `ζ₁ = Var(y_aᵀμ) = μᵀSμ − |μ|⁴` and
/// `ζ₂ = Var(y_aᵀy_b) = tr S² − |μ|⁴`.
pub fn pair_trace_moments(
    mix: &Mixture,
    j: usize,
    theta: &DVector<f64>,
    proj: &DMatrix<f64>,
    n: usize,
) -> (f64, f64) {
    let delta = mix.theta_star.column(j) - theta;
    let c = mix.cov.column(j);
    let g = mix.mean_moment(j, theta);
    let quad = delta.component_mul(&delta).dot(&c) + mix.sigma * mix.sigma;
    let second = DMatrix::from_diagonal(&(c * quad)) + &g * g.transpose() * 2.0;
    let mu = proj.tr_mul(&g);
    let s = proj.tr_mul(&(second * proj));
    let m = mu.norm_squared();
    let zeta1 = mu.dot(&(&s * &mu)) - m * m;
    let zeta2 = (&s * &s).trace() - m * m;
    let nf = n as f64;
    (
        m,
        (4.0 * (nf - 2.0) * zeta1 + 2.0 * zeta2) / (nf * (nf - 1.0)),
    )
}

/// An unbiasedness test of a statistic with exactly known mean and variance.
#[derive(Clone, Debug)]
pub struct Unbiasedness {
    /// Mean of the replicates divided by the expectation.
    pub ratio: f64,
    /// `z = (mean − expectation)/√(variance/R)`.
    pub z: f64,
    /// Chebyshev's critical value `1/√α`: `P[|z| ≥ 1/√α] ≤ α` for any distribution.
    pub critical: f64,
    /// Empirical SD of the replicates over the exact SD (a check of the variance formula, not
    /// part of the decision).
    pub sd_ratio: f64,
}

impl Unbiasedness {
    /// Two-sided Chebyshev test of `E v = expected` at level `alpha` from `R` independent
    /// replicates `v`, each of exactly known variance `variance`.
    pub fn test(v: &[f64], expected: f64, variance: f64, alpha: f64) -> Self {
        let r = v.len() as f64;
        let mean = v.iter().sum::<f64>() / r;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (r - 1.0)).sqrt();
        Self {
            ratio: mean / expected,
            z: (mean - expected) / (variance / r).sqrt(),
            critical: 1.0 / alpha.sqrt(),
            sd_ratio: sd / variance.sqrt(),
        }
    }

    /// Whether the test passes (`|z| ≤ 1/√α`).
    pub fn ok(&self) -> bool {
        self.z.abs() <= self.critical
    }

    /// Whether the test rejects, with probability ≥ 95 %, a statistic whose mean is `shift`
    /// standard errors (`√(variance/R)`) away from the expectation: `shift ≥ 1/√α + z₀.₉₅`.
    /// The mean of `R` replicates, each a mean over thousands of independent clients, is close
    /// to normal (CLT), so `z` under that alternative is ≈ `N(shift, 1)` and
    /// `P[|z| > 1/√α] ≥ Φ(shift − 1/√α) ≥ 0.95`.
    pub fn has_power_against(&self, shift: f64) -> bool {
        shift.abs() >= self.critical + Z_95
    }
}

/// The standard normal's 95 % quantile `Φ⁻¹(0.95)`.
const Z_95: f64 = 1.644_853_626_951_472_2;

/// Spectral norm `‖A‖₂` (largest singular value; NaN if any is, where nalgebra's `max` would
/// skip it).
pub fn spectral_norm(a: &DMatrix<f64>) -> f64 {
    a.singular_values().iter().copied().fold(0.0, max_nan)
}

/// Points of a power-law fit in the full profile: at least this many, over the validation
/// series' full range (≥ 2 decades), so that a fitted exponent is pinned down by its design and
/// not by two end points.
pub const FULL_SLOPE_POINTS: usize = 7;

/// `points` integers spaced geometrically from `lo` to `hi` (both included, rounded, distinct).
pub fn geometric_grid(lo: usize, hi: usize, points: usize) -> Vec<usize> {
    let mut v: Vec<usize> = crate::framework::geomspace(lo as f64, hi as f64, points)
        .into_iter()
        .map(|x| x.round() as usize)
        .collect();
    v.dedup();
    v
}

/// The full profile's validation ratios: [`FULL_SLOPE_POINTS`] geometric points over the same
/// range as the quick profile's `ratios`.
pub fn dense_ratios(ratios: &[usize]) -> Vec<usize> {
    geometric_grid(ratios[0], ratios[ratios.len() - 1], FULL_SLOPE_POINTS)
}

/// A log–log slope fit of `(x, y)` points compared with `predicted ± tolerance`.
pub fn slope_fit(
    parameter: &str,
    points: &[(f64, f64)],
    predicted: f64,
    tolerance: f64,
) -> SlopeFit {
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    SlopeFit {
        parameter: parameter.into(),
        slope: crate::framework::loglog_fit(&xs, &ys).0,
        predicted,
        tolerance,
        side: Side::Both,
        design: crate::framework::Design::of(&xs, true),
    }
}

/// Observation markers.
pub fn markers(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
    Series {
        label: label.into(),
        points,
        line: false,
    }
}

/// A bound drawn as a line (points sorted by x).
pub fn line(label: impl Into<String>, mut points: Vec<(f64, f64)>) -> Series {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Series {
        label: label.into(),
        points,
        line: true,
    }
}

/// `Y = (1/m) Σ_i ε(x_i1, y_i1, θ) ε(x_i2, y_i2, θ)ᵀ` of SXY22 Phase 1 (step 9,
/// faithful variant: `m` fresh clients, one pair each, labels drawn from `p`), computed by
/// the fast path [`phase1_matrix_fast`] of `fedmix::algorithms::fedmd::subspace_matrix` with the
/// first-two pairing (weights `n_i/Σn = 1/m`). Data of replicate `rep` come from
/// `mix.federation(.., seed, rep)`.
pub fn phase1_subspace_matrix(
    mix: &Mixture,
    m: usize,
    theta: &DVector<f64>,
    seed: u64,
    rep: u64,
) -> DMatrix<f64> {
    phase1_matrix_fast(&phase1_federation(mix, m, seed, rep), theta)
}

/// The data of [`phase1_subspace_matrix`]: `m` clients with two samples each.
pub fn phase1_federation(mix: &Mixture, m: usize, seed: u64, rep: u64) -> Federation {
    mix.federation(&vec![2; m], None, seed, rep)
}

/// [`phase1_subspace_matrix`] of given data at `theta` (the library's
/// `fedmix::algorithms::fedmd::subspace_matrix`, first-two pairing).
pub fn phase1_matrix(fed: &Federation, theta: &DVector<f64>) -> DMatrix<f64> {
    let set: Vec<usize> = (0..fed.num_clients()).collect();
    subspace_matrix(fed, &set, theta, Pairing::FirstTwo)
}

/// Fast path of [`phase1_matrix`] for federations of two-sample clients: all residual moments
/// `ε_c = (y_c − ⟨φ_c, θ⟩)φ_c` at once, then `Y = (1/m) E_odd E_evenᵀ` — one product instead of
/// per-client factors (≈ 10× faster at `m = 10⁴`). The checks compare it with the library on
/// their first replicate ([`fast_path_deviation`]).
pub fn phase1_matrix_fast(fed: &Federation, theta: &DVector<f64>) -> DMatrix<f64> {
    let x = fed.features();
    let (d, m) = (fed.d(), fed.num_clients());
    let r = fed.responses() - x.tr_mul(theta);
    let first = DMatrix::from_fn(d, m, |i, c| x[(i, 2 * c)] * r[2 * c]);
    let second = DMatrix::from_fn(d, m, |i, c| x[(i, 2 * c + 1)] * r[2 * c + 1]);
    first * second.transpose() / m as f64
}

/// `‖fast − library‖_max / ‖library‖_max` of [`phase1_matrix_fast`] against [`phase1_matrix`].
pub fn fast_path_deviation(fed: &Federation, theta: &DVector<f64>) -> f64 {
    let reference = phase1_matrix(fed, theta);
    amax_nan(&(phase1_matrix_fast(fed, theta) - &reference))
        / reference.amax().max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_matches_the_library() {
        let mix = Mixture::draw(5, &[0.2, 0.3, 0.5], 1.0, (0.5, 2.0), 0.3, 11);
        let fed = phase1_federation(&mix, 300, 11, 0);
        let theta = DVector::from_element(5, 0.2);
        assert!(fast_path_deviation(&fed, &theta) < 1e-12);
    }

    /// θ*_j ~ N(0, r²I/d): at d = 400 each ‖θ*_j‖²/r² is χ²₄₀₀/400 = 1 ± 0.07 (one SD), so
    /// the mean over 5 centres lies in [0.8, 1.2] (about 6 SDs); diag Σ_j lies in its range.
    #[test]
    fn mixture_draws_follow_their_law() {
        let mix = Mixture::draw(400, &[0.2; 5], 2.0, (0.5, 1.5), 0.3, 9);
        let mean = (0..5)
            .map(|j| mix.theta_star.column(j).norm_squared() / 4.0)
            .sum::<f64>()
            / 5.0;
        assert!((0.8..=1.2).contains(&mean), "{mean}");
        assert!(mix.cov.iter().all(|c| (0.5..=1.5).contains(c)));
        // 2000 draws of U[0.5, 1.5]: mean 1 ± 0.0065 (one SD), extremes within 0.05 of the ends
        // (each missed with probability 0.95²⁰⁰⁰).
        let cov_mean = mix.cov.mean();
        assert!((cov_mean - 1.0).abs() < 0.05, "{cov_mean}");
        assert!(mix.cov.min() < 0.55 && mix.cov.max() > 1.45);
        let fixed = Mixture::draw(3, &[0.5, 0.5], 1.0, (0.7, 0.7), 0.3, 9);
        assert!(fixed.cov.iter().all(|&c| c.to_bits() == 0.7f64.to_bits()));
    }

    #[test]
    fn federation_follows_the_model() {
        // Per-coordinate feature variances match diag Σ_j, and y − ⟨x, θ*_z⟩ has variance σ².
        let mix = Mixture::draw(3, &[0.5, 0.5], 1.0, (0.5, 2.0), 0.3, 7);
        let fed = mix.federation(&[20_000], Some(vec![1]), 7, 0);
        let x = fed.x(0);
        for r in 0..3 {
            let var = x.row(r).iter().map(|v| v * v).sum::<f64>() / 20_000.0;
            assert!((var / mix.cov[(r, 1)] - 1.0).abs() < 0.05, "{var}");
        }
        let resid = fed.y(0) - x.tr_mul(&mix.theta_star.column(1));
        let s2 = resid.norm_squared() / 20_000.0;
        assert!((s2 / 0.09 - 1.0).abs() < 0.05, "{s2}");
    }

    /// Noise-free, `Σ_0 = cI`, `P = [δ/‖δ‖, v]`: `y = Pᵀε` has `μ = (c‖δ‖, 0)` and
    /// `S = c²‖δ‖² diag(3, 1)` (Gaussian fourth moments by hand), so with `m = |μ|²`,
    /// `ζ₁ = 2m²`, `ζ₂ = 9m²` and `Var u_n = (8(n − 2) + 18) m² / (n(n − 1))`.
    #[test]
    fn pair_trace_variance_matches_the_isotropic_hand_computation() {
        let c = 2.0;
        let mix = Mixture::draw(5, &[1.0], 1.0, (c, c), 0.0, 9);
        let theta = DVector::from_element(5, 0.3);
        let delta = mix.theta_star.column(0) - &theta;
        let mut frame =
            DMatrix::from_fn(5, 2, |r, col| if col == 1 { (r as f64).sin() } else { 0.0 });
        frame.set_column(0, &delta);
        let p = fedmix::linalg::orthonormalize(frame);
        let m = c * c * delta.norm_squared();
        for n in 2..7 {
            let (mean, var) = pair_trace_moments(&mix, 0, &theta, &p, n);
            let nf = n as f64;
            let hand = (8.0 * (nf - 2.0) + 18.0) * m * m / (nf * (nf - 1.0));
            assert!((mean / m - 1.0).abs() < 1e-12, "{mean} vs {m}");
            assert!((var / hand - 1.0).abs() < 1e-12, "n = {n}: {var} vs {hand}");
        }
    }

    #[test]
    fn expected_moment_is_the_p_weighted_sum() {
        let mix = Mixture::draw(4, &[0.2, 0.8], 1.0, (0.5, 2.0), 0.1, 3);
        let theta = DVector::from_element(4, 0.1);
        let ey = mix.expected_cross_moment(&theta);
        let direct =
            mix.cluster_cross_moment(0, &theta) * 0.2 + mix.cluster_cross_moment(1, &theta) * 0.8;
        assert!((ey - direct).amax() < 1e-15);
    }

    /// Relative closeness for hand-computed reference values (printed to 16 digits, so a
    /// mutated formula misses them by far more).
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs()
    }

    #[test]
    fn xi_is_eq2s_shape_by_hand() {
        // √(3 ln 1000/100) + (3/100) ln³ 1000 = 0.455228… + 9.888538… (Python, math.log).
        assert!(close(xi(3, 100, 1000), 10.343_766_097_361_836));
        // N = e: √(D/n) + D/n.
        assert!(close(xi(4, 16, 3), {
            let l = 3f64.ln();
            (0.25 * l).sqrt() + 0.25 * l.powi(3)
        }));
    }

    #[test]
    fn the_moment_shape_is_delta2_plus_sigma2_times_xi() {
        // δ² = 4, σ = 3: 4 + 9 = 13, times ξ(6, 50, 100).
        let want = 13.0 * xi(6, 50, 100);
        assert_eq!(moment_shape(4.0, 3.0, 6, 50).to_bits(), want.to_bits());
    }

    #[test]
    fn unbiasedness_test_by_hand() {
        // Replicates 1..4: mean 2.5, sample SD √(5/3); expectation 2, variance 4, R = 4:
        // z = 0.5/√(4/4) = 0.5; α = 0.04: critical 1/√0.04 = 5.
        let t = Unbiasedness::test(&[1.0, 2.0, 3.0, 4.0], 2.0, 4.0, 0.04);
        assert!(close(t.ratio, 1.25));
        assert!(close(t.z, 0.5));
        assert!(close(t.critical, 5.0));
        assert!(close(t.sd_ratio, 0.645_497_224_367_902_8));
        assert!(t.ok());
        let far = Unbiasedness::test(&[11.0, 12.0, 13.0, 14.0], 2.0, 4.0, 0.04);
        assert!(close(far.z, 10.5) && !far.ok());
        // Power: a shift of at least 5 + Φ⁻¹(0.95) = 6.6449 standard errors.
        assert!(t.has_power_against(6.645) && t.has_power_against(-6.645));
        assert!(!t.has_power_against(6.644));
    }

    #[test]
    fn grids_by_hand() {
        // 20·100^(i/6), rounded.
        assert_eq!(
            geometric_grid(20, 2000, 7),
            vec![20, 43, 93, 200, 431, 928, 2000]
        );
        // 1, 1.32, 1.73, 2.28, 3 round to 1, 1, 2, 2, 3: duplicates dropped.
        assert_eq!(geometric_grid(1, 3, 5), vec![1, 2, 3]);
        // 5·400^(i/6), rounded.
        assert_eq!(
            dense_ratios(&[5, 20, 200, 2000]),
            vec![5, 14, 37, 100, 271, 737, 2000]
        );
    }
}
