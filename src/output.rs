//! Run directories: `theta_hat.npy` (K̂ × d), `labels.npy` (M), `trace.csv`, `summary.json`, and
//! with `--save-iterates` `iterates.npy` (rounds × K̂_max × d, NaN-padded when the number of
//! models changes) and `iterate_labels.npy` (rounds × M). Label `-1` = unassigned (SR-FCA).
//! Every file is written atomically; `summary.json` goes last.

use crate::engine::contract::RunOutput;
use crate::engine::recorder::Recorder;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::io::{prepare_output_dir, write_atomic, write_f64, write_i64, write_json};
use crate::metrics;
use nalgebra::DMatrix;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Everything the summary states about the final models.
pub fn final_metrics(fed: &Federation, test: Option<&Federation>, out: &RunOutput) -> Value {
    let mut m = Map::new();
    let theta = &out.theta_hat;
    m.insert(
        "training_loss".into(),
        json!(crate::engine::client_pass::training_loss(fed, theta)),
    );
    if let Some(t) = test {
        m.insert(
            "heldout_loss".into(),
            json!(crate::engine::client_pass::training_loss(t, theta)),
        );
    }
    m.insert("models".into(), json!(theta.ncols()));
    if let Some(ts) = fed.theta_star() {
        if theta.ncols() < ts.ncols() {
            m.insert("distance".into(), Value::Null);
            m.insert(
                "distance_absent_reason".into(),
                json!(format!(
                    "{} estimated model(s) < k = {} true models: d(θ̂, θ*) (SXY22 eq. 6) needs \
                     an injective assignment of estimates to true models; see coverage_distance",
                    theta.ncols(),
                    ts.ncols()
                )),
            );
        }
        if let Ok(a) = metrics::bottleneck_distance(theta, ts) {
            m.insert("distance".into(), json!(a.value));
            m.insert("per_cluster_errors".into(), json!(a.per_cluster));
            m.insert("assignment".into(), json!(a.perm));
        }
        if let Ok(s) = metrics::sum_assignment(theta, ts) {
            m.insert(
                "mean_assignment_error".into(),
                json!(s.value / ts.ncols() as f64),
            );
        }
        if let Ok(c) = metrics::coverage_distance(theta, ts) {
            m.insert("coverage_distance".into(), json!(c));
        }
    }
    if let (Some(truth), Some(k)) = (fed.labels(), fed.k()) {
        let est = crate::metrics::as_options(&out.labels);
        if let Ok(q) = metrics::label_quality(&est, truth, &fed.sizes(), theta.ncols(), k) {
            m.insert("misclustering_clients".into(), json!(q.clients));
            m.insert("misclustering_samples".into(), json!(q.samples));
            m.insert("misclustering_method".into(), json!(q.method));
            m.insert("unassigned_clients".into(), json!(q.unassigned));
        }
        if let Ok(errs) = metrics::per_client_errors(fed, theta, &out.labels) {
            m.insert("per_client_error".into(), json!(metrics::summarize(&errs)));
        }
    }
    Value::Object(m)
}

/// Data constants for the summary: `χ²(n)`, `γ`, `κ`, `ρ`, `p_min`, `Δ`, and the first term of
/// `ν` (SXY22 eq. 10), `(1/N) Σ n_i p_e(n_i)` with `p_e(n) = 4k exp(−c n (1 ∧ Δ²/σ²)²)` evaluated
/// with the stated constant `c = 1` and `σ²` estimated as `‖y − φθ*_z‖²/N`.
pub fn data_constants(fed: &Federation, eta: f64, local_steps: usize) -> Value {
    let sizes = fed.sizes();
    let (gamma, _) = metrics::gamma(fed, eta);
    let mut m = Map::new();
    m.insert("chi2_n".into(), json!(metrics::chi2(&sizes)));
    m.insert("gamma".into(), json!(gamma));
    m.insert(
        "kappa_fedavg".into(),
        json!(metrics::kappa_fedavg(gamma, local_steps)),
    );
    m.insert("kappa_fedprox".into(), json!(metrics::kappa_fedprox(gamma)));
    if let (Some(labels), Some(k)) = (fed.labels(), fed.k()) {
        m.insert("rho".into(), json!(metrics::rho(&sizes, labels, k)));
        m.insert("p_min".into(), json!(metrics::p_min(labels, k)));
        if let (Some(ts), Ok(zeta)) = (
            fed.theta_star(),
            crate::algorithms::lemma1::noise_vector(fed),
        ) {
            let delta = metrics::separation(ts);
            let sigma2 = zeta.norm_squared() / fed.total_samples() as f64;
            let snr = if sigma2 > 0.0 {
                (delta * delta / sigma2).min(1.0)
            } else {
                1.0
            };
            let c = 1.0;
            let n_total = fed.total_samples() as f64;
            let nu1: f64 = sizes
                .iter()
                .map(|&n| n as f64 * (4.0 * k as f64 * (-c * n as f64 * snr * snr).exp()).min(1.0))
                .sum::<f64>()
                / n_total;
            m.insert("separation".into(), json!(delta));
            m.insert("sigma_estimate".into(), json!(sigma2.sqrt()));
            m.insert(
                "nu_first_term".into(),
                json!({"value": nu1, "c": c, "p_e": "min(1, 4k exp(-c n (1 ∧ Δ²/σ²)²))"}),
            );
        }
    }
    Value::Object(m)
}

