//! Shared pieces of the phase-dynamics checks: a mixture of linear regressions with known
//! `θ*` and known per-cluster covariances `Σ_j`, federations drawn from it with given labels
//! and sizes (independent replicates by seed), and seed derivation.
//!
//! Every draw goes through the library's generator ([`fedmix::synthetic`]): `θ*` and `Σ_j`
//! by [`synthetic::Model::draw`] (streams `(seed, ThetaStar, 0)` and `(seed, Covariance, 0)`,
//! the `gaussian` θ* law and the `diagonal` covariance law), the data by
//! [`synthetic::Model::federation`] (client `i`'s features / noise from `(seed, Features, i)` /
//! `(seed, Noise, i)`, so changing σ leaves the features untouched) — the sampler of every
//! experiment. Every seed is derived from the check's master seed with [`child`].

use fedmix::federation::Federation;
use fedmix::seed_streams::child_seed;
use fedmix::synthetic::{self, Covariance, FeatureMap, SettingParams, ThetaDist};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

/// The library setting whose `θ*` / `Σ_j` laws the checks draw from: `k` clusters in `R^d`,
/// `θ*_j ~ N(0, r² I_d/d)` (`theta = gaussian`), noise scale σ, and `Σ_j` by `covariance`
/// (`diagonal`: entries `U[α, β]`).
pub fn setting(d: usize, k: usize, r: f64, sigma: f64, cov: Option<(f64, f64)>) -> SettingParams {
    let mut s = SettingParams::named("sxy-balanced").expect("a named setting");
    (s.d, s.k, s.r, s.sigma) = (d, k, r, sigma);
    s.theta = ThetaDist::Gaussian;
    s.feature_map = FeatureMap::Identity;
    s.p = Vec::new();
    if let Some((alpha, beta)) = cov {
        (s.covariance, s.cov_min, s.cov_max) = (Covariance::Diagonal, alpha, beta);
    }
    s
}

/// A child seed for experiment part `tag`, replicate `index`.
pub fn child(seed: u64, tag: u64, index: u64) -> u64 {
    child_seed(seed, (tag << 24) | index)
}

/// The tag of a grid point `i` of a calibrate-then-validate check: calibration points `0, 1, …`,
/// validation points `100, 101, …` (disjoint while a grid has fewer than 100 calibration points,
/// so no validation point reuses a calibration point's data).
pub fn grid_tag(validation: bool, i: usize) -> u64 {
    if validation {
        100 + i as u64
    } else {
        i as u64
    }
}

/// Centres `θ*_j = (Δ/√2) e_j` (`d × k`, `k ≤ d`): every pair at distance exactly `Δ`, the
/// separation of SXY22 (`Δ = min_{j≠l} ‖θ*_j − θ*_l‖`), all of norm `Δ/√2` (a regular simplex).
pub fn simplex_centres(d: usize, k: usize, delta: f64) -> DMatrix<f64> {
    DMatrix::from_fn(d, k, |r, c| if r == c { delta / 2f64.sqrt() } else { 0.0 })
}

/// `--set` style overrides from string pairs.
pub fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A mixture of k linear regressions: `y = ⟨x, θ*_z⟩ + σ ξ`, `x ~ N(0, Σ_z)`, `Σ_z` diagonal.
#[derive(Clone, Debug)]
pub struct Mixture {
    /// `θ*`, `d × k`.
    pub theta_star: DMatrix<f64>,
    /// Diagonals of `Σ_j` (`d × k`); `None` = identity.
    pub variances: Option<DMatrix<f64>>,
    /// Noise scale σ.
    pub sigma: f64,
}

impl Mixture {
    /// `θ*_j ~ N(0, r² I_d / d)` (the `sxy-*` law, drawn by the library), `Σ_j = I`.
    pub fn gaussian(d: usize, k: usize, r: f64, sigma: f64, seed: u64) -> Self {
        let model = synthetic::Model::draw(&setting(d, k, r, sigma, None), seed)
            .expect("a valid Gaussian setting");
        Self {
            theta_star: model.theta_star().clone(),
            variances: None,
            sigma,
        }
    }

