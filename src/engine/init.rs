//! Starting models: the seeded random initialisation every algorithm shares and the checks of
//! a supplied start (`--init`).

use crate::engine::randomness::Supplied;
use crate::error::{FedmixError, Result};
use crate::seed_streams::{stream, Purpose};
use nalgebra::DMatrix;
use rand::RngExt;
use rand_distr::StandardNormal;

/// `θ₀ ~ N(0, scale² I_d / d)` columns from the Init stream (restart `index`).
pub fn random_init(d: usize, k: usize, scale: f64, seed: u64, index: u64) -> DMatrix<f64> {
    let mut rng = stream(seed, Purpose::Init, index);
    let s = scale / (d as f64).sqrt();
    // Column-major fill: model 0's coordinates first.
    DMatrix::from_iterator(
        d,
        k,
        (0..d * k).map(|_| s * rng.sample::<f64, _>(StandardNormal)),
    )
}

/// Check a `d × k` start: its shape, and every entry finite.
///
/// # Errors
/// [`FedmixError::DimensionMismatch`] for a wrong shape, [`FedmixError::NonFinite`].
pub fn check_init(init: &DMatrix<f64>, d: usize, k: usize) -> Result<()> {
    if init.nrows() != d {
        return Err(FedmixError::DimensionMismatch {
            what: "initial models: d".into(),
            expected: d,
            found: init.nrows(),
        });
    }
    if init.ncols() != k {
        return Err(FedmixError::DimensionMismatch {
            what: "initial models: k".into(),
            expected: k,
            found: init.ncols(),
        });
    }
    if init.iter().any(|v| !v.is_finite()) {
        return Err(FedmixError::NonFinite {
            field: "initial models".into(),
            location: "init".into(),
            value: f64::NAN,
        });
    }
    Ok(())
}

/// The single start a run without restarts takes from `--init`: exactly one `d × k` matrix.
///
/// # Errors
/// [`FedmixError::InvalidRandomness`] naming the file for several starts or a wrong `k`;
/// [`FedmixError::DimensionMismatch`] for a wrong `d`.
pub fn single_init(s: &Supplied<Vec<DMatrix<f64>>>, d: usize, k: usize) -> Result<DMatrix<f64>> {
    let bad = |reason: String| FedmixError::InvalidRandomness {
        path: s.source.clone(),
        field: "init".into(),
        reason,
    };
    match s.value.as_slice() {
        [m] if m.ncols() == k => {
            check_init(m, d, k)?;
            Ok(m.clone())
        }
        [m] => Err(bad(format!(
            "{} models, but this run starts from {k} (shape must be {k} × {d})",
            m.ncols()
        ))),
        many => Err(bad(format!(
            "{} starts (restarts × k × d), but this algorithm has one start ({k} × {d})",
            many.len()
        ))),
    }
}
