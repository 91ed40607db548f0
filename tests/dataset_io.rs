//! The dataset directory format (`src/io/dataset.rs`): a write/read round trip is exact, and
//! the reader rejects every kind of damaged directory with the specific typed error.
//!
//! Damaged directories are made by writing a small valid dataset and then editing one file:
//! `.npy` arrays are rewritten with npyz (as `src/io/npy.rs` writes them), manifests are edited
//! as `serde_json::Value`.

use fedmix::error::FedmixError;
use fedmix::federation::Federation;
use fedmix::io::{read_dataset, write_dataset, Dataset, FORMAT_VERSION};
use fedmix::synthetic::generate_named;
use npyz::WriterBuilder;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A scratch directory under the system temp dir, unique per process and tag, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("fedmix-dataset-io-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Small dataset: 6 clients × 4 samples, d = 3, k = 3 (N = 24), written to a fresh directory.
fn small(tag: &str) -> (TempDir, Dataset) {
    let data = generate_named(
        "sxy-balanced",
        9,
        &sets(&[("clients", "6"), ("samples", "4"), ("d", "3")]),
    )
    .unwrap();
    let ds = Dataset::from(data);
    let dir = TempDir::new(tag);
    write_dataset(&dir.0, &ds).unwrap();
    (dir, ds)
}

fn read_err(dir: &TempDir) -> FedmixError {
    match read_dataset(&dir.0) {
        Ok(_) => panic!("{} was accepted", dir.0.display()),
        Err(e) => e,
    }
}

/// Write an `.npy` array of any npyz element type, in the given order.
fn write_npy<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    shape: &[u64],
    data: &[T],
    order: npyz::Order,
) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .order(order)
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

