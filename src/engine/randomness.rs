//! Every source of randomness of a run, suppliable from files and exportable, so that another
//! implementation can be validated against this one on the same draws (`docs/validating.md`):
//! `--init`, `--anchors`, `--q0`, `--power-start`, `--participation`, and
//! `fedmix run --export-randomness DIR`, which writes what a run drew in exactly the formats
//! those flags read. Formats (docs/validating.md §2):
//!
//! | file | content |
//! |---|---|
//! | `init.npy` | float64 `k × d` initial models (`two-phase`, `fedavg`: `1 × d`); IFCA with `R` restarts: `R × k × d` (a `k × d` file is restart 0's start only); `ifca-official`: `inits × k × d`, one start per init seed, each run with every learning rate |
//! | `anchors.json` | `{"version": 1, "variant": "practical"\|"faithful", "anchors": [ids…], "client_sets": [[ids…]…]}` — `client_sets` only for `faithful` (`T` sets of `m`) |
//! | `q0.npy` | float64 `T × n_H × d × k`: `q0[t][a]` is the orthonormal start `Q₀` of anchor `a`'s orthogonal iteration at Phase 1 iteration `t` |
//! | `power_start.npy` | float64 `T × n_H × k`: the start of anchor `a`'s power iteration on `AAᵀ` at iteration `t` |
//! | `participation.npy` | int64 0/1 `R × T × M` (or `T × M` with one restart): who takes part in round `t` of restart `r` |
//!
//! A supplied value replaces the corresponding seed draw; everything else is drawn from the
//! seed exactly as without files, so a run with no file is bit-identical to before. A file the
//! chosen algorithm does not use is an error (it would otherwise be silently ignored).

use crate::engine::participation::Schedule;
use crate::error::{FedmixError, Result};
use crate::params::Phase1Variant;
use nalgebra::DMatrix;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Version of the `anchors.json` format written and read.
pub const ANCHORS_VERSION: u64 = 1;

/// A value with where it came from (a file path, or `<drawn from seed S>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Supplied<T> {
    /// The file (named in errors and in the summary).
    pub source: PathBuf,
    /// The value.
    pub value: T,
}

/// A float64 array with its shape (C order).
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Shape.
    pub shape: Vec<usize>,
    /// Entries, C order.
    pub data: Vec<f64>,
}

/// The content of `anchors.json`, ids as given (checked against the data by Phase 1).
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorsFile {
    /// Phase 1 variant the plan is for.
    pub variant: Phase1Variant,
    /// Anchor client ids, in `H` order (anchor `a` is column `a` of the anchor models).
    pub anchors: Vec<i128>,
    /// Faithful variant: the fresh client set `S_t` of every iteration `t`.
    pub client_sets: Option<Vec<Vec<i128>>>,
}

/// Every randomness a run may take from files instead of the seed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Randomness {
    /// Initial models (`d × k` each): one, or one per restart (IFCA).
    pub init: Option<Supplied<Vec<DMatrix<f64>>>>,
    /// Phase 1 anchors and client sets.
    pub anchors: Option<Supplied<AnchorsFile>>,
    /// Phase 1 orthogonal-iteration starts, `T × n_H × d × k`.
    pub q0: Option<Supplied<Array>>,
    /// Phase 1 power-iteration starts, `T × n_H × k`.
    pub power_start: Option<Supplied<Array>>,
    /// Participation schedule.
    pub participation: Option<Supplied<Schedule>>,
}

/// Paths of the randomness files given on the command line.
#[derive(Clone, Debug, Default)]
pub struct RandomnessPaths {
    /// `--init`.
    pub init: Option<PathBuf>,
    /// `--anchors`.
    pub anchors: Option<PathBuf>,
    /// `--q0`.
    pub q0: Option<PathBuf>,
    /// `--power-start`.
    pub power_start: Option<PathBuf>,
    /// `--participation`.
    pub participation: Option<PathBuf>,
}

