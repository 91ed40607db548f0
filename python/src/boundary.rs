//! The boundary between Python and the library: typed failures and caught panics
//! ([`guarded`], [`to_py`]), and the arrays copied across it (shapes checked as the `.npy`
//! readers check a file, labels as in `labels.npy`, models in C order).

use super::*;

/// Where the initial models given as an array are said to come from (the CLI names the
/// `--init` file in errors and in `summary.json`; an array has no file).
pub(crate) const INIT_SOURCE: &str = "<init array>";
/// Likewise for the candidate iterates and labels of `validate`.
pub(crate) const ITERATES_SOURCE: &str = "<iterates array>";
pub(crate) const LABELS_SOURCE: &str = "<labels array>";

/// A failure inside the library: a typed error or a caught panic.
pub(crate) enum Failure {
    Core(CoreError),
    Panic(String),
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Self {
        Failure::Core(e)
    }
}

/// Run `f`, catching any panic (no panic may unwind into Python).
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".into());
            Err(Failure::Panic(msg))
        }
    }
}

/// The variant name of a library error (`InvalidParameter { .. }` → `InvalidParameter`).
pub(crate) fn kind_of(e: &CoreError) -> String {
    format!("{e:?}")
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect()
}

pub(crate) fn to_py(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::Core(e) => {
            let err = FedmixError::new_err(e.to_string());
            // Best effort: the message is what matters; `kind` is a convenience.
            let _ = err.value(py).setattr("kind", kind_of(&e));
            err
        }
        Failure::Panic(msg) => {
            InternalError::new_err(format!("fedmix panicked (a bug, please report it): {msg}"))
        }
    }
}

/// `shape` against `expected` (`None`: any extent), as the `.npy` readers check a file.
pub(crate) fn check_shape(
    source: &str,
    shape: &[usize],
    expected: &[Option<usize>],
) -> Result<(), CoreError> {
    let ok = shape.len() == expected.len()
        && shape
            .iter()
            .zip(expected)
            .all(|(s, e)| e.is_none_or(|e| e == *s));
    match ok {
        true => Ok(()),
        false => Err(CoreError::ShapeMismatch {
            path: PathBuf::from(source),
            expected: expected.to_vec(),
            found: shape.to_vec(),
        }),
    }
}

/// The initial models from an array, with the checks and semantics of `--init`
/// (`fedmix::engine::randomness::read_init`): float64 `k × d` (one start) or `R × k × d` (one
/// per IFCA restart), every entry finite, `k ≥ 1`.
pub(crate) fn init_from(
    shape: &[usize],
    data: &[f64],
    d: usize,
) -> Result<Vec<DMatrix<f64>>, CoreError> {
    fedmix::engine::randomness::init_from_array(std::path::Path::new(INIT_SOURCE), shape, data, d)
}

/// An array as (shape, entries in C order), copied.
pub(crate) fn flat<T: numpy::Element + Copy>(
    a: &PyReadonlyArrayDyn<'_, T>,
) -> (Vec<usize>, Vec<T>) {
    let view = a.as_array();
    (view.shape().to_vec(), view.iter().copied().collect())
}

/// Candidate labels as numpy gives them: int64, or float64 whose entries must be integers
/// (the rule of a float64 `labels.npy`, [`fedmix::validate::labels_from_f64`]). The Python layer
/// refuses every other dtype before calling.
#[derive(FromPyObject)]
pub(crate) enum Labels<'py> {
    Int(PyReadonlyArrayDyn<'py, i64>),
    Float(PyReadonlyArrayDyn<'py, f64>),
}

/// Label values copied out of numpy, not yet checked.
pub(crate) enum LabelValues {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Labels<'_> {
    pub(crate) fn flat(&self) -> (Vec<usize>, LabelValues) {
        match self {
            Labels::Int(a) => {
                let (s, v) = flat(a);
                (s, LabelValues::Int(v))
            }
            Labels::Float(a) => {
                let (s, v) = flat(a);
                (s, LabelValues::Float(v))
            }
        }
    }
}

impl LabelValues {
    pub(crate) fn into_i64(self, shape: &[usize]) -> Result<Vec<i64>, CoreError> {
        match self {
            LabelValues::Int(v) => Ok(v),
            LabelValues::Float(v) => {
                fedmix::validate::labels_from_f64(Path::new(LABELS_SOURCE), shape, &v)
            }
        }
    }
}

/// A label as in `labels.npy`: unassigned becomes `-1`.
pub(crate) fn label_i64(l: usize) -> i64 {
    if l == fedmix::metrics::UNASSIGNED {
        -1
    } else {
        l as i64
    }
}

/// `d × k` column-major (nalgebra) = `k × d` C order.
pub(crate) fn models_array(py: Python<'_>, m: &DMatrix<f64>) -> Py<PyAny> {
    Array2::from_shape_vec((m.ncols(), m.nrows()), m.as_slice().to_vec())
        .map(|a| a.into_pyarray(py).into_any().unbind())
        .unwrap_or_else(|_| py.None())
}