    /// Given `θ*`, `Σ_j = I`.
    pub fn with_theta(theta_star: DMatrix<f64>, sigma: f64) -> Self {
        Self {
            theta_star,
            variances: None,
            sigma,
        }
    }

    /// Diagonal `Σ_j` with entries `U[α, β]`, and for every cluster one entry pinned at α and
    /// one at β, so that `λ_min(Σ_j) = α` and `λ_max(Σ_j) = β` exactly.
    /// The entries are the library's `diagonal` covariance law ([`synthetic::Model::draw`]);
    /// the pinning is this instance's design (SXY22 Prop. 2 is stated in `κ = β/α`).
    pub fn with_diagonal_covariance(mut self, alpha: f64, beta: f64, seed: u64) -> Self {
        let (d, k) = self.theta_star.shape();
        let law = setting(d, k, 1.0, self.sigma, Some((alpha, beta)));
        let mut v = synthetic::Model::draw(&law, seed)
            .expect("a valid diagonal-covariance setting")
            .variances()
            .expect("covariance = diagonal")
            .clone();
        for j in 0..k {
            v[(j % d, j)] = alpha;
            v[((j + 1) % d, j)] = beta;
        }
        self.variances = Some(v);
        self
    }

    /// Dimension d.
    pub fn d(&self) -> usize {
        self.theta_star.nrows()
    }

    /// Number of clusters k.
    pub fn k(&self) -> usize {
        self.theta_star.ncols()
    }

    /// `Σ_j v`.
    pub fn cov_apply(&self, j: usize, v: &DVector<f64>) -> DVector<f64> {
        match &self.variances {
            Some(var) => v.component_mul(&var.column(j)),
            None => v.clone(),
        }
    }

    /// `‖Σ_j^{1/2} v‖² = vᵀ Σ_j v`.
    pub fn cov_norm_sq(&self, j: usize, v: &DVector<f64>) -> f64 {
        v.dot(&self.cov_apply(j, v))
    }

    /// The library's model of this mixture ([`synthetic::Model`]).
    ///
    /// # Panics
    /// If `θ*`, `Σ_j` or σ are not finite (or `Σ_j` not positive), which the constructors
    /// exclude.
    pub fn model(&self) -> synthetic::Model {
        synthetic::Model::new(
            self.theta_star.clone(),
            self.variances.clone(),
            self.sigma,
            FeatureMap::Identity,
        )
        .expect("finite θ*, positive Σ_j, σ ≥ 0")
    }

    /// A federation with the given labels and sizes, drawn by the library's generator
    /// ([`synthetic::Model::federation`]); `seed` selects the replicate.
    ///
    /// # Panics
    /// If `labels` and `sizes` differ in length, a label is `≥ k`, or a size is 0 (callers
    /// build them; the generator rejects them).
    pub fn federation(&self, labels: &[usize], sizes: &[usize], seed: u64) -> Federation {
        self.model()
            .federation(labels, sizes, seed)
            .expect("labels, sizes and finite data are built by the caller")
    }
}

/// A unit vector uniform on the sphere in `R^d`, from `rng`.
pub fn random_unit(d: usize, rng: &mut fedmix::seed_streams::Rng) -> DVector<f64> {
    let v = DVector::from_fn(d, |_, _| rng.sample::<f64, _>(StandardNormal));
    let n = v.norm();
    v / n
}

/// `|x|` rounded to a short string for detail lines.
pub fn fmt_list(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.3}")).collect();
    format!("[{}]", parts.join(", "))
}

