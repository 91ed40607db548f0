//! Seeded synthetic federations: every setting of the papers' synthetic experiments (SXY22
//! App. C.1–C.3, IFCA §6.1, and the IFCA and SR-FCA authors' released code) by name, with every
//! parameter overridable by its public name (`--set sigma=0.2 --set d=50`).
//!
//! Parameter names are a public contract: `k`, `d`, `clients` (M), `samples` (n of an ordinary
//! client), `sigma` (noise scale), `r` (scale of `θ*`: for Gaussian `θ*` the norm scale,
//! `θ*_j ~ N(0, r² I_d / d)`; for `bernoulli` the multiplier `r·Bernoulli(0.5)^d` (IFCA official
//! code); for `bernoulli-rescaled` the target norm `‖θ*_j‖ = R` (IFCA §6.1)), and the knobs listed
//! in [`PARAMETERS`].
//!
//! Randomness comes from the named streams of [`crate::seed_streams`]: `θ*` (ThetaStar), labels (Labels),
//! sizes (Sizes), per-cluster covariances (Covariance), and per client `i` its features
//! (Features, i) and noise (Noise, i), plus held-out (TestFeatures, i)/(TestNoise, i). Changing σ
//! leaves features and labels untouched; adding clients leaves existing clients untouched.

use crate::error::{FedmixError, Result};
use crate::federation::{Federation, FederationParts};
use crate::seed_streams::{stream, Purpose, Rng};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal, Zipf};
use serde::{Deserialize, Serialize};

/// Largest number of bytes a generated federation may occupy (refused before allocating).
pub const MAX_DATA_BYTES: u128 = 8 << 30;

/// The named synthetic settings (SXY22 App. C.1–C.3, IFCA §6.1, the IFCA / SR-FCA authors' code).
pub const SETTINGS: &[(&str, &str)] = &[
    ("sxy-balanced", "SXY22 App. C.1: k=3, d=100, M=200, n_i=50, p uniform"),
    ("sxy-unbalanced-data", "SXY22 App. C.2: M=920, n_i=10 (900 clients) / 50 (20 clients), p uniform"),
    ("sxy-unbalanced-both", "SXY22 App. C.3: as C.2 with p=(0.2,0.3,0.5)"),
    ("ifca-linear", "IFCA §6.1: k=2, d=1000, m=100, n=100, θ* Bernoulli(0.5)^d rescaled to ‖θ*‖=R, equal clusters"),
    ("ifca-official", "IFCA released synthetic code: θ* = r·Bernoulli(0.5)^d (not rescaled), machine i in cluster ⌊i/(m/k)⌋, σ=0.001"),
    ("srfca-linear", "SR-FCA code: k=2, d=1000, 50 clients × (100 train + 100 test), client i in cluster i mod k, σ=0.001"),
];

/// Every parameter name with its meaning (printed by `fedmix settings`).
pub const PARAMETERS: &[(&str, &str)] = &[
    ("k", "number of clusters (≥ 1)"),
    ("d", "dimension of φ(x) (≥ 1)"),
    (
        "clients",
        "total number of clients M, including large and singleton clients",
    ),
    (
        "samples",
        "n_i of an ordinary client (the scale of the size distribution)",
    ),
    (
        "large_clients",
        "number of clients (after the ordinary ones) holding large_samples",
    ),
    ("large_samples", "n_i of a large client"),
    ("singleton_clients", "number of clients (last) with n_i = 1"),
    (
        "sizes",
        "size distribution of ordinary clients: fixed | lognormal | zipf",
    ),
    (
        "size_spread",
        "lognormal: σ of log n_i; zipf: the exponent s",
    ),
    ("size_min", "floor of drawn sizes (≥ 1)"),
    (
        "size_max",
        "cap of drawn sizes (zipf support {1..size_max})",
    ),
    ("sigma", "noise scale σ ≥ 0: ζ = σ·N(0,1)"),
    ("r", "scale of θ* (see theta)"),
    (
        "p",
        "cluster probabilities, comma separated (empty = uniform); used by labels=iid",
    ),
    (
        "labels",
        "label rule: iid (from p) | blocks (⌊i·k/M⌋) | modulo (i mod k)",
    ),
    (
        "theta",
        "θ* law: gaussian (N(0, r²I/d)) | bernoulli (r·Ber(0.5)^d) | bernoulli-rescaled (‖θ*‖=r)",
    ),
    (
        "feature_map",
        "identity (x ~ N(0, Σ_z)) | polynomial (u ~ U(−1,1), φ = (1,u,…,u^{d−1}))",
    ),
    (
        "covariance",
        "identity | diagonal (per cluster, entries ~ U[cov_min, cov_max])",
    ),
    (
        "cov_min",
        "α: smallest covariance eigenvalue for covariance=diagonal (> 0)",
    ),
    (
        "cov_max",
        "β: largest covariance eigenvalue for covariance=diagonal (≥ cov_min)",
    ),
    ("test_samples", "held-out samples per client (0 = none)"),
];

