//! Running cells: one per axis value × variant × data seed, written atomically, sharded and
//! resumable.

use super::spec::*;
use fedmix::algorithms::ifca::OfficialSummary;
use fedmix::algorithms::two_phase::TwoPhase;
use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::contract::RunOutput;
use fedmix::engine::randomness::Randomness;
use fedmix::engine::recorder::{Phase, Recorder};
use fedmix::error::{FedmixError, Result};
use fedmix::io::{prepare_output_dir, write_json};
use fedmix::params::TwoPhaseParams;
use fedmix::synthetic::{self};
use std::path::{Path, PathBuf};

fn series_result(
    label: &str,
    rec: &Recorder,
    out: std::result::Result<RunOutput, String>,
    fed: &fedmix::federation::Federation,
) -> SeriesResult {
    let phase1_rounds = rec
        .rows
        .iter()
        .take_while(|r| r.phase == Phase::Phase1)
        .count();
    let mut total = 0u64;
    let floats = rec
        .rows
        .iter()
        .map(|r| {
            total += r.comm.floats_down + r.comm.floats_up;
            total
        })
        .collect();
    let mut distance: Vec<Option<f64>> = rec.rows.iter().map(|r| r.distance).collect();
    // Fewer than k models (vanilla FedAvg, a merged SR-FCA): eq. 6 is undefined; use the
    // coverage distance max_j min_l ‖θ_l − θ*_j‖ (for one model: its worst cluster error).
    if let Some(ts) = fed.theta_star() {
        if rec.iterates.len() == rec.rows.len() {
            for (d, theta) in distance.iter_mut().zip(&rec.iterates) {
                if d.is_none() && theta.ncols() < ts.ncols() {
                    *d = fedmix::metrics::coverage_distance(theta, ts).ok();
                }
            }
        }
    }
    let mut s = SeriesResult {
        label: label.into(),
        error: None,
        phase1_rounds,
        distance,
        misclustering: rec
            .rows
            .iter()
            .map(|r| r.misclustering.map(|m| m.0))
            .collect(),
        floats,
        final_distance: None,
        final_misclustering: None,
        clusters: 0,
        official_success: None,
    };
    match out {
        Err(e) => s.error = Some(e),
        Ok(out) => {
            let fin = fedmix::output::final_metrics(fed, None, &out);
            s.final_distance = fin
                .get("distance")
                .and_then(serde_json::Value::as_f64)
                .or_else(|| {
                    fin.get("coverage_distance")
                        .and_then(serde_json::Value::as_f64)
                });
            s.final_misclustering = fin
                .get("misclustering_clients")
                .and_then(serde_json::Value::as_f64);
            s.clusters = out.theta_hat.ncols();
            s.official_success = out
                .summary
                .get::<OfficialSummary>("ifca_official")
                .map(|o| o.verdict.success);
        }
    }
    s
}

/// The key under which two-phase series share Phase 1 (its parameters and the start's scale),
/// after checking both phases' parameters: an error here belongs to the series alone.
fn phase1_key(p: &TwoPhaseParams, fed: &fedmix::federation::Federation) -> Result<String> {
    let p1 = p.phase1.resolve(fedmix::params::resolve_k(p.k, fed)?, fed);
    p.phase2.resolve(fed).check(fed)?;
    Ok(format!(
        "{}|{}",
        serde_json::to_string(&p1).unwrap_or_default(),
        p.init_scale.to_bits()
    ))
}

/// Whether an experiment needs per-round metrics (a trace figure, rounds / floats to a target
/// error, or `record_traces`); sweeps of final values record communication only, which lets
/// runs skip per-round metric passes and re-runs.
pub fn needs_traces(e: &Experiment) -> bool {
    e.record_traces
        || e.figures.iter().any(|f| {
            f.kind == FigureKind::Trace
                || matches!(f.metric, Metric::RoundsToTarget | Metric::FloatsToTarget)
        })
}

