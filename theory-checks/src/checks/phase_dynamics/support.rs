//! Shared pieces of the phase-dynamics checks: a mixture of linear regressions with known
//! `θ*` and known per-cluster covariances `Σ_j` (the checks need `Σ_j` exactly, which the
//! synthetic generator does not expose), federations drawn from it with given labels and sizes
//! (independent replicates by seed), and seed derivation.
//!
//! Randomness: `θ*` from `(seed, ThetaStar, 0)`, the covariance diagonal from
//! `(seed, Covariance, 0)`, and client `i`'s features / noise from `(seed, Features, i)` /
//! `(seed, Noise, i)` — the same design as `fedmix::synthetic` (changing σ leaves the features
//! untouched). Every seed is derived from the check's master seed with [`child`].

use fedmix::federation::{Federation, FederationParts};
use fedmix::seed_streams::{child_seed, stream, Purpose};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

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
    /// `θ*_j ~ N(0, r² I_d / d)` (the `sxy-*` law), `Σ_j = I`.
    pub fn gaussian(d: usize, k: usize, r: f64, sigma: f64, seed: u64) -> Self {
        let mut rng = stream(seed, Purpose::ThetaStar, 0);
        let s = r / (d as f64).sqrt();
        let theta_star = DMatrix::from_fn(d, k, |_, _| s * rng.sample::<f64, _>(StandardNormal));
        Self {
            theta_star,
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
    pub fn with_diagonal_covariance(mut self, alpha: f64, beta: f64, seed: u64) -> Self {
        let (d, k) = self.theta_star.shape();
        let mut rng = stream(seed, Purpose::Covariance, 0);
        let mut v = DMatrix::from_fn(d, k, |_, _| rng.random_range(alpha..=beta));
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

    /// A federation with the given labels and sizes; `seed` selects the replicate.
    ///
    /// # Panics
    /// If `labels` and `sizes` differ in length, a label is `≥ k`, or a size is 0 (callers
    /// build them; the federation constructor would reject them).
    pub fn federation(&self, labels: &[usize], sizes: &[usize], seed: u64) -> Federation {
        let d = self.d();
        let total: usize = sizes.iter().sum();
        let mut features = DMatrix::zeros(d, total);
        let mut responses = DVector::zeros(total);
        let mut off = 0;
        for (i, (&z, &n)) in labels.iter().zip(sizes).enumerate() {
            let mut frng = stream(seed, Purpose::Features, i as u64);
            let mut nrng = stream(seed, Purpose::Noise, i as u64);
            let theta = self.theta_star.column(z);
            for s in 0..n {
                let mut col = features.column_mut(off + s);
                for (r, v) in col.iter_mut().enumerate() {
                    let g: f64 = frng.sample(StandardNormal);
                    *v = match &self.variances {
                        Some(var) => g * var[(r, z)].sqrt(),
                        None => g,
                    };
                }
                let noise: f64 = nrng.sample(StandardNormal);
                responses[off + s] = col.dot(&theta) + self.sigma * noise;
            }
            off += n;
        }
        Federation::new(FederationParts {
            features,
            responses,
            sizes: sizes.to_vec(),
            labels: Some(labels.to_vec()),
            theta_star: Some(self.theta_star.clone()),
            k: Some(self.k()),
        })
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
/// 1.3, 30 digits, regularised incomplete beta) to 10⁻⁸ relative, at the suite's 23 checks
/// (each check's α is 0.01/23, so the references change with the registry).
#[cfg(test)]
pub fn assert_t_reference(got: f64, want: f64) {
    assert_eq!(
        crate::registry().len(),
        23,
        "the references assume 23 checks"
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