/// Distribution of the sizes of ordinary clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeDist {
    /// Every ordinary client holds `samples`.
    Fixed,
    /// `n_i = clamp(round(samples · exp(s Z − s²/2)), size_min, size_max)`, `Z ~ N(0,1)`.
    Lognormal,
    /// `n_i = max(size_min, Zipf(size_max, s))` (heavy tailed; support `1..=size_max`).
    Zipf,
}

/// How hidden labels are assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelRule {
    /// `z_i ~ p` i.i.d. (SXY22).
    Iid,
    /// `z_i = ⌊i k / M⌋`: contiguous equal blocks (IFCA code's `⌊i/(m/k)⌋` when k divides M).
    Blocks,
    /// `z_i = i mod k` (SR-FCA code).
    Modulo,
}

/// Law of the true models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThetaDist {
    /// `θ*_j ~ N(0, r² I_d / d)`. Decision: SXY22 App. C samples `θ*_j` from `c · N(0, 1)` with
    /// d = 100, the scale `c` illegible in the extracted text; we read it as `1/√d`, because
    /// the error axes of SXY22 Figs. 1–3 start near 10⁰, i.e. `‖θ*_j‖ ≈ 1` (`r = 1` default).
    Gaussian,
    /// `θ*_j = r · Bernoulli(0.5)^d` (IFCA official code; not rescaled).
    Bernoulli,
    /// `θ*_j ~ Bernoulli(0.5)^d` rescaled to `‖θ*_j‖ = r` (IFCA §6.1).
    BernoulliRescaled,
}

/// The feature map `φ` (the algorithms only ever see `φ(x)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureMap {
    /// `φ(x) = x`, `x ~ N(0, Σ_{z_i})`.
    Identity,
    /// `u ~ U(−1, 1)`, `φ(u) = (1, u, u², …, u^{d−1})`. Decision: uniform on [−1,1] keeps high
    /// powers bounded.
    Polynomial,
}

/// Per-cluster feature covariance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Covariance {
    /// `Σ_j = I`.
    Identity,
    /// `Σ_j = diag(c_j)`, `c_j ∈ [cov_min, cov_max]^d` drawn once per cluster.
    Diagonal,
}

/// All parameters of a synthetic setting. Validated by [`SettingParams::check`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)] // each field is documented in `PARAMETERS`
pub struct SettingParams {
    pub k: usize,
    pub d: usize,
    pub clients: usize,
    pub samples: usize,
    pub large_clients: usize,
    pub large_samples: usize,
    pub singleton_clients: usize,
    pub sizes: SizeDist,
    pub size_spread: f64,
    pub size_min: usize,
    pub size_max: usize,
    pub sigma: f64,
    pub r: f64,
    pub p: Vec<f64>,
    pub labels: LabelRule,
    pub theta: ThetaDist,
    pub feature_map: FeatureMap,
    pub covariance: Covariance,
    pub cov_min: f64,
    pub cov_max: f64,
    pub test_samples: usize,
}

impl SettingParams {
    fn base() -> Self {
        Self {
            k: 3,
            d: 100,
            clients: 200,
            samples: 50,
            large_clients: 0,
            large_samples: 50,
            singleton_clients: 0,
            sizes: SizeDist::Fixed,
            size_spread: 1.0,
            size_min: 2,
            size_max: 1000,
            // Decision: default σ = 0.1, a convenient default, not the paper's value. SXY22
            // App. C's noise is "0.? · N(0, 1)" with the digit garbled in the extracted text; the
            // SXY22 figure experiments (`experiments/sxy22-fig*.toml`) read it as 0.2 and set
            // σ = 0.2 explicitly.
            sigma: 0.1,
            r: 1.0,
            p: Vec::new(),
            labels: LabelRule::Iid,
            theta: ThetaDist::Gaussian,
            feature_map: FeatureMap::Identity,
            covariance: Covariance::Identity,
            cov_min: 0.5,
            cov_max: 2.0,
            test_samples: 0,
        }
    }

