//! A synthetic setting's parameters: the named settings of the papers' experiments
//! ([`SETTINGS`]), every parameter by its public name ([`PARAMETERS`]), their laws (sizes,
//! labels, `θ*`, feature map, covariances) and the checks a setting must pass before anything is
//! drawn ([`SettingParams::check`]).

use crate::error::{FedmixError, Result};
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

pub(super) fn nonneg_finite(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(FedmixError::invalid(name, v, "must be finite and ≥ 0"))
    }
}
