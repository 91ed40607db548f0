//! Sweeps: one process, shards and a killed-then-resumed
//! run give byte-identical merged results; finished cells are never recomputed or lost.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TINY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/tiny-experiment.toml"
);

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_theory-checks"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fedmix-exp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(args: &[&str]) -> std::process::Output {
    let out = bin().args(args).output().expect("spawn theory-checks");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn ok(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn cells(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("cells"))
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "json")
                        && !p.file_name().unwrap().to_string_lossy().starts_with('.')
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every merged output file (figures JSON + SVG) and every cell, as bytes — except the merged
/// JSON's `provenance.wall_seconds`, the one number that depends on when and how it ran.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let figs = dir.join("figures");
    let mut files: Vec<PathBuf> = cells(dir);
    let mut f: Vec<PathBuf> = std::fs::read_dir(&figs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    f.sort();
    files.extend(f);
    files
        .into_iter()
        .map(|p| {
            let mut bytes = std::fs::read(&p).unwrap();
            if p.starts_with(&figs) && p.extension().is_some_and(|x| x == "json") {
                let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let wall = v
                    .pointer_mut("/provenance/wall_seconds")
                    .expect("provenance");
                assert!(wall.as_f64().is_some_and(|w| w >= 0.0));
                *wall = serde_json::Value::Null;
                bytes = serde_json::to_vec(&v).unwrap();
            }
            (p.strip_prefix(dir).unwrap().display().to_string(), bytes)
        })
        .collect()
}

fn reference() -> (PathBuf, Vec<(String, Vec<u8>)>) {
    let d = scratch("reference");
    let s = d.to_str().unwrap();
    ok(&["experiment", TINY, "--out", s, "--jobs", "1"]);
    ok(&["merge", s]);
    let snap = snapshot(&d);
    assert_eq!(cells(&d).len(), 8, "2 axis values × 2 variants × 2 seeds");
    (d, snap)
}