    /// The defaults of a named setting.
    ///
    /// # Errors
    /// [`FedmixError::UnknownSetting`] listing the valid names.
    pub fn named(name: &str) -> Result<Self> {
        let mut p = Self::base();
        match name {
            "sxy-balanced" => {}
            "sxy-unbalanced-data" | "sxy-unbalanced-both" => {
                p.clients = 920;
                p.samples = 10;
                p.large_clients = 20;
                p.large_samples = 50;
                if name == "sxy-unbalanced-both" {
                    p.p = vec![0.2, 0.3, 0.5];
                }
            }
            "ifca-linear" | "ifca-official" => {
                p.k = 2;
                p.d = 1000;
                p.clients = 100;
                p.samples = 100;
                p.labels = LabelRule::Blocks;
                if name == "ifca-linear" {
                    p.theta = ThetaDist::BernoulliRescaled;
                    p.sigma = 0.1;
                } else {
                    p.theta = ThetaDist::Bernoulli;
                    p.sigma = 0.001;
                }
            }
            "srfca-linear" => {
                p.k = 2;
                p.d = 1000;
                p.clients = 50;
                p.samples = 100;
                p.test_samples = 100;
                p.labels = LabelRule::Modulo;
                p.theta = ThetaDist::Bernoulli;
                p.sigma = 0.001;
            }
            _ => {
                return Err(FedmixError::UnknownSetting {
                    name: name.into(),
                    known: SETTINGS.iter().map(|s| s.0).collect::<Vec<_>>().join(", "),
                })
            }
        }
        Ok(p)
    }

    /// Override one parameter by its public name, parsing `value`.
    ///
    /// # Errors
    /// [`FedmixError::UnknownParameter`] for an unknown name, [`FedmixError::InvalidParameter`]
    /// for a value that does not parse.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match key {
            "k" => self.k = parse(key, v)?,
            "d" => self.d = parse(key, v)?,
            "clients" => self.clients = parse(key, v)?,
            "samples" => self.samples = parse(key, v)?,
            "large_clients" => self.large_clients = parse(key, v)?,
            "large_samples" => self.large_samples = parse(key, v)?,
            "singleton_clients" => self.singleton_clients = parse(key, v)?,
            "sizes" => self.sizes = parse_enum(key, v)?,
            "size_spread" => self.size_spread = parse(key, v)?,
            "size_min" => self.size_min = parse(key, v)?,
            "size_max" => self.size_max = parse(key, v)?,
            "sigma" => self.sigma = parse(key, v)?,
            "r" => self.r = parse(key, v)?,
            "p" => {
                self.p = if v.is_empty() {
                    Vec::new()
                } else {
                    v.split(',')
                        .map(|s| parse(key, s.trim()))
                        .collect::<Result<_>>()?
                }
            }
            "labels" => self.labels = parse_enum(key, v)?,
            "theta" => self.theta = parse_enum(key, v)?,
            "feature_map" => self.feature_map = parse_enum(key, v)?,
            "covariance" => self.covariance = parse_enum(key, v)?,
            "cov_min" => self.cov_min = parse(key, v)?,
            "cov_max" => self.cov_max = parse(key, v)?,
            "test_samples" => self.test_samples = parse(key, v)?,
            _ => {
                return Err(FedmixError::UnknownParameter {
                    name: key.into(),
                    owner: "synthetic settings".into(),
                    known: PARAMETERS
                        .iter()
                        .map(|p| p.0)
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
        Ok(())
    }

    /// Cluster probabilities in effect (`p`, or uniform when `p` is empty).
    pub fn probabilities(&self) -> Vec<f64> {
        if self.p.is_empty() {
            vec![1.0 / self.k as f64; self.k]
        } else {
            self.p.clone()
        }
    }

    /// Validate every parameter and the memory the federation would need.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the parameter, or [`FedmixError::TooLarge`].
    pub fn check(&self) -> Result<()> {
        positive("k", self.k)?;
        positive("d", self.d)?;
        positive("clients", self.clients)?;
        positive("samples", self.samples)?;
        positive("large_samples", self.large_samples)?;
        positive("size_min", self.size_min)?;
        if self.size_max < self.size_min {
            return Err(FedmixError::invalid(
                "size_max",
                self.size_max,
                "must be ≥ size_min",
            ));
        }
        let special = self.large_clients as u128 + self.singleton_clients as u128;
        if special > self.clients as u128 {
            return Err(FedmixError::invalid(
                "clients",
                self.clients,
                format!("must be ≥ large_clients + singleton_clients = {special}"),
            ));
        }
        nonneg_finite("sigma", self.sigma)?;
        nonneg_finite("r", self.r)?;
        nonneg_finite("size_spread", self.size_spread)?;
        if self.sizes == SizeDist::Zipf && !(self.size_spread > 0.0) {
            return Err(FedmixError::invalid(
                "size_spread",
                self.size_spread,
                "zipf needs s > 0",
            ));
        }
        if !self.p.is_empty() {
            self.check_p()?;
        }
        if self.covariance == Covariance::Diagonal {
            if !(self.cov_min.is_finite() && self.cov_min > 0.0) {
                return Err(FedmixError::invalid(
                    "cov_min",
                    self.cov_min,
                    "must be finite and > 0",
                ));
            }
            if !(self.cov_max.is_finite() && self.cov_max >= self.cov_min) {
                return Err(FedmixError::invalid(
                    "cov_max",
                    self.cov_max,
                    "must be finite and ≥ cov_min",
                ));
            }
            if self.feature_map == FeatureMap::Polynomial {
                return Err(FedmixError::invalid(
                    "covariance",
                    "diagonal",
                    "applies to feature_map=identity only",
                ));
            }
        }
        self.check_memory()
    }

    fn check_p(&self) -> Result<()> {
        let show = || format!("{:?}", self.p);
        if self.p.len() != self.k {
            return Err(FedmixError::invalid(
                "p",
                show(),
                format!("needs k = {} entries", self.k),
            ));
        }
        if self.p.iter().any(|&q| !(q.is_finite() && q >= 0.0)) {
            return Err(FedmixError::invalid(
                "p",
                show(),
                "entries must be finite and ≥ 0",
            ));
        }
        let sum: f64 = self.p.iter().sum();
        if !((sum - 1.0).abs() <= 1e-9) {
            return Err(FedmixError::invalid(
                "p",
                show(),
                format!("must sum to 1 (sums to {sum})"),
            ));
        }
        Ok(())
    }

    /// Upper bound on `N` (the sizes are drawn later). Saturating: absurd values must not wrap.
    fn max_total_samples(&self) -> u128 {
        let ordinary = (self.clients - self.large_clients - self.singleton_clients) as u128;
        let per = match self.sizes {
            SizeDist::Fixed => self.samples as u128,
            _ => self.size_max.max(self.samples) as u128,
        };
        ordinary
            .saturating_mul(per)
            .saturating_add((self.large_clients as u128).saturating_mul(self.large_samples as u128))
            .saturating_add(self.singleton_clients as u128)
    }

    /// Bytes of the training and held-out samples (`d` features + 1 response each), plus `θ*`
    /// and the covariances (`k × d` each, `θ*` held by both federations), labels, sizes and
    /// offsets. Saturating, so that absurd values are refused instead of wrapping.
    fn check_memory(&self) -> Result<()> {
        let (d, k, m) = (self.d as u128, self.k as u128, self.clients as u128);
        let samples = self
            .max_total_samples()
            .saturating_add(m.saturating_mul(self.test_samples as u128));
        let floats = samples
            .saturating_mul(d.saturating_add(1))
            .saturating_add(k.saturating_mul(d).saturating_mul(3))
            .saturating_add(k)
            .saturating_add(m.saturating_mul(6));
        let bytes = floats.saturating_mul(8);
        if bytes > MAX_DATA_BYTES {
            return Err(FedmixError::TooLarge {
                what: "the generated federation".into(),
                bytes,
                limit: MAX_DATA_BYTES,
            });
        }
        Ok(())
    }
}

fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.parse().map_err(|_| {
        FedmixError::invalid(key, v, format!("expected a {}", std::any::type_name::<T>()))
    })
}

fn parse_enum<T: serde::de::DeserializeOwned>(key: &str, v: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(v.into()))
        .map_err(|e| FedmixError::invalid(key, v, e.to_string()))
}

