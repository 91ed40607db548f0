//! `fedmix._native`: the Rust side of the `fedmix` Python package.
//!
//! Every entry point goes through the library exactly as the `fedmix` CLI does
//! ([`fedmix::runner::prepare`], [`fedmix::runner::Prepared::run`], [`fedmix::runner::Prepared::summary`],
//! [`fedmix::runner::Prepared::validate_as`]), so the same inputs give the same bits and the same error
//! messages (the `Display` of [`CoreError`], which the CLI prints after `error: `). The pure
//! Python layer (`python/fedmix/`) turns the plain values returned here into its classes.
//!
//! No panic crosses into Python: every entry point runs inside [`guarded`] (`catch_unwind`) and a
//! panic becomes `fedmix.InternalError`. Runs and comparisons release the GIL
//! ([`Python::detach`]). Arrays are copied across the boundary in both directions (once each);
//! results are moved into numpy without a second copy.
//!
//! Here: the federation, the keys and descriptions, `run` and `validate`; in `boundary`: failures
//! and the arrays that cross; in `stepping`: the round-by-round `Session`.

use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::randomness::{Randomness, Supplied};
use fedmix::engine::recorder::Recorder;
use fedmix::error::FedmixError as CoreError;
use fedmix::io::{read_dataset, Dataset};
use fedmix::params::AlgorithmKind;
use fedmix::runner::{prepare, Provenance};
use fedmix::synthetic;
use nalgebra::DMatrix;
use numpy::ndarray::{Array1, Array2, Array3};
use numpy::{IntoPyArray, PyReadonlyArrayDyn};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod boundary;
mod stepping;

use boundary::*;
use stepping::NativeSession;

create_exception!(
    fedmix,
    FedmixError,
    PyValueError,
    "An error fedmix reports for bad input or a run that cannot proceed. The message is the \
     fedmix CLI's (without its `error: ` prefix); `kind` names the library's error variant \
     (e.g. `InvalidParameter`, `UnknownKey`, `ShapeMismatch`, `Divergence`)."
);
create_exception!(
    fedmix,
    InternalError,
    PyRuntimeError,
    "A bug in fedmix: the library panicked. The panic was caught before reaching Python; \
     please report the message."
);

/// A federation (a `Dataset`: training federation, held-out samples, manifest) and the
/// directory it was read from, if any.
#[pyclass(module = "fedmix._native", name = "NativeFederation", frozen)]
struct NativeFederation {
    ds: Arc<Dataset>,
    data_dir: Option<String>,
}

#[pymethods]
impl NativeFederation {
    /// Features `N × d` (a copy).
    fn features(&self, py: Python<'_>, test: bool) -> Py<PyAny> {
        match self.fed(test) {
            Some(f) => models_array(py, f.features()),
            None => py.None(),
        }
    }
    /// Responses `N` (a copy).
    fn responses(&self, py: Python<'_>, test: bool) -> Py<PyAny> {
        match self.fed(test) {
            Some(f) => Array1::from(f.responses().as_slice().to_vec())
                .into_pyarray(py)
                .into_any()
                .unbind(),
            None => py.None(),
        }
    }
    /// Client sizes `M` (int64).
    fn client_sizes(&self, py: Python<'_>, test: bool) -> Py<PyAny> {
        match self.fed(test) {
            Some(f) => Array1::from(f.sizes().iter().map(|&n| n as i64).collect::<Vec<_>>())
                .into_pyarray(py)
                .into_any()
                .unbind(),
            None => py.None(),
        }
    }
    /// True labels `M` (int64), if known.
    fn labels(&self, py: Python<'_>) -> Py<PyAny> {
        match self.ds.train.labels() {
            Some(l) => Array1::from(l.iter().map(|&z| z as i64).collect::<Vec<_>>())
                .into_pyarray(py)
                .into_any()
                .unbind(),
            None => py.None(),
        }
    }
    /// True models `k × d`, if known.
    fn theta_star(&self, py: Python<'_>) -> Py<PyAny> {
        match self.ds.train.theta_star() {
            Some(t) => models_array(py, t),
            None => py.None(),
        }
    }
    /// `manifest.json` as JSON text.
    fn manifest_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.ds.manifest)
            .map_err(|e| InternalError::new_err(format!("manifest: {e}")))
    }
    /// The directory the data was read from (`None` when generated in memory).
    #[getter]
    fn data_dir(&self) -> Option<String> {
        self.data_dir.clone()
    }
}

