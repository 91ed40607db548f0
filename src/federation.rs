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

/// A validated federation. Construction ([`Federation::new`]) checks every invariant once.
#[derive(Clone, Debug, PartialEq)]
pub struct Federation {
    features: DMatrix<f64>,
    responses: DVector<f64>,
    offsets: Vec<usize>,
    labels: Option<Vec<usize>>,
    theta_star: Option<DMatrix<f64>>,
    k: Option<usize>,
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
}