fn positive(name: &str, v: usize) -> Result<()> {
    if v == 0 {
        Err(FedmixError::invalid(name, 0, "must be ≥ 1"))
    } else {
        Ok(())
    }
}

fn nonneg_finite(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(FedmixError::invalid(name, v, "must be finite and ≥ 0"))
    }
}

/// A generated data set: the training federation, optional held-out samples per client, and
/// the exact recipe.
#[derive(Clone, Debug)]
pub struct SyntheticData {
    /// Setting name.
    pub setting: String,
    /// Master seed.
    pub seed: u64,
    /// Parameters after overrides.
    pub params: SettingParams,
    /// Training federation (with labels and `θ*`).
    pub train: Federation,
    /// Held-out samples per client (same clients and clusters), when `test_samples > 0`.
    pub test: Option<Federation>,
    /// The drawn diagonals of `Σ_j` (`d × k`, column `j` is `diag Σ_j`) for
    /// `covariance = diagonal`; `None` for the identity (and the polynomial feature map).
    pub variances: Option<DMatrix<f64>>,
}

/// Test helper: `(key, value)` overrides from string literals, as [`generate_named`] takes them.
#[cfg(test)]
pub(crate) fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Test helper: the training federation of setting `name` with overrides `pairs` under `seed`.
#[cfg(test)]
pub(crate) fn train_federation(name: &str, seed: u64, pairs: &[(&str, &str)]) -> Federation {
    generate_named(name, seed, &sets(pairs)).unwrap().train
}