/// Least squares per cluster on the given labels (normal equations): column j solves
/// `(Σ_{i: z_i = j} φ_iᵀφ_i) θ = Σ_{i: z_i = j} φ_iᵀy_i` — the oracle estimate on the true labels.
///
/// # Panics
/// If a cluster's Gram matrix is singular (callers build clusters with `N_j ≫ d`).
pub fn cluster_least_squares(fed: &Federation, labels: &[usize], k: usize) -> DMatrix<f64> {
    let d = fed.d();
    let mut out = DMatrix::zeros(d, k);
    for j in 0..k {
        let (mut g, mut b) = (DMatrix::zeros(d, d), DVector::zeros(d));
        for i in (0..fed.num_clients()).filter(|&i| labels[i] == j) {
            let x = fed.x(i);
            g += x * x.transpose();
            b += x * fed.y(i);
        }
        out.set_column(j, &g.cholesky().expect("N_j ≫ d").solve(&b));
    }
    out
}

/// Test helper: `got` equals a Student-t reference value `want` computed outside Rust (mpmath
/// 1.3, 30 digits, regularised incomplete beta; `tests/data/t_references.py` regenerates them)
/// to 10⁻⁸ relative, at the suite's 24 checks (each check's α is 0.01/24, so the references
/// change with the registry).
#[cfg(test)]
pub fn assert_t_reference(got: f64, want: f64) {
    assert_eq!(
        crate::framework::SUITE_SIZE,
        24,
        "the references assume 24 checks"
    );
    assert!((got / want - 1.0).abs() < 1e-8, "{got} vs reference {want}");
}

/// Test helper: the seeds (or seed indices) a check derives for what should be independent
/// draws are pairwise distinct — no two replicates, grid points or starts share a random stream
/// by accident of the index arithmetic.
#[cfg(test)]
pub fn assert_distinct(seeds: impl IntoIterator<Item = u64>, what: &str) {
    let mut all: Vec<u64> = seeds.into_iter().collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        n,
        "{what}: {} of {n} seeds repeat",
        n - all.len()
    );
}

/// Test helper: a check's verdict passes with every part good, and fails when any one part is
/// broken (so no part is dropped from the conjunction, and each guard bites on its own).
#[cfg(test)]
pub fn assert_each_part_fails<V>(
    good: impl Fn() -> V,
    broken: &[fn(&mut V)],
    passed: fn(&V) -> bool,
) {
    assert!(passed(&good()), "the good verdict fails");
    for (i, f) in broken.iter().enumerate() {
        let mut v = good();
        f(&mut v);
        assert!(!passed(&v), "part {i} broken, yet the check passed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct (tag, index) pairs below 2²⁴ give distinct seeds: tags do not collapse and
    /// indices do not spill into the tag.
    #[test]
    fn grid_tags_put_validation_points_from_100() {
        let cal: Vec<u64> = (0..3).map(|i| grid_tag(false, i)).collect();
        let val: Vec<u64> = (0..12).map(|i| grid_tag(true, i)).collect();
        assert_eq!(cal, [0, 1, 2]);
        assert_eq!(val, (100..112).collect::<Vec<_>>());
    }

    #[test]
    fn child_seeds_are_distinct_across_tags_and_indices() {
        assert_distinct(
            (1..=40u64).flat_map(|tag| [0, 1, 2, 999, (1 << 24) - 1].map(|i| child(7, tag, i))),
            "child seeds",
        );
        assert_eq!(child(7, 3, 5), child_seed(7, (3 << 24) | 5));
    }

    #[test]
    fn simplex_centres_are_delta_apart() {
        let ts = simplex_centres(5, 3, 2.0);
        assert_eq!(ts.shape(), (5, 3));
        for j in 0..3 {
            assert!((ts.column(j).norm() - 2f64.sqrt()).abs() < 1e-15);
            for l in 0..j {
                assert!(((ts.column(j) - ts.column(l)).norm() - 2.0).abs() < 1e-15);
            }
        }
        assert!((fedmix::metrics::separation(&ts) - 2.0).abs() < 1e-15);
    }
}