impl Randomness {
    /// The kinds present, by flag name, with their files.
    pub(crate) fn kinds(&self) -> Vec<(&'static str, &Path)> {
        let mut v = Vec::new();
        if let Some(s) = &self.init {
            v.push(("init", s.source.as_path()));
        }
        if let Some(s) = &self.anchors {
            v.push(("anchors", s.source.as_path()));
        }
        if let Some(s) = &self.q0 {
            v.push(("q0", s.source.as_path()));
        }
        if let Some(s) = &self.power_start {
            v.push(("power-start", s.source.as_path()));
        }
        if let Some(s) = &self.participation {
            v.push(("participation", s.source.as_path()));
        }
        v
    }

    /// The first initial model, when supplied (the common start of a single-restart run).
    pub fn first_init(&self) -> Option<&DMatrix<f64>> {
        self.init.as_ref().and_then(|s| s.value.first())
    }
}

fn invalid(path: &Path, field: impl Into<String>, reason: impl Into<String>) -> FedmixError {
    FedmixError::InvalidRandomness {
        path: path.into(),
        field: field.into(),
        reason: reason.into(),
    }
}

/// Read a float64 array of any shape whose rank is in `ranks`, rejecting non-finite entries
/// (the error names the flat index as `name[i][j]…`).
fn read_array(path: &Path, name: &str, ranks: &[usize], last: Option<usize>) -> Result<Array> {
    let first = ranks[0];
    let (shape, data) = match crate::io::read_f64(path, &expected_shape(first, last)) {
        Err(FedmixError::ShapeMismatch { found, .. })
            if found.len() != first && ranks.contains(&found.len()) =>
        {
            crate::io::read_f64(path, &expected_shape(found.len(), last))?
        }
        other => other?,
    };
    check_finite(path, name, &shape, &data)?;
    Ok(Array { shape, data })
}

/// The shape a reader expects for rank `rank`: any extent but the last, which is `last`.
fn expected_shape(rank: usize, last: Option<usize>) -> Vec<Option<usize>> {
    let mut e = vec![None; rank];
    if let Some(slot) = e.last_mut() {
        *slot = last;
    }
    e
}

/// Every entry finite, or an error naming the first bad one as `name[i][j]…`.
fn check_finite(source: &Path, name: &str, shape: &[usize], data: &[f64]) -> Result<()> {
    let Some(pos) = data.iter().position(|v| !v.is_finite()) else {
        return Ok(());
    };
    let mut idx = Vec::with_capacity(shape.len());
    let mut rest = pos;
    for &s in shape.iter().rev() {
        idx.push(rest % s.max(1));
        rest /= s.max(1);
    }
    let field: String = idx.iter().rev().map(|i| format!("[{i}]")).collect();
    Err(invalid(
        source,
        format!("{name}{field}"),
        format!("non-finite value {}", data[pos]),
    ))
}

/// Read `--init`: float64 `k × d` (one start) or `R × k × d` (one per restart).
///
/// # Errors
/// [`FedmixError::ShapeMismatch`] (wrong rank or `d`), [`FedmixError::WrongDtype`],
/// [`FedmixError::InvalidRandomness`] for a non-finite entry.
pub fn read_init(path: &Path, d: usize) -> Result<Vec<DMatrix<f64>>> {
    let a = read_array(path, "init", &[2, 3], Some(d))?;
    init_from_array(path, &a.shape, &a.data, d)
}

