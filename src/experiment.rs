//! Experiments as files (the figures of SXY22 App. C Figs. 1–3, IFCA §6.1 Fig. 3 and SR-FCA §5,
//! and our own sweeps): a TOML under `experiments/` names a synthetic setting,
//! algorithms ("series"), an optional parameter axis, variants (e.g. several σ), seeds per
//! profile and the figures to draw. The runner splits it into independent **cells** — one per
//! axis value × variant × data seed; a cell generates its data once and runs every series on
//! it — and writes each cell's result atomically to `OUT/cells/<id>.json`. A shard `i/n` runs
//! the cells whose index is `i − 1 (mod n)`; `resume` skips cells already on disk; [`merge`]
//! assembles the figure data from whatever cells exist. A cell's file depends only on its
//! specification (no wall times inside), so one process, many shards, or a killed-and-resumed
//! run give byte-identical merged results.
//!
//! Two-phase series of one cell that differ only in Phase 2 parameters share one Phase 1 run
//! (the same anchors, samples and `θ₀` they would draw alone; a test checks that the shared
//! path equals [`crate::algorithms::two_phase::TwoPhase`] bit for bit).

use crate::algorithms::two_phase::{RunConfig, TwoPhase};
use crate::error::{FedmixError, Result};
use crate::io::{prepare_output_dir, write_json};
use crate::randomness::Randomness;
use crate::run::{Phase, Recorder, RunOutput};
use crate::synthetic::{self, SettingParams};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the cell and plan files.
pub const FORMAT_VERSION: u32 = 1;

/// An experiment definition (one TOML file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Short name (file stem; used for output names).
    pub name: String,
    /// Figure title prefix.
    pub title: String,
    /// The paper figure or table mirrored.
    pub paper: String,
    /// What the paper claims (one paragraph, for the report).
    pub claim: String,
    /// Our observation and where it differs (one paragraph, for the report).
    #[serde(default)]
    pub discussion: String,
    /// Synthetic setting (`fedmix settings`).
    pub setting: String,
    /// Data parameter overrides for every cell.
    #[serde(default)]
    pub data: toml::Table,
    /// Run-configuration overrides for every series.
    #[serde(default)]
    pub config: toml::Table,
    /// Profiles by name (`quick`, `full`).
    pub profiles: BTreeMap<String, ProfileSpec>,
    /// Optional parameter axis (x of `sweep` figures).
    #[serde(default)]
    pub axis: Option<Axis>,
    /// Variants (each a separate line group, e.g. one per σ); none = one implicit variant.
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Algorithms run in every cell.
    pub series: Vec<Series>,
    /// Figures drawn from the cells.
    pub figures: Vec<FigureSpec>,
}

/// What changes between profiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Data seeds `1..=seeds`.
    pub seeds: u64,
    /// Extra data overrides.
    #[serde(default)]
    pub data: toml::Table,
    /// Extra run-configuration overrides (every series).
    #[serde(default)]
    pub config: toml::Table,
    /// Axis values replacing [`Axis::values`].
    #[serde(default)]
    pub axis_values: Option<Vec<toml::Value>>,
    /// Only the variants with these labels (default: all).
    #[serde(default)]
    pub variants: Option<Vec<String>>,
}

/// Where an axis parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// A synthetic-data parameter (`fedmix settings`).
    Data,
    /// A run-configuration field.
    Config,
}

/// The x axis of sweep figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// Parameter name.
    pub parameter: String,
    /// Data or run configuration.
    pub target: Target,
    /// Axis label.
    pub label: String,
    /// Values (numbers).
    pub values: Vec<toml::Value>,
    /// Logarithmic axis.
    #[serde(default)]
    pub log: bool,
}

/// A variant: extra overrides and a label suffix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Label (e.g. `σ = 0.1`).
    pub label: String,
    /// Data overrides.
    #[serde(default)]
    pub data: toml::Table,
    /// Run-configuration overrides.
    #[serde(default)]
    pub config: toml::Table,
}

/// One algorithm with its configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// Legend label (unique).
    pub label: String,
    /// `fedmix run --algorithm` name.
    pub algorithm: String,
    /// Run-configuration overrides.
    #[serde(default)]
    pub config: toml::Table,
}