impl NativeFederation {
    fn fed(&self, test: bool) -> Option<&fedmix::federation::Federation> {
        match test {
            true => self.ds.test.as_ref(),
            false => Some(&self.ds.train),
        }
    }
}

/// Generate setting `setting` under `seed` with overrides `sets` (`fedmix generate --set`).
#[pyfunction]
fn generate(
    py: Python<'_>,
    setting: String,
    seed: u64,
    sets: Vec<(String, String)>,
) -> PyResult<NativeFederation> {
    let ds = py
        .detach(|| {
            guarded(|| {
                Ok(Dataset::from(synthetic::generate_named(
                    &setting, seed, &sets,
                )?))
            })
        })
        .map_err(|f| to_py(py, f))?;
    Ok(NativeFederation {
        ds: Arc::new(ds),
        data_dir: None,
    })
}

/// Read a dataset directory (`fedmix run --data`).
#[pyfunction]
fn load(py: Python<'_>, path: String) -> PyResult<NativeFederation> {
    let ds = py
        .detach(|| guarded(|| Ok(read_dataset(Path::new(&path))?)))
        .map_err(|f| to_py(py, f))?;
    Ok(NativeFederation {
        ds: Arc::new(ds),
        data_dir: Some(path),
    })
}

/// Every algorithm name.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    AlgorithmKind::ALL.iter().map(|k| k.as_str()).collect()
}

/// What the algorithms' one declaration says about `algorithm` (`docs/algorithms.md`'s row):
/// its description, the keys it reads, the randomness files it takes, whether its `Session`
/// is live, and why it has no one step (`None`: it has one).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn describe(
    py: Python<'_>,
    algorithm: String,
) -> PyResult<(
    &'static str,
    &'static str,
    Vec<&'static str>,
    Vec<&'static str>,
    bool,
    Option<&'static str>,
)> {
    guarded(|| {
        let kind = AlgorithmKind::parse(&algorithm)?;
        Ok((
            kind.as_str(),
            kind.doc(),
            fedmix::params::keys_of(kind),
            kind.randomness().to_vec(),
            kind.live_session(),
            kind.one_step_refusal(),
        ))
    })
    .map_err(|f| to_py(py, f))
}

/// The run keys algorithm `algorithm` reads, each with its default as JSON text (`null`: set
/// by a rule from the data, see the key's documentation).
#[pyfunction]
fn keys(py: Python<'_>, algorithm: String) -> PyResult<Vec<(&'static str, String)>> {
    guarded(|| {
        let kind = AlgorithmKind::parse(&algorithm)?;
        let defaults = AlgorithmParams::default_for(kind).keys();
        Ok(fedmix::params::keys_of(kind)
            .into_iter()
            .map(|k| {
                let v = defaults.get(k).cloned().unwrap_or_default();
                (k, v.to_string())
            })
            .collect())
    })
    .map_err(|f| to_py(py, f))
}

/// The synthetic settings: (name, description, parameters with their values as JSON text).
#[pyfunction]
fn settings(py: Python<'_>) -> PyResult<Vec<(&'static str, &'static str, String)>> {
    guarded(|| {
        synthetic::SETTINGS
            .iter()
            .map(|(name, doc)| {
                let p = synthetic::SettingParams::named(name)?;
                let json = serde_json::to_string(&p).unwrap_or_default();
                Ok((*name, *doc, json))
            })
            .collect()
    })
    .map_err(|f| to_py(py, f))
}

/// Every run key with the first paragraph of its documentation, in declaration order.
#[pyfunction]
fn key_docs() -> Vec<(&'static str, String)> {
    fedmix::params::KEY_SPECS
        .iter()
        .map(|s| (s.name, s.summary()))
        .collect()
}

/// The data-generation parameters with their meaning.
#[pyfunction]
fn parameters() -> Vec<(&'static str, &'static str)> {
    synthetic::PARAMETERS.to_vec()
}