/// Run one cell: generate its data, run every series. Two-phase series with the same Phase 1
/// parameters share one Phase 1 run, and their Phase 2 runs advance together
/// ([`TwoPhase::run_phase2_batch_from`]) — bit-identical to running each series alone.
///
/// # Errors
/// Data generation errors (the cell's parameters were checked by [`Experiment::plan`]; this
/// fails only on e.g. memory limits). Algorithm errors are recorded per series.
pub fn run_cell(plan: &Plan, cell: &CellSpec) -> Result<CellResult> {
    run_cell_keeping(plan, cell, vec![None; plan.experiment.series.len()])
}

/// [`run_cell`] running only the series without a result in `kept` (indexed by series): a cell
/// computed before series were added keeps its finished series. Each series depends on the
/// cell's data and seed alone (two-phase series sharing a Phase 1 are bit-identical to each
/// alone), so the merged cell equals one computed whole.
fn run_cell_keeping(
    plan: &Plan,
    cell: &CellSpec,
    kept: Vec<Option<SeriesResult>>,
) -> Result<CellResult> {
    let e = &plan.experiment;
    let data = synthetic::generate_named(&e.setting, cell.seed, &cell.data)?;
    let fed = &data.train;
    let traces = needs_traces(e);
    // Iterates are kept for the coverage distance of runs with fewer than k models.
    let recorder = |iterates: bool| {
        if traces {
            Recorder::new(iterates)
        } else {
            Recorder::quiet()
        }
    };
    let mut results = kept;
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (s, cfg)) in e.series.iter().zip(&cell.configs).enumerate() {
        if results[i].is_some() {
            continue;
        }
        if let AlgorithmParams::TwoPhase(p) = cfg {
            match phase1_key(p, fed) {
                Ok(key) => match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(i),
                    None => groups.push((key, vec![i])),
                },
                Err(err) => {
                    let r = series_result(&s.label, &recorder(false), Err(err.to_string()), fed);
                    results[i] = Some(r);
                }
            }
            continue;
        }
        let mut rec = recorder(true);
        let out = fedmix::algorithms::registry::build(cfg, None, Some(data.params.sigma))
            .run(fed, cell.seed, &mut rec)
            .map_err(|e| e.to_string());
        results[i] = Some(series_result(&s.label, &rec, out, fed));
    }
    for (_, members) in groups {
        let algs: Vec<TwoPhase> = members
            .iter()
            .filter_map(|&m| match &cell.configs[m] {
                AlgorithmParams::TwoPhase(params) => Some(TwoPhase {
                    params: *params,
                    init: None,
                }),
                _ => None,
            })
            .collect();
        let mut rec1 = recorder(false);
        let phase1 = algs[0].run_phase1_with(fed, cell.seed, &Randomness::default(), &mut rec1);
        match &phase1 {
            Ok(p1) => {
                let refs: Vec<&TwoPhase> = algs.iter().collect();
                let mut recs: Vec<Recorder> = members.iter().map(|_| rec1.clone()).collect();
                let outs = TwoPhase::run_phase2_batch_from(&refs, fed, p1, &mut recs);
                for (&m, (rec, out)) in members.iter().zip(recs.iter().zip(outs)) {
                    let out = out.map_err(|e| e.to_string());
                    results[m] = Some(series_result(&e.series[m].label, rec, out, fed));
                }
            }
            Err(err) => {
                for &m in &members {
                    let out = Err(err.to_string());
                    results[m] = Some(series_result(&e.series[m].label, &rec1, out, fed));
                }
            }
        }
    }
    Ok(CellResult {
        version: FORMAT_VERSION,
        experiment: e.name.clone(),
        profile: plan.profile.clone(),
        cell: cell.clone(),
        sigma: data.params.sigma,
        series: results.into_iter().flatten().collect(),
    })
}

/// Path of a cell's file.
pub fn cell_path(out: &Path, cell: &CellSpec) -> PathBuf {
    out.join("cells").join(format!("{}.json", cell.id))
}

/// The message of a cell computed from another definition.
const OTHER_DEFINITION: &str = "this cell was computed from a different experiment definition \
    or profile; use a fresh output directory (or --force to recompute)";