/// Figure kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FigureKind {
    /// A per-round metric vs round (mean and interquartile band over seeds).
    Trace,
    /// A final scalar vs the axis parameter.
    Sweep,
}

/// Metrics a figure can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// `d(θ, θ*)` (SXY22 eq. 6); in Phase 1 rows the anchors' max error; with fewer than k
    /// models the coverage distance `max_j min_l ‖θ_l − θ*_j‖`.
    Distance,
    /// Misclustering rate of clients.
    Misclustering,
    /// Success: the official verdict for `ifca-official`, otherwise
    /// `final distance < success_factor·σ + success_offset`.
    Success,
    /// Number of models at the end (SR-FCA / CFL find their own).
    Clusters,
    /// First round with `distance ≤ target` (absent when never reached).
    RoundsToTarget,
    /// Floats sent (down + up) up to that round.
    FloatsToTarget,
}

/// One figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// Name (file stem suffix).
    pub name: String,
    /// Kind.
    pub kind: FigureKind,
    /// Metric.
    pub metric: Metric,
    /// Series labels to draw (default: all).
    #[serde(default)]
    pub series: Option<Vec<String>>,
    /// Logarithmic y axis.
    #[serde(default)]
    pub log_y: bool,
    /// Target error of `rounds-to-target` / `floats-to-target`.
    #[serde(default)]
    pub target: Option<f64>,
    /// Success rule factor (default 0.6, the IFCA code's).
    #[serde(default = "default_factor")]
    pub success_factor: f64,
    /// Success rule offset (default 0).
    #[serde(default)]
    pub success_offset: f64,
}

fn default_factor() -> f64 {
    0.6
}

/// One cell: what it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// File stem, e.g. `x02-v1-s0007`.
    pub id: String,
    /// Axis index and value.
    pub x: Option<(usize, f64)>,
    /// Variant index.
    pub variant: Option<usize>,
    /// Data and algorithm seed.
    pub seed: u64,
    /// Data overrides in effect, in order.
    pub data: Vec<(String, String)>,
    /// Resolved run configuration per series.
    pub configs: Vec<RunConfig>,
}

/// An experiment resolved under a profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// File format version.
    pub version: u32,
    /// The definition.
    pub experiment: Experiment,
    /// Profile name.
    pub profile: String,
    /// Axis values in effect.
    pub axis_values: Vec<f64>,
    /// Every cell, in a fixed order.
    pub cells: Vec<CellSpec>,
}

/// One series' outcome in a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesResult {
    /// Label.
    pub label: String,
    /// Typed error message when the run failed (divergence, too few clusters…).
    pub error: Option<String>,
    /// Number of leading Phase 1 rounds.
    pub phase1_rounds: usize,
    /// Per-round `d(θ, θ*)`.
    pub distance: Vec<Option<f64>>,
    /// Per-round misclustering (clients).
    pub misclustering: Vec<Option<f64>>,
    /// Cumulative floats (down + up) after each round.
    pub floats: Vec<u64>,
    /// Final `d(θ̂, θ*)`.
    pub final_distance: Option<f64>,
    /// Final misclustering (clients).
    pub final_misclustering: Option<f64>,
    /// Number of final models.
    pub clusters: usize,
    /// `ifca-official`'s own verdict.
    pub official_success: Option<bool>,
}

/// A cell's file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// File format version.
    pub version: u32,
    /// Experiment name.
    pub experiment: String,
    /// Profile.
    pub profile: String,
    /// The cell.
    pub cell: CellSpec,
    /// Data noise σ (for success rules).
    pub sigma: f64,
    /// One per series, in series order.
    pub series: Vec<SeriesResult>,
}

fn value_string(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(a) => a.iter().map(value_string).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

fn value_number(v: &toml::Value, what: &str) -> Result<f64> {
    match v {
        toml::Value::Integer(i) => Ok(*i as f64),
        toml::Value::Float(f) => Ok(*f),
        other => Err(FedmixError::invalid(
            what,
            other,
            "axis values must be numbers",
        )),
    }
}

fn config_from(tables: &[&toml::Table]) -> Result<RunConfig> {
    let mut t = toml::Table::new();
    for table in tables {
        for (k, v) in table.iter() {
            t.insert(k.clone(), v.clone());
        }
    }
    let cfg: RunConfig = toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| FedmixError::Malformed {
            path: "experiment config".into(),
            message: e.to_string().replace('\n', " "),
        })?;
    cfg.check()?;
    Ok(cfg)
}