/// The initial models from an in-memory C-order float64 array (`k × d`, or `R × k × d` for
/// every IFCA restart) with exactly the checks and meaning of `--init` ([`read_init`]);
/// `source` names the array in errors (a path, or e.g. `<init array>`).
///
/// # Errors
/// [`FedmixError::ShapeMismatch`] (rank not 2 or 3, or last extent not `d`),
/// [`FedmixError::InvalidRandomness`] for a non-finite entry or `k = 0`.
pub fn init_from_array(
    source: &Path,
    shape: &[usize],
    data: &[f64],
    d: usize,
) -> Result<Vec<DMatrix<f64>>> {
    let expected = expected_shape(if shape.len() == 3 { 3 } else { 2 }, Some(d));
    let fits = shape.len() == expected.len()
        && shape
            .iter()
            .zip(&expected)
            .all(|(s, e)| e.is_none_or(|e| e == *s));
    if !fits || data.len() != shape.iter().product::<usize>() {
        return Err(FedmixError::ShapeMismatch {
            path: source.to_path_buf(),
            expected,
            found: shape.to_vec(),
        });
    }
    check_finite(source, "init", shape, data)?;
    let k = shape[shape.len() - 2];
    if k == 0 {
        return Err(invalid(source, "init", "no models (k = 0)"));
    }
    Ok(data
        .chunks_exact(k * d)
        .map(|c| DMatrix::from_column_slice(d, k, c))
        .collect())
}

/// Parse `anchors.json` (format version 1; unknown fields are rejected).
///
/// # Errors
/// [`FedmixError::Malformed`] (not JSON), [`FedmixError::UnsupportedVersion`],
/// [`FedmixError::InvalidRandomness`] naming the field.
pub fn parse_anchors(path: &Path, text: &str) -> Result<AnchorsFile> {
    let v: Value = serde_json::from_str(text).map_err(|e| FedmixError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| invalid(path, "(top level)", "expected a JSON object"))?;
    const KNOWN: [&str; 4] = ["version", "variant", "anchors", "client_sets"];
    if let Some(k) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(invalid(
            path,
            k.as_str(),
            format!("unknown field (known: {})", KNOWN.join(", ")),
        ));
    }
    let version = obj
        .get("version")
        .ok_or_else(|| invalid(path, "version", "missing (this fedmix writes 1)"))?
        .as_u64()
        .filter(|&v| v >= 1)
        .ok_or_else(|| invalid(path, "version", "must be a positive integer (1)"))?;
    if version > ANCHORS_VERSION {
        return Err(FedmixError::UnsupportedVersion {
            path: path.into(),
            found: u32::try_from(version).unwrap_or(u32::MAX),
            supported: ANCHORS_VERSION as u32,
        });
    }
    let variant = match obj.get("variant").map(|v| v.as_str()) {
        Some(Some("practical")) => Phase1Variant::Practical,
        Some(Some("faithful")) => Phase1Variant::Faithful,
        Some(_) => {
            return Err(invalid(
                path,
                "variant",
                "must be \"practical\" or \"faithful\"",
            ))
        }
        None => return Err(invalid(path, "variant", "missing")),
    };
    let ids = |field: &str, v: &Value| -> Result<Vec<i128>> {
        let arr = v
            .as_array()
            .ok_or_else(|| invalid(path, field, "expected an array of client ids"))?;
        arr.iter()
            .enumerate()
            .map(|(j, x)| {
                x.as_i64()
                    .map(i128::from)
                    .or_else(|| x.as_u64().map(i128::from))
                    .ok_or_else(|| {
                        invalid(
                            path,
                            format!("{field}[{j}]"),
                            format!("{x} is not an integer client id"),
                        )
                    })
            })
            .collect()
    };
    let anchors = ids(
        "anchors",
        obj.get("anchors")
            .ok_or_else(|| invalid(path, "anchors", "missing"))?,
    )?;
    let client_sets = match obj.get("client_sets") {
        None | Some(Value::Null) => None,
        Some(Value::Array(sets)) => Some(
            sets.iter()
                .enumerate()
                .map(|(t, s)| ids(&format!("client_sets[{t}]"), s))
                .collect::<Result<Vec<_>>>()?,
        ),
        Some(_) => {
            return Err(invalid(
                path,
                "client_sets",
                "expected an array of arrays of client ids",
            ))
        }
    };
    Ok(AnchorsFile {
        variant,
        anchors,
        client_sets,
    })
}