fn edit_manifest(dir: &TempDir, edit: impl FnOnce(&mut Value)) {
    let path = dir.file("manifest.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_same_federation(a: &Federation, b: &Federation) {
    assert_eq!(bits(a.features().as_slice()), bits(b.features().as_slice()));
    assert_eq!(
        bits(a.responses().as_slice()),
        bits(b.responses().as_slice())
    );
    assert_eq!(a.sizes(), b.sizes());
    assert_eq!(a.labels(), b.labels());
    assert_eq!(a.k(), b.k());
    assert_eq!(
        a.theta_star().map(|t| (t.shape(), bits(t.as_slice()))),
        b.theta_star().map(|t| (t.shape(), bits(t.as_slice())))
    );
}

#[test]
fn round_trip_is_exact() {
    let cases: [(&str, Vec<(&str, &str)>); 3] = [
        (
            "sxy-unbalanced-both",
            vec![("d", "4"), ("clients", "30"), ("large_clients", "3")],
        ),
        (
            "srfca-linear",
            vec![
                ("d", "5"),
                ("clients", "4"),
                ("samples", "7"),
                ("test_samples", "3"),
            ],
        ),
        // Parameters whose shortest decimal form the default serde_json float parser reads back
        // one ulp off (found by round-tripping random f64 through serde_json 1.0.154).
        (
            "sxy-balanced",
            vec![
                ("d", "2"),
                ("clients", "5"),
                ("sigma", "2.1104469268591686"),
                ("r", "7.066240720855617e-11"),
                ("cov_max", "9.471174769069747e-6"),
            ],
        ),
    ];
    for (i, (name, pairs)) in cases.iter().enumerate() {
        let ds = Dataset::from(generate_named(name, 5, &sets(pairs)).unwrap());
        let dir = TempDir::new(&format!("roundtrip-{i}"));
        write_dataset(&dir.0, &ds).unwrap();
        let back = read_dataset(&dir.0).unwrap();
        assert_eq!(back.manifest, ds.manifest, "{name}");
        assert_same_federation(&back.train, &ds.train);
        assert_eq!(back.test.is_some(), ds.test.is_some(), "{name}");
        if let (Some(a), Some(b)) = (&back.test, &ds.test) {
            assert_same_federation(a, b);
        }
        // The parameters in the manifest regenerate the same data bit for bit.
        let params = back.manifest.parameters.as_ref().unwrap();
        let again = fedmix::synthetic::generate(name, params, back.manifest.seed.unwrap()).unwrap();
        assert_same_federation(&again.train, &ds.train);
    }
}

#[test]
fn missing_file() {
    let (dir, _) = small("missing");
    std::fs::remove_file(dir.file("responses.npy")).unwrap();
    match read_err(&dir) {
        FedmixError::MissingFile { path } => assert_eq!(path, dir.file("responses.npy")),
        e => panic!("expected MissingFile, got {e:?}"),
    }
    std::fs::remove_file(dir.file("manifest.json")).unwrap();
    assert!(
        matches!(read_err(&dir), FedmixError::MissingFile { path } if path == dir.file("manifest.json"))
    );
}

#[test]
fn wrong_dtype() {
    let (dir, ds) = small("dtype");
    let (n, d) = (ds.train.total_samples() as u64, ds.train.d() as u64);
    let f32s: Vec<f32> = ds.train.features().iter().map(|&v| v as f32).collect();
    write_npy(&dir.file("features.npy"), &[n, d], &f32s, npyz::Order::C);
    match read_err(&dir) {
        FedmixError::WrongDtype {
            path,
            expected,
            found,
        } => {
            assert_eq!(path, dir.file("features.npy"));
            assert_eq!((expected.as_str(), found.as_str()), ("<f8", "<f4"));
        }
        e => panic!("expected WrongDtype, got {e:?}"),
    }
    let ints: Vec<i64> = ds.train.features().iter().map(|&v| v as i64).collect();
    write_npy(&dir.file("features.npy"), &[n, d], &ints, npyz::Order::C);
    assert!(matches!(read_err(&dir), FedmixError::WrongDtype { found, .. } if found == "<i8"));
    // And integer arrays must be int64: labels written as float64 are refused.
    let (dir, ds) = small("dtype-labels");
    let labels: Vec<f64> = ds
        .train
        .labels()
        .unwrap()
        .iter()
        .map(|&z| z as f64)
        .collect();
    write_npy(
        &dir.file("labels.npy"),
        &[labels.len() as u64],
        &labels,
        npyz::Order::C,
    );
    assert!(matches!(read_err(&dir), FedmixError::WrongDtype { found, .. } if found == "<f8"));
}

#[test]
fn shape_disagreeing_with_manifest() {
    let (dir, ds) = small("shape");
    let (n, d) = (ds.train.total_samples(), ds.train.d());
    // Same bytes, declared as d × N instead of N × d.
    write_npy(
        &dir.file("features.npy"),
        &[d as u64, n as u64],
        ds.train.features().as_slice(),
        npyz::Order::C,
    );
    match read_err(&dir) {
        FedmixError::ShapeMismatch {
            path,
            expected,
            found,
        } => {
            assert_eq!(path, dir.file("features.npy"));
            assert_eq!((expected, found), (vec![Some(n), Some(d)], vec![d, n]));
        }
        e => panic!("expected ShapeMismatch, got {e:?}"),
    }
    // Flattened to one dimension.
    write_npy(
        &dir.file("features.npy"),
        &[(n * d) as u64],
        ds.train.features().as_slice(),
        npyz::Order::C,
    );
    assert!(matches!(read_err(&dir), FedmixError::ShapeMismatch { .. }));
    // One response short.
    let (dir, ds) = small("shape-responses");
    write_npy(
        &dir.file("responses.npy"),
        &[(n - 1) as u64],
        &ds.train.responses().as_slice()[1..],
        npyz::Order::C,
    );
    assert!(
        matches!(read_err(&dir), FedmixError::ShapeMismatch { path, .. } if path == dir.file("responses.npy"))
    );
    // θ* with k and d swapped (k = d = 3 here would hide it, so use d = 2).
    let data = generate_named(
        "sxy-balanced",
        9,
        &sets(&[("clients", "6"), ("samples", "4"), ("d", "2")]),
    )
    .unwrap();
    let ds = Dataset::from(data);
    let dir = TempDir::new("shape-theta");
    write_dataset(&dir.0, &ds).unwrap();
    let ts = ds.train.theta_star().unwrap();
    write_npy(
        &dir.file("theta_star.npy"),
        &[2, 3],
        ts.as_slice(),
        npyz::Order::C,
    );
    assert!(
        matches!(read_err(&dir), FedmixError::ShapeMismatch { expected, .. } if expected == vec![Some(3), Some(2)])
    );
}

#[test]
fn fortran_order_is_malformed() {
    let (dir, ds) = small("fortran");
    let (n, d) = (ds.train.total_samples() as u64, ds.train.d() as u64);
    write_npy(
        &dir.file("features.npy"),
        &[n, d],
        ds.train.features().as_slice(),
        npyz::Order::Fortran,
    );
    assert!(
        matches!(read_err(&dir), FedmixError::Malformed { path, .. } if path == dir.file("features.npy"))
    );
}

#[test]
fn truncated_npy_is_malformed() {
    let path_of = |dir: &TempDir| dir.file("features.npy");
    // Cut the last element, the last byte, most of the payload, and into the header.
    for cut in [8usize, 1, 500, 0] {
        let (dir, _) = small(&format!("truncated-{cut}"));
        let bytes = std::fs::read(path_of(&dir)).unwrap();
        let keep = if cut == 0 { 20 } else { bytes.len() - cut };
        std::fs::write(path_of(&dir), &bytes[..keep]).unwrap();
        match read_err(&dir) {
            FedmixError::Malformed { path, message } => {
                assert_eq!(path, path_of(&dir));
                println!("kept {keep} of {} bytes: {message}", bytes.len());
            }
            e => panic!(
                "kept {keep} of {} bytes: expected Malformed, got {e:?}",
                bytes.len()
            ),
        }
    }
}

#[test]
fn non_finite_values_name_the_client() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        // Features: sample 9 is client 2 (4 samples per client), sample 1; coordinate 2.
        let (dir, ds) = small("nonfinite-x");
        let (n, d) = (ds.train.total_samples(), ds.train.d());
        let mut x = ds.train.features().as_slice().to_vec();
        x[9 * d + 2] = bad;
        write_npy(
            &dir.file("features.npy"),
            &[n as u64, d as u64],
            &x,
            npyz::Order::C,
        );
        match read_err(&dir) {
            FedmixError::NonFinite {
                field, location, ..
            } => {
                assert_eq!(field, "features");
                assert!(
                    location.contains("client 2, sample 1, coordinate 2"),
                    "{location}"
                );
            }
            e => panic!("expected NonFinite, got {e:?}"),
        }
        // Responses: sample 23 is the last sample of client 5.
        let (dir, ds) = small("nonfinite-y");
        let mut y = ds.train.responses().as_slice().to_vec();
        y[23] = bad;
        write_npy(&dir.file("responses.npy"), &[n as u64], &y, npyz::Order::C);
        match read_err(&dir) {
            FedmixError::NonFinite {
                field, location, ..
            } => {
                assert_eq!(field, "responses");
                assert!(location.contains("client 5, sample 3"), "{location}");
            }
            e => panic!("expected NonFinite, got {e:?}"),
        }
    }
}