/// Build the algorithm as `fedmix run`/`validate` do: parse the name, the keys (as `--set`),
/// the initial models (as `--init`), then `runner::prepare`.
fn prepared(
    algorithm: &str,
    ds: &Arc<Dataset>,
    seed: u64,
    sets: &[(String, String)],
    init: Option<&(Vec<usize>, Vec<f64>)>,
) -> Result<fedmix::runner::Prepared, CoreError> {
    let kind = AlgorithmKind::parse(algorithm)?;
    let params = AlgorithmParams::from_sources(kind, None, sets)?;
    let given = Randomness {
        init: match init {
            Some((shape, data)) => Some(Supplied {
                source: PathBuf::from(INIT_SOURCE),
                value: init_from(shape, data, ds.train.d())?,
            }),
            None => None,
        },
        ..Randomness::default()
    };
    prepare(params, ds.clone(), seed, given, false)
}

/// The trace as columns (`trace.csv`'s, same names and order).
fn trace_dict<'py>(
    py: Python<'py>,
    rows: &[fedmix::engine::recorder::RoundRecord],
) -> PyResult<Bound<'py, PyDict>> {
    let f = |g: &dyn Fn(&fedmix::engine::recorder::RoundRecord) -> Option<f64>| {
        Array1::from(
            rows.iter()
                .map(|r| g(r).unwrap_or(f64::NAN))
                .collect::<Vec<_>>(),
        )
        .into_pyarray(py)
    };
    let i = |g: &dyn Fn(&fedmix::engine::recorder::RoundRecord) -> i64| {
        Array1::from(rows.iter().map(g).collect::<Vec<_>>()).into_pyarray(py)
    };
    let list = |g: &dyn Fn(&fedmix::engine::recorder::RoundRecord) -> Vec<f64>| {
        PyList::new(
            py,
            rows.iter()
                .map(|r| Array1::from(g(r)).into_pyarray(py))
                .collect::<Vec<_>>(),
        )
    };
    let max = |v: &[f64]| {
        v.iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let d = PyDict::new(py);
    d.set_item("round", i(&|r| r.round as i64))?;
    d.set_item(
        "phase",
        PyList::new(py, rows.iter().map(|r| r.phase.as_str()))?,
    )?;
    d.set_item("distance", f(&|r| r.distance))?;
    d.set_item("per_cluster_errors", list(&|r| r.per_cluster.clone())?)?;
    d.set_item(
        "misclustering_clients",
        f(&|r| r.misclustering.map(|m| m.0)),
    )?;
    d.set_item(
        "misclustering_samples",
        f(&|r| r.misclustering.map(|m| m.1)),
    )?;
    d.set_item("training_loss", f(&|r| r.training_loss))?;
    d.set_item(
        "anchor_error_max",
        f(&|r| r.anchors.as_ref().and_then(|a| max(&a.errors))),
    )?;
    d.set_item(
        "anchor_error_mean",
        f(&|r| r.anchors.as_ref().and_then(|a| mean(&a.errors))),
    )?;
    d.set_item(
        "sigma_hat_max",
        f(&|r| r.anchors.as_ref().and_then(|a| max(&a.sigma_hat))),
    )?;
    d.set_item(
        "step_size_mean",
        f(&|r| r.anchors.as_ref().and_then(|a| mean(&a.step_sizes))),
    )?;
    d.set_item(
        "anchor_clusters",
        i(&|r| r.anchor_clusters.map_or(-1, |c| c as i64)),
    )?;
    d.set_item(
        "anchor_errors",
        list(&|r| r.anchors.as_ref().map_or(Vec::new(), |a| a.errors.clone()))?,
    )?;
    d.set_item(
        "sigma_hat",
        list(&|r| {
            r.anchors
                .as_ref()
                .map_or(Vec::new(), |a| a.sigma_hat.clone())
        })?,
    )?;
    d.set_item(
        "step_sizes",
        list(&|r| {
            r.anchors
                .as_ref()
                .map_or(Vec::new(), |a| a.step_sizes.clone())
        })?,
    )?;
    d.set_item("floats_down", i(&|r| r.comm.floats_down as i64))?;
    d.set_item("floats_up", i(&|r| r.comm.floats_up as i64))?;
    d.set_item("messages", i(&|r| r.comm.messages as i64))?;
    d.set_item("participants", i(&|r| r.comm.participants as i64))?;
    d.set_item(
        "empty_clusters",
        i(&|r| r.empty_clusters.map_or(-1, |c| c as i64)),
    )?;
    Ok(d)
}