impl Experiment {
    /// Read and check an experiment file.
    ///
    /// # Errors
    /// [`FedmixError::Malformed`] (TOML syntax, unknown keys, wrong types) naming the file.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| FedmixError::io(path, e))?;
        let e: Experiment = toml::from_str(&text).map_err(|e| FedmixError::Malformed {
            path: path.into(),
            message: e.to_string().replace('\n', " "),
        })?;
        Ok(e)
    }

    /// Resolve under `profile`: every cell with its data overrides and configurations, each
    /// checked (unknown data parameters, bad values, unknown algorithms, figure series).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] / [`FedmixError::UnknownParameter`] /
    /// [`FedmixError::Malformed`] naming the field.
    pub fn plan(&self, profile: &str) -> Result<Plan> {
        let prof = self.profiles.get(profile).ok_or_else(|| {
            FedmixError::invalid(
                "profile",
                profile,
                format!(
                    "experiment `{}` defines: {}",
                    self.name,
                    self.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        if prof.seeds == 0 {
            return Err(FedmixError::invalid("seeds", 0, "need at least one seed"));
        }
        if self.series.is_empty() {
            return Err(FedmixError::invalid(
                "series",
                "[]",
                "need at least one series",
            ));
        }
        let labels: Vec<&str> = self.series.iter().map(|s| s.label.as_str()).collect();
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].contains(l) {
                return Err(FedmixError::invalid(
                    "series.label",
                    l,
                    "labels must be unique",
                ));
            }
        }
        for s in &self.series {
            if !crate::algorithms::ALGORITHMS.contains(&s.algorithm.as_str()) {
                return Err(FedmixError::invalid(
                    "series.algorithm",
                    &s.algorithm,
                    format!("known: {}", crate::algorithms::ALGORITHMS.join(", ")),
                ));
            }
        }
        for f in &self.figures {
            for l in f.series.iter().flatten() {
                if !labels.contains(&l.as_str()) {
                    return Err(FedmixError::invalid(
                        "figures.series",
                        l,
                        format!("no series with this label in `{}`", self.name),
                    ));
                }
            }
            if f.kind == FigureKind::Sweep && self.axis.is_none() {
                return Err(FedmixError::invalid(
                    "figures.kind",
                    "sweep",
                    "a sweep figure needs an [axis]",
                ));
            }
            if matches!(f.metric, Metric::RoundsToTarget | Metric::FloatsToTarget)
                && !f.target.is_some_and(|t| t.is_finite() && t > 0.0)
            {
                return Err(FedmixError::invalid(
                    "figures.target",
                    format!("{:?}", f.target),
                    "rounds-to-target / floats-to-target need a target > 0",
                ));
            }
        }
        let axis_raw: Vec<toml::Value> = match &self.axis {
            Some(a) => prof.axis_values.clone().unwrap_or_else(|| a.values.clone()),
            None => Vec::new(),
        };
        if self.axis.is_some() && axis_raw.is_empty() {
            return Err(FedmixError::invalid(
                "axis.values",
                "[]",
                "need at least one value",
            ));
        }
        let axis_values = axis_raw
            .iter()
            .map(|v| value_number(v, "axis.values"))
            .collect::<Result<Vec<_>>>()?;
        let xs: Vec<Option<usize>> = if axis_raw.is_empty() {
            vec![None]
        } else {
            (0..axis_raw.len()).map(Some).collect()
        };
        if let Some(l) = prof
            .variants
            .iter()
            .flatten()
            .find(|l| !self.variants.iter().any(|v| &v.label == *l))
        {
            return Err(FedmixError::invalid(
                "profiles.variants",
                l,
                "no variant with this label",
            ));
        }
        let vs: Vec<Option<usize>> = if self.variants.is_empty() {
            vec![None]
        } else {
            (0..self.variants.len())
                .filter(|&v| {
                    prof.variants
                        .as_ref()
                        .is_none_or(|l| l.contains(&self.variants[v].label))
                })
                .map(Some)
                .collect()
        };
        let empty = toml::Table::new();
        let mut cells = Vec::new();
        for &xi in &xs {
            for &vi in &vs {
                let variant = vi.map(|v| &self.variants[v]);
                let mut data: Vec<(String, String)> = Vec::new();
                let mut push = |t: &toml::Table| {
                    for (k, v) in t {
                        data.push((k.clone(), value_string(v)));
                    }
                };
                push(&self.data);
                push(&prof.data);
                push(variant.map_or(&empty, |v| &v.data));
                let mut axis_config = toml::Table::new();
                if let (Some(i), Some(a)) = (xi, &self.axis) {
                    match a.target {
                        Target::Data => {
                            data.push((a.parameter.clone(), value_string(&axis_raw[i])))
                        }
                        Target::Config => {
                            axis_config.insert(a.parameter.clone(), axis_raw[i].clone());
                        }
                    }
                }
                // Check the data parameters once per (x, variant).
                let mut params = SettingParams::named(&self.setting)?;
                for (k, v) in &data {
                    params.set(k, v)?;
                }
                params.check()?;
                let configs = self
                    .series
                    .iter()
                    .map(|s| {
                        config_from(&[
                            &self.config,
                            &prof.config,
                            variant.map_or(&empty, |v| &v.config),
                            &s.config,
                            &axis_config,
                        ])
                    })
                    .collect::<Result<Vec<_>>>()?;
                for seed in 1..=prof.seeds {
                    let id = format!(
                        "x{}-v{}-s{seed:04}",
                        xi.map_or("-".into(), |i| format!("{i:02}")),
                        vi.map_or("-".into(), |v| format!("{v:02}")),
                    );
                    cells.push(CellSpec {
                        id,
                        x: xi.map(|i| (i, axis_values[i])),
                        variant: vi,
                        seed,
                        data: data.clone(),
                        configs: configs.clone(),
                    });
                }
            }
        }
        Ok(Plan {
            version: FORMAT_VERSION,
            experiment: self.clone(),
            profile: profile.into(),
            axis_values,
            cells,
        })
    }
}

/// `(i, n)` from `"i/n"` with `1 ≤ i ≤ n`.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming `shard`.
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let bad = || FedmixError::invalid("shard", s, "expected i/n with 1 ≤ i ≤ n, e.g. 3/8");
    let (a, b) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = a.trim().parse().map_err(|_| bad())?;
    let n: usize = b.trim().parse().map_err(|_| bad())?;
    if n == 0 || i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

impl Plan {
    /// Indices of the cells of shard `(i, n)` (every `n`-th cell, starting at `i − 1`).
    pub fn shard(&self, (i, n): (usize, usize)) -> Vec<usize> {
        (0..self.cells.len()).filter(|c| c % n == i - 1).collect()
    }
}

fn series_result(
    label: &str,
    rec: &Recorder,
    out: std::result::Result<RunOutput, String>,
    fed: &crate::federation::Federation,
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
                    *d = crate::metrics::coverage_distance(theta, ts).ok();
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
            let fin = crate::output::final_metrics(fed, None, &out);
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
                .extra
                .get("ifca_official")
                .and_then(|v| v.pointer("/verdict/success"))
                .and_then(serde_json::Value::as_bool);
        }
    }
    s
}

