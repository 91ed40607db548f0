//! The validated data model: a federation of `M` clients, client `i` holding `φ(x_i) ∈ R^{n_i×d}`
//! and `y_i ∈ R^{n_i}` (SXY22 eq. 1), optionally the hidden labels `z_i` and the true models `θ*`.
//!
//! Storage: all feature vectors live in one column-major `d × N` matrix whose column `j` is
//! `φ(x_j)`; client `i` owns the contiguous column block `offsets[i]..offsets[i+1]`. Client
//! blocks are therefore contiguous in memory (the layout of `features.npy`, `N × d` in C order),
//! and `φ_i θ = X_iᵀ θ`, `φ_iᵀ r = X_i r` are plain matrix–vector products on a view.
//!
//! Models are stored as `d × k` matrices whose column `j` is `θ_j` (the same bytes as a `k × d`
//! C-order numpy array).

use crate::error::{FedmixError, Result};
use nalgebra::{DMatrix, DMatrixView, DVector, DVectorView};
use rayon::prelude::*;
use std::sync::OnceLock;

/// A validated federation. Construction ([`Federation::new`]) checks every invariant once.
#[derive(Clone, Debug, PartialEq)]
pub struct Federation {
    features: DMatrix<f64>,
    responses: DVector<f64>,
    offsets: Vec<usize>,
    labels: Option<Vec<usize>>,
    theta_star: Option<DMatrix<f64>>,
    k: Option<usize>,
    /// Quantities derived from the data alone, computed on first use.
    derived: Derived,
}

/// What [`Federation`] computes from its (immutable) data once and keeps: SXY22 §4.2's largest
/// per-client curvature, which the step rule, each phase's parameter check and the run summary
/// all ask for, at one `O(min(n_i, d)³)` eigenvalue problem per client.
#[derive(Clone, Debug, Default)]
struct Derived {
    max_curvature: OnceLock<(f64, usize)>,
}

/// Derived data never distinguishes two federations: it is a function of the rest.
impl PartialEq for Derived {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Everything needed to build a [`Federation`], before validation.
#[derive(Clone, Debug, Default)]
pub struct FederationParts {
    /// `d × N`, column `j` = `φ(x_j)`, clients stacked in order.
    pub features: DMatrix<f64>,
    /// `N` responses in the same order.
    pub responses: DVector<f64>,
    /// `n_i` for each client.
    pub sizes: Vec<usize>,
    /// Optional true labels `z_i ∈ 0..k`.
    pub labels: Option<Vec<usize>>,
    /// Optional true models, `d × k`.
    pub theta_star: Option<DMatrix<f64>>,
    /// Number of clusters when known (required when labels or `θ*` are given).
    pub k: Option<usize>,
}

impl Federation {
    /// Validate `parts` and build a federation.
    ///
    /// # Errors
    /// [`FedmixError::NoClients`], [`FedmixError::EmptyClient`] (`n_i = 0`),
    /// [`FedmixError::DimensionMismatch`] (sizes vs columns, responses, labels, `θ*`),
    /// [`FedmixError::NonFinite`] (naming client, sample and coordinate),
    /// [`FedmixError::LabelOutOfRange`], [`FedmixError::InvalidParameter`] (`d = 0`, `k = 0`).
    pub fn new(parts: FederationParts) -> Result<Self> {
        let FederationParts {
            features,
            responses,
            sizes,
            labels,
            theta_star,
            k,
        } = parts;
        if sizes.is_empty() {
            return Err(FedmixError::NoClients);
        }
        if features.nrows() == 0 {
            return Err(FedmixError::invalid(
                "d",
                0,
                "the dimension must be at least 1",
            ));
        }
        if let Some(client) = sizes.iter().position(|&n| n == 0) {
            return Err(FedmixError::EmptyClient { client });
        }
        let offsets = offsets_of(&sizes);
        let total = *offsets.last().unwrap_or(&0);
        mismatch("feature columns (N)", total, features.ncols())?;
        mismatch("responses (N)", total, responses.len())?;
        if k == Some(0) {
            return Err(FedmixError::invalid(
                "k",
                0,
                "the number of clusters must be at least 1",
            ));
        }
        let fed = Self {
            features,
            responses,
            offsets,
            labels,
            theta_star,
            k,
            derived: Derived::default(),
        };
        fed.check_finite()?;
        fed.check_labels()?;
        fed.check_theta_star()?;
        Ok(fed)
    }