/// One run, as `fedmix run` performs it. Returns a dict: `theta_hat` (K̂ × d), `labels` (M),
/// `trace` (columns), `iterates` (rounds × K̂_max × d, NaN-padded as `iterates.npy`) and
/// `iterate_labels` (rounds × M) when saved, `summary_json` (`summary.json`'s object).
#[pyfunction]
#[pyo3(signature = (algorithm, federation, seed, init, save_iterates, sets))]
fn run<'py>(
    py: Python<'py>,
    algorithm: String,
    federation: &NativeFederation,
    seed: u64,
    init: Option<PyReadonlyArrayDyn<'py, f64>>,
    save_iterates: bool,
    sets: Vec<(String, String)>,
) -> PyResult<Bound<'py, PyDict>> {
    let init = init.as_ref().map(flat);
    let ds = &federation.ds;
    let data_dir = federation.data_dir.clone();
    let (out, rec, summary) = py
        .detach(|| {
            guarded(|| {
                let started = std::time::Instant::now();
                let prep = prepared(&algorithm, ds, seed, &sets, init.as_ref())?;
                let (out, rec) = prep.run(save_iterates)?;
                let prov = Provenance {
                    data_dir,
                    init_file: init.as_ref().map(|_| INIT_SOURCE.to_string()),
                    exported: None,
                    wall_time_seconds: Some(started.elapsed().as_secs_f64()),
                };
                let summary = prep.summary(&out, &rec, &prov);
                let text = serde_json::to_string(&serde_json::Value::Object(summary))
                    .map_err(|e| Failure::Panic(format!("summary is not JSON: {e}")))?;
                Ok((out, rec, text))
            })
        })
        .map_err(|f| to_py(py, f))?;
    result_dict(py, ds, &out, &rec, summary)
}

/// `run`'s dict from a finished run: `theta_hat`, `labels`, `trace`, `summary_json`, and the
/// iterates when the recorder kept them.
fn result_dict<'py>(
    py: Python<'py>,
    ds: &Dataset,
    out: &fedmix::engine::contract::RunOutput,
    rec: &Recorder,
    summary: String,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("theta_hat", models_array(py, &out.theta_hat))?;
    let labels: Vec<i64> = out.labels.iter().map(|&l| label_i64(l)).collect();
    d.set_item("labels", Array1::from(labels).into_pyarray(py))?;
    d.set_item("trace", trace_dict(py, &rec.rows)?)?;
    d.set_item("summary_json", summary)?;
    if rec.save_iterates {
        // As `iterates.npy`: rounds with fewer than the most models are padded with NaN models
        // (SR-FCA merges, CFL splits).
        let dim = ds.train.d();
        let k = rec.iterates.iter().map(|m| m.ncols()).max().unwrap_or(0);
        let flat: Vec<f64> = rec
            .iterates
            .iter()
            .flat_map(|m| {
                let pad = (k - m.ncols()) * dim;
                m.as_slice()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(f64::NAN, pad))
            })
            .collect();
        let it = Array3::from_shape_vec((rec.iterates.len(), k, dim), flat)
            .map_err(|e| InternalError::new_err(format!("iterates: {e}")))?;
        d.set_item("iterates", it.into_pyarray(py))?;
        let rounds = |r: &[usize]| r.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        d.set_item(
            "iterate_rounds",
            rounds(&rec.iterate_rounds).into_pyarray(py),
        )?;
        d.set_item("label_rounds", rounds(&rec.label_rounds).into_pyarray(py))?;
        if rec.labels.is_empty() {
            d.set_item("iterate_labels", py.None())?;
        } else {
            let m = ds.train.num_clients();
            let flat: Vec<i64> = rec
                .labels
                .iter()
                .flat_map(|l| l.iter().map(|&x| label_i64(x)))
                .collect();
            let il = Array2::from_shape_vec((rec.labels.len(), m), flat)
                .map_err(|e| InternalError::new_err(format!("iterate labels: {e}")))?;
            d.set_item("iterate_labels", il.into_pyarray(py))?;
        }
    } else {
        d.set_item("iterates", py.None())?;
        d.set_item("iterate_labels", py.None())?;
        d.set_item("iterate_rounds", py.None())?;
        d.set_item("label_rounds", py.None())?;
    }
    Ok(d)
}