/// A cell file as stored (format upgraded), unchecked against the plan.
fn parse_cell(path: &Path, cell: &CellSpec) -> Result<CellResult> {
    let text = std::fs::read_to_string(path).map_err(|e| FedmixError::io(path, e))?;
    let malformed = |e: serde_json::Error| FedmixError::Malformed {
        path: path.into(),
        message: e.to_string(),
    };
    let mut v: serde_json::Value = serde_json::from_str(&text).map_err(malformed)?;
    let kinds: Vec<_> = cell.configs.iter().map(AlgorithmParams::kind).collect();
    upgrade_cell(&mut v, &kinds);
    serde_json::from_value(v).map_err(malformed)
}

/// Read a cell file, checking that it was computed from `cell`'s specification.
///
/// # Errors
/// [`FedmixError::Malformed`] for unreadable JSON or a different specification.
pub fn read_cell(path: &Path, cell: &CellSpec) -> Result<CellResult> {
    let r = parse_cell(path, cell)?;
    if r.version != FORMAT_VERSION || r.cell != *cell {
        return Err(FedmixError::Malformed {
            path: path.into(),
            message: OTHER_DEFINITION.into(),
        });
    }
    Ok(r)
}

/// A cell on disk, against its specification in `plan`.
enum OnDisk {
    /// Computed from this specification.
    Complete,
    /// Computed before series were appended or inserted: its results by the plan's series
    /// index, `None` for the series to run.
    Extends(Vec<Option<SeriesResult>>),
}

/// Check the cell at `path` against `cell` of `plan`: equal, or the same cell of the same
/// experiment and profile computed when the experiment had fewer series — every stored series
/// present in the plan under its label with the same parameters (its result then stands: a
/// series depends on the cell's data and seed alone).
///
/// # Errors
/// [`FedmixError::Malformed`] for unreadable JSON or any other difference (a changed series,
/// data, seed, profile or format).
fn check_cell(path: &Path, plan: &Plan, cell: &CellSpec) -> Result<OnDisk> {
    let r = parse_cell(path, cell)?;
    if r.version == FORMAT_VERSION && r.cell == *cell {
        return Ok(OnDisk::Complete);
    }
    let other = || FedmixError::Malformed {
        path: path.into(),
        message: format!(
            "{OTHER_DEFINITION} (a cell computed before series were added is extended by \
             --resume; one whose other parts differ is not)"
        ),
    };
    let same_cell = r.version == FORMAT_VERSION
        && r.experiment == plan.experiment.name
        && r.profile == plan.profile
        && r.cell.id == cell.id
        && r.cell.x == cell.x
        && r.cell.variant == cell.variant
        && r.cell.seed == cell.seed
        && r.cell.data == cell.data
        && r.series.len() == r.cell.configs.len()
        && r.series.len() < cell.configs.len();
    if !same_cell {
        return Err(other());
    }
    let labels: Vec<&str> = plan
        .experiment
        .series
        .iter()
        .map(|s| s.label.as_str())
        .collect();
    let mut kept: Vec<Option<SeriesResult>> = vec![None; labels.len()];
    for (stored, config) in r.series.into_iter().zip(&r.cell.configs) {
        let i = labels
            .iter()
            .position(|l| *l == stored.label)
            .ok_or_else(other)?;
        if kept[i].is_some() || cell.configs[i] != *config {
            return Err(other());
        }
        kept[i] = Some(stored);
    }
    Ok(OnDisk::Extends(kept))
}

/// What [`run_plan`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Cells computed now.
    pub ran: usize,
    /// Cells found on disk (`resume`).
    pub skipped: usize,
    /// Cells of the shard left for a later `--resume` because the time budget ran out.
    pub left: usize,
}

/// Options of [`run_plan`].
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Shard `(i, n)`; `(1, 1)` = everything.
    pub shard: (usize, usize),
    /// Skip cells already on disk (after checking they match).
    pub resume: bool,
    /// Recompute and overwrite cells already on disk.
    pub force: bool,
    /// Worker threads (cells are independent; results do not depend on this).
    pub jobs: usize,
    /// Start no new cell after this much wall time (cells already started finish and are
    /// written); `None` = no budget. For sessions or jobs with a time limit.
    pub stop_after: Option<std::time::Duration>,
}

