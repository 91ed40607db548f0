//! `fedmix run`: the run-directory contract and its user errors.

use std::path::PathBuf;
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("fedmix-cli-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn fedmix(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .args(args)
        .output()
        .expect("binary runs")
}

const SMALL: &[&str] = &[
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
];

#[test]
fn run_writes_the_contracted_files() {
    let out = tmp("ok");
    let o = out.to_str().unwrap();
    let mut args = vec!["run", "--algorithm", "two-phase"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(&[
        "--set",
        "rounds=30",
        "--set",
        "phase1_iterations=4",
        "--save-iterates",
        "--out",
        o,
    ]);
    let r = fedmix(&args);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for f in [
        "theta_hat.npy",
        "labels.npy",
        "trace.csv",
        "summary.json",
        "iterates.npy",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    let (shape, _) =
        fedmix::io::read_f64(&out.join("theta_hat.npy"), &[Some(3), Some(10)]).unwrap();
    assert_eq!(shape, vec![3, 10]);
    let (shape, _) =
        fedmix::io::read_f64(&out.join("iterates.npy"), &[Some(30), Some(3), Some(10)]).unwrap();
    assert_eq!(shape, vec![30, 3, 10]);
    let (_, labels) = fedmix::io::read_i64(&out.join("labels.npy"), &[Some(60)]).unwrap();
    assert!(labels.iter().all(|&l| (0..3).contains(&l)));
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    assert_eq!(trace.lines().count(), 1 + 4 + 30);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in [
        "config",
        "constants",
        "final",
        "wall_time_seconds",
        "communication",
        "phase1",
        "seed",
    ] {
        assert!(summary.get(key).is_some(), "summary lacks {key}");
    }
    assert!(summary["constants"]["gamma"].as_f64().unwrap() < 1.0);
    assert!(summary["constants"]["nu_first_term"]["value"].is_number());
    // A second run into the same directory is refused without --force.
    let r = fedmix(&args);
    assert_eq!(r.status.code(), Some(2));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn run_user_errors_exit_2_with_one_line() {
    let out = tmp("err");
    let o = out.to_str().unwrap().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--set", "eta=100"],       // γ ≥ 1
        vec!["--set", "local_steps=0"], // s = 0
        vec!["--set", "no_such_key=1"], // unknown key
        vec!["--set", "rounds=many"],   // wrong type
        vec!["--set", "eta=-1"],        // η ≤ 0
    ];
    for extra in cases {
        let mut args = vec!["run", "--algorithm", "two-phase"];
        args.extend_from_slice(SMALL);
        args.extend_from_slice(&extra);
        args.extend_from_slice(&["--out", &o]);
        let r = fedmix(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.starts_with("error:") && !err.contains("panicked"),
            "{extra:?}: {err}"
        );
    }
    let r = fedmix(&[
        "run",
        "--algorithm",
        "nope",
        "--setting",
        "sxy-balanced",
        "--out",
        &o,
    ]);
    assert_eq!(r.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&out);
}

/// `k` is both a generator key and a run key: bare with `--setting` it sets the data (and the
/// run fits that many), `run.k` sets the fit alone, `data.k` the data alone; `data.` with a
/// dataset read from disk is refused.
#[test]
fn data_and_run_prefixes_separate_the_two_k() {
    let out = tmp("k");
    let o = out.to_str().unwrap();
    let mut args = vec!["run", "--algorithm", "ifca"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(&[
        "--set", "rounds=3", "--set", "data.k=3", "--set", "run.k=2", "--out", o,
    ]);
    let r = fedmix(&args);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["data"]["parameters"]["k"], 3);
    assert_eq!(s["ifca"]["params"]["k"], 2);
    assert_eq!(s["config"]["k"], 2);

    let data = tmp("k-data");
    let d = data.to_str().unwrap();
    let mut gen = vec!["generate"];
    gen.extend_from_slice(SMALL);
    gen.extend_from_slice(&["--out", d]);
    assert!(fedmix(&gen).status.success());
    let r = fedmix(&[
        "run",
        "--algorithm",
        "ifca",
        "--data",
        d,
        "--set",
        "data.k=3",
        "--out",
        o,
        "--force",
    ]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("data.k=3") && err.contains("--setting"),
        "{err}"
    );
}

/// `run --json` prints one JSON object; `validate --candidate DIR` takes the algorithm, keys
/// and start from the candidate's `params.json` (explicit flags win), and `--summary` prints
/// the verdict and the diagnosis, which names a step half the reference's.
#[test]
fn candidate_directories_json_and_summary() {
    let data = tmp("cand-data");
    let d = data.to_str().unwrap();
    let mut gen = vec!["generate"];
    gen.extend_from_slice(SMALL);
    gen.extend_from_slice(&["--out", d]);
    assert!(fedmix(&gen).status.success());
    let init = data.join("theta_star.npy");
    let run = tmp("cand-run");
    let r = fedmix(&[
        "run",
        "--algorithm",
        "phase2",
        "--data",
        d,
        "--init",
        init.to_str().unwrap(),
        "--set",
        "rounds=4",
        "--set",
        "eta=0.05",
        "--set",
        "local_steps=1",
        "--save-iterates",
        "--json",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("one JSON object");
    assert_eq!(j["rounds"], 4);
    assert!(j["final"]["distance"].is_f64());

    // The reference's own trajectory as a candidate directory.
    let cand = tmp("cand");
    std::fs::create_dir_all(&cand).unwrap();
    std::fs::copy(run.join("iterates.npy"), cand.join("iterates.npy")).unwrap();
    std::fs::copy(run.join("iterate_labels.npy"), cand.join("labels.npy")).unwrap();
    let params = serde_json::json!({
        "algorithm": "phase2",
        "set": {"rounds": 4, "eta": 0.05, "local_steps": 1},
        "init": init,
    });
    std::fs::write(cand.join("params.json"), params.to_string()).unwrap();
    let c = cand.to_str().unwrap();
    let ok = fedmix(&["validate", "--data", d, "--candidate", c, "--summary"]);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        out.contains("verdict: matches") && out.contains("eta=0.05"),
        "{out}"
    );
    // An explicit --set wins over params.json: the reference's step is now twice the
    // candidate's, so the candidate moves half as far in round 1.
    let bad = fedmix(&[
        "validate",
        "--data",
        d,
        "--candidate",
        c,
        "--summary",
        "--set",
        "eta=0.1",
    ]);
    let out = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{out}");
    assert!(
        out.contains("verdict: DIFFERS")
            && out.contains("first round beyond tolerance: 1")
            && out.contains("half as far"),
        "{out}"
    );
    // A params.json with an unknown field is a typed error naming the file.
    std::fs::write(
        cand.join("params.json"),
        r#"{"algorithm": "phase2", "step": 1}"#,
    )
    .unwrap();
    let r = fedmix(&["validate", "--data", d, "--candidate", c]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("params.json") && err.contains("step"), "{err}");
}

#[test]
fn long_runs_show_progress_on_stderr_unless_quiet() {
    let run = |quiet: bool, name: &str| {
        let out = tmp(name);
        let mut args = vec!["run", "--algorithm", "ifca"];
        args.extend_from_slice(SMALL);
        args.extend_from_slice(&["--set", "rounds=1500", "--out", out.to_str().unwrap()]);
        if quiet {
            args.push("--quiet");
        }
        // Show the display from the first poll (100 ms) instead of after 2 s.
        let r = Command::new(env!("CARGO_BIN_EXE_fedmix"))
            .args(&args)
            .env("FEDMIX_PROGRESS_DELAY_MS", "0")
            .output()
            .expect("binary runs");
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let _ = std::fs::remove_dir_all(&out);
        String::from_utf8_lossy(&r.stderr).to_string()
    };
    // stderr is a pipe here: plain lines, the first at the first poll, the last at the end.
    let shown = run(false, "progress");
    let line = shown.lines().last().unwrap_or_default();
    assert!(
        line.starts_with("ifca: 1500/1500 (rounds, d(θ_t, θ*) = ") && line.contains("ETA 0 s"),
        "{shown}"
    );
    assert_eq!(run(true, "quiet"), "");
}

/// The unpacked product kernels (`fedmix-kernels`) give matrixmultiply's bits: a whole run with
/// them and one with `FEDMIX_NO_KERNELS=1` (every product through nalgebra / matrixmultiply)
/// write the same models, labels and trace, byte for byte. Shapes: d = 24 and n_i = 30, so the
/// narrow products (6 padded models × d × n_i, d × n_i × 6 residual columns) take the kernel
/// path where the CPU has AVX2 + FMA.
#[test]
fn kernels_and_matrixmultiply_write_the_same_run() {
    let run = |name: &str, disable: bool| {
        let out = tmp(name);
        let o = out.to_str().unwrap().to_string();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fedmix"));
        cmd.args([
            "run",
            "--algorithm",
            "ifca",
            "--setting",
            "sxy-balanced",
            "--seed",
            "5",
            "--set",
            "d=24",
            "--set",
            "clients=40",
            "--set",
            "samples=30",
            "--set",
            "ifca_option=gradient",
            "--set",
            "rounds=25",
            "--quiet",
            "--out",
            &o,
        ]);
        if disable {
            cmd.env("FEDMIX_NO_KERNELS", "1");
        } else {
            cmd.env_remove("FEDMIX_NO_KERNELS");
        }
        let r = cmd.output().expect("binary runs");
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        out
    };
    let (with, without) = (run("kern-on", false), run("kern-off", true));
    for f in ["theta_hat.npy", "labels.npy", "trace.csv"] {
        let (a, b) = (
            std::fs::read(with.join(f)).unwrap(),
            std::fs::read(without.join(f)).unwrap(),
        );
        assert!(a == b, "{f} differs between the kernels and matrixmultiply");
    }
}

/// `validate` cannot be fooled by non-finite entries and refuses labels that are not integers:
/// an all-NaN candidate fails every round (exit 1, each naming its first NaN), one NaN fails
/// exactly its round; float labels are read when they hold integers and refused (exit 2, naming
/// round and client) when one is NaN, a fraction or outside the round's models; CFL's own
/// NaN-padded trajectory (its number of models grows) passes.
#[test]
fn validate_fails_non_finite_candidates_and_refuses_non_integer_labels() {
    let data = tmp("nan-data");
    let run = tmp("nan-run");
    let d = data.to_str().unwrap();
    let mut gen = vec!["generate"];
    gen.extend_from_slice(SMALL);
    gen.extend_from_slice(&["--out", d]);
    assert!(fedmix(&gen).status.success());
    let keys = ["--set", "rounds=4"];
    let mut args = vec!["run", "--algorithm", "phase2", "--data", d, "--seed", "2"];
    args.extend_from_slice(&keys);
    args.extend_from_slice(&["--save-iterates", "--quiet", "--out", run.to_str().unwrap()]);
    assert!(fedmix(&args).status.success());
    let (shape, iterates) =
        fedmix::io::read_f64(&run.join("iterates.npy"), &[None, None, None]).unwrap();
    let (lshape, labels) =
        fedmix::io::read_i64(&run.join("iterate_labels.npy"), &[None, None]).unwrap();
    let validate = |iterates: &[f64], labels: Option<&[f64]>| {
        let it = run.join("cand-iterates.npy");
        fedmix::io::write_f64(&it, &shape, iterates).unwrap();
        let mut a = vec![
            "validate",
            "--algorithm",
            "phase2",
            "--data",
            d,
            "--seed",
            "2",
        ];
        a.extend_from_slice(&keys);
        let it = it.to_str().unwrap().to_string();
        let lp = run.join("cand-labels.npy");
        let lps = lp.to_str().unwrap().to_string();
        a.extend_from_slice(&["--quiet", "--iterates", &it]);
        if let Some(l) = labels {
            fedmix::io::write_f64(&lp, &lshape, l).unwrap();
            a.extend_from_slice(&["--labels", &lps]);
        }
        let o = fedmix(&a);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let nan = vec![f64::NAN; iterates.len()];
    let (code, out, _) = validate(&nan, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("4 rounds compared, 4 beyond tolerance"),
        "{out}"
    );
    assert_eq!(
        out.matches("DIFFERS: candidate model 0, coordinate 0 is NaN")
            .count(),
        4,
        "{out}"
    );
    let mut one = iterates.clone();
    let per_round = shape[1] * shape[2];
    one[2 * per_round + shape[2] + 3] = f64::NAN;
    let (code, out, _) = validate(&one, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("1 beyond tolerance")
            && out.contains("first round beyond tolerance: 3")
            && out.contains("candidate model 1, coordinate 3 is NaN"),
        "{out}"
    );
    // Labels: integral floats are labels; NaN, 1.5 and a label beyond the models are errors.
    let float_labels: Vec<f64> = labels.iter().map(|&l| l as f64).collect();
    let (code, out, err) = validate(&iterates, Some(&float_labels));
    assert_eq!(code, Some(0), "{out}{err}");
    let m = lshape[1];
    for (value, fragment) in [
        (
            f64::NAN,
            "label of client 2 in round 2 is NaN, not an integer",
        ),
        (1.5, "label of client 2 in round 2 is 1.5, not an integer"),
        (
            7.0,
            "client 2 in round 2 has label 7, but the reference has 3 model(s)",
        ),
    ] {
        let mut l = float_labels.clone();
        l[m + 2] = value;
        let (code, out, err) = validate(&iterates, Some(&l));
        assert_eq!(code, Some(2), "{value}: {out}{err}");
        assert!(err.contains(fragment) && !err.contains("panicked"), "{err}");
    }
    // CFL splits early: rounds with fewer models are NaN-padded in its iterates.npy.
    let cfl = tmp("nan-cfl");
    let c = cfl.to_str().unwrap();
    let cfl_keys = [
        "--set",
        "rounds=5",
        "--set",
        "cfl_warmup_rounds=0",
        "--set",
        "cfl_eps1=1e9",
        "--set",
        "cfl_eps2=1e-12",
    ];
    let mut a = vec!["run", "--algorithm", "cfl", "--data", d, "--quiet"];
    a.extend_from_slice(&cfl_keys);
    a.extend_from_slice(&["--save-iterates", "--out", c]);
    assert!(fedmix(&a).status.success());
    let (_, padded) = fedmix::io::read_f64(&cfl.join("iterates.npy"), &[None, None, None]).unwrap();
    assert!(padded.iter().any(|v| v.is_nan()), "CFL did not split");
    let it = cfl.join("iterates.npy");
    let lab = cfl.join("iterate_labels.npy");
    let mut a = vec!["validate", "--algorithm", "cfl", "--data", d, "--quiet"];
    a.extend_from_slice(&cfl_keys);
    a.extend_from_slice(&[
        "--iterates",
        it.to_str().unwrap(),
        "--labels",
        lab.to_str().unwrap(),
        "--summary",
    ]);
    let o = fedmix(&a);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("verdict: matches"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for p in [data, run, cfl] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// A candidate with another number of clusters than the reference is a result, not bad input:
/// a fourth model slot holding a model in round 2 (the reference, `phase2` with k = 3, has 3)
/// fails round 2 only, in both modes, with exit 1 and the model counts in the diagnosis; the
/// same file with another `d` stays a usage error (exit 2).
#[test]
fn validate_judges_a_candidate_with_more_models_per_round() {
    let data = tmp("wide-data");
    let run = tmp("wide-run");
    let d = data.to_str().unwrap();
    let mut gen = vec!["generate"];
    gen.extend_from_slice(SMALL);
    gen.extend_from_slice(&["--out", d]);
    assert!(fedmix(&gen).status.success());
    let keys = ["--set", "rounds=4"];
    let mut args = vec!["run", "--algorithm", "phase2", "--data", d, "--seed", "2"];
    args.extend_from_slice(&keys);
    args.extend_from_slice(&["--save-iterates", "--quiet", "--out", run.to_str().unwrap()]);
    assert!(fedmix(&args).status.success());
    let (shape, iterates) =
        fedmix::io::read_f64(&run.join("iterates.npy"), &[None, None, None]).unwrap();
    let [rounds, k, dim] = [shape[0], shape[1], shape[2]];
    assert_eq!(k, 3);
    // Rounds × (k + 1) × d: the reference's models, then a NaN slot, a model in round 2.
    let mut wide = vec![f64::NAN; rounds * (k + 1) * dim];
    for t in 0..rounds {
        let own = &iterates[t * k * dim..(t + 1) * k * dim];
        wide[t * (k + 1) * dim..][..k * dim].copy_from_slice(own);
    }
    wide[(k + 1) * dim + k * dim..][..dim].fill(0.5);
    let check = |values: &[f64], shape: &[usize], extra: &[&str]| {
        let it = run.join("wide-iterates.npy");
        fedmix::io::write_f64(&it, shape, values).unwrap();
        let mut a = vec![
            "validate",
            "--algorithm",
            "phase2",
            "--data",
            d,
            "--seed",
            "2",
        ];
        a.extend_from_slice(&keys);
        a.extend_from_slice(&["--quiet", "--json", "--iterates", it.to_str().unwrap()]);
        a.extend_from_slice(extra);
        let o = fedmix(&a);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    for mode in [&[][..], &["--one-step"][..]] {
        let (code, out, err) = check(&wide, &[rounds, k + 1, dim], mode);
        assert_eq!(code, Some(1), "{mode:?}: {out}{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let failing: Vec<u64> = report["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["ok"] != true)
            .map(|r| r["round"].as_u64().unwrap())
            .collect();
        assert_eq!(failing, [2], "{mode:?}: {out}");
        assert_eq!(report["rounds"][1]["candidate_models"], 4);
        let diagnosis = report["diagnosis"].as_str().unwrap();
        assert!(
            diagnosis.starts_with("round 2: the candidate has 4 model(s), the reference 3"),
            "{diagnosis}"
        );
    }
    let (code, out, err) = check(&wide[..rounds * (k + 1) * 9], &[rounds, k + 1, 9], &[]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("expected [any, any, 10]"), "{err}");
}
