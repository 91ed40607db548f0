//! The dataset directory format (version 1), readable by numpy alone:
//!
//! | file | dtype | shape | content |
//! |---|---|---|---|
//! | `manifest.json` | JSON | | [`Manifest`]: format version, setting, seed, k, d, M, sizes, parameters |
//! | `features.npy` | `<f8` | `N × d` | `φ(x_ij)`, clients stacked in order, C order |
//! | `responses.npy` | `<f8` | `N` | `y_ij` |
//! | `client_sizes.npy` | `<i8` | `M` | `n_i` |
//! | `labels.npy` (optional) | `<i8` | `M` | true cluster `z_i ∈ 0..k` |
//! | `theta_star.npy` (optional) | `<f8` | `k × d` | row `j` is `θ*_j` |
//! | `test_features.npy`, `test_responses.npy`, `test_client_sizes.npy` (optional) | | | held-out samples of the same clients |
//!
//! `manifest.json` is written last, so a directory without it is an incomplete write.

use super::npy::{read_f64, read_i64, write_f64, write_i64};
use super::write_json;
use crate::error::{FedmixError, Result};
use crate::federation::{Federation, FederationParts};
use crate::synthetic::{SettingParams, SyntheticData};
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Newest format version this fedmix reads and the one it writes.
pub const FORMAT_VERSION: u32 = 1;

/// Contents of `manifest.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `"fedmix-dataset"`.
    pub format: String,
    /// Format version (see [`FORMAT_VERSION`]).
    pub format_version: u32,
    /// Synthetic setting name, or `null` for external data.
    pub setting: Option<String>,
    /// Master seed of a synthetic data set.
    pub seed: Option<u64>,
    /// Number of clusters, when known.
    pub k: Option<usize>,
    /// Dimension.
    pub d: usize,
    /// Number of clients `M`.
    pub clients: usize,
    /// `N`.
    pub total_samples: usize,
    /// `n_i`.
    pub sizes: Vec<usize>,
    /// Generator parameters of a synthetic data set.
    pub parameters: Option<SettingParams>,
    /// Whether `labels.npy` is present.
    pub has_labels: bool,
    /// Whether `theta_star.npy` is present.
    pub has_theta_star: bool,
    /// Held-out samples per client (`test_*.npy`), when present.
    pub test_sizes: Option<Vec<usize>>,
}

/// A dataset read from or written to disk.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The manifest.
    pub manifest: Manifest,
    /// Training federation.
    pub train: Federation,
    /// Held-out samples, when present.
    pub test: Option<Federation>,
}

impl From<SyntheticData> for Dataset {
    fn from(s: SyntheticData) -> Self {
        let fed = &s.train;
        let manifest = Manifest {
            format: "fedmix-dataset".into(),
            format_version: FORMAT_VERSION,
            setting: Some(s.setting.clone()),
            seed: Some(s.seed),
            k: fed.k(),
            d: fed.d(),
            clients: fed.num_clients(),
            total_samples: fed.total_samples(),
            sizes: fed.sizes(),
            parameters: Some(s.params.clone()),
            has_labels: fed.labels().is_some(),
            has_theta_star: fed.theta_star().is_some(),
            test_sizes: s.test.as_ref().map(Federation::sizes),
        };
        Dataset {
            manifest,
            train: s.train,
            test: s.test,
        }
    }
}

fn to_i64(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

fn write_samples(dir: &Path, prefix: &str, fed: &Federation) -> Result<()> {
    let (n, d) = (fed.total_samples(), fed.d());
    write_f64(
        &dir.join(format!("{prefix}features.npy")),
        &[n, d],
        fed.features().as_slice(),
    )?;
    write_f64(
        &dir.join(format!("{prefix}responses.npy")),
        &[n],
        fed.responses().as_slice(),
    )?;
    write_i64(
        &dir.join(format!("{prefix}client_sizes.npy")),
        &[fed.num_clients()],
        &to_i64(&fed.sizes()),
    )
}

/// Write `data` into directory `dir` (created if needed); `manifest.json` goes last.
///
/// # Errors
/// [`FedmixError::Output`] / [`FedmixError::Io`].
pub fn write_dataset(dir: &Path, data: &Dataset) -> Result<()> {
    super::prepare_output_dir(dir)?;
    // Overwriting a dataset: the manifest goes first (a directory without one is incomplete)
    // and optional files this dataset lacks must not survive from the previous one.
    for stale in [
        "manifest.json",
        "labels.npy",
        "theta_star.npy",
        "test_features.npy",
        "test_responses.npy",
        "test_client_sizes.npy",
    ] {
        let p = dir.join(stale);
        if p.is_file() {
            std::fs::remove_file(&p).map_err(|e| FedmixError::io(&p, e))?;
        }
    }
    let fed = &data.train;
    write_samples(dir, "", fed)?;
    if let Some(labels) = fed.labels() {
        write_i64(&dir.join("labels.npy"), &[labels.len()], &to_i64(labels))?;
    }
    if let Some(ts) = fed.theta_star() {
        write_f64(
            &dir.join("theta_star.npy"),
            &[ts.ncols(), ts.nrows()],
            ts.as_slice(),
        )?;
    }
    if let Some(test) = &data.test {
        write_samples(dir, "test_", test)?;
    }
    write_json(&dir.join("manifest.json"), &data.manifest)
}

/// Read and validate `dir/manifest.json`.
///
/// # Errors
/// Missing or malformed manifest, a version from the future, unknown fields, unknown setting,
/// inconsistent counts.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("manifest.json");
    if !path.exists() {
        return Err(FedmixError::MissingFile { path });
    }
    let text = std::fs::read_to_string(&path).map_err(|e| FedmixError::io(&path, e))?;
    parse_manifest(&text, &path)
}

