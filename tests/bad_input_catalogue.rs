//! The bad-input catalogue: malformed files, configs, `--set` overrides and flags fed through
//! the CLI. For each: exit status 2, one line on stderr naming the offending field / client /
//! round, no "panicked", and no output left behind.
//! Run with `--nocapture` to print the catalogue as a markdown table (input → message).

use std::path::{Path, PathBuf};
use std::process::Command;

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fedmix(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// A small valid dataset at `dir`.
fn dataset(dir: &Path) {
    let o = fedmix(&s(&[
        "generate",
        "--setting",
        "sxy-balanced",
        "--seed",
        "1",
        "--set",
        "d=6",
        "--set",
        "clients=12",
        "--set",
        "samples=8",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(o.status.success());
}

fn edit_manifest(dir: &Path, f: impl Fn(&mut serde_json::Value)) {
    let p = dir.join("manifest.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
}

fn put_value(dir: &Path, file: &str, index: usize, value: f64) {
    let p = dir.join(file);
    let (shape, mut data) = fedmix::io::read_f64(
        &p,
        &[None; 2][..if file == "responses.npy" { 1 } else { 2 }],
    )
    .unwrap();
    data[index] = value;
    fedmix::io::write_f64(&p, &shape, &data).unwrap();
}

type Setup = Box<dyn Fn(&Path, &Path) -> Vec<String>>;

fn run_args(data: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = s(&[
        "run",
        "--algorithm",
        "two-phase",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "rounds=3",
        "--set",
        "phase1_iterations=2",
    ]);
    v.extend(s(extra));
    v
}

/// `fedmix run --algorithm fedsoft` (3 rounds) on `data` with `extra` arguments.
fn fedsoft_args(data: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = s(&[
        "run",
        "--algorithm",
        "fedsoft",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "rounds=3",
    ]);
    v.extend(s(extra));
    v
}

/// Drop the `--set key=value` pairs of `keys` from `args`.
fn without_sets(args: &mut Vec<String>, keys: &[&str]) {
    let mut i = 0;
    while i + 1 < args.len() {
        let drop = args[i] == "--set"
            && keys
                .iter()
                .any(|k| args[i + 1].split('=').next() == Some(*k));
        if drop {
            args.drain(i..i + 2);
        } else {
            i += 1;
        }
    }
}

fn gen_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = s(&[
        "generate",
        "--setting",
        "sxy-balanced",
        "--seed",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    v.extend(s(extra));
    v
}

fn describe(data: &Path) -> Vec<String> {
    s(&["describe", "--data", data.to_str().unwrap()])
}

/// `run_args` for two-phase with practical anchors (any client eligible, n_H = 3) and a
/// randomness file written into the data directory: `flag` → `file` with `content`.
fn with_anchors(data: &Path, out: &Path, content: &str, extra: &[&str]) -> Vec<String> {
    let f = data.join("anchors.json");
    std::fs::write(&f, content).unwrap();
    let mut a = run_args(
        data,
        out,
        &["--set", "anchor_min_samples=4", "--set", "anchors=3"],
    );
    a.extend(s(extra));
    a.extend(s(&["--anchors", f.to_str().unwrap()]));
    a
}

/// `fedmix run --algorithm ifca` (3 rounds) with a participation file of `shape` (int64
/// `data`, or float64 when `float`).
fn with_participation(
    data: &Path,
    out: &Path,
    shape: &[usize],
    mask: &[i64],
    float: bool,
) -> Vec<String> {
    let f = data.join("participation.npy");
    if float {
        let v: Vec<f64> = mask.iter().map(|&x| x as f64).collect();
        fedmix::io::write_f64(&f, shape, &v).unwrap();
    } else {
        fedmix::io::write_i64(&f, shape, mask).unwrap();
    }
    s(&[
        "run",
        "--algorithm",
        "ifca",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "rounds=3",
        "--participation",
        f.to_str().unwrap(),
    ])
}

const PRACTICAL_3: &str = r#"{"version": 1, "variant": "practical", "anchors": [0, 1, 2]}"#;

#[test]
fn catalogue() {
    let root = Tmp(std::env::temp_dir().join(format!("fedmix-catalogue-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&root.0);
    std::fs::create_dir_all(&root.0).unwrap();
    // (input, setup returning the args, substrings the message must contain)
    let cases: Vec<(&str, Setup, Vec<&str>)> = vec![
        (
            "NaN in features",
            Box::new(|d, _| {
                put_value(d, "features.npy", 6 * 9 + 2, f64::NAN);
                describe(d)
            }),
            vec!["features", "client 1", "NaN"],
        ),
        (
            "+∞ in features",
            Box::new(|d, _| {
                put_value(d, "features.npy", 0, f64::INFINITY);
                describe(d)
            }),
            vec!["features", "client 0", "inf"],
        ),
        (
            "NaN in responses",
            Box::new(|d, _| {
                put_value(d, "responses.npy", 17, f64::NAN);
                describe(d)
            }),
            vec!["responses", "client 2"],
        ),
        (
            "−∞ in responses",
            Box::new(|d, _| {
                put_value(d, "responses.npy", 95, f64::NEG_INFINITY);
                describe(d)
            }),
            vec!["responses", "client 11"],
        ),
        (
            "features shape ≠ manifest",
            Box::new(|d, _| {
                fedmix::io::write_f64(&d.join("features.npy"), &[96, 5], &vec![0.0; 480]).unwrap();
                describe(d)
            }),
            vec!["features.npy", "shape"],
        ),
        (
            "responses length ≠ manifest",
            Box::new(|d, _| {
                fedmix::io::write_f64(&d.join("responses.npy"), &[95], &vec![0.0; 95]).unwrap();
                describe(d)
            }),
            vec!["responses.npy", "shape"],
        ),
        (
            "truncated .npy",
            Box::new(|d, _| {
                let p = d.join("features.npy");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 40]).unwrap();
                describe(d)
            }),
            vec!["features.npy", "truncated"],
        ),
        (
            "wrong dtype .npy (int64 responses)",
            Box::new(|d, _| {
                fedmix::io::write_i64(&d.join("responses.npy"), &[96], &vec![0; 96]).unwrap();
                describe(d)
            }),
            vec!["responses.npy", "dtype"],
        ),
        (
            "not an .npy file",
            Box::new(|d, _| {
                std::fs::write(d.join("labels.npy"), b"hello").unwrap();
                describe(d)
            }),
            vec!["labels.npy"],
        ),
        (
            "missing features.npy",
            Box::new(|d, _| {
                std::fs::remove_file(d.join("features.npy")).unwrap();
                describe(d)
            }),
            vec!["missing", "features.npy"],
        ),
        (
            "n_i = 0 in manifest",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["sizes"][3] = 0.into());
                describe(d)
            }),
            vec!["client 3", "n_i = 0"],
        ),
        (
            "k = 0 in manifest",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["k"] = 0.into());
                describe(d)
            }),
            vec!["k"],
        ),
        (
            "d = 0 in manifest",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["d"] = 0.into());
                describe(d)
            }),
            vec!["d"],
        ),
        (
            "manifest from the future",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["format_version"] = 99.into());
                describe(d)
            }),
            vec!["version 99"],
        ),
        (
            "unknown manifest field",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["colour"] = "red".into());
                describe(d)
            }),
            vec!["colour"],
        ),
        (
            "unknown setting in manifest",
            Box::new(|d, _| {
                edit_manifest(d, |v| v["setting"] = "nope".into());
                describe(d)
            }),
            vec!["nope"],
        ),
        (
            "label out of range",
            Box::new(|d, _| {
                fedmix::io::write_i64(
                    &d.join("labels.npy"),
                    &[12],
                    &[0, 1, 2, 7, 0, 1, 2, 0, 1, 2, 0, 1],
                )
                .unwrap();
                describe(d)
            }),
            vec!["client 3", "label 7"],
        ),
        (
            "malformed JSON manifest",
            Box::new(|d, _| {
                std::fs::write(d.join("manifest.json"), b"{ not json").unwrap();
                describe(d)
            }),
            vec!["manifest.json"],
        ),
        (
            "k > M",
            Box::new(|d, o| run_args(d, o, &["--set", "k=50"])),
            vec!["k", "50"],
        ),
        (
            "k = 1 for two-phase",
            Box::new(|d, o| run_args(d, o, &["--set", "k=1"])),
            vec!["k", "k ≥ 2"],
        ),
        (
            "θ₀ dimension ≠ data",
            Box::new(|d, o| {
                let p = d.join("theta0.npy");
                fedmix::io::write_f64(&p, &[1, 4], &[0.0; 4]).unwrap();
                let mut a = run_args(d, o, &[]);
                a.extend(s(&["--init", p.to_str().unwrap()]));
                a
            }),
            vec!["theta0.npy", "shape"],
        ),
        (
            "η ≤ 0",
            Box::new(|d, o| run_args(d, o, &["--set", "eta=0"])),
            vec!["eta"],
        ),
        (
            "η with γ ≥ 1",
            Box::new(|d, o| run_args(d, o, &["--set", "eta=50"])),
            vec!["gamma", "largest admissible eta"],
        ),
        (
            "s = 0",
            Box::new(|d, o| run_args(d, o, &["--set", "local_steps=0"])),
            vec!["local_steps"],
        ),
        (
            "FedSoft λ < 0",
            Box::new(|d, o| fedsoft_args(d, o, &["--set", "fedsoft_lambda=-1"])),
            vec!["fedsoft_lambda", "≥ 0"],
        ),
        (
            "FedSoft smoother σ = 1",
            Box::new(|d, o| fedsoft_args(d, o, &["--set", "fedsoft_smoother=1"])),
            vec!["fedsoft_smoother", "(0, 1)"],
        ),
        (
            "FedSoft interval τ = 0",
            Box::new(|d, o| fedsoft_args(d, o, &["--set", "fedsoft_interval=0"])),
            vec!["fedsoft_interval", "≥ 1"],
        ),
        (
            "local_solver for FedSoft (not its key)",
            Box::new(|d, o| fedsoft_args(d, o, &["--set", "local_solver=fedprox"])),
            vec!["local_solver", "fedsoft"],
        ),
        (
            "unknown --set key",
            Box::new(|d, o| run_args(d, o, &["--set", "learning_rate=0.1"])),
            vec!["learning_rate"],
        ),
        (
            "wrong type in --set",
            Box::new(|d, o| run_args(d, o, &["--set", "rounds=ten"])),
            vec!["rounds"],
        ),
        (
            "unknown TOML key",
            Box::new(|d, o| {
                let p = d.join("c.toml");
                std::fs::write(&p, "etaa = 0.1\n").unwrap();
                let mut a = run_args(d, o, &[]);
                a.extend(s(&["--config", p.to_str().unwrap()]));
                a
            }),
            vec!["etaa"],
        ),
        (
            "TOML value of wrong type",
            Box::new(|d, o| {
                let p = d.join("c.toml");
                std::fs::write(&p, "local_steps = \"five\"\n").unwrap();
                let mut a = run_args(d, o, &[]);
                a.extend(s(&["--config", p.to_str().unwrap()]));
                a
            }),
            vec!["local_steps"],
        ),
        (
            "TOML syntax error",
            Box::new(|d, o| {
                let p = d.join("c.toml");
                std::fs::write(&p, "eta = = 1\n").unwrap();
                let mut a = run_args(d, o, &[]);
                a.extend(s(&["--config", p.to_str().unwrap()]));
                a
            }),
            vec!["c.toml"],
        ),
        (
            "unknown algorithm",
            Box::new(|d, o| {
                let mut a = run_args(d, o, &[]);
                a[2] = "gradient-boosting".into();
                a
            }),
            vec!["algorithm", "gradient-boosting"],
        ),
        (
            "negative σ",
            Box::new(|_, o| gen_args(o, &["--set", "sigma=-0.1"])),
            vec!["sigma"],
        ),
        (
            "p not summing to 1",
            Box::new(|_, o| gen_args(o, &["--set", "p=0.5,0.3,0.3"])),
            vec!["p", "sum"],
        ),
        (
            "k = 0 override",
            Box::new(|_, o| gen_args(o, &["--set", "k=0"])),
            vec!["k"],
        ),
        (
            "absurd size (refused before allocating)",
            Box::new(|_, o| gen_args(o, &["--set", "clients=1000000000", "--set", "d=1000000"])),
            vec!["bytes", "limit"],
        ),
        (
            "unknown generator parameter",
            Box::new(|_, o| gen_args(o, &["--set", "colour=red"])),
            vec!["colour"],
        ),
        (
            "override without =",
            Box::new(|_, o| gen_args(o, &["--set", "sigma"])),
            vec!["sigma", "key=value"],
        ),
        (
            "unknown setting",
            Box::new(|_, o| {
                let mut a = gen_args(o, &[]);
                a[2] = "mnist".into();
                a
            }),
            vec!["mnist"],
        ),
        (
            "output is a file",
            Box::new(|d, _| {
                let f = d.join("a-file");
                std::fs::write(&f, b"x").unwrap();
                gen_args(&f, &[])
            }),
            vec!["a-file"],
        ),
        (
            "output under a file (not creatable)",
            Box::new(|d, _| {
                let f = d.join("a-file");
                std::fs::write(&f, b"x").unwrap();
                gen_args(&f.join("sub"), &[])
            }),
            vec!["sub"],
        ),
        (
            "non-empty output without --force",
            Box::new(|d, _| gen_args(d, &[])),
            vec!["--force"],
        ),
        (
            "malformed anchors.json",
            Box::new(|d, o| with_anchors(d, o, r#"{"version": 1, "anchors": [0, 1"#, &[])),
            vec!["anchors.json", "malformed"],
        ),
        (
            "anchors.json from the future",
            Box::new(|d, o| {
                with_anchors(
                    d,
                    o,
                    r#"{"version": 2, "variant": "practical", "anchors": [0, 1, 2]}"#,
                    &[],
                )
            }),
            vec!["anchors.json", "version 2"],
        ),
        (
            "anchor id out of range",
            Box::new(|d, o| {
                with_anchors(
                    d,
                    o,
                    r#"{"version": 1, "variant": "practical", "anchors": [0, 1, 99]}"#,
                    &[],
                )
            }),
            vec!["anchors[2]", "99", "out of range"],
        ),
        (
            "duplicate anchor id",
            Box::new(|d, o| {
                with_anchors(
                    d,
                    o,
                    r#"{"version": 1, "variant": "practical", "anchors": [4, 1, 4]}"#,
                    &[],
                )
            }),
            vec!["anchors[2]", "twice"],
        ),
        (
            "faithful anchors.json without client_sets",
            Box::new(|d, o| {
                with_anchors(
                    d,
                    o,
                    r#"{"version": 1, "variant": "faithful", "anchors": [0, 1, 2]}"#,
                    &[
                        "--set",
                        "phase1_variant=faithful",
                        "--set",
                        "ell=1",
                        "--set",
                        "m=2",
                    ],
                )
            }),
            vec!["client_sets", "missing"],
        ),
        (
            "q0 of wrong shape",
            Box::new(|d, o| {
                let q = d.join("q0.npy");
                fedmix::io::write_f64(&q, &[2, 3, 6, 2], &[0.0; 72]).unwrap();
                with_anchors(
                    d,
                    o,
                    PRACTICAL_3,
                    &[
                        "--set",
                        "subspace=orthogonal-iteration",
                        "--q0",
                        q.to_str().unwrap(),
                    ],
                )
            }),
            vec!["q0.npy", "shape [2, 3, 6, 2]", "[2, 3, 6, 3]"],
        ),
        (
            "q0 with NaN",
            Box::new(|d, o| {
                let q = d.join("q0.npy");
                let mut v = vec![0.0; 108];
                v[40] = f64::NAN;
                fedmix::io::write_f64(&q, &[2, 3, 6, 3], &v).unwrap();
                with_anchors(
                    d,
                    o,
                    PRACTICAL_3,
                    &[
                        "--set",
                        "subspace=orthogonal-iteration",
                        "--q0",
                        q.to_str().unwrap(),
                    ],
                )
            }),
            vec!["q0[0][2][1][1]", "non-finite"],
        ),
        (
            "participation round with no participant",
            Box::new(|d, o| {
                let mut m = vec![1i64; 36];
                m[12..24].fill(0);
                with_participation(d, o, &[3, 12], &m, false)
            }),
            vec!["participation[0][1]", "no participant"],
        ),
        (
            "participation entry not 0/1",
            Box::new(|d, o| {
                let mut m = vec![1i64; 36];
                m[17] = 2;
                with_participation(d, o, &[1, 3, 12], &m, false)
            }),
            vec!["participation[0][1][5]", "0 or 1"],
        ),
        (
            "participation of wrong dtype (float64)",
            Box::new(|d, o| with_participation(d, o, &[3, 12], &[1; 36], true)),
            vec!["participation.npy", "dtype"],
        ),
        (
            "participation rounds ≠ config",
            Box::new(|d, o| with_participation(d, o, &[4, 12], &[1; 48], false)),
            vec!["participation", "rounds", "4"],
        ),
        (
            "--anchors for an algorithm without anchors",
            Box::new(|d, o| {
                let mut a = with_anchors(d, o, PRACTICAL_3, &[]);
                a[2] = "ifca".into();
                // Without the Phase 1 keys, which IFCA does not read (refused on their own).
                without_sets(
                    &mut a,
                    &["phase1_iterations", "anchor_min_samples", "anchors"],
                );
                a
            }),
            vec!["--anchors", "ifca"],
        ),
    ];
    assert!(cases.len() >= 30);
    let mut table = String::from("| input | message |\n|---|---|\n");
    for (i, (name, setup, expect)) in cases.iter().enumerate() {
        let data = root.0.join(format!("case{i}"));
        dataset(&data);
        let out = root.0.join(format!("out{i}"));
        let args = setup(&data, &out);
        let before: Vec<_> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let o = fedmix(&args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name}: status {:?}, stderr {err}",
            o.status
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: not one line: {err}"
        );
        let line = err.trim_end();
        assert!(line.starts_with("error: "), "{name}: {line}");
        for e in expect {
            assert!(line.contains(e), "{name}: message lacks `{e}`: {line}");
        }
        assert!(
            !out.exists(),
            "{name}: output left behind at {}",
            out.display()
        );
        let after: Vec<_> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            before.len(),
            after.len(),
            "{name}: files appeared in the data directory"
        );
        table.push_str(&format!(
            "| {name} | `{}` |\n",
            line.trim_start_matches("error: ").replace('|', "\\|")
        ));
    }
    println!("{table}");
}
