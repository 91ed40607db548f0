//! Shared by the integration tests that run algorithms on the golden federation
//! (`tests/data/golden/`: `sxy-balanced`, d = 8, M = 30, k = 3, and its `θ₀`).

use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::randomness::{Randomness, Supplied};
use fedmix::io::{read_dataset, read_f64, Dataset};
use fedmix::params::AlgorithmKind;
use fedmix::runner::{prepare, Prepared};
use nalgebra::DMatrix;
use std::path::Path;
use std::sync::Arc;

/// The master seed the golden cases run under.
pub const SEED: u64 = 5;

/// The golden federation and its `θ₀` (`d × 3`).
pub fn golden() -> (Arc<Dataset>, DMatrix<f64>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let ds = read_dataset(&root.join("dataset")).expect("golden dataset");
    let d = ds.train.d();
    let (_, t0) = read_f64(&root.join("theta0.npy"), &[Some(3), Some(d)]).unwrap();
    (Arc::new(ds), DMatrix::from_vec(d, 3, t0))
}

/// `kind` with the keys `sets` on `ds`, from `init` when given, under [`SEED`].
pub fn prepared(
    ds: &Arc<Dataset>,
    kind: &str,
    sets: &[(&str, &str)],
    init: Option<&DMatrix<f64>>,
) -> Prepared {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let params =
        AlgorithmParams::from_sources(AlgorithmKind::parse(kind).unwrap(), None, &sets).unwrap();
    let given = Randomness {
        init: init.map(|m| Supplied {
            source: "theta0.npy".into(),
            value: vec![m.clone()],
        }),
        ..Randomness::default()
    };
    prepare(params, ds.clone(), SEED, given, false).unwrap()
}
