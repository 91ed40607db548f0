//! Recorded verdicts of `fedmix validate` on implementations written elsewhere
//! (`docs/case-studies.md`). Each `tests/data/case-studies/**/case.json` names the fedmix data
//! (regenerated here from its setting and seed), the validate arguments, and the verdict recorded
//! when the candidate was run (`examples/case-studies/<name>/`): whether every round passed and
//! which rounds failed, in trajectory and in one-step mode. The candidates' trajectories
//! (`iterates.npy`, and `labels.npy` where the candidate records every client's choice) and
//! randomness files (`init.npy`, `participation.npy`) are committed beside `case.json`, because
//! CI cannot run the candidates themselves. A change to the validator that flips a real verdict
//! fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory under the system temp dir, unique per process and tag, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("fedmix-cases-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .expect("an array of strings")
        .iter()
        .map(|s| s.as_str().expect("a string").to_owned())
        .collect()
}

/// Every `case.json` under `dir`, sorted.
fn cases(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/data/case-studies")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            cases(&p, out);
        } else if p.file_name().is_some_and(|n| n == "case.json") {
            out.push(p);
        }
    }
}

/// Runs `fedmix validate --json` on the case in `dir` (one mode): exit code and stdout, stderr.
fn run(dir: &Path, data: &Path, args: &[String], one_step: bool) -> (Option<i32>, Vec<u8>, String) {
    // File arguments in case.json are relative to its directory.
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a.ends_with(".npy") {
                dir.join(a).display().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fedmix"));
    cmd.arg("validate").arg("--data").arg(data).args(&args);
    cmd.arg("--iterates").arg(dir.join("iterates.npy"));
    // A candidate that records no choice for some client (fl-sim's IFCA: a client chooses only
    // when it takes part) is compared on its models alone.
    let labels = dir.join("labels.npy");
    if labels.exists() {
        cmd.arg("--labels").arg(labels);
    }
    cmd.args(["--quiet", "--json"]);
    if one_step {
        cmd.arg("--one-step");
    }
    let out = cmd.output().expect("run fedmix validate");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), out.stdout, stderr)
}

/// Runs `fedmix validate --json` on the case in `dir` (one mode) and returns the report.
fn validate(dir: &Path, data: &Path, args: &[String], one_step: bool) -> serde_json::Value {
    let (code, stdout, stderr) = run(dir, data, args, one_step);
    assert!(
        code == Some(0) || code == Some(1),
        "{}: validate exited {code:?}: {}",
        dir.display(),
        stderr
    );
    let report: serde_json::Value =
        serde_json::from_slice(&stdout).expect("validate --json prints one JSON object");
    assert_eq!(
        report["passed"].as_bool(),
        Some(code == Some(0)),
        "exit status and `passed` agree"
    );
    report
}

fn failing_rounds(report: &serde_json::Value) -> Vec<u64> {
    report["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .filter(|r| r["ok"].as_bool() != Some(true))
        .map(|r| r["round"].as_u64().expect("round number"))
        .collect()
}

#[test]
fn recorded_case_study_verdicts_hold_in_both_modes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/case-studies");
    let mut found = Vec::new();
    cases(&root, &mut found);
    assert!(found.len() >= 7, "case studies found: {found:?}");
    for (n, case) in found.iter().enumerate() {
        let dir = case.parent().expect("case directory");
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case).expect("read case.json"))
                .expect("case.json is JSON");
        let scratch = Scratch::new(&n.to_string());
        let gen = Command::new(env!("CARGO_BIN_EXE_fedmix"))
            .arg("generate")
            .args(strings(&spec["generate"]))
            .arg("--out")
            .arg(&scratch.0)
            .output()
            .expect("run fedmix generate");
        assert!(gen.status.success(), "{}: generate failed", dir.display());
        for (mode, one_step) in [("trajectory", false), ("one-step", true)] {
            let expected = &spec["expected"][mode];
            if expected["refused"].as_bool() == Some(true) {
                let code = run(dir, &scratch.0, &strings(&spec["validate"]), one_step).0;
                assert_eq!(code, Some(2), "{} ({mode}): still refused", dir.display());
                continue;
            }
            let report = validate(dir, &scratch.0, &strings(&spec["validate"]), one_step);
            let want: Vec<u64> = expected["failing_rounds"]
                .as_array()
                .expect("failing_rounds")
                .iter()
                .map(|r| r.as_u64().expect("a round"))
                .collect();
            assert_eq!(
                report["passed"].as_bool(),
                expected["passed"].as_bool(),
                "{} ({mode}): verdict",
                dir.display()
            );
            assert_eq!(
                failing_rounds(&report),
                want,
                "{} ({mode}): failing rounds",
                dir.display()
            );
        }
    }
}