/// Generate setting `name` with overrides `sets` (`(key, value)` pairs) under `seed`.
///
/// # Errors
/// Unknown setting/parameter, invalid values, or a federation too large to allocate.
pub fn generate_named(name: &str, seed: u64, sets: &[(String, String)]) -> Result<SyntheticData> {
    let mut params = SettingParams::named(name)?;
    for (k, v) in sets {
        params.set(k, v)?;
    }
    generate(name, &params, seed)
}

/// Generate a federation from validated-on-entry parameters.
///
/// # Errors
/// Whatever [`SettingParams::check`] reports.
pub fn generate(setting: &str, params: &SettingParams, seed: u64) -> Result<SyntheticData> {
    params.check()?;
    let sizes = draw_sizes(params, seed);
    let labels = draw_labels(params, seed);
    let model = Model::draw_checked(params, seed)?;
    let train = model.sample(&labels, &sizes, seed, Purpose::Features, Purpose::Noise)?;
    let test = if params.test_samples > 0 {
        let test_sizes = vec![params.test_samples; params.clients];
        Some(model.sample(
            &labels,
            &test_sizes,
            seed,
            Purpose::TestFeatures,
            Purpose::TestNoise,
        )?)
    } else {
        None
    };
    Ok(SyntheticData {
        setting: setting.into(),
        seed,
        params: params.clone(),
        train,
        test,
        variances: model.variances,
    })
}

/// The client sizes `n_i` of a setting under `seed` (stream `Sizes`): the ordinary clients'
/// size law ([`SizeDist`]), then `large_clients` of `large_samples`, then `singleton_clients`
/// of one sample — the sizes [`generate`] uses.
pub fn draw_sizes(p: &SettingParams, seed: u64) -> Vec<usize> {
    let ordinary = p.clients - p.large_clients - p.singleton_clients;
    let mut rng = stream(seed, Purpose::Sizes, 0);
    let mut sizes: Vec<usize> = (0..ordinary)
        .map(|_| match p.sizes {
            SizeDist::Fixed => p.samples,
            SizeDist::Lognormal => {
                let z: f64 = rng.sample(StandardNormal);
                let s = p.size_spread;
                let n = (p.samples as f64 * (s * z - 0.5 * s * s).exp()).round();
                (n.max(0.0) as usize).clamp(p.size_min, p.size_max)
            }
            SizeDist::Zipf => {
                // Zipf::new only fails for n < 1 or s < 0, both excluded by `check`.
                let z =
                    Zipf::new(p.size_max as f64, p.size_spread).map_or(1.0, |z| z.sample(&mut rng));
                (z as usize).max(p.size_min)
            }
        })
        .collect();
    sizes.extend(std::iter::repeat_n(p.large_samples, p.large_clients));
    sizes.extend(std::iter::repeat_n(1, p.singleton_clients));
    sizes
}

/// The hidden labels `z_i` of a setting under `seed` by its [`LabelRule`] (`iid`: stream
/// `Labels`, inverse CDF of `p`) — the labels [`generate`] uses.
pub fn draw_labels(p: &SettingParams, seed: u64) -> Vec<usize> {
    let m = p.clients;
    match p.labels {
        LabelRule::Blocks => (0..m).map(|i| i * p.k / m).collect(),
        LabelRule::Modulo => (0..m).map(|i| i % p.k).collect(),
        LabelRule::Iid => {
            let probs = p.probabilities();
            let mut rng = stream(seed, Purpose::Labels, 0);
            (0..m)
                .map(|_| inverse_cdf(&probs, rng.random::<f64>()))
                .collect()
        }
    }
}

/// Smallest `j` with `u < p_1 + … + p_j` (the last category absorbs rounding).
fn inverse_cdf(probs: &[f64], u: f64) -> usize {
    let mut acc = 0.0;
    for (j, &q) in probs.iter().enumerate() {
        acc += q;
        if u < acc {
            return j;
        }
    }
    probs.len() - 1
}

fn draw_theta_star(p: &SettingParams, seed: u64) -> Result<DMatrix<f64>> {
    let mut rng = stream(seed, Purpose::ThetaStar, 0);
    let d = p.d;
    let mut theta = DMatrix::zeros(d, p.k);
    for j in 0..p.k {
        let mut col = theta.column_mut(j);
        match p.theta {
            ThetaDist::Gaussian => {
                let scale = p.r / (d as f64).sqrt();
                col.iter_mut()
                    .for_each(|v| *v = scale * rng.sample::<f64, _>(StandardNormal));
            }
            ThetaDist::Bernoulli => {
                col.iter_mut()
                    .for_each(|v| *v = if rng.random_bool(0.5) { p.r } else { 0.0 });
            }
            ThetaDist::BernoulliRescaled => {
                // Redraw an all-zero vector (probability 2^-d), which cannot be rescaled.
                let mut ones = 0usize;
                for _ in 0..1000 {
                    col.iter_mut()
                        .for_each(|v| *v = if rng.random_bool(0.5) { 1.0 } else { 0.0 });
                    ones = col.iter().filter(|v| **v > 0.0).count();
                    if ones > 0 {
                        break;
                    }
                }
                if ones == 0 {
                    return Err(FedmixError::invalid(
                        "d",
                        d,
                        "bernoulli-rescaled drew only zero vectors",
                    ));
                }
                col.iter_mut()
                    .for_each(|v| *v *= p.r / (ones as f64).sqrt());
            }
        }
    }
    Ok(theta)
}

