//! Records the commit the binary is built from (`THEORY_CHECKS_BUILD_COMMIT`), so that the
//! runs a long sweep logs name the code that computed its cells, not whatever HEAD is when it
//! ends.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) => {
            // Dirty means the code differs from the commit: the sources the binary is built
            // from, not data a running sweep appends to (its tracked `runs.jsonl`).
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":/src",
                ":/kernels",
                ":/theory-checks/src",
                ":/theory-checks/build.rs",
                ":/Cargo.toml",
                ":/Cargo.lock",
                ":/theory-checks/Cargo.toml",
                ":/kernels/Cargo.toml",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}-dirty")
            } else {
                c
            }
        }
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=THEORY_CHECKS_BUILD_COMMIT={commit}");
    // Rebuild when HEAD moves or the index changes (a commit, a checkout, a staged change).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
    }
    // ... and when the code changes without a commit (the `-dirty` flag must follow it).
    for path in ["build.rs", "src", "../src", "../Cargo.toml", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