/// Read `anchors.json` ([`parse_anchors`]).
///
/// # Errors
/// [`FedmixError::MissingFile`], [`FedmixError::Io`], and as [`parse_anchors`].
pub fn read_anchors(path: &Path) -> Result<AnchorsFile> {
    if !path.exists() {
        return Err(FedmixError::MissingFile { path: path.into() });
    }
    let text = std::fs::read_to_string(path).map_err(|e| FedmixError::io(path, e))?;
    parse_anchors(path, &text)
}

/// `anchors.json` as JSON.
pub fn anchors_json(f: &AnchorsFile) -> Value {
    let mut v = json!({
        "version": ANCHORS_VERSION,
        "variant": match f.variant {
            Phase1Variant::Practical => "practical",
            Phase1Variant::Faithful => "faithful",
        },
        "anchors": f.anchors.iter().map(|&i| i as i64).collect::<Vec<_>>(),
    });
    if let Some(sets) = &f.client_sets {
        v["client_sets"] = json!(sets
            .iter()
            .map(|s| s.iter().map(|&i| i as i64).collect::<Vec<_>>())
            .collect::<Vec<_>>());
    }
    v
}

/// Read `--participation`: int64 0/1, `R × T × M` or `T × M`.
///
/// # Errors
/// [`FedmixError::WrongDtype`], [`FedmixError::ShapeMismatch`] (last axis ≠ M, wrong rank),
/// and as [`Schedule::from_mask`].
pub fn read_participation(path: &Path, m: usize) -> Result<Schedule> {
    let (shape, data) = match crate::io::read_i64(path, &[None, None, Some(m)]) {
        Err(FedmixError::ShapeMismatch { found, .. }) if found.len() == 2 => {
            crate::io::read_i64(path, &[None, Some(m)])?
        }
        other => other?,
    };
    Schedule::from_mask(path, &shape, &data)
}

/// Load every file given on the command line for data of dimension `d` and `m` clients.
///
/// # Errors
/// As the readers.
pub fn load(paths: &RandomnessPaths, d: usize, m: usize) -> Result<Randomness> {
    let with = |p: &PathBuf, value| Supplied {
        source: p.clone(),
        value,
    };
    Ok(Randomness {
        init: match &paths.init {
            Some(p) => Some(Supplied {
                source: p.clone(),
                value: read_init(p, d)?,
            }),
            None => None,
        },
        anchors: match &paths.anchors {
            Some(p) => Some(Supplied {
                source: p.clone(),
                value: read_anchors(p)?,
            }),
            None => None,
        },
        q0: match &paths.q0 {
            Some(p) => Some(with(p, read_array(p, "q0", &[4], None)?)),
            None => None,
        },
        power_start: match &paths.power_start {
            Some(p) => Some(with(p, read_array(p, "power_start", &[3], None)?)),
            None => None,
        },
        participation: match &paths.participation {
            Some(p) => Some(Supplied {
                source: p.clone(),
                value: read_participation(p, m)?,
            }),
            None => None,
        },
    })
}

/// Write `rnd` into `dir` in the formats the flags read (`init.npy`, `anchors.json`, `q0.npy`,
/// `power_start.npy`, `participation.npy`; only those present), each atomically. Returns the
/// file names written.
///
/// # Errors
/// [`FedmixError::Output`] / [`FedmixError::Io`].
pub fn export(dir: &Path, rnd: &Randomness) -> Result<Vec<String>> {
    crate::io::prepare_output_dir(dir)?;
    let mut written = Vec::new();
    if let Some(init) = &rnd.init {
        let ms = &init.value;
        let (d, k) = ms.first().map_or((0, 0), |m| (m.nrows(), m.ncols()));
        let data: Vec<f64> = ms.iter().flat_map(|m| m.iter().copied()).collect();
        let shape = if ms.len() == 1 {
            vec![k, d]
        } else {
            vec![ms.len(), k, d]
        };
        crate::io::write_f64(&dir.join("init.npy"), &shape, &data)?;
        written.push("init.npy".to_string());
    }
    if let Some(a) = &rnd.anchors {
        crate::io::write_json(&dir.join("anchors.json"), &anchors_json(&a.value))?;
        written.push("anchors.json".to_string());
    }
    for (name, arr) in [("q0.npy", &rnd.q0), ("power_start.npy", &rnd.power_start)] {
        if let Some(a) = arr {
            crate::io::write_f64(&dir.join(name), &a.value.shape, &a.value.data)?;
            written.push(name.to_string());
        }
    }
    if let Some(s) = &rnd.participation {
        let (shape, mask) = s.value.to_mask();
        crate::io::write_i64(&dir.join("participation.npy"), &shape, &mask)?;
        written.push("participation.npy".to_string());
    }
    Ok(written)
}