#[test]
fn empty_client_in_manifest() {
    let (dir, _) = small("empty-client");
    edit_manifest(&dir, |m| {
        m["sizes"] = json!([4, 0, 4, 4, 4, 4]);
        m["total_samples"] = json!(20);
    });
    assert!(matches!(
        read_err(&dir),
        FedmixError::EmptyClient { client: 1 }
    ));
}

#[test]
fn zero_k_and_zero_d_are_invalid() {
    for field in ["k", "d"] {
        let (dir, _) = small(&format!("zero-{field}"));
        edit_manifest(&dir, |m| m[field] = json!(0));
        match read_err(&dir) {
            FedmixError::InvalidParameter { name, .. } => assert_eq!(name, field),
            e => panic!("expected InvalidParameter({field}), got {e:?}"),
        }
    }
}

#[test]
fn unknown_setting_in_manifest() {
    let (dir, _) = small("unknown-setting");
    edit_manifest(&dir, |m| m["setting"] = json!("no-such-setting"));
    assert!(
        matches!(read_err(&dir), FedmixError::UnknownSetting { name, .. } if name == "no-such-setting")
    );
}

#[test]
fn unknown_fields_are_malformed() {
    let (dir, _) = small("unknown-field");
    edit_manifest(&dir, |m| m["colour"] = json!("blue"));
    match read_err(&dir) {
        FedmixError::Malformed { path, message } => {
            assert_eq!(path, dir.file("manifest.json"));
            assert!(message.contains("colour"), "{message}");
        }
        e => panic!("expected Malformed, got {e:?}"),
    }
    let (dir, _) = small("unknown-parameter");
    edit_manifest(&dir, |m| m["parameters"]["bogus"] = json!(1));
    assert!(
        matches!(read_err(&dir), FedmixError::Malformed { message, .. } if message.contains("bogus"))
    );
    // Not JSON at all.
    let (dir, _) = small("not-json");
    std::fs::write(dir.file("manifest.json"), "{ \"format\": ").unwrap();
    assert!(matches!(read_err(&dir), FedmixError::Malformed { .. }));
}