    fn check_finite(&self) -> Result<()> {
        let d = self.d();
        if let Some(pos) = self.features.iter().position(|v| !v.is_finite()) {
            let (row, col) = (pos % d, pos / d);
            let client = self.client_of_sample(col);
            return Err(FedmixError::NonFinite {
                field: "features".into(),
                location: format!(
                    "client {client}, sample {}, coordinate {row}",
                    col - self.offsets[client]
                ),
                value: self.features[pos],
            });
        }
        if let Some(col) = self.responses.iter().position(|v| !v.is_finite()) {
            let client = self.client_of_sample(col);
            return Err(FedmixError::NonFinite {
                field: "responses".into(),
                location: format!("client {client}, sample {}", col - self.offsets[client]),
                value: self.responses[col],
            });
        }
        Ok(())
    }

    fn check_labels(&self) -> Result<()> {
        let Some(labels) = &self.labels else {
            return Ok(());
        };
        mismatch("labels (M)", self.num_clients(), labels.len())?;
        let k = self.k.ok_or_else(|| FedmixError::Missing {
            what: "k (needed with labels)".into(),
        })?;
        match labels.iter().position(|&z| z >= k) {
            Some(client) => Err(FedmixError::LabelOutOfRange {
                client,
                label: labels[client],
                k,
            }),
            None => Ok(()),
        }
    }

    fn check_theta_star(&self) -> Result<()> {
        let Some(ts) = &self.theta_star else {
            return Ok(());
        };
        mismatch("theta_star rows (d)", self.d(), ts.nrows())?;
        let k = self.k.ok_or_else(|| FedmixError::Missing {
            what: "k (needed with theta_star)".into(),
        })?;
        mismatch("theta_star columns (k)", k, ts.ncols())?;
        if let Some(pos) = ts.iter().position(|v| !v.is_finite()) {
            return Err(FedmixError::NonFinite {
                field: "theta_star".into(),
                location: format!("cluster {}, coordinate {}", pos / self.d(), pos % self.d()),
                value: ts[pos],
            });
        }
        Ok(())
    }

    /// Client owning global sample index `col`.
    fn client_of_sample(&self, col: usize) -> usize {
        self.offsets.partition_point(|&o| o <= col) - 1
    }

    /// Dimension `d`.
    pub fn d(&self) -> usize {
        self.features.nrows()
    }
    /// Number of clients `M`.
    pub fn num_clients(&self) -> usize {
        self.offsets.len() - 1
    }
    /// Total number of samples `N = Σ n_i`.
    pub fn total_samples(&self) -> usize {
        self.features.ncols()
    }
    /// Number of clusters, when known.
    pub fn k(&self) -> Option<usize> {
        self.k
    }
    /// `n_i`.
    pub fn n(&self, client: usize) -> usize {
        self.offsets[client + 1] - self.offsets[client]
    }
    /// All client sizes.
    pub fn sizes(&self) -> Vec<usize> {
        self.offsets.windows(2).map(|w| w[1] - w[0]).collect()
    }
    /// Offsets into the stacked sample order (`M + 1` entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
    /// `φ(x_i)ᵀ` as a `d × n_i` view (column `j` is `φ(x_ij)`).
    pub fn x(&self, client: usize) -> DMatrixView<'_, f64> {
        self.features.columns(self.offsets[client], self.n(client))
    }
    /// Client `i`'s curvature `‖φ(x_i)‖₂² / n_i` (the spectral norm squared, SXY22 §4.2): the
    /// largest eigenvalue of the smaller of the two Gram matrices `X_i X_iᵀ` (`d × d`) and
    /// `X_iᵀ X_i` (`n_i × n_i`), which share their non-zero eigenvalues.
    pub fn client_curvature(&self, client: usize) -> f64 {
        let x = self.x(client);
        let gram = if x.nrows() <= x.ncols() {
            x * x.transpose()
        } else {
            x.tr_mul(&x)
        };
        // Eigenvalues only: nalgebra's implicit QR computes the same diagonal whether or not it
        // also accumulates the eigenvectors (bit for bit; tested).
        let lmax = gram.symmetric_eigenvalues().max();
        lmax / self.n(client) as f64
    }