/// Parse and validate manifest text (see [`read_manifest`]); `path` names it in errors.
///
/// # Errors
/// As [`read_manifest`].
pub fn parse_manifest(text: &str, path: &Path) -> Result<Manifest> {
    let path = path.to_path_buf();
    let malformed = |message: String| FedmixError::Malformed {
        path: path.clone(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    let version = value
        .get("format_version")
        .and_then(serde_json::Value::as_u64);
    match version {
        None => return Err(malformed("missing integer field `format_version`".into())),
        Some(v) if v > u64::from(FORMAT_VERSION) => {
            return Err(FedmixError::UnsupportedVersion {
                path,
                found: u32::try_from(v).unwrap_or(u32::MAX),
                supported: FORMAT_VERSION,
            })
        }
        Some(_) => {}
    }
    let m: Manifest = serde_json::from_value(value).map_err(|e| malformed(e.to_string()))?;
    check_manifest(&m, &path)?;
    Ok(m)
}

fn check_manifest(m: &Manifest, path: &Path) -> Result<()> {
    if m.format != "fedmix-dataset" {
        return Err(FedmixError::Malformed {
            path: path.into(),
            message: format!("format is `{}`, expected `fedmix-dataset`", m.format),
        });
    }
    if m.d == 0 {
        return Err(FedmixError::invalid(
            "d",
            0,
            "the dimension must be at least 1",
        ));
    }
    if m.k == Some(0) {
        return Err(FedmixError::invalid(
            "k",
            0,
            "the number of clusters must be at least 1",
        ));
    }
    if m.clients == 0 {
        return Err(FedmixError::NoClients);
    }
    if let Some(client) = m.sizes.iter().position(|&n| n == 0) {
        return Err(FedmixError::EmptyClient { client });
    }
    if m.sizes.len() != m.clients {
        return Err(FedmixError::DimensionMismatch {
            what: "manifest sizes vs clients".into(),
            expected: m.clients,
            found: m.sizes.len(),
        });
    }
    let total: u128 = m.sizes.iter().map(|&n| n as u128).sum();
    if total != m.total_samples as u128 {
        return Err(FedmixError::DimensionMismatch {
            what: "manifest total_samples vs sum of sizes".into(),
            expected: usize::try_from(total).unwrap_or(usize::MAX),
            found: m.total_samples,
        });
    }
    if let Some(name) = &m.setting {
        // Unknown setting names are rejected; parameters were already checked by serde.
        crate::synthetic::SettingParams::named(name)?;
    }
    Ok(())
}

fn read_samples(
    dir: &Path,
    prefix: &str,
    sizes: &[usize],
    d: usize,
) -> Result<(DMatrix<f64>, DVector<f64>)> {
    let n: usize = sizes.iter().sum();
    let sizes_path = dir.join(format!("{prefix}client_sizes.npy"));
    let (_, file_sizes) = read_i64(&sizes_path, &[Some(sizes.len())])?;
    if let Some(i) = file_sizes
        .iter()
        .zip(sizes)
        .position(|(a, &b)| *a != b as i64)
    {
        return Err(FedmixError::Malformed {
            path: sizes_path,
            message: format!(
                "client {i}: size {} disagrees with the manifest ({})",
                file_sizes[i], sizes[i]
            ),
        });
    }
    let (_, x) = read_f64(
        &dir.join(format!("{prefix}features.npy")),
        &[Some(n), Some(d)],
    )?;
    let (_, y) = read_f64(&dir.join(format!("{prefix}responses.npy")), &[Some(n)])?;
    Ok((DMatrix::from_vec(d, n, x), DVector::from_vec(y)))
}

/// Read a dataset directory, validating every array against the manifest, and build the
/// federation (which checks finiteness and labels).
///
/// # Errors
/// Any [`FedmixError`] naming the file, field or client at fault.
pub fn read_dataset(dir: &Path) -> Result<Dataset> {
    let m = read_manifest(dir)?;
    let (features, responses) = read_samples(dir, "", &m.sizes, m.d)?;
    let labels = if m.has_labels {
        let path = dir.join("labels.npy");
        let (_, l) = read_i64(&path, &[Some(m.clients)])?;
        let k = m.k.ok_or_else(|| FedmixError::Missing {
            what: "k in manifest (labels.npy present)".into(),
        })?;
        if let Some(client) = l.iter().position(|&z| z < 0 || z as u64 >= k as u64) {
            return Err(FedmixError::LabelOutOfRange {
                client,
                label: usize::try_from(l[client]).unwrap_or(usize::MAX),
                k,
            });
        }
        Some(l.into_iter().map(|z| z as usize).collect())
    } else {
        None
    };
    let theta_star = if m.has_theta_star {
        let k = m.k.ok_or_else(|| FedmixError::Missing {
            what: "k in manifest (theta_star.npy present)".into(),
        })?;
        let (_, t) = read_f64(&dir.join("theta_star.npy"), &[Some(k), Some(m.d)])?;
        Some(DMatrix::from_vec(m.d, k, t))
    } else {
        None
    };
    let train = Federation::new(FederationParts {
        features,
        responses,
        sizes: m.sizes.clone(),
        labels: labels.clone(),
        theta_star: theta_star.clone(),
        k: m.k,
    })?;
    let test = match &m.test_sizes {
        Some(ts) => {
            let (features, responses) = read_samples(dir, "test_", ts, m.d)?;
            Some(Federation::new(FederationParts {
                features,
                responses,
                sizes: ts.clone(),
                labels,
                theta_star,
                k: m.k,
            })?)
        }
        None => None,
    };
    Ok(Dataset {
        manifest: m,
        train,
        test,
    })
}