/// What the summary records about the supplied files: per flag, the path, the shape and what
/// it replaced.
pub fn summary(given: &Randomness) -> Value {
    let mut m = serde_json::Map::new();
    if let Some(s) = &given.init {
        let (d, k) = s.value.first().map_or((0, 0), |x| (x.nrows(), x.ncols()));
        m.insert(
            "init".into(),
            json!({
                "path": s.source.display().to_string(),
                "models": k, "d": d, "starts": s.value.len(),
                "used_for": if s.value.len() == 1 { "the initial models (IFCA: restart 0's)" } else { "the initial models of every restart" },
            }),
        );
    }
    if let Some(s) = &given.anchors {
        m.insert(
            "anchors".into(),
            json!({
                "path": s.source.display().to_string(),
                "variant": anchors_json(&s.value)["variant"],
                "anchors": s.value.anchors.len(),
                "client_sets": s.value.client_sets.as_ref().map(Vec::len),
                "used_for": "Phase 1 anchors H (and the faithful variant's fresh client sets S_t)",
            }),
        );
    }
    for (key, arr, what) in [
        (
            "q0",
            &given.q0,
            "Phase 1 orthogonal-iteration starts Q₀ (iterations × anchors × d × k)",
        ),
        (
            "power_start",
            &given.power_start,
            "Phase 1 power-iteration starts (iterations × anchors × k)",
        ),
    ] {
        if let Some(s) = arr {
            m.insert(
                key.into(),
                json!({"path": s.source.display().to_string(), "shape": s.value.shape, "used_for": what}),
            );
        }
    }
    if let Some(s) = &given.participation {
        let counts: Vec<usize> = s.value.sets.iter().map(Vec::len).collect();
        m.insert(
            "participation".into(),
            json!({
                "path": s.source.display().to_string(),
                "shape": [s.value.restarts, s.value.rounds, s.value.clients],
                "participants_min": counts.iter().min(),
                "participants_max": counts.iter().max(),
                "used_for": "the participants of every round (replaces the `participation` fraction)",
            }),
        );
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_json_round_trips_and_rejects_bad_fields() {
        let p = Path::new("a.json");
        let f = AnchorsFile {
            variant: Phase1Variant::Faithful,
            anchors: vec![3, 1],
            client_sets: Some(vec![vec![0, 2], vec![4, 5]]),
        };
        let text = anchors_json(&f).to_string();
        assert_eq!(parse_anchors(p, &text).unwrap(), f);
        for (bad, field) in [
            (
                r#"{"version": 1, "variant": "practical", "anchors": [1, "x"]}"#,
                "anchors[1]",
            ),
            (
                r#"{"version": 1, "variant": "both", "anchors": []}"#,
                "variant",
            ),
            (r#"{"variant": "practical", "anchors": []}"#, "version"),
            (
                r#"{"version": 1, "variant": "practical", "anchor": []}"#,
                "anchor",
            ),
            (r#"[1, 2]"#, "(top level)"),
        ] {
            match parse_anchors(p, bad) {
                Err(FedmixError::InvalidRandomness { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            parse_anchors(
                p,
                r#"{"version": 2, "variant": "practical", "anchors": []}"#
            ),
            Err(FedmixError::UnsupportedVersion { found: 2, .. })
        ));
        assert!(matches!(
            parse_anchors(p, "{ nope"),
            Err(FedmixError::Malformed { .. })
        ));
    }
}