/// The key under which two-phase series share Phase 1 (its parameters and the start's scale),
/// after checking both phases' parameters: an error here belongs to the series alone.
fn phase1_key(cfg: &RunConfig, fed: &crate::federation::Federation) -> Result<String> {
    let p1 = cfg.phase1(fed)?;
    cfg.phase2(fed).check(fed)?;
    Ok(format!(
        "{}|{}",
        serde_json::to_string(&p1).unwrap_or_default(),
        cfg.init_scale.to_bits()
    ))
}

/// Whether an experiment's figures need per-round metrics (a trace figure, or rounds / floats
/// to a target error); sweeps of final values record communication only, which lets runs skip
/// per-round metric passes and re-runs.
pub fn needs_traces(e: &Experiment) -> bool {
    e.figures.iter().any(|f| {
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
    let mut results: Vec<Option<SeriesResult>> = vec![None; e.series.len()];
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (s, cfg)) in e.series.iter().zip(&cell.configs).enumerate() {
        if s.algorithm == "two-phase" {
            match phase1_key(cfg, fed) {
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
        let out = crate::algorithms::by_name(&s.algorithm, cfg, None, Some(data.params.sigma))
            .and_then(|alg| alg.run(fed, cell.seed, &mut rec))
            .map_err(|e| e.to_string());
        results[i] = Some(series_result(&s.label, &rec, out, fed));
    }
    for (_, members) in groups {
        let algs: Vec<TwoPhase> = members
            .iter()
            .map(|&m| TwoPhase {
                cfg: cell.configs[m].clone(),
                init: None,
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

/// Read a cell file, checking that it was computed from `cell`'s specification.
///
/// # Errors
/// [`FedmixError::Malformed`] for unreadable JSON or a different specification.
pub fn read_cell(path: &Path, cell: &CellSpec) -> Result<CellResult> {
    let text = std::fs::read_to_string(path).map_err(|e| FedmixError::io(path, e))?;
    let r: CellResult = serde_json::from_str(&text).map_err(|e| FedmixError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    if r.version != FORMAT_VERSION || r.cell != *cell {
        return Err(FedmixError::Malformed {
            path: path.into(),
            message: "this cell was computed from a different experiment definition or \
                      profile; use a fresh output directory (or --force to recompute)"
                .into(),
        });
    }
    Ok(r)
}

/// What [`run_plan`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Cells computed now.
    pub ran: usize,
    /// Cells found on disk (`resume`).
    pub skipped: usize,
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
            read_cell(&path, cell)?;
            report.skipped += 1;
        } else {
            todo.push(c);
        }
    }
    let total = todo.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let first_error: std::sync::Mutex<Option<FedmixError>> = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1).min(total.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= total || first_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                    return;
                }
                let cell = &plan.cells[todo[i]];
                let res = run_cell(plan, cell).and_then(|r| write_json(&cell_path(out, cell), &r));
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
    report.ran = total;
    Ok(report)
}

/// Read `OUT/plan.json`.
///
/// # Errors
/// I/O or [`FedmixError::Malformed`].
pub fn read_plan(out: &Path) -> Result<Plan> {
    let path = out.join("plan.json");
    let text = std::fs::read_to_string(&path).map_err(|e| FedmixError::io(&path, e))?;
    let plan: Plan = serde_json::from_str(&text).map_err(|e| FedmixError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if plan.version != FORMAT_VERSION {
        return Err(FedmixError::UnsupportedVersion {
            path,
            found: plan.version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(plan)
}

/// Mean and interquartile band of the values present (or a Wilson interval for success).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// x (round or axis value).
    pub x: f64,
    /// Mean (for success: the proportion).
    pub mean: f64,
    /// Lower band (25 % quantile over seeds, linear interpolation; for success: Wilson 95 %
    /// lower limit).
    pub lo: f64,
    /// Upper band (75 % quantile; for success: Wilson 95 % upper limit).
    pub hi: f64,
    /// Number of seeds with a value.
    pub n: usize,
}

/// One line of a merged figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Legend label (series, with the variant).
    pub label: String,
    /// Points.
    pub points: Vec<Band>,
    /// Phase 1 rounds (trace figures of two-phase series; shaded).
    pub phase1_rounds: usize,
    /// Runs of this line that failed (a typed error instead of a result), in cell order.
    pub failures: Vec<Failure>,
}

/// A run of a line that ended in a typed error (e.g. Phase 1 finding fewer than k clusters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Data seed of the cell.
    pub seed: u64,
    /// Axis value of the cell (sweeps); `None` in trace figures, where a failure has no round.
    pub x: Option<f64>,
    /// The error's message.
    pub message: String,
}

/// A merged figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedFigure {
    /// `<experiment>-<figure>`.
    pub name: String,
    /// Title.
    pub title: String,
    /// x label.
    pub x_label: String,
    /// y label.
    pub y_label: String,
    /// Log x.
    pub log_x: bool,
    /// Log y.
    pub log_y: bool,
    /// Lines.
    pub lines: Vec<Line>,
}

/// The merged result of an output directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    /// Experiment name.
    pub experiment: String,
    /// Profile.
    pub profile: String,
    /// Cells found / planned.
    pub cells_found: usize,
    /// Cells planned.
    pub cells_planned: usize,
    /// Cells missing (ids).
    pub missing: Vec<String>,
    /// Figures.
    pub figures: Vec<MergedFigure>,
}

/// Wilson score interval (95 %) for `x` successes out of `n`.
pub fn wilson(x: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (nf, p) = (n as f64, x as f64 / n as f64);
    let den = 1.0 + z * z / nf;
    let centre = (p + z * z / (2.0 * nf)) / den;
    let half = z * (p * (1.0 - p) / nf + z * z / (4.0 * nf * nf)).sqrt() / den;
    // At x = 0 and x = n the limits are exactly 0 and 1 (rounding would give 1 − 1e−16).
    let lo = if x == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if x == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

fn band(x: f64, vals: &[f64]) -> Option<Band> {
    if vals.is_empty() {
        return None;
    }
    let n = vals.len();
    let mut sorted = vals.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Quantile with linear interpolation between order statistics (numpy's default).
    let q = |p: f64| {
        let h = p * (n - 1) as f64;
        let (i, f) = (h.floor() as usize, h - h.floor());
        sorted[i] + f * (sorted[(i + 1).min(n - 1)] - sorted[i])
    };
    Some(Band {
        x,
        mean: vals.iter().sum::<f64>() / n as f64,
        lo: q(0.25),
        hi: q(0.75),
        n,
    })
}

fn scalar(f: &FigureSpec, s: &SeriesResult, sigma: f64) -> Option<f64> {
    if s.error.is_some() {
        return None;
    }
    let reach = |t: f64| s.distance.iter().position(|d| d.is_some_and(|d| d <= t));
    match f.metric {
        Metric::Distance => s.final_distance,
        Metric::Misclustering => s.final_misclustering,
        Metric::Clusters => Some(s.clusters as f64),
        Metric::Success => Some(f64::from(u8::from(s.official_success.unwrap_or_else(
            || {
                s.final_distance
                    .is_some_and(|d| d < f.success_factor * sigma + f.success_offset)
            },
        )))),
        Metric::RoundsToTarget => f.target.and_then(reach).map(|r| (r + 1) as f64),
        Metric::FloatsToTarget => f.target.and_then(reach).map(|r| s.floats[r] as f64),
    }
}

/// Assemble every figure from the cells present in `out`.
///
/// # Errors
/// [`read_plan`] errors; a cell file that does not match the plan.
pub fn merge(out: &Path) -> Result<Merged> {
    let plan = read_plan(out)?;
    let e = &plan.experiment;
    let mut cells: Vec<CellResult> = Vec::new();
    let mut missing = Vec::new();
    for cell in &plan.cells {
        let path = cell_path(out, cell);
        if path.exists() {
            cells.push(read_cell(&path, cell)?);
        } else {
            missing.push(cell.id.clone());
        }
    }
    let mut variants: Vec<Option<usize>> = plan.cells.iter().map(|c| c.variant).collect();
    variants.sort_unstable();
    variants.dedup();
    let mut figures = Vec::new();
    for f in &e.figures {
        let chosen: Vec<usize> = e
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| f.series.as_ref().is_none_or(|l| l.contains(&s.label)))
            .map(|(i, _)| i)
            .collect();
        let mut lines = Vec::new();
        for &v in &variants {
            for &si in &chosen {
                let label = match v {
                    Some(v) => format!("{} ({})", e.series[si].label, e.variants[v].label),
                    None => e.series[si].label.clone(),
                };
                let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.variant == v).collect();
                let failures: Vec<Failure> = mine
                    .iter()
                    .filter_map(|c| {
                        c.series[si].error.as_ref().map(|m| Failure {
                            seed: c.cell.seed,
                            x: match f.kind {
                                FigureKind::Trace => None,
                                FigureKind::Sweep => {
                                    c.cell.x.and_then(|p| plan.axis_values.get(p.0).copied())
                                }
                            },
                            message: m.clone(),
                        })
                    })
                    .collect();
                let mut points = Vec::new();
                let mut phase1_rounds = 0;
                match f.kind {
                    FigureKind::Trace => {
                        let len = mine
                            .iter()
                            .map(|c| c.series[si].distance.len())
                            .max()
                            .unwrap_or(0);
                        phase1_rounds = mine
                            .iter()
                            .map(|c| c.series[si].phase1_rounds)
                            .max()
                            .unwrap_or(0);
                        for r in 0..len {
                            let vals: Vec<f64> = mine
                                .iter()
                                .filter_map(|c| {
                                    let s = &c.series[si];
                                    match f.metric {
                                        Metric::Misclustering => {
                                            s.misclustering.get(r).copied().flatten()
                                        }
                                        _ => s.distance.get(r).copied().flatten(),
                                    }
                                })
                                .collect();
                            points.extend(band((r + 1) as f64, &vals));
                        }
                    }
                    FigureKind::Sweep => {
                        for (xi, &x) in plan.axis_values.iter().enumerate() {
                            let at: Vec<&&CellResult> = mine
                                .iter()
                                .filter(|c| c.cell.x.map(|p| p.0) == Some(xi))
                                .collect();
                            let vals: Vec<f64> = at
                                .iter()
                                .filter_map(|c| scalar(f, &c.series[si], c.sigma))
                                .collect();
                            if f.metric == Metric::Success {
                                let n = at.len();
                                let succ = vals.iter().filter(|&&v| v > 0.5).count();
                                if n > 0 {
                                    let (lo, hi) = wilson(succ, n);
                                    points.push(Band {
                                        x,
                                        mean: succ as f64 / n as f64,
                                        lo,
                                        hi,
                                        n,
                                    });
                                }
                            } else {
                                points.extend(band(x, &vals));
                            }
                        }
                    }
                }
                lines.push(Line {
                    label,
                    points,
                    phase1_rounds,
                    failures,
                });
            }
        }
        let (x_label, log_x) = match (f.kind, &e.axis) {
            (FigureKind::Sweep, Some(a)) => (a.label.clone(), a.log),
            _ => ("round".to_string(), false),
        };
        let y_label = match f.metric {
            Metric::Distance => "d(θ, θ*)".to_string(),
            Metric::Misclustering => "misclustering (clients)".to_string(),
            Metric::Success => format!(
                "success probability ({} seeds/point planned)",
                plan.experiment.profiles[&plan.profile].seeds
            ),
            Metric::Clusters => "clusters found".to_string(),
            Metric::RoundsToTarget => format!("rounds to d ≤ {}", f.target.unwrap_or(0.0)),
            Metric::FloatsToTarget => format!("floats sent to d ≤ {}", f.target.unwrap_or(0.0)),
        };
        figures.push(MergedFigure {
            name: format!("{}-{}", e.name, f.name),
            title: format!("{} — {}", e.title, f.name),
            x_label,
            y_label,
            log_x,
            log_y: f.log_y,
            lines,
        });
    }
    Ok(Merged {
        experiment: e.name.clone(),
        profile: plan.profile.clone(),
        cells_found: cells.len(),
        cells_planned: plan.cells.len(),
        missing,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_cells() {
        for n in 1..5 {
            let mut all: Vec<usize> = Vec::new();
            let plan_cells = 11;
            for i in 1..=n {
                all.extend((0..plan_cells).filter(|c| c % n == i - 1));
            }
            all.sort_unstable();
            assert_eq!(all, (0..plan_cells).collect::<Vec<_>>());
        }
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert!(parse_shard("x").is_err());
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    }

    #[test]
    fn shared_phase1_equals_the_two_phase_algorithm_bit_for_bit() {
        let text = r#"
name = "t"
title = "t"
paper = "t"
claim = "t"
setting = "sxy-balanced"
data = { d = 6, clients = 30, samples = 25 }
[profiles.quick]
seeds = 1
config = { rounds = 30 }
[[series]]
label = "s1"
algorithm = "two-phase"
config = { local_steps = 1 }
[[series]]
label = "prox"
algorithm = "two-phase"
config = { local_solver = "fedprox" }
[[series]]
label = "s5 eta"
algorithm = "two-phase"
config = { local_steps = 5, eta_gamma = 0.5 }
[[figures]]
name = "f"
kind = "trace"
metric = "distance"
"#;
        let e: Experiment = toml::from_str(text).unwrap();
        let plan = e.plan("quick").unwrap();
        let cell = &plan.cells[0];
        let got = run_cell(&plan, cell).unwrap();
        let data = synthetic::generate_named("sxy-balanced", 1, &cell.data).unwrap();
        for (series, cfg) in got.series.iter().zip(&cell.configs) {
            let alg = crate::algorithms::two_phase::TwoPhase {
                cfg: cfg.clone(),
                init: None,
            };
            let mut rec = Recorder::new(false);
            let out = crate::run::Algorithm::run(&alg, &data.train, 1, &mut rec).unwrap();
            let want: Vec<Option<f64>> = rec.rows.iter().map(|r| r.distance).collect();
            assert_eq!(series.error, None);
            assert_eq!(series.distance, want, "{}", series.label);
            assert_eq!(series.phase1_rounds, 10);
            let fin = crate::output::final_metrics(&data.train, None, &out);
            assert_eq!(series.final_distance, fin["distance"].as_f64());
        }
    }

    /// Sweep-only experiments record communication only (no per-round metrics, no re-run of
    /// the reported restart or official run); their final values equal those of the same
    /// cells recorded in full.
    #[test]
    fn sweep_cells_without_traces_give_the_same_final_values() {
        let text = |kind: &str| {
            format!(
                r#"
name = "t"
title = "t"
paper = "t"
claim = "t"
setting = "ifca-official"
data = {{ d = 12, clients = 16, samples = 20, r = 1.0, sigma = 0.1 }}
[axis]
parameter = "r"
target = "data"
label = "r"
values = [1.0]
[profiles.quick]
seeds = 1
config = {{ rounds = 25, ifca_official_inits = 3, ifca_official_iterations = 40, restarts = 3 }}
[[series]]
label = "official"
algorithm = "ifca-official"
[[series]]
label = "ifca"
algorithm = "ifca"
[[series]]
label = "two-phase"
algorithm = "two-phase"
config = {{ anchors = 6, anchor_min_samples = 4 }}
[[figures]]
name = "f"
kind = "{kind}"
metric = "distance"
"#
            )
        };
        let run = |kind: &str| {
            let e: Experiment = toml::from_str(&text(kind)).unwrap();
            assert_eq!(needs_traces(&e), kind == "trace");
            let plan = e.plan("quick").unwrap();
            run_cell(&plan, &plan.cells[0]).unwrap()
        };
        let (full, quiet) = (run("trace"), run("sweep"));
        for (a, b) in full.series.iter().zip(&quiet.series) {
            assert_eq!(a.error, b.error, "{}", a.label);
            assert!(a.error.is_none(), "{}: {:?}", a.label, a.error);
            assert_eq!(a.final_distance, b.final_distance, "{}", a.label);
            assert_eq!(a.final_misclustering, b.final_misclustering, "{}", a.label);
            assert_eq!(a.official_success, b.official_success, "{}", a.label);
            assert_eq!(a.floats, b.floats, "{}: communication", a.label);
            assert!(a.distance.iter().any(Option::is_some));
            // (Phase 1 rows carry the anchors' error either way: they cost nothing extra.)
            assert!(b.distance[b.phase1_rounds..].iter().all(Option::is_none));
        }
    }

    #[test]
    fn wilson_interval_brackets_the_proportion() {
        let (lo, hi) = wilson(5, 10);
        assert!(lo < 0.5 && hi > 0.5);
        // Known value: Wilson 95 % for 5/10 is [0.2366, 0.7634] (Agresti–Coull 1998, Table I form).
        assert!((lo - 0.2366).abs() < 1e-4 && (hi - 0.7634).abs() < 1e-4);
        assert!(wilson(0, 10).0.abs() < f64::MIN_POSITIVE);
        assert!((wilson(10, 10).1 - 1.0).abs() < f64::MIN_POSITIVE);
        let (lo, hi) = wilson(0, 10);
        // Wilson upper limit for 0/10: z²/(n + z²) = 3.8415/13.8415 = 0.2775.
        assert!(lo.abs() < f64::MIN_POSITIVE && (hi - 0.2775).abs() < 1e-4);
    }
}
