//! Deterministic parallelism: the same seeded run through the CLI with `RAYON_NUM_THREADS` =
//! 1, 2 and 16 writes byte-identical `theta_hat.npy`, `iterates.npy` (`--save-iterates`) and
//! `labels.npy`. The client loops are chunked in fixed chunks of `CLIENT_CHUNK` clients with
//! partial sums added in chunk order, and Phase 1's anchors are independent tasks taken in
//! anchor order, so the thread count cannot change a bit.

use std::path::{Path, PathBuf};
use std::process::Command;

const FILES: [&str; 3] = ["theta_hat.npy", "iterates.npy", "labels.npy"];

fn run(threads: usize, algorithm: &str, setting: &str, sets: &[&str], out: &Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fedmix"));
    cmd.env("RAYON_NUM_THREADS", threads.to_string())
        .args([
            "run",
            "--algorithm",
            algorithm,
            "--setting",
            setting,
            "--seed",
            "11",
        ])
        .args(["--save-iterates", "--force", "--out"])
        .arg(out);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let o = cmd.output().expect("fedmix runs");
    assert!(
        o.status.success(),
        "{algorithm} with {threads} threads: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn check(name: &str, algorithm: &str, setting: &str, sets: &[&str]) {
    let root: PathBuf = std::env::temp_dir().join(format!("fedmix-determinism-{name}"));
    let _ = std::fs::remove_dir_all(&root);
    let dirs: Vec<(usize, PathBuf)> = [1, 2, 16]
        .into_iter()
        .map(|t| (t, root.join(format!("threads{t}"))))
        .collect();
    for (t, dir) in &dirs {
        run(*t, algorithm, setting, sets, dir);
    }
    for file in FILES {
        let reference = std::fs::read(dirs[0].1.join(file)).expect("output written");
        for (t, dir) in &dirs[1..] {
            let other = std::fs::read(dir.join(file)).expect("output written");
            assert!(
                reference == other,
                "{name}: {file} differs between 1 and {t} threads"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Two-phase at d = 260 (> the dense cutoff: Phase 1 runs the implicit Krylov subspace step,
/// anchors in parallel), then the fused parallel Phase 2.
#[test]
fn two_phase_is_bit_identical_across_thread_counts() {
    check(
        "two-phase",
        "two-phase",
        "sxy-balanced",
        &[
            "d=260",
            "clients=40",
            "samples=20",
            "phase1_iterations=3",
            "rounds=10",
        ],
    );
}

/// IFCA option II with restarts and partial participation, and option I.
#[test]
fn ifca_is_bit_identical_across_thread_counts() {
    let common = ["d=40", "clients=150", "samples=10", "rounds=15"];
    let mut model = common.to_vec();
    model.extend(["restarts=2", "participation=0.5"]);
    check("ifca-model", "ifca", "sxy-balanced", &model);
    let mut gradient = common.to_vec();
    gradient.extend(["ifca_option=gradient"]);
    check("ifca-gradient", "ifca", "sxy-balanced", &gradient);
}

/// Phase 2 alone on the unbalanced setting (940 clients, sizes 10 and 50: uneven chunks).
#[test]
fn phase2_is_bit_identical_across_thread_counts() {
    check("phase2", "phase2", "sxy-unbalanced-both", &["rounds=15"]);
}
