//! Regenerates the golden vectors in `tests/data/golden/`: one small federation, one set of
//! initial models, and for every algorithm and variant the exact per-round iterates and labels
//! of the reference. `tests/golden.rs` checks that the library still produces them.
//!
//! `cargo run --release --example golden` (rewrites the folder; review the diff before committing:
//! a change means the numbers of some algorithm changed).

use fedmix::algorithms::registry::build;

use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::recorder::Recorder;
use fedmix::io::{write_dataset, write_f64, write_i64, write_json, Dataset};
use fedmix::params::{keys_of, AlgorithmKind};
use fedmix::synthetic::generate_named;
use serde_json::json;
use std::path::Path;

/// `(case name, algorithm, overrides, starts from theta0.npy)`.
pub type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    bool,
);

/// Every golden case.
pub const CASES: &[Case] = &[
    (
        "phase2-fedavg-s1",
        "phase2",
        &[("eta", "0.05"), ("local_steps", "1")],
        true,
    ),
    (
        "phase2-fedavg-s5",
        "phase2",
        &[("eta", "0.05"), ("local_steps", "5")],
        true,
    ),
    (
        "phase2-fedprox",
        "phase2",
        &[("eta", "0.05"), ("local_solver", "fedprox")],
        true,
    ),
    (
        "two-phase-practical",
        "two-phase",
        &[
            ("eta", "0.05"),
            ("phase1_iterations", "4"),
            ("anchors", "6"),
            ("anchor_min_samples", "8"),
        ],
        false,
    ),
    ("oracle", "oracle", &[("eta", "0.05")], false),
    ("oracle-labels", "oracle-labels", &[("eta", "0.05")], false),
    (
        "ifca-gradient",
        "ifca",
        &[
            ("eta", "0.05"),
            ("ifca_option", "gradient"),
            ("restarts", "1"),
        ],
        true,
    ),
    (
        "ifca-model",
        "ifca",
        &[
            ("eta", "0.05"),
            ("ifca_option", "model"),
            ("local_steps", "5"),
            ("restarts", "1"),
        ],
        true,
    ),
    (
        "ifca-restarts-participation",
        "ifca",
        &[("eta", "0.05"), ("restarts", "3"), ("participation", "0.5")],
        false,
    ),
    ("fedavg", "fedavg", &[("eta", "0.05")], false),
    (
        "fedprox-global",
        "fedavg",
        &[("eta", "0.05"), ("local_solver", "fedprox")],
        false,
    ),
    ("local", "local", &[], false),
    ("one-shot", "one-shot", &[("eta", "0.05")], false),
    ("sr-fca", "sr-fca", &[], false),
    ("cfl", "cfl", &[("eta", "0.05")], false),
    (
        "fedsoft",
        "fedsoft",
        &[("eta", "0.05"), ("fedsoft_interval", "2")],
        true,
    ),
];

/// Rounds of every iterative case (set where the algorithm reads `rounds`: not `local`, and not
/// `sr-fca`, whose TrimmedMeanGD steps are `srfca_refine_rounds`).
pub const ROUNDS: &str = "8";

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let sets: Vec<(String, String)> = [
        ("d", "8"),
        ("clients", "30"),
        ("samples", "10"),
        ("sigma", "0.3"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let data = generate_named("sxy-balanced", 11, &sets).expect("valid setting");
    let ds = Dataset::from(data);
    write_dataset(&root.join("dataset"), &ds).expect("writable");
    let fed = &ds.train;
    let theta0 = fedmix::engine::init::random_init(fed.d(), 3, 1.0, 99, 0);
    write_f64(&root.join("theta0.npy"), &[3, fed.d()], theta0.as_slice()).expect("writable");
    let mut index = Vec::new();
    for &(name, algorithm, overrides, uses_init) in CASES {
        let mut sets: Vec<(String, String)> = overrides
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let kind = AlgorithmKind::parse(algorithm).expect("known algorithm");
        if keys_of(kind).contains(&"rounds") {
            sets.push(("rounds".into(), ROUNDS.into()));
        }
        let params = AlgorithmParams::from_sources(kind, None, &sets).expect("valid configuration");
        let alg = build(&params, uses_init.then(|| theta0.clone()), Some(0.3));
        let mut rec = Recorder::new(true);
        let out = alg.run(fed, 5, &mut rec).expect("the golden case runs");
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("writable");
        let (d, k) = (fed.d(), out.theta_hat.ncols());
        write_f64(
            &dir.join("theta_hat.npy"),
            &[k, d],
            out.theta_hat.as_slice(),
        )
        .expect("writable");
        let labels: Vec<i64> = out.labels.iter().map(|&l| l as i64).collect();
        write_i64(&dir.join("labels.npy"), &[labels.len()], &labels).expect("writable");
        let flat: Vec<f64> = rec
            .iterates
            .iter()
            .flat_map(|m| m.as_slice().to_vec())
            .collect();
        let kk = rec.iterates.first().map_or(k, |m| m.ncols());
        write_f64(
            &dir.join("iterates.npy"),
            &[rec.iterates.len(), kk, d],
            &flat,
        )
        .expect("writable");
        let lab: Vec<i64> = rec
            .labels
            .iter()
            .flat_map(|l| l.iter().map(|&x| x as i64))
            .collect();
        write_i64(
            &dir.join("iterate_labels.npy"),
            &[rec.labels.len(), fed.num_clients()],
            &lab,
        )
        .expect("writable");
        index.push(json!({"name": name, "algorithm": algorithm, "sets": sets, "init": uses_init, "seed": 5, "rounds_recorded": rec.iterates.len()}));
        println!("{name}: {} rounds, k̂ = {k}", rec.iterates.len());
    }
    write_json(&root.join("cases.json"), &index).expect("writable");
}