#[test]
fn future_format_version() {
    let (dir, _) = small("future");
    edit_manifest(&dir, |m| m["format_version"] = json!(FORMAT_VERSION + 1));
    match read_err(&dir) {
        FedmixError::UnsupportedVersion {
            found, supported, ..
        } => {
            assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
        }
        e => panic!("expected UnsupportedVersion, got {e:?}"),
    }
}

#[test]
fn label_out_of_range() {
    for bad in [3i64, 17, -1] {
        let (dir, ds) = small(&format!("label-{bad}"));
        let mut labels: Vec<i64> = ds
            .train
            .labels()
            .unwrap()
            .iter()
            .map(|&z| z as i64)
            .collect();
        labels[4] = bad;
        write_npy(
            &dir.file("labels.npy"),
            &[labels.len() as u64],
            &labels,
            npyz::Order::C,
        );
        match read_err(&dir) {
            FedmixError::LabelOutOfRange { client, k, .. } => assert_eq!((client, k), (4, 3)),
            e => panic!("label {bad}: expected LabelOutOfRange, got {e:?}"),
        }
    }
}

#[test]
fn sizes_file_disagreeing_with_manifest() {
    let (dir, _) = small("sizes-file");
    write_npy(
        &dir.file("client_sizes.npy"),
        &[6],
        &[4i64, 4, 5, 3, 4, 4],
        npyz::Order::C,
    );
    assert!(
        matches!(read_err(&dir), FedmixError::Malformed { path, .. } if path == dir.file("client_sizes.npy"))
    );
}

/// Extra bytes after the data are rejected, as is a too-short payload.
#[test]
fn trailing_bytes_are_rejected() {
    let dir = std::env::temp_dir().join(format!("fedmix-trailing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("a.npy");
    fedmix::io::write_f64(&p, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    assert!(fedmix::io::read_f64(&p, &[Some(2), Some(3)]).is_ok());
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(&[0u8; 8]);
    std::fs::write(&p, &bytes).unwrap();
    let e = fedmix::io::read_f64(&p, &[Some(2), Some(3)]).unwrap_err();
    assert!(e.to_string().contains("trailing"), "{e}");
    bytes.truncate(bytes.len() - 12);
    std::fs::write(&p, &bytes).unwrap();
    let e = fedmix::io::read_f64(&p, &[Some(2), Some(3)]).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Overwriting a dataset that had held-out samples with one that has none leaves no stale
/// `test_*.npy` behind.
#[test]
fn overwriting_removes_stale_optional_files() {
    use fedmix::io::{read_dataset, write_dataset, Dataset};
    let dir = std::env::temp_dir().join(format!("fedmix-stale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let small: Vec<(String, String)> = [("d", "4"), ("clients", "6"), ("samples", "3")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let with_test = fedmix::synthetic::generate_named("srfca-linear", 1, &small).unwrap();
    write_dataset(&dir, &Dataset::from(with_test)).unwrap();
    assert!(dir.join("test_features.npy").is_file());
    let without = fedmix::synthetic::generate_named("sxy-balanced", 1, &small).unwrap();
    write_dataset(&dir, &Dataset::from(without)).unwrap();
    assert!(!dir.join("test_features.npy").exists());
    assert!(read_dataset(&dir).unwrap().test.is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fuzzing finding (npy target): a header made of nested `[` made the header parser take
/// exponential time. It is now rejected up front, quickly.
#[test]
fn nested_bracket_header_is_rejected_quickly() {
    let mut bytes = b"\x93NUMPY\x01\x00\x2b\x00".to_vec();
    bytes.extend(std::iter::repeat_n(b'[', 110));
    bytes.extend_from_slice(b"{'de&sNoneY\x00\x00\x00\x00");
    let started = std::time::Instant::now();
    let e = fedmix::io::decode_f64(std::path::Path::new("x.npy"), &bytes, &[None]).unwrap_err();
    assert!(e.to_string().contains("nested"), "{e}");
    assert!(started.elapsed().as_secs_f64() < 1.0);
    // The exact input libFuzzer saved (tests/data/fuzz/, from `cargo fuzz run npy`).
    let found = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fuzz/npy-timeout-nested-brackets.bin"
    ))
    .unwrap();
    let started = std::time::Instant::now();
    assert!(fedmix::io::decode_f64(std::path::Path::new("x.npy"), &found, &[None, None]).is_err());
    assert!(started.elapsed().as_secs_f64() < 1.0);
}
