//! The `fedmix` binary end to end: `settings`, `generate` (deterministic output files),
//! `describe` (its χ²(n) agrees with the library), and user errors (status 2, one `error:` line
//! on stderr, never a panic).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory under the system temp dir, unique per process and tag, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("fedmix-cli-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fedmix(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .args(args)
        .output()
        .expect("fedmix runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Run and require success; return stdout.
fn ok(args: &[&str]) -> String {
    let out = fedmix(args);
    assert!(
        out.status.success(),
        "fedmix {args:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn generate(dir: &Path) -> String {
    ok(&[
        "generate",
        "--setting",
        "sxy-unbalanced-both",
        "--seed",
        "7",
        "--out",
        dir.to_str().unwrap(),
    ])
}

/// Every file of `dir`, sorted by name, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn settings_lists_all_six() {
    let out = ok(&["settings"]);
    let names = [
        "sxy-balanced",
        "sxy-unbalanced-data",
        "sxy-unbalanced-both",
        "ifca-linear",
        "ifca-official",
        "srfca-linear",
    ];
    for name in names {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{name}:"))),
            "{name} missing:\n{out}"
        );
    }
    let listed: Vec<&str> = fedmix::synthetic::SETTINGS.iter().map(|s| s.0).collect();
    assert_eq!(listed, names);
    // Parameters and their meanings are listed too.
    assert!(
        out.contains("parameters:") && out.contains("sigma"),
        "{out}"
    );
}

#[test]
fn generate_is_deterministic_and_describe_agrees_with_the_library() {
    let (a, b) = (TempDir::new("gen-a"), TempDir::new("gen-b"));
    let msg = generate(&a.0);
    // sxy-unbalanced-both (SXY22 App. C.3) has M = 920, N = 900·10 + 20·50 = 10000, d = 100.
    assert!(msg.contains("M = 920, N = 10000, d = 100"), "{msg}");
    generate(&b.0);
    let (fa, fb) = (files(&a.0), files(&b.0));
    let names: Vec<&str> = fa.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "client_sizes.npy",
            "features.npy",
            "labels.npy",
            "manifest.json",
            "responses.npy",
            "theta_star.npy"
        ]
    );
    for ((na, ba), (nb, bb)) in fa.iter().zip(&fb) {
        assert_eq!(na, nb);
        assert!(ba == bb, "{na} differs between two runs with the same seed");
    }
    // Regenerating into the same directory is refused without --force …
    let e = user_error(&[
        "generate",
        "--setting",
        "sxy-unbalanced-both",
        "--seed",
        "7",
        "--out",
        a.0.to_str().unwrap(),
    ]);
    assert!(e.contains("--force"), "{e}");
    // … and identical with it (files are replaced atomically).
    ok(&[
        "generate",
        "--setting",
        "sxy-unbalanced-both",
        "--seed",
        "7",
        "--force",
        "--out",
        a.0.to_str().unwrap(),
    ]);
    assert!(files(&a.0) == fb, "regenerating in place changed the files");

    let out = ok(&["describe", "--data", a.0.to_str().unwrap()]);
    println!("{out}");
    let value = |key: &str| -> f64 {
        let line = out
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no `{key}` line:\n{out}"));
        line[key.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let ds = fedmix::io::read_dataset(&a.0).unwrap();
    let sizes = ds.train.sizes();
    // chi2(n) and rho are printed with 6 decimals: agree to half a unit in the last place.
    let chi2 = fedmix::metrics::chi2(&sizes);
    assert!(
        (value("chi2(n)") - chi2).abs() <= 5e-7,
        "chi2 {} vs library {chi2}",
        value("chi2(n)")
    );
    let rho = fedmix::metrics::rho(&sizes, ds.train.labels().unwrap(), 3);
    assert!(
        (value("rho") - rho).abs() <= 5e-7,
        "rho {} vs library {rho}",
        value("rho")
    );
    // By hand: SXY22 §4.2 defines χ²(n) as the χ² divergence of p_n(i) = n_i/N from the uniform
    // distribution on [M], which is M Σ n_i² / N² − 1. Here Σ n_i² = 900·100 + 20·2500 = 140000,
    // so χ²(n) = 920 · 140000 / 10⁸ − 1 = 0.288.
    assert!((chi2 - 0.288).abs() <= 1e-12, "{chi2}");
}

/// A user error: status 2, exactly one stderr line, starting with `error:`, no panic.
fn user_error(args: &[&str]) -> String {
    let out = fedmix(args);
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "fedmix {args:?}: status {:?}, stderr {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "fedmix {args:?} panicked: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "fedmix {args:?}: stderr is not one line:\n{err}"
    );
    assert!(lines[0].starts_with("error:"), "fedmix {args:?}: {err}");
    err
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn user_errors_exit_2_with_one_line() {
    let dir = TempDir::new("errors");
    let out = dir.0.join("out");
    let out = out.to_str().unwrap();
    let gen = |extra: &[&'static str]| -> Vec<String> {
        let base = [
            "generate",
            "--setting",
            "sxy-balanced",
            "--seed",
            "1",
            "--out",
            out,
        ];
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let e = user_error(&[
        "generate",
        "--setting",
        "no-such-setting",
        "--seed",
        "1",
        "--out",
        out,
    ]);
    assert!(
        e.contains("no-such-setting") && e.contains("sxy-balanced"),
        "{e}"
    );
    let e = user_error(&strs(&gen(&["--set", "sigma=-1"])));
    assert!(e.contains("sigma"), "{e}");
    let e = user_error(&strs(&gen(&["--set", "nokey"])));
    assert!(e.contains("nokey"), "{e}");
    let e = user_error(&strs(&gen(&["--set", "bogus=1"])));
    assert!(e.contains("bogus"), "{e}");
    // Nothing was written by the failed runs.
    assert!(!dir.0.join("out").exists());

    let missing = dir.0.join("does-not-exist");
    let e = user_error(&["describe", "--data", missing.to_str().unwrap()]);
    assert!(e.contains("does-not-exist"), "{e}");

    std::fs::create_dir_all(&dir.0).unwrap();
    let file = dir.0.join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let e = user_error(&[
        "generate",
        "--setting",
        "sxy-balanced",
        "--seed",
        "1",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(e.contains("a-file"), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

/// A reader that goes away (`fedmix settings | head -1`) must not make fedmix panic. The pipe's
/// read end is closed right after spawning, before the child can have reached `main`, so its
/// first write fails with EPIPE (if the child ever won that race, the output would fit in the
/// pipe buffer and the test would still pass, never fail spuriously).
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .arg("settings")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fedmix runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("fedmix finishes");
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "status {:?}: {err}", out.status);
}
