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

mod setting;
use setting::nonneg_finite;
pub use setting::{
    Covariance, FeatureMap, LabelRule, SettingParams, SizeDist, ThetaDist, MAX_DATA_BYTES,
    PARAMETERS, SETTINGS,
};

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