/// Per-cluster diagonal covariances `diag Σ_j ~ U[cov_min, cov_max]^d`, `d × k` (column-major
/// draws from stream `Covariance`).
fn draw_variances(p: &SettingParams, seed: u64) -> Option<DMatrix<f64>> {
    if p.covariance == Covariance::Identity {
        return None;
    }
    let mut rng = stream(seed, Purpose::Covariance, 0);
    Some(DMatrix::from_fn(p.d, p.k, |_, _| {
        rng.random_range(p.cov_min..=p.cov_max)
    }))
}

/// A mixture of `k` linear regressions with every parameter fixed: `θ*` (`d × k`), the
/// per-cluster diagonal covariances `Σ_j`, the noise scale `σ` and the feature map — the law
/// from which [`generate`] draws every client, once its setting's `θ*` and `Σ_j` are drawn
/// ([`Model::draw`]). Given labels and sizes, [`Model::federation`] draws client `i`'s
/// features from stream `(Features, i)` and its noise from `(Noise, i)`:
/// `φ_i = Σ_{z_i}^{1/2} g` with `g ~ N(0, I_d)` (or the polynomial map of `u ~ U(−1, 1)`), and
/// `y = ⟨φ, θ*_{z_i}⟩ + σ ξ`, `ξ ~ N(0, 1)`.
#[derive(Clone, Debug)]
pub struct Model {
    theta_star: DMatrix<f64>,
    variances: Option<DMatrix<f64>>,
    sd: Option<DMatrix<f64>>,
    sigma: f64,
    feature_map: FeatureMap,
    /// The scale of `θ*` an overflow error names: the setting's `r`, or `max |θ*|` when given.
    r: f64,
}

impl Model {
    /// A model from given parts: `theta_star` is `d × k`; `variances`, when given, the
    /// diagonals of `Σ_j` (`d × k`, finite and > 0; `None` = `Σ_j = I`); `sigma` finite ≥ 0.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the part: an empty or non-finite `θ*`, variances
    /// of another shape or not finite and positive, `σ` negative or not finite, or variances
    /// with the polynomial feature map (whose features are not Gaussian).
    pub fn new(
        theta_star: DMatrix<f64>,
        variances: Option<DMatrix<f64>>,
        sigma: f64,
        feature_map: FeatureMap,
    ) -> Result<Self> {
        let (d, k) = theta_star.shape();
        if d == 0 || k == 0 || theta_star.iter().any(|v| !v.is_finite()) {
            return Err(FedmixError::invalid(
                "theta_star",
                format!("{d} × {k}"),
                "must be non-empty and finite",
            ));
        }
        nonneg_finite("sigma", sigma)?;
        if let Some(v) = &variances {
            if v.shape() != (d, k) || v.iter().any(|c| !(c.is_finite() && *c > 0.0)) {
                return Err(FedmixError::invalid(
                    "variances",
                    format!("{} × {}", v.nrows(), v.ncols()),
                    format!("must be {d} × {k}, finite and > 0"),
                ));
            }
            if feature_map == FeatureMap::Polynomial {
                return Err(FedmixError::invalid(
                    "variances",
                    "given",
                    "apply to feature_map=identity only",
                ));
            }
        }
        let r = theta_star.amax();
        Ok(Self::from_checked(
            theta_star,
            variances,
            sigma,
            feature_map,
            r,
        ))
    }

    fn from_checked(
        theta_star: DMatrix<f64>,
        variances: Option<DMatrix<f64>>,
        sigma: f64,
        feature_map: FeatureMap,
        r: f64,
    ) -> Self {
        let sd = variances.as_ref().map(|v| v.map(f64::sqrt));
        Self {
            theta_star,
            variances,
            sd,
            sigma,
            feature_map,
            r,
        }
    }

    /// The model of setting `params` under `seed`: `θ*` (stream `ThetaStar`, by [`ThetaDist`])
    /// and `Σ_j` (stream `Covariance`, by [`Covariance`]) exactly as [`generate`] draws them.
    ///
    /// # Errors
    /// Whatever [`SettingParams::check`] reports.
    pub fn draw(params: &SettingParams, seed: u64) -> Result<Self> {
        params.check()?;
        Self::draw_checked(params, seed)
    }