/// Write a run directory: the final models and labels, the trace, the iterates when recorded,
/// and `summary` ([`crate::runner::Prepared::summary`]) last.
///
/// # Errors
/// [`FedmixError::Output`] / [`FedmixError::Io`].
pub fn write_run(
    dir: &Path,
    fed: &Federation,
    out: &RunOutput,
    rec: &Recorder,
    summary: &Map<String, Value>,
) -> Result<()> {
    prepare_output_dir(dir)?;
    let theta: &DMatrix<f64> = &out.theta_hat;
    write_f64(
        &dir.join("theta_hat.npy"),
        &[theta.ncols(), theta.nrows()],
        theta.as_slice(),
    )?;
    let labels: Vec<i64> = out.labels.iter().map(|&l| label_i64(l)).collect();
    write_i64(&dir.join("labels.npy"), &[labels.len()], &labels)?;
    write_atomic(&dir.join("trace.csv"), rec.to_csv().as_bytes())?;
    if rec.save_iterates {
        // The number of models may change between rounds (SR-FCA merges, CFL splits): rounds
        // with fewer than the most models are padded with NaN models.
        let d = fed.d();
        let k = rec.iterates.iter().map(|m| m.ncols()).max().unwrap_or(0);
        let flat: Vec<f64> = rec
            .iterates
            .iter()
            .flat_map(|m| {
                let pad = (k - m.ncols()) * d;
                m.as_slice()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(f64::NAN, pad))
            })
            .collect();
        write_f64(
            &dir.join("iterates.npy"),
            &[rec.iterates.len(), k, d],
            &flat,
        )?;
        if !rec.labels.is_empty() {
            let flat: Vec<i64> = rec
                .labels
                .iter()
                .flat_map(|l| l.iter().map(|&x| label_i64(x)))
                .collect();
            write_i64(
                &dir.join("iterate_labels.npy"),
                &[rec.labels.len(), fed.num_clients()],
                &flat,
            )?;
        }
    }
    write_json(&dir.join("summary.json"), &Value::Object(summary.clone()))
}

/// A label as written to `.npy`: [`crate::metrics::UNASSIGNED`] becomes `-1`.
fn label_i64(l: usize) -> i64 {
    if l == crate::metrics::UNASSIGNED {
        -1
    } else {
        l as i64
    }
}

/// Refuse a non-empty output directory unless `force`.
///
/// # Errors
/// [`FedmixError::Output`].
pub fn check_fresh_output(dir: &Path, force: bool) -> Result<()> {
    if dir.is_dir() && !force {
        let non_empty = std::fs::read_dir(dir)
            .map(|mut r| r.next().is_some())
            .unwrap_or(false);
        if non_empty {
            return Err(FedmixError::Output {
                path: dir.into(),
                message: "is not empty (use --force to overwrite)".into(),
            });
        }
    }
    if dir.exists() && !dir.is_dir() {
        return Err(FedmixError::Output {
            path: dir.into(),
            message: "exists and is not a directory".into(),
        });
    }
    Ok(())
}

/// [`final_metrics`] as aligned `name  value` lines for a terminal: numbers with six
/// significant digits, lists and objects as compact JSON, absent values omitted.
pub fn final_lines(fin: &Value) -> String {
    let Some(map) = fin.as_object() else {
        return fin.to_string();
    };
    let width = map.keys().map(String::len).max().unwrap_or(0);
    map.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let shown = match v {
                Value::Number(n) if n.is_f64() => format!("{:.6e}", n.as_f64().unwrap_or(f64::NAN)),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("  {k:<width$}  {shown}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