    /// `(max_i ‖φ(x_i)‖₂² / n_i, the first client attaining it)`, computed once per federation
    /// (clients in parallel, the maximum taken in client order: the same bits whatever the
    /// thread count).
    pub fn max_curvature(&self) -> (f64, usize) {
        *self.derived.max_curvature.get_or_init(|| {
            let curv: Vec<f64> = (0..self.num_clients())
                .into_par_iter()
                .map(|i| self.client_curvature(i))
                .collect();
            let arg = curv
                .iter()
                .enumerate()
                .fold(0, |b, (i, c)| if *c > curv[b] { i } else { b });
            (curv[arg], arg)
        })
    }

    /// `y_i` as a view.
    pub fn y(&self, client: usize) -> DVectorView<'_, f64> {
        self.responses.rows(self.offsets[client], self.n(client))
    }
    /// All features, `d × N`.
    pub fn features(&self) -> &DMatrix<f64> {
        &self.features
    }
    /// All responses.
    pub fn responses(&self) -> &DVector<f64> {
        &self.responses
    }
    /// True labels, when known.
    pub fn labels(&self) -> Option<&[usize]> {
        self.labels.as_deref()
    }
    /// True models `θ*` (`d × k`), when known.
    pub fn theta_star(&self) -> Option<&DMatrix<f64>> {
        self.theta_star.as_ref()
    }
    /// True labels or a [`FedmixError::Missing`] error naming `what` needs them.
    pub fn require_labels(&self, what: &str) -> Result<&[usize]> {
        self.labels().ok_or_else(|| FedmixError::Missing {
            what: format!("true labels (for {what})"),
        })
    }
    /// `θ*` or a [`FedmixError::Missing`] error naming `what` needs it.
    pub fn require_theta_star(&self, what: &str) -> Result<&DMatrix<f64>> {
        self.theta_star().ok_or_else(|| FedmixError::Missing {
            what: format!("theta_star (for {what})"),
        })
    }

    /// A federation made of a subset of the clients (in the given order), keeping `θ*` and `k`.
    ///
    /// # Errors
    /// [`FedmixError::DimensionMismatch`] for a client index out of range, and whatever
    /// [`Federation::new`] reports (e.g. an empty subset).
    pub fn subset(&self, clients: &[usize]) -> Result<Self> {
        if let Some(&bad) = clients.iter().find(|&&i| i >= self.num_clients()) {
            return Err(FedmixError::DimensionMismatch {
                what: "client index in subset (must be < M)".into(),
                expected: self.num_clients(),
                found: bad,
            });
        }
        let sizes: Vec<usize> = clients.iter().map(|&i| self.n(i)).collect();
        let total: usize = sizes.iter().sum();
        let mut features = DMatrix::zeros(self.d(), total);
        let mut responses = DVector::zeros(total);
        let mut off = 0;
        for &i in clients {
            let n = self.n(i);
            features.columns_mut(off, n).copy_from(&self.x(i));
            responses.rows_mut(off, n).copy_from(&self.y(i));
            off += n;
        }
        Self::new(FederationParts {
            features,
            responses,
            sizes,
            labels: self
                .labels
                .as_ref()
                .map(|l| clients.iter().map(|&i| l[i]).collect()),
            theta_star: self.theta_star.clone(),
            k: self.k,
        })
    }
}

/// Prefix sums of `sizes`, starting at 0.
pub fn offsets_of(sizes: &[usize]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(sizes.len() + 1);
    offsets.push(0);
    let mut acc = 0usize;
    for &n in sizes {
        acc += n;
        offsets.push(acc);
    }
    offsets
}