/// Run the cells of a shard into `out`, calling `progress(done, total, cell id)` after each.
///
/// # Errors
/// [`FedmixError::Output`] when a cell of this shard exists and neither `resume` nor `force`
/// is set, or the directory is unusable; data errors of a cell.
pub fn run_plan(
    plan: &Plan,
    out: &Path,
    opts: &RunOptions,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<RunReport> {
    prepare_output_dir(&out.join("cells"))?;
    write_json(&out.join("plan.json"), plan)?;
    let mine = plan.shard(opts.shard);
    let mut todo = Vec::new();
    let mut report = RunReport::default();
    for &c in &mine {
        let cell = &plan.cells[c];
        let path = cell_path(out, cell);
        if path.exists() && !opts.force {
            if !opts.resume {
                return Err(FedmixError::Output {
                    path,
                    message: "cell already computed; pass --resume to keep finished cells or \
                              --force to recompute them"
                        .into(),
                });
            }
            match check_cell(&path, plan, cell)? {
                OnDisk::Complete => report.skipped += 1,
                OnDisk::Extends(kept) => todo.push((c, kept)),
            }
        } else {
            todo.push((c, vec![None; plan.experiment.series.len()]));
        }
    }
    let total = todo.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let first_error: std::sync::Mutex<Option<FedmixError>> = std::sync::Mutex::new(None);
    let started = std::time::Instant::now();
    let out_of_time = || opts.stop_after.is_some_and(|b| started.elapsed() >= b);
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1).min(total.max(1)) {
            s.spawn(|| loop {
                if out_of_time() {
                    return;
                }
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= total || first_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                    return;
                }
                let cell = &plan.cells[todo[i].0];
                let res = run_cell_keeping(plan, cell, todo[i].1.clone())
                    .and_then(|r| write_json(&cell_path(out, cell), &r));
                match res {
                    Ok(()) => {
                        let d = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        progress(d, total, &cell.id);
                    }
                    Err(e) => {
                        if let Ok(mut slot) = first_error.lock() {
                            slot.get_or_insert(e);
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    report.ran = done.into_inner();
    report.left = total - report.ran;
    Ok(report)
}

/// Read `OUT/plan.json`.
///
/// # Errors
/// I/O or [`FedmixError::Malformed`].
pub fn read_plan(out: &Path) -> Result<Plan> {
    let path = out.join("plan.json");
    let text = std::fs::read_to_string(&path).map_err(|e| FedmixError::io(&path, e))?;
    let malformed = |e: serde_json::Error| FedmixError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    };
    let mut v: serde_json::Value = serde_json::from_str(&text).map_err(malformed)?;
    upgrade_plan(&mut v);
    let plan: Plan = serde_json::from_value(v).map_err(malformed)?;
    if plan.version != FORMAT_VERSION {
        return Err(FedmixError::UnsupportedVersion {
            path,
            found: plan.version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(plan)
}

/// Format 1 stored each series' configuration as the whole flat key table (every key of every
/// algorithm, most of them ignored by the series); format 2 stores the series' typed
/// parameters, serialised as the keys its algorithm reads plus `"algorithm"`. A format-1
/// configuration of a series of algorithm `kind` becomes the format-2 one by keeping `kind`'s
/// keys — exactly what its typed parameters were built from.
fn upgrade_config(v: &mut serde_json::Value, kind: fedmix::params::AlgorithmKind) {
    if let serde_json::Value::Object(m) = v {
        if !m.contains_key("algorithm") {
            let reads = fedmix::params::keys_of(kind);
            m.retain(|k, _| reads.contains(&k.as_str()));
            m.insert("algorithm".into(), kind.as_str().into());
        }
    }
}

/// Upgrade a format-1 cell (`version` 1) in place to format 2, its series' algorithms `kinds`
/// (format 1 did not record them in the cell; the plan's series do). Other versions are left
/// for the version check.
fn upgrade_cell(v: &mut serde_json::Value, kinds: &[fedmix::params::AlgorithmKind]) {
    if v.get("version").and_then(serde_json::Value::as_u64) != Some(1) {
        return;
    }
    v["version"] = FORMAT_VERSION.into();
    if let Some(configs) = v
        .get_mut("cell")
        .and_then(|c| c.get_mut("configs"))
        .and_then(serde_json::Value::as_array_mut)
    {
        for (c, &kind) in configs.iter_mut().zip(kinds) {
            upgrade_config(c, kind);
        }
    }
}

/// Upgrade a format-1 plan in place to format 2 (the series' algorithms from its experiment).
fn upgrade_plan(v: &mut serde_json::Value) {
    if v.get("version").and_then(serde_json::Value::as_u64) != Some(1) {
        return;
    }
    let kinds: Vec<fedmix::params::AlgorithmKind> = v["experiment"]["series"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| serde_json::from_value(s["algorithm"].clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    v["version"] = FORMAT_VERSION.into();
    if let Some(cells) = v.get_mut("cells").and_then(serde_json::Value::as_array_mut) {
        for cell in cells {
            if let Some(configs) = cell
                .get_mut("configs")
                .and_then(serde_json::Value::as_array_mut)
            {
                for (c, &kind) in configs.iter_mut().zip(&kinds) {
                    upgrade_config(c, kind);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(series: &str) -> Plan {
        let text = format!(
            r#"
name = "t"
title = "t"
paper = "t"
claim = "t"
setting = "sxy-balanced"
data = {{ d = 4, clients = 12, samples = 20 }}
[axis]
parameter = "sigma"
target = "data"
label = "σ"
values = [0.1, 0.5]
[profiles.quick]
seeds = 2
config = {{ rounds = 10 }}
{series}
[[figures]]
name = "f"
kind = "sweep"
metric = "distance"
"#
        );
        toml::from_str::<Experiment>(&text)
            .unwrap()
            .plan("quick")
            .unwrap()
    }

    fn series(label: &str, algorithm: &str, config: &str) -> String {
        format!("[[series]]\nlabel = \"{label}\"\nalgorithm = \"{algorithm}\"\nconfig = {{ {config} }}\n")
    }

    /// A series added to an experiment (here inserted between two) runs alone in each finished
    /// cell under `--resume`, and the cell then equals one computed whole; a cell whose kept
    /// series changed, or that has more series than the plan, is refused.
    #[test]
    fn resume_extends_cells_computed_before_a_series_was_added() {
        let dir = std::env::temp_dir().join(format!("fedmix-extend-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = RunOptions {
            shard: (1, 1),
            resume: true,
            force: false,
            jobs: 1,
            stop_after: None,
        };
        let quiet = |_: usize, _: usize, _: &str| {};
        let (p2, oracle) = (
            series("phase2", "phase2", "local_steps = 2"),
            series("oracle", "oracle", ""),
        );
        let before = plan(&format!("{p2}{oracle}"));
        let r = run_plan(&before, &dir, &opts, &quiet).unwrap();
        assert_eq!((r.ran, r.skipped), (before.cells.len(), 0));
        let after = plan(&format!("{p2}{}{oracle}", series("fedavg", "fedavg", "")));
        let r = run_plan(&after, &dir, &opts, &quiet).unwrap();
        assert_eq!((r.ran, r.skipped), (after.cells.len(), 0));
        for cell in &after.cells {
            let merged = read_cell(&cell_path(&dir, cell), cell).unwrap();
            assert_eq!(merged, run_cell(&after, cell).unwrap(), "{}", cell.id);
            assert!(merged.series.iter().all(|s| s.error.is_none()));
        }
        let r = run_plan(&after, &dir, &opts, &quiet).unwrap();
        assert_eq!((r.ran, r.skipped), (0, after.cells.len()));
        let changed = plan(&format!(
            "{p2}{}{oracle}",
            series("fedavg", "fedavg", "local_steps = 3")
        ));
        let fewer = plan(&p2);
        for refused in [changed, fewer] {
            match run_plan(&refused, &dir, &opts, &quiet) {
                Err(FedmixError::Malformed { message, .. }) => {
                    assert!(
                        message.contains("different experiment definition"),
                        "{message}"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
        // A kept series whose parameters changed is not an extension either.
        std::fs::remove_dir_all(&dir).ok();
        run_plan(&before, &dir, &opts, &quiet).unwrap();
        let kept_changed = plan(&format!(
            "{}{}{oracle}",
            series("phase2", "phase2", "local_steps = 3"),
            series("fedavg", "fedavg", "")
        ));
        assert!(matches!(
            run_plan(&kept_changed, &dir, &opts, &quiet),
            Err(FedmixError::Malformed { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