#[test]
fn shards_and_kill_resume_give_identical_merged_results() {
    let (refdir, expected) = reference();

    // Three shards, two threads each, in a different order.
    let d = scratch("shards");
    let s = d.to_str().unwrap();
    for shard in ["3/3", "1/3", "2/3"] {
        ok(&[
            "experiment",
            TINY,
            "--out",
            s,
            "--shard",
            shard,
            "--jobs",
            "2",
        ]);
    }
    ok(&["merge", s]);
    assert_eq!(
        snapshot(&d),
        expected,
        "sharded run differs from one process"
    );

    // A partial merge works and says what is missing.
    let p = scratch("partial");
    let ps = p.to_str().unwrap();
    ok(&[
        "experiment",
        TINY,
        "--out",
        ps,
        "--shard",
        "1/4",
        "--jobs",
        "1",
    ]);
    let out = run(&["merge", ps]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("merged 2/8 cells"));

    // Kill with SIGKILL after the first finished cell, then resume.
    let k = scratch("killed");
    let ks = k.to_str().unwrap();
    let mut child = bin()
        .args(["experiment", TINY, "--out", ks, "--jobs", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while cells(&k).is_empty() {
        assert!(
            started.elapsed().as_secs() < 120,
            "no cell written in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child must have been killed");
    let before = cells(&k).len();
    assert!(
        (1..8).contains(&before),
        "killed midway: {before} of 8 cells finished"
    );
    // Without --resume the finished cells are protected.
    let out = run(&["experiment", TINY, "--out", ks, "--jobs", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
    let out = run(&["experiment", TINY, "--out", ks, "--jobs", "2", "--resume"]);
    assert!(out.status.success());
    let msg = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        msg.contains(&format!(
            "{} cells computed, {before} already present",
            8 - before
        )),
        "{msg}"
    );
    ok(&["merge", ks]);
    assert_eq!(snapshot(&k), expected, "killed + resumed run differs");
    eprintln!("kill-and-resume: killed after {before}/8 cells; resumed; merged bytes identical");

    for dir in [refdir, d, p, k] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_cell_from_another_definition_is_refused_on_resume() {
    let d = scratch("mismatch");
    let s = d.to_str().unwrap();
    ok(&[
        "experiment",
        TINY,
        "--out",
        s,
        "--shard",
        "1/8",
        "--jobs",
        "1",
    ]);
    let changed = d.join("changed.toml");
    let text = std::fs::read_to_string(TINY)
        .unwrap()
        .replace("rounds = 150", "rounds = 151");
    std::fs::write(&changed, text).unwrap();
    let out = run(&[
        "experiment",
        changed.to_str().unwrap(),
        "--out",
        s,
        "--resume",
        "--jobs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("different experiment definition"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn malformed_experiment_files_get_one_line_errors() {
    let d = scratch("malformed");
    std::fs::create_dir_all(&d).unwrap();
    let base = std::fs::read_to_string(TINY).unwrap();
    let cases = [
        ("unknown key", base.replace("paper =", "papr =")),
        (
            "unknown algorithm",
            base.replace("\"fedavg\"", "\"fedavgg\""),
        ),
        (
            "unknown data parameter",
            base.replace("samples = 30", "sample = 30"),
        ),
        (
            "bad config value",
            base.replace("rounds = 150", "rounds = -1"),
        ),
        (
            "figure series typo",
            base.replace(
                "metric = \"distance\"",
                "metric = \"distance\"\nseries = [\"nope\"]",
            ),
        ),
        ("zero seeds", base.replace("seeds = 2", "seeds = 0")),
        (
            "a series key its algorithm does not read",
            base.replace(
                "algorithm = \"ifca\"",
                "algorithm = \"ifca\"\nconfig = { anchors = 5 }",
            ),
        ),
        (
            "a shared key no series reads",
            base.replace(
                "config = { rounds = 150 }",
                "config = { rounds = 150, kmeans_inits = 3 }",
            ),
        ),
    ];
    for (what, text) in cases {
        let f = d.join("bad.toml");
        std::fs::write(&f, text).unwrap();
        let out = run(&[
            "experiment",
            f.to_str().unwrap(),
            "--out",
            d.join("out").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("error: "), "{what}: {err}");
        assert!(!d.join("out").exists(), "{what}: output left behind");
    }
    let out = run(&["experiment", TINY, "--out", "x", "--shard", "4/3"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(d);
}

/// A misspelt `--only` name is an error naming the known ones, not an empty run that exits 0;
/// a partial run of checks leaves an existing index (README.md, summary.json) untouched.
#[test]
fn only_names_are_checked_and_partial_runs_keep_the_index() {
    let exp_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments");
    for (args, what) in [
        (
            vec!["--only", "theorem2", "--no-experiments"],
            "not a check",
        ),
        (
            vec!["--only", "sxy22-fig9", "--no-checks"],
            "not an experiment",
        ),
    ] {
        let mut a = args.clone();
        a.extend(["--experiments", exp_dir]);
        let out = run(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{a:?}: {err}");
        assert!(
            err.contains(what) && err.contains("lemma1_global_iteration"),
            "{err}"
        );
    }
    let out_dir = scratch("partial-index");
    std::fs::create_dir_all(&out_dir).unwrap();
    for f in ["README.md", "summary.json"] {
        std::fs::write(out_dir.join(f), "index of every check").unwrap();
    }
    let o = out_dir.to_str().unwrap();
    ok(&[
        "--only",
        "lemma1_global_iteration",
        "--no-experiments",
        "--experiments",
        exp_dir,
        "--out",
        o,
    ]);
    for f in ["README.md", "summary.json"] {
        assert_eq!(
            std::fs::read_to_string(out_dir.join(f)).unwrap(),
            "index of every check"
        );
    }
    assert!(out_dir.join("lemma1_global_iteration.json").exists());
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Every committed experiment file plans under each of its profiles (unknown or inapplicable
/// keys, bad values and dangling figure series would be refused here, not hours into a sweep).
#[test]
fn every_committed_experiment_plans_under_each_profile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    for f in files {
        let e = theory_checks::experiment::Experiment::from_file(&f)
            .unwrap_or_else(|err| panic!("{}: {err}", f.display()));
        for profile in e.profiles.keys() {
            let plan = e
                .plan(profile)
                .unwrap_or_else(|err| panic!("{} ({profile}): {err}", f.display()));
            assert!(!plan.cells.is_empty(), "{} ({profile})", f.display());
        }
    }
}

/// `--stop-after` starts no new cell once its budget is spent: with a zero budget nothing is
/// computed and nothing is logged; a later `--resume` computes the rest. A run that computes
/// cells logs the commit the binary was built from.
#[test]
fn a_time_budget_leaves_the_rest_for_resume() {
    let d = scratch("budget");
    let out = d.join("cells");
    let o = run(&[
        "experiment",
        TINY,
        "--out",
        out.to_str().unwrap(),
        "--stop-after",
        "0",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("0 cells computed") && text.contains("left for --resume"),
        "{text}"
    );
    assert!(cells(&out).is_empty());
    assert!(!out.join("runs.jsonl").exists());
    ok(&[
        "experiment",
        TINY,
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]);
    assert!(!cells(&out).is_empty());
    let log = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(
        line["commit"].as_str().unwrap(),
        theory_checks::report::build_commit()
    );
    // One line per finished cell (written as it finishes, so a killed run keeps its record),
    // then the closing line with ran = 0.
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), cells(&out).len() + 1, "{log}");
    assert!(lines[..lines.len() - 1].iter().all(|l| l["ran"] == 1));
    assert_eq!(lines[lines.len() - 1]["ran"], 0);
    let bad = run(&["experiment", TINY, "--out", "x", "--stop-after", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
    let huge = run(&["experiment", TINY, "--out", "x", "--stop-after", "1e300"]);
    assert_eq!(huge.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&huge.stderr).contains("panicked"));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn seed_runs_write_after_every_seed_and_resume_the_missing_pairs() {
    let d = scratch("seeds");
    let out = d.to_str().unwrap();
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments");
    let checks = "lemma1_global_iteration,p_spectrum";
    ok(&[
        "--seeds",
        "1..2",
        "--only",
        checks,
        "--out",
        out,
        "--experiments",
        exp,
    ]);
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("seed-robustness.json")).unwrap())
            .unwrap()
    };
    let first = read();
    assert_eq!(first["profile"], "quick");
    // Resume over 1..=3 with a third check: seeds 1 and 2 of the first two are kept (their
    // outcomes byte for byte), the missing pairs computed.
    let o = run(&[
        "--seeds",
        "1..3",
        "--only",
        &format!("{checks},lemma7_k_spectrum"),
        "--out",
        out,
        "--resume",
        "--experiments",
        exp,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let computed = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("(seed "))
        .count();
    assert_eq!(computed, 5, "1 + 1 + 3 pairs");
    let second = read();
    for c in 0..2 {
        let seeds: Vec<u64> = second["checks"][c]["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["seed"].as_u64().unwrap())
            .collect();
        assert_eq!(seeds, [1, 2, 3]);
        assert_eq!(
            second["checks"][c]["outcomes"][0],
            first["checks"][c]["outcomes"][0]
        );
    }
    assert_eq!(second["checks"][2]["seeds"], 3);
    // A narrower resumed range computes nothing, counts only its seeds, and keeps the rest.
    ok(&[
        "--seeds",
        "2..3",
        "--only",
        checks,
        "--out",
        out,
        "--resume",
        "--experiments",
        exp,
    ]);
    let third = read();
    assert_eq!(third["checks"][0]["seeds"], 2);
    assert_eq!(
        third["checks"][0]["outcomes"],
        second["checks"][0]["outcomes"]
    );
    assert!(std::fs::read_to_string(d.join("power.md")).is_ok());
    // The check outside the narrower selection stays in the file and in its table, in the
    // suite's order.
    assert_eq!(third["checks"][2]["name"], "lemma7_k_spectrum");
    assert_eq!(
        third["checks"][2]["outcomes"],
        second["checks"][2]["outcomes"]
    );
    let md = std::fs::read_to_string(d.join("seed-robustness.md")).unwrap();
    assert!(md.contains("| lemma7_k_spectrum |"), "{md}");
    // Another profile cannot resume this file.
    let bad = run(&[
        "--profile",
        "full",
        "--seeds",
        "1..3",
        "--only",
        "p_spectrum",
        "--out",
        out,
        "--resume",
        "--experiments",
        exp,
    ]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let _ = std::fs::remove_dir_all(d);
}