fn mismatch(what: &str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(FedmixError::DimensionMismatch {
            what: what.into(),
            expected,
            found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> FederationParts {
        FederationParts {
            features: DMatrix::from_fn(2, 5, |r, c| (r + 2 * c) as f64),
            responses: DVector::from_fn(5, |i, _| i as f64),
            sizes: vec![2, 3],
            labels: Some(vec![0, 1]),
            theta_star: Some(DMatrix::zeros(2, 2)),
            k: Some(2),
        }
    }

    #[test]
    fn valid_federation_views() {
        let f = Federation::new(parts()).unwrap();
        assert_eq!(f.num_clients(), 2);
        assert_eq!(f.x(1).ncols(), 3);
        assert_eq!(f.x(1)[(0, 0)].to_bits(), 4f64.to_bits());
        assert_eq!(f.y(1)[2].to_bits(), 4f64.to_bits());
    }

    #[test]
    fn rejects_each_invariant() {
        let mut p = parts();
        p.sizes = vec![2, 0, 3];
        assert!(matches!(
            Federation::new(p),
            Err(FedmixError::EmptyClient { client: 1 })
        ));
        let mut p = parts();
        p.features[(1, 3)] = f64::NAN;
        let e = Federation::new(p).unwrap_err().to_string();
        assert!(e.contains("client 1, sample 1, coordinate 1"), "{e}");
        let mut p = parts();
        p.responses[0] = f64::INFINITY;
        assert!(matches!(
            Federation::new(p),
            Err(FedmixError::NonFinite { .. })
        ));
        let mut p = parts();
        p.labels = Some(vec![0, 2]);
        assert!(matches!(
            Federation::new(p),
            Err(FedmixError::LabelOutOfRange { client: 1, .. })
        ));
        let mut p = parts();
        p.theta_star = Some(DMatrix::zeros(3, 2));
        assert!(matches!(
            Federation::new(p),
            Err(FedmixError::DimensionMismatch { .. })
        ));
        let mut p = parts();
        p.sizes = vec![];
        assert!(matches!(Federation::new(p), Err(FedmixError::NoClients)));
    }

    /// The curvature is the largest eigenvalue of the smaller Gram matrix over `n_i`, computed
    /// eigenvalues-only with the same bits as the full decomposition (which it replaced); the
    /// cached maximum is the first client attaining it and survives a clone; a clone with the
    /// cache filled equals one without.
    #[test]
    fn curvature_by_the_full_decomposition_and_its_cached_maximum() {
        use nalgebra::SymmetricEigen;
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        // Client sizes on both sides of d = 6 (n_i × n_i and d × d Gram matrices), and two
        // clients with the same data (a tie for the maximum).
        let sizes = [2usize, 6, 9, 4, 9];
        let d = 6;
        let n: usize = sizes.iter().sum();
        let mut features = DMatrix::from_fn(d, n, |_, _| rng.random_range(-1.0..1.0));
        let (a, b) = (2 + 6, 2 + 6 + 9 + 4);
        for c in 0..9 {
            let col = features.column(a + c).clone_owned();
            features.set_column(b + c, &col);
        }
        // Scale client 2 (and its copy, client 4) up so that they attain the maximum.
        features.columns_mut(a, 9).scale_mut(3.0);
        features.columns_mut(b, 9).scale_mut(3.0);
        let fed = Federation::new(FederationParts {
            features,
            responses: DVector::zeros(n),
            sizes: sizes.to_vec(),
            ..FederationParts::default()
        })
        .unwrap();
        for i in 0..sizes.len() {
            let x = fed.x(i);
            let gram = if x.nrows() <= x.ncols() {
                x * x.transpose()
            } else {
                x.tr_mul(&x)
            };
            let full = SymmetricEigen::new(gram.clone()).eigenvalues.max() / fed.n(i) as f64;
            assert_eq!(
                fed.client_curvature(i).to_bits(),
                full.to_bits(),
                "client {i}"
            );
            // By hand: the spectral norm squared over n_i, from the d × d Gram matrix too.
            let by_d = SymmetricEigen::new(x * x.transpose()).eigenvalues.max() / fed.n(i) as f64;
            assert!(
                (fed.client_curvature(i) - by_d).abs() <= 1e-12 * by_d,
                "client {i}"
            );
        }
        let plain = fed.clone();
        let (c, arg) = fed.max_curvature();
        assert_eq!(arg, 2, "the first of the two clients attaining the maximum");
        assert_eq!(c.to_bits(), fed.client_curvature(2).to_bits());
        assert_eq!(fed.client_curvature(4).to_bits(), c.to_bits());
        assert!((0..sizes.len()).all(|i| fed.client_curvature(i) <= c));
        assert_eq!(fed.clone().max_curvature(), (c, arg));
        assert_eq!(plain, fed);
    }
}
