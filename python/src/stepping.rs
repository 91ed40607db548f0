//! `Session`: a run stepped round by round from Python, over the library's
//! [`fedmix::runner::Session`].

use super::*;

/// A run stepped round by round ([`fedmix::runner::Session`]): the Python `Session` of an
/// algorithm whose rounds are one executor loop. It holds the prepared run (its data and seed)
/// and the live run; each [`NativeSession::next_row`] returns the next
/// trace row, running one more round when every recorded row has been returned.
#[pyclass(module = "fedmix._native", name = "NativeSession", unsendable)]
pub(crate) struct NativeSession {
    prep: fedmix::runner::Prepared,
    session: fedmix::runner::Session,
    data_dir: Option<String>,
    init_given: bool,
    /// Rows returned so far.
    returned: usize,
    /// Why the run stopped with an error (kind, message), after which nothing runs.
    failed: Option<(String, String)>,
    started: std::time::Instant,
}

/// The `kind` and message of an error raised to Python, kept to raise again.
fn failure(py: Python<'_>, err: &PyErr) -> (String, String) {
    let kind = err
        .value(py)
        .getattr("kind")
        .and_then(|k| k.extract::<String>())
        .unwrap_or_else(|_| "InternalError".into());
    (kind, err.value(py).to_string())
}

/// `k × d` models and `M` labels as numpy arrays.
fn state_tuple(
    py: Python<'_>,
    models: &DMatrix<f64>,
    labels: Option<&[usize]>,
) -> (Py<PyAny>, Py<PyAny>) {
    let labels = labels.map_or_else(
        || py.None(),
        |l| {
            Array1::from(l.iter().map(|&x| label_i64(x)).collect::<Vec<_>>())
                .into_pyarray(py)
                .into_any()
                .unbind()
        },
    );
    (models_array(py, models), labels)
}

impl NativeSession {
    /// One more round; an error is kept (the session is over) and raised.
    fn advance(&mut self, py: Python<'_>) -> PyResult<bool> {
        let session = &mut self.session;
        guarded(|| Ok(session.advance()?)).map_err(|f| {
            let err = to_py(py, f);
            self.failed = Some(failure(py, &err));
            err
        })
    }
}

#[pymethods]
impl NativeSession {
    /// The next trace row as a dict — `round`, `phase`, `iterate` (`k × d`, or `None` in a row
    /// that records no models), `labels` (or `None`), `metrics` (the row's trace columns) —
    /// running one round when every recorded row has been returned; `None` once the run is
    /// over. A round's error is raised once; the session is over after it.
    fn next_row<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.returned == self.session.recorder().rows.len() && self.failed.is_none() {
            self.advance(py)?;
        }
        let rec = self.session.recorder();
        let t = self.returned;
        if t >= rec.rows.len() {
            return Ok(None);
        }
        self.returned += 1;
        let row = PyDict::new(py);
        row.set_item("metrics", trace_dict(py, &rec.rows[t..t + 1])?)?;
        // `iterate_rounds` / `label_rounds` hold the 1-based trace row of each saved set.
        let at = |rounds: &[usize]| rounds.iter().position(|&r| r == t + 1);
        match at(&rec.iterate_rounds) {
            Some(j) => row.set_item("iterate", models_array(py, &rec.iterates[j]))?,
            None => row.set_item("iterate", py.None())?,
        }
        match at(&rec.label_rounds) {
            Some(j) => {
                let l: Vec<i64> = rec.labels[j].iter().map(|&x| label_i64(x)).collect();
                row.set_item("labels", Array1::from(l).into_pyarray(py))?
            }
            None => row.set_item("labels", py.None())?,
        }
        Ok(Some(row))
    }

    /// The current models (`k × d`) and labels (`M`, or `None`): after the last round run,
    /// the start before the first, the final ones once over; `None` after an error.
    fn state(&self, py: Python<'_>) -> Option<(Py<PyAny>, Py<PyAny>)> {
        self.session.state().map(|(m, l)| state_tuple(py, m, l))
    }

    /// Rows returned so far.
    #[getter]
    fn returned(&self) -> usize {
        self.returned
    }

    /// Whether the run has stopped (every round has run; rows may remain to be returned).
    #[getter]
    fn stopped(&self) -> bool {
        self.session.output().is_some() || self.failed.is_some()
    }

    /// `run`'s dict for the whole run, running the remaining rounds first (their rows are
    /// still returned by `next_row` afterwards). Raises the run's error if it failed.
    fn result<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        while self.failed.is_none() && self.session.output().is_none() {
            self.advance(py)?;
        }
        if let Some((kind, msg)) = &self.failed {
            let err = FedmixError::new_err(format!("the session's run failed: {msg}"));
            let _ = err.value(py).setattr("kind", kind.as_str());
            return Err(err);
        }
        let (ds, rec) = (self.prep.dataset(), self.session.recorder());
        let out = self
            .session
            .output()
            .ok_or_else(|| InternalError::new_err("a stopped session without output"))?;
        let prov = Provenance {
            data_dir: self.data_dir.clone(),
            init_file: self.init_given.then(|| INIT_SOURCE.to_string()),
            exported: None,
            wall_time_seconds: Some(self.started.elapsed().as_secs_f64()),
        };
        let summary = self.prep.summary(out, rec, &prov);
        let text = serde_json::to_string(&serde_json::Value::Object(summary))
            .map_err(|e| InternalError::new_err(format!("summary is not JSON: {e}")))?;
        result_dict(py, ds, out, rec, text)
    }
}

/// A [`NativeSession`] for `algorithm` on `federation` (what precedes its rounds, SXY22 Phase 1
/// for `two-phase`, runs here), or `None` when the algorithm runs only to completion.
#[pyfunction]
#[pyo3(signature = (algorithm, federation, seed, init, sets))]
pub(crate) fn session<'py>(
    py: Python<'py>,
    algorithm: String,
    federation: Py<NativeFederation>,
    seed: u64,
    init: Option<PyReadonlyArrayDyn<'py, f64>>,
    sets: Vec<(String, String)>,
) -> PyResult<Option<NativeSession>> {
    let init = init.as_ref().map(flat);
    let started = std::time::Instant::now();
    let fed = federation.get();
    let made = guarded(|| {
        let prep = prepared(&algorithm, &fed.ds, seed, &sets, init.as_ref())?;
        let session = prep.session()?;
        Ok(session.map(|s| (prep, s)))
    })
    .map_err(|f| to_py(py, f))?;
    Ok(made.map(|(prep, session)| NativeSession {
        prep,
        session,
        data_dir: fed.data_dir.clone(),
        init_given: init.is_some(),
        returned: 0,
        failed: None,
        started,
    }))
}