/// `fedmix validate`: rerun the reference with the same keys and initial models and compare
/// the candidate's iterates (rounds × k × d) and labels (rounds × M) round by round. Returns a
/// dict: `report_json` (the `--json` report), `reference` (the algorithm's name),
/// `reference_params_json` (the resolved keys, `[[key, value], …]`).
#[pyfunction]
#[pyo3(signature = (algorithm, federation, iterates, labels, seed, init, rtol, atol, sets, mode))]
#[allow(clippy::too_many_arguments)]
fn validate<'py>(
    py: Python<'py>,
    algorithm: String,
    federation: &NativeFederation,
    iterates: PyReadonlyArrayDyn<'py, f64>,
    labels: Option<Labels<'py>>,
    seed: u64,
    init: Option<PyReadonlyArrayDyn<'py, f64>>,
    rtol: f64,
    atol: f64,
    sets: Vec<(String, String)>,
    mode: String,
) -> PyResult<Bound<'py, PyDict>> {
    use fedmix::validate::Candidate;
    let init = init.as_ref().map(flat);
    let (shape, cand) = flat(&iterates);
    let cand_labels = labels.as_ref().map(Labels::flat);
    let ds = &federation.ds;
    let (report, name, params) = py
        .detach(|| {
            guarded(|| {
                // The order of `fedmix validate`: tolerances, the reference, the candidate's
                // iterates, its labels, the run, the comparison.
                let tol = fedmix::runner::tolerance(rtol, atol)?;
                let mode = match mode.as_str() {
                    "trajectory" => fedmix::validate::Mode::Trajectory,
                    "one-step" => fedmix::validate::Mode::OneStep,
                    other => {
                        return Err(fedmix::error::FedmixError::invalid(
                            "mode",
                            other,
                            "must be \"trajectory\" or \"one-step\"",
                        )
                        .into())
                    }
                };
                let prep = prepared(&algorithm, ds, seed, &sets, init.as_ref())?;
                check_shape(ITERATES_SOURCE, &shape, &[None, None, Some(ds.train.d())])?;
                let cand_labels = match cand_labels {
                    Some((s, values)) => {
                        check_shape(LABELS_SOURCE, &s, &[None, Some(ds.train.num_clients())])?;
                        Some((s.clone(), values.into_i64(&s)?))
                    }
                    None => None,
                };
                let report = prep.validate_as(
                    mode,
                    &Candidate {
                        iterates: &cand,
                        shape: &shape,
                        labels: cand_labels.as_ref().map(|(s, l)| (&l[..], &s[..])),
                    },
                    tol,
                )?;
                let params: Vec<(&str, serde_json::Value)> = prep.reference_params();
                let report = serde_json::to_string(&report)
                    .map_err(|e| Failure::Panic(format!("report is not JSON: {e}")))?;
                let params = serde_json::to_string(&params)
                    .map_err(|e| Failure::Panic(format!("params are not JSON: {e}")))?;
                Ok((report, prep.alg.name(), params))
            })
        })
        .map_err(|f| to_py(py, f))?;
    let d = PyDict::new(py);
    d.set_item("report_json", report)?;
    d.set_item("reference", name)?;
    d.set_item("reference_params_json", params)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FedmixError", py.get_type::<FedmixError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_class::<NativeFederation>()?;
    m.add_class::<NativeSession>()?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(keys, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(settings, m)?)?;
    m.add_function(wrap_pyfunction!(parameters, m)?)?;
    m.add_function(wrap_pyfunction!(key_docs, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(stepping::session, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    Ok(())
}
