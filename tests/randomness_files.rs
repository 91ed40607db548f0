//! Every source of randomness can be supplied from files: a run with seed A and
//! `--export-randomness`, rerun with seed B from the exported files, is bit-identical (iterates,
//! final models, labels, summary metrics); the export run itself is bit-identical to
//! the run without export; without the files seed B differs (so the comparison is not vacuous);
//! an altered `anchors.json` changes the output; `fedmix validate` accepts the same flags.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> Tmp {
    let p = std::env::temp_dir().join(format!("fedmix-rnd-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    Tmp(p)
}

fn fedmix(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn ok(args: &[String]) -> String {
    let o = fedmix(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// A small federation (k = 3, d = 10, M = 60, n_i = 30).
fn dataset(root: &Path) -> PathBuf {
    let d = root.join("data");
    ok(&strs(&[
        "generate",
        "--setting",
        "sxy-balanced",
        "--seed",
        "3",
        "--set",
        "d=10",
        "--set",
        "clients=60",
        "--set",
        "samples=30",
        "--out",
        &p(&d),
    ]));
    d
}

/// `fedmix run` of `algorithm` with `sets`, `seed`, extra flags; returns the run directory.
fn run(
    data: &Path,
    out: &Path,
    algorithm: &str,
    sets: &[&str],
    seed: u64,
    extra: &[String],
) -> PathBuf {
    let mut args = strs(&["run", "--algorithm", algorithm, "--data", &p(data)]);
    args.extend(["--seed".to_string(), seed.to_string()]);
    for s in sets {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    args.extend(strs(&["--save-iterates", "--out", &p(out)]));
    args.extend(extra.iter().cloned());
    ok(&args);
    out.to_path_buf()
}

/// The flags that feed back every file in an export directory.
fn supply(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for (file, flag) in [
        ("init.npy", "--init"),
        ("anchors.json", "--anchors"),
        ("q0.npy", "--q0"),
        ("power_start.npy", "--power-start"),
        ("participation.npy", "--participation"),
    ] {
        if dir.join(file).is_file() {
            v.extend([flag.to_string(), p(&dir.join(file))]);
        }
    }
    v
}

fn bytes(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

fn final_metrics(dir: &Path) -> serde_json::Value {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    s["final"].clone()
}

fn same_run(a: &Path, b: &Path) -> bool {
    [
        "iterates.npy",
        "iterate_labels.npy",
        "theta_hat.npy",
        "labels.npy",
    ]
    .iter()
    .all(|f| bytes(a, f) == bytes(b, f))
        && final_metrics(a) == final_metrics(b)
}

/// Seed A + export, seed B + files, seed A without export, seed B without files. Returns the
/// export directory and seed A's run.
fn round_trip(
    root: &Path,
    data: &Path,
    name: &str,
    algorithm: &str,
    sets: &[&str],
    expect_files: &[&str],
) -> (PathBuf, PathBuf) {
    let rnd = root.join(format!("{name}-rnd"));
    let a = run(
        data,
        &root.join(format!("{name}-a")),
        algorithm,
        sets,
        1,
        &["--export-randomness".to_string(), p(&rnd)],
    );
    let mut files: Vec<String> = std::fs::read_dir(&rnd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    files.sort();
    let mut want: Vec<String> = strs(expect_files);
    want.sort();
    assert_eq!(files, want, "{name}: exported files");
    let b = run(
        data,
        &root.join(format!("{name}-b")),
        algorithm,
        sets,
        2,
        &supply(&rnd),
    );
    assert!(same_run(&a, &b), "{name}: seed 2 from the files ≠ seed 1");
    let plain = run(
        data,
        &root.join(format!("{name}-plain")),
        algorithm,
        sets,
        1,
        &[],
    );
    assert!(same_run(&a, &plain), "{name}: exporting changed the run");
    let other = run(
        data,
        &root.join(format!("{name}-other")),
        algorithm,
        sets,
        2,
        &[],
    );
    assert!(!same_run(&a, &other), "{name}: seeds 1 and 2 agree anyway");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("summary.json")).unwrap()).unwrap();
    for f in expect_files {
        let key = f.trim_end_matches(".npy").trim_end_matches(".json");
        let rec = &summary["randomness"]["supplied"][key];
        assert_eq!(
            rec["path"].as_str(),
            Some(p(&rnd.join(f)).as_str()),
            "{name}: summary records {f}"
        );
    }
    (rnd, a)
}

const TWO_PHASE: &[&str] = &["rounds=20", "phase1_iterations=4"];

#[test]
fn two_phase_practical_round_trips_and_altered_anchors_differ() {
    let root = tmp("practical");
    let data = dataset(&root.0);
    let (rnd, a) = round_trip(
        &root.0,
        &data,
        "practical",
        "two-phase",
        TWO_PHASE,
        &["init.npy", "anchors.json", "power_start.npy"],
    );
    // Replace one anchor by a client that is not an anchor: a different Phase 1.
    let path = rnd.join("anchors.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let anchors: Vec<u64> = serde_json::from_value(v["anchors"].clone()).unwrap();
    let outsider = (0..60).find(|i| !anchors.contains(i)).unwrap();
    v["anchors"][0] = outsider.into();
    let altered = root.0.join("altered.json");
    std::fs::write(&altered, v.to_string()).unwrap();
    let mut flags = supply(&rnd);
    let i = flags.iter().position(|f| f == "--anchors").unwrap();
    flags[i + 1] = p(&altered);
    let c = run(
        &data,
        &root.0.join("altered"),
        "two-phase",
        TWO_PHASE,
        2,
        &flags,
    );
    assert_ne!(
        bytes(&a, "iterates.npy"),
        bytes(&c, "iterates.npy"),
        "an altered anchor set must change the run"
    );
    // `fedmix validate` reruns the reference from the same files (seed 2) and accepts seed 1's
    // trajectory as a candidate.
    let mut args = strs(&["validate", "--algorithm", "two-phase", "--data", &p(&data)]);
    args.extend(strs(&["--seed", "2"]));
    for s in TWO_PHASE {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    args.extend(supply(&rnd));
    args.extend(strs(&[
        "--iterates",
        &p(&a.join("iterates.npy")),
        "--labels",
        &p(&a.join("iterate_labels.npy")),
        "--rtol",
        "0",
    ]));
    let out = ok(&args);
    assert!(out.contains("all 20 rounds within"), "{out}");
}

#[test]
fn two_phase_practical_orthogonal_iteration_round_trips() {
    let root = tmp("practical-oi");
    let data = dataset(&root.0);
    let mut sets = TWO_PHASE.to_vec();
    sets.extend(["subspace=orthogonal-iteration", "t1=8", "t2=20"]);
    round_trip(
        &root.0,
        &data,
        "practical-oi",
        "two-phase",
        &sets,
        &["init.npy", "anchors.json", "q0.npy", "power_start.npy"],
    );
}

#[test]
fn two_phase_faithful_round_trips() {
    let root = tmp("faithful");
    let data = dataset(&root.0);
    let sets = [
        "rounds=20",
        "phase1_variant=faithful",
        "phase1_iterations=3",
        "anchors=6",
        "m=10",
        "ell=2",
        "t1=8",
    ];
    let (rnd, _) = round_trip(
        &root.0,
        &data,
        "faithful",
        "two-phase",
        &sets,
        &["init.npy", "anchors.json", "q0.npy", "power_start.npy"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rnd.join("anchors.json")).unwrap()).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["variant"], "faithful");
    assert_eq!(v["client_sets"].as_array().unwrap().len(), 3);
    let (shape, _) =
        fedmix::io::read_f64(&rnd.join("q0.npy"), &[Some(3), Some(6), Some(10), Some(3)]).unwrap();
    assert_eq!(shape, [3, 6, 10, 3]);
}

#[test]
fn ifca_with_partial_participation_and_restarts_round_trips() {
    let root = tmp("ifca");
    let data = dataset(&root.0);
    let sets = ["rounds=15", "participation=0.3", "restarts=3"];
    let (rnd, _) = round_trip(
        &root.0,
        &data,
        "ifca",
        "ifca",
        &sets,
        &["init.npy", "participation.npy"],
    );
    let (shape, mask) =
        fedmix::io::read_i64(&rnd.join("participation.npy"), &[None, None, None]).unwrap();
    assert_eq!(shape, [3, 15, 60]);
    assert!(mask
        .chunks(60)
        .all(|r| r.iter().sum::<i64>() == 18 && r.iter().all(|&x| x == 0 || x == 1)));
    let (shape, _) = fedmix::io::read_f64(&rnd.join("init.npy"), &[None, None, None]).unwrap();
    assert_eq!(shape, [3, 3, 10]);
}

#[test]
fn fedavg_with_partial_participation_round_trips() {
    let root = tmp("fedavg");
    let data = dataset(&root.0);
    round_trip(
        &root.0,
        &data,
        "fedavg",
        "fedavg",
        &["rounds=10", "participation=0.5"],
        &["init.npy", "participation.npy"],
    );
}

#[test]
fn ifca_official_round_trips_and_rejects_a_wrong_number_of_starts() {
    let root = tmp("ifca-official");
    let data = dataset(&root.0);
    // k = 3 has no official learning-rate grid: give one (two rates, so each start runs twice).
    let sets = [
        "ifca_official_inits=3",
        "ifca_official_iterations=25",
        "ifca_official_lrs=[0.5,0.1]",
    ];
    let (rnd, _) = round_trip(
        &root.0,
        &data,
        "ifca-official",
        "ifca-official",
        &sets,
        &["init.npy"],
    );
    let (shape, init) = fedmix::io::read_f64(&rnd.join("init.npy"), &[None, None, None]).unwrap();
    assert_eq!(shape, [3, 3, 10]);
    // The official init is Bernoulli(0.5)^d, unscaled: entries 0 or 1.
    assert!(init.iter().all(|&v| v == 0.0 || v == 1.0));
    // Two starts for three init seeds: a typed error naming the file and the key.
    let two = root.0.join("two.npy");
    fedmix::io::write_f64(&two, &[2, 3, 10], &init[..60]).unwrap();
    let mut args = strs(&["run", "--algorithm", "ifca-official", "--data", &p(&data)]);
    for s in sets {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    args.extend(strs(&[
        "--init",
        &p(&two),
        "--out",
        &p(&root.0.join("bad")),
    ]));
    let out = fedmix(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("two.npy") && err.contains("ifca_official_inits = 3"),
        "{err}"
    );
}

/// A run that ends in a typed error still writes the randomness it drew, and the failure
/// replays from those files at another seed. The case is SXY22 App. C's anchor count
/// ⌈3k ln k⌉ = 5 for k = 2: with two equal clusters all five anchors fall in one cluster with
/// probability 2·2⁻⁵ = 1/16, and the data and run seed 6 below is such a draw (anchors 88, 99,
/// 57, 82, 69 of 100 clients, all in cluster 1; the same draw fails every seed-6 cell of the
/// IFCA Fig. 3 sweeps), so Phase 1 finds a single cluster.
#[test]
fn a_failed_run_exports_its_randomness_and_the_failure_replays() {
    let t = tmp("failed");
    let data = t.0.join("data");
    ok(&strs(&[
        "generate",
        "--setting",
        "ifca-official",
        "--seed",
        "6",
        "--set",
        "d=20",
        "--set",
        "clients=100",
        "--set",
        "samples=100",
        "--set",
        "r=0.5",
        "--set",
        "sigma=0.1",
        "--out",
        &p(&data),
    ]));
    let attempt = |seed: &str, out: &str, extra: Vec<String>| {
        let mut args = strs(&[
            "run",
            "--algorithm",
            "two-phase",
            "--data",
            &p(&data),
            "--seed",
            seed,
            "--set",
            "anchors=5",
            "--set",
            "phase1_iterations=5",
            "--quiet",
            "--out",
            &p(&t.0.join(out)),
        ]);
        args.extend(extra);
        fedmix(&args)
    };
    let rnd = t.0.join("rnd");
    let o = attempt("6", "run6", strs(&["--export-randomness", &p(&rnd)]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "seed 6 should fail: {err}");
    assert!(err.contains("found 1 clusters among the anchors"), "{err}");
    assert!(err.contains("the randomness it used was written"), "{err}");
    let anchors: serde_json::Value = serde_json::from_slice(&bytes(&rnd, "anchors.json")).unwrap();
    assert_eq!(anchors["anchors"], serde_json::json!([88, 99, 57, 82, 69]));
    // Another seed succeeds on its own draws, and fails from seed 6's files.
    let o = attempt("7", "run7", vec![]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = attempt("7", "replay", supply(&rnd));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("found 1 clusters"),
        "{err}"
    );
}