    fn draw_checked(params: &SettingParams, seed: u64) -> Result<Self> {
        Ok(Self::from_checked(
            draw_theta_star(params, seed)?,
            draw_variances(params, seed),
            params.sigma,
            params.feature_map,
            params.r,
        ))
    }

    /// `θ*` (`d × k`, column `j` is `θ*_j`).
    pub fn theta_star(&self) -> &DMatrix<f64> {
        &self.theta_star
    }

    /// The diagonals of `Σ_j` (`d × k`); `None` when `Σ_j = I`.
    pub fn variances(&self) -> Option<&DMatrix<f64>> {
        self.variances.as_ref()
    }

    /// The noise scale `σ`.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The same model with noise scale `sigma` (finite ≥ 0).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] for a negative or non-finite `sigma`.
    pub fn with_sigma(mut self, sigma: f64) -> Result<Self> {
        nonneg_finite("sigma", sigma)?;
        self.sigma = sigma;
        Ok(self)
    }

    /// A federation of clients with the given `labels` and `sizes` under `seed`: client `i`'s
    /// features from stream `(seed, Features, i)`, its noise from `(seed, Noise, i)` — the
    /// draws [`generate`] makes for its training federation.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] when `labels` and `sizes` differ in length or a label
    /// is `≥ k`; overflow of a response; whatever [`Federation::new`] rejects (a size of 0).
    pub fn federation(&self, labels: &[usize], sizes: &[usize], seed: u64) -> Result<Federation> {
        let k = self.theta_star.ncols();
        if labels.len() != sizes.len() {
            return Err(FedmixError::invalid(
                "labels",
                labels.len(),
                format!("need one per client ({} sizes)", sizes.len()),
            ));
        }
        if let Some(&z) = labels.iter().find(|&&z| z >= k) {
            return Err(FedmixError::invalid(
                "labels",
                z,
                format!("must be < k = {k}"),
            ));
        }
        self.sample(labels, sizes, seed, Purpose::Features, Purpose::Noise)
    }

    fn sample(
        &self,
        labels: &[usize],
        sizes: &[usize],
        seed: u64,
        fp: Purpose,
        np: Purpose,
    ) -> Result<Federation> {
        let d = self.theta_star.nrows();
        let total: usize = sizes.iter().sum();
        let mut features = DMatrix::zeros(d, total);
        let mut responses = DVector::zeros(total);
        let mut off = 0;
        for (i, &n) in sizes.iter().enumerate() {
            let z = labels[i];
            // Client blocks of a column-major d × N matrix are contiguous slices.
            let block = &mut features.as_mut_slice()[off * d..(off + n) * d];
            self.fill_features(&mut stream(seed, fp, i as u64), z, block);
            let mut nrng = stream(seed, np, i as u64);
            let theta = self.theta_star.column(z);
            for (j, x) in block.chunks_exact(d).enumerate() {
                let signal: f64 = x.iter().zip(theta.iter()).map(|(a, b)| a * b).sum();
                let noise: f64 = nrng.sample(StandardNormal);
                let y = signal + self.sigma * noise;
                if !y.is_finite() {
                    // Overflow of f64 (e.g. r or σ near 1e308): name the scale, not the data.
                    let (name, value) = if signal.is_finite() {
                        ("sigma", self.sigma)
                    } else {
                        ("r", self.r)
                    };
                    return Err(FedmixError::invalid(
                        name,
                        format!("{value:e}"),
                        format!(
                            "the generated response of client {i}, sample {j} overflows f64 \
                             ({y}); use a smaller scale"
                        ),
                    ));
                }
                responses[off + j] = y;
            }
            off += n;
        }
        Federation::new(FederationParts {
            features,
            responses,
            sizes: sizes.to_vec(),
            labels: Some(labels.to_vec()),
            theta_star: Some(self.theta_star.clone()),
            k: Some(self.theta_star.ncols()),
        })
    }

