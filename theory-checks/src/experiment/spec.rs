//! The experiment definition (one TOML file under `experiments/`), its profiles and the plan of
//! cells it resolves to.

use fedmix::algorithms::AlgorithmParams;
use fedmix::error::{FedmixError, Result};
use fedmix::synthetic::SettingParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the cell and plan files (2: each series' configuration is its typed parameters,
/// serialised as its algorithm's keys; format-1 files are upgraded on reading).
pub const FORMAT_VERSION: u32 = 2;

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
    /// Record per-round metrics in every cell even when no figure draws them, for claims about
    /// a run's stages (SR-FCA's misclustering after ONE_SHOT against after its REFINE steps).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_traces: bool,
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
    pub algorithm: fedmix::params::AlgorithmKind,
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
    /// The paper's figure this one mirrors, described in words (its image is not ours to
    /// copy); the report sets it beside ours.
    #[serde(default)]
    pub paper: Option<PaperFigure>,
}

/// A paper's figure as its text shows it: the caption, the surrounding text, the tick labels
/// its PDF's text layer keeps, and the authors' plotting code where they released one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFigure {
    /// Which figure and panel, e.g. "SXY22 Fig. 1, left panel".
    pub figure: String,
    /// Its x axis: quantity, scale and range, as far as the source shows them.
    pub x: String,
    /// Its y axis.
    pub y: String,
    /// Whether its x axis is logarithmic (absent: the source does not show it).
    #[serde(default)]
    pub log_x: Option<bool>,
    /// Whether its y axis is logarithmic (absent: the source does not show it).
    #[serde(default)]
    pub log_y: Option<bool>,
    /// Its curves and what they do.
    pub curves: String,
    /// Where this description comes from.
    pub source: String,
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
    /// Each series' typed parameters, in series order.
    pub configs: Vec<AlgorithmParams>,
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

fn config_from(
    kind: fedmix::params::AlgorithmKind,
    tables: &[&toml::Table],
) -> Result<AlgorithmParams> {
    let mut t = toml::Table::new();
    for table in tables {
        for (k, v) in table.iter() {
            t.insert(k.clone(), v.clone());
        }
    }
    AlgorithmParams::from_shared_table(kind, t, "an experiment's config")
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
        // A key a series' algorithm does not read would be silently ignored: refuse it. Keys
        // shared by every series (the experiment's, the profile's, a variant's, the axis) must
        // be read by at least one of them.
        for s in &self.series {
            fedmix::params::check_applicable(
                s.algorithm,
                s.config.iter().map(|(k, v)| (k.as_str(), v.to_string())),
            )
            .map_err(|e| match e {
                FedmixError::InvalidParameter {
                    name,
                    value,
                    reason,
                } => {
                    FedmixError::invalid(&name, value, format!("in series `{}`: {reason}", s.label))
                }
                other => other,
            })?;
        }
        let shared = self
            .config
            .keys()
            .chain(self.profiles.values().flat_map(|p| p.config.keys()))
            .chain(self.variants.iter().flat_map(|v| v.config.keys()))
            .chain(
                self.axis
                    .iter()
                    .filter(|a| a.target == Target::Config)
                    .map(|a| &a.parameter),
            );
        for key in shared {
            // (An unknown key is left to the configuration parser's own error.)
            let read = !fedmix::params::KEYS.contains(&key.as_str())
                || self
                    .series
                    .iter()
                    .any(|s| fedmix::params::keys_of(s.algorithm).contains(&key.as_str()));
            if !read {
                return Err(FedmixError::invalid(
                    key,
                    "(a shared setting)",
                    format!(
                        "no series of experiment `{}` reads it (algorithms: {})",
                        self.name,
                        self.series
                            .iter()
                            .map(|s| s.algorithm.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
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
                        config_from(
                            s.algorithm,
                            &[
                                &self.config,
                                &prof.config,
                                variant.map_or(&empty, |v| &v.config),
                                &s.config,
                                &axis_config,
                            ],
                        )
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