    /// Fill one client's samples (sample-major: `d` coordinates of sample 0, then sample 1, …).
    fn fill_features(&self, rng: &mut Rng, z: usize, block: &mut [f64]) {
        let d = self.theta_star.nrows();
        match self.feature_map {
            FeatureMap::Identity => {
                block
                    .iter_mut()
                    .for_each(|v| *v = rng.sample(StandardNormal));
                if let Some(sd) = &self.sd {
                    let sd = sd.column(z);
                    for x in block.chunks_exact_mut(d) {
                        x.iter_mut().zip(sd.iter()).for_each(|(v, s)| *v *= s);
                    }
                }
            }
            FeatureMap::Polynomial => {
                for x in block.chunks_exact_mut(d) {
                    let u: f64 = rng.random_range(-1.0..=1.0);
                    let mut pow = 1.0;
                    for v in x.iter_mut() {
                        *v = pow;
                        pow *= u;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(m: &DMatrix<f64>) -> Vec<u64> {
        m.iter().map(|v| v.to_bits()).collect()
    }

    /// The model, labels and sizes of a setting, sampled with [`Model::federation`], are
    /// [`generate`]'s training federation bit for bit (one sampler for both).
    #[test]
    fn model_federation_is_generate_bit_for_bit() {
        for (name, pairs) in [
            ("sxy-unbalanced-both", vec![("d", "7"), ("clients", "60")]),
            (
                "sxy-balanced",
                vec![
                    ("d", "5"),
                    ("covariance", "diagonal"),
                    ("sizes", "lognormal"),
                ],
            ),
            ("ifca-linear", vec![("d", "9"), ("clients", "10")]),
            (
                "srfca-linear",
                vec![("d", "4"), ("feature_map", "polynomial")],
            ),
        ] {
            let data = generate_named(name, 5, &sets(&pairs)).unwrap();
            let model = Model::draw(&data.params, 5).unwrap();
            let fed = model
                .federation(
                    &draw_labels(&data.params, 5),
                    &draw_sizes(&data.params, 5),
                    5,
                )
                .unwrap();
            assert_eq!(bits(fed.features()), bits(data.train.features()), "{name}");
            let (a, b) = (fed.responses(), data.train.responses());
            assert!(a
                .iter()
                .zip(b.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits()));
            assert_eq!(fed.sizes(), data.train.sizes());
            assert_eq!(fed.labels(), data.train.labels());
            assert_eq!(
                model.variances().map(bits),
                data.variances.as_ref().map(bits)
            );
        }
    }

    #[test]
    fn model_parts_are_validated() {
        let ts = DMatrix::from_element(3, 2, 1.0);
        let id = FeatureMap::Identity;
        let bad_var = Some(DMatrix::from_element(3, 2, 0.0));
        let wrong_shape = Some(DMatrix::from_element(2, 2, 1.0));
        let ok_var = Some(DMatrix::from_element(3, 2, 2.0));
        for (what, r) in [
            ("variances", Model::new(ts.clone(), bad_var, 0.1, id)),
            ("variances", Model::new(ts.clone(), wrong_shape, 0.1, id)),
            ("sigma", Model::new(ts.clone(), None, -1.0, id)),
            ("sigma", Model::new(ts.clone(), None, f64::NAN, id)),
            (
                "theta_star",
                Model::new(DMatrix::zeros(0, 2), None, 0.1, id),
            ),
            (
                "variances",
                Model::new(ts.clone(), ok_var.clone(), 0.1, FeatureMap::Polynomial),
            ),
        ] {
            match r {
                Err(FedmixError::InvalidParameter { name, .. }) => assert_eq!(name, what),
                other => panic!("{what}: {other:?}"),
            }
        }
        let m = Model::new(ts, ok_var, 0.1, id).unwrap();
        assert!(m.federation(&[0, 2], &[3, 3], 1).is_err(), "label ≥ k");
        assert!(m.federation(&[0], &[3, 3], 1).is_err(), "lengths differ");
        assert!(m.federation(&[0, 1], &[3, 0], 1).is_err(), "empty client");
        let fed = m.federation(&[0, 1], &[3, 12], 1).unwrap();
        assert_eq!(fed.sizes(), vec![3, 12]);
        assert_eq!(
            m.clone().with_sigma(0.5).unwrap().sigma().to_bits(),
            0.5f64.to_bits()
        );
        assert!(m.with_sigma(-0.5).is_err());
    }

    /// Given variances scale the features exactly: the same seed with `Σ_j = cI` draws the
    /// identity model's standard normals times `√c` (per client stream, cluster by label).
    #[test]
    fn given_variances_scale_the_standard_normals() {
        let ts = DMatrix::from_fn(4, 2, |r, c| (r + c) as f64);
        let var = DMatrix::from_fn(4, 2, |_, c| if c == 0 { 4.0 } else { 9.0 });
        let id = Model::new(ts.clone(), None, 0.0, FeatureMap::Identity).unwrap();
        let scaled = Model::new(ts, Some(var), 0.0, FeatureMap::Identity).unwrap();
        let (labels, sizes) = ([1, 0, 1], [2, 5, 3]);
        let a = id.federation(&labels, &sizes, 3).unwrap();
        let b = scaled.federation(&labels, &sizes, 3).unwrap();
        for (i, &z) in labels.iter().enumerate() {
            let factor = if z == 0 { 2.0 } else { 3.0 };
            let want = a.x(i) * factor;
            assert_eq!(bits(&b.x(i).into_owned()), bits(&want), "client {i}");
        }
    }
}
