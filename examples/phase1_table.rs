//! Reproduces the summary table of the SXY22 two-phase algorithm: for each SXY22 setting
//! (App. C.1–C.3) and seeds 1..=10, how often Phase 1 finds k clusters, the Phase 1 error
//! `d(θ, θ*)/Δ`, and the ratio of the final `d(θ̂, θ*)` to the oracle's (Phase 2 from `θ*`,
//! same data, η and s).
//!
//! `cargo run --release --example phase1_table -- [key=value ...]` — the arguments override the
//! run configuration (e.g. `anchors=10 phase1_iterations=5 pairing=first-two`).

use fedmix::algorithms::two_phase::{Phase2Only, TwoPhase};

use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::contract::Algorithm;
use fedmix::engine::recorder::Recorder;
use fedmix::error::FedmixError;
use fedmix::metrics::{bottleneck_distance, separation};
use fedmix::params::{AlgorithmKind, ParamGuard, Phase2OnlyParams, TwoPhaseParams, Valid};
use fedmix::prec::{max_nan, min_nan};
use fedmix::synthetic::generate_named;

struct Row {
    found: bool,
    phase1_ratio: f64,
    final_ratio: f64,
    note: String,
}

fn one(setting: &str, seed: u64, cfg: &Valid<TwoPhaseParams>) -> Row {
    let data = generate_named(setting, seed, &[]).expect("setting generates");
    let fed = &data.train;
    let ts = fed.theta_star().expect("synthetic").clone();
    let delta = separation(&ts);
    let oracle = Phase2Only {
        // The oracle shares the two-phase algorithm's k, Phase 2 and init scale.
        params: Phase2OnlyParams {
            k: cfg.k,
            phase2: cfg.phase2,
            init_scale: cfg.init_scale,
        }
        .check()
        .expect("in range"),
        init: None,
        oracle: true,
    };
    let oracle_out = oracle
        .run(fed, seed, &mut Recorder::quiet())
        .expect("oracle runs");
    let oracle_err = bottleneck_distance(&oracle_out.theta_hat, &ts)
        .expect("k models")
        .value;
    let tp = TwoPhase {
        params: *cfg,
        init: None,
    };
    match tp.run_detailed(fed, seed, &mut Recorder::quiet()) {
        Ok((out, p1)) => {
            let p1_err = bottleneck_distance(&p1.theta_hat, &ts)
                .expect("k models")
                .value;
            let fin = bottleneck_distance(&out.theta_hat, &ts)
                .expect("k models")
                .value;
            Row {
                found: true,
                phase1_ratio: p1_err / delta,
                final_ratio: fin / oracle_err,
                note: format!("components {}", p1.components_found),
            }
        }
        Err(FedmixError::TooFewClusters { found, .. }) => Row {
            found: false,
            phase1_ratio: f64::NAN,
            final_ratio: f64::NAN,
            note: format!("found {found}"),
        },
        Err(e) => Row {
            found: false,
            phase1_ratio: f64::NAN,
            final_ratio: f64::NAN,
            note: e.to_string(),
        },
    }
}

fn main() {
    let sets: Vec<(String, String)> = std::env::args()
        .skip(1)
        .filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let AlgorithmParams::TwoPhase(cfg) =
        AlgorithmParams::from_sources(AlgorithmKind::TwoPhase, None, &sets)
            .expect("valid configuration")
    else {
        unreachable!("two-phase parameters")
    };
    println!("config overrides: {sets:?}");
    println!("| setting | found k | Phase 1 d/Δ (min–max) | final/oracle (min–max) | notes |");
    println!("|---|---|---|---|---|");
    let only = std::env::var("SETTINGS")
        .unwrap_or_else(|_| "sxy-balanced,sxy-unbalanced-data,sxy-unbalanced-both".into());
    for setting in only.split(',') {
        let seeds: Vec<u64> = (1..=10).collect();
        let rows: Vec<Row> = std::thread::scope(|s| {
            let handles: Vec<_> = seeds
                .chunks(5)
                .map(|chunk| {
                    let cfg = &cfg;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|&seed| one(setting, seed, cfg))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("worker"))
                .collect()
        });
        let found: Vec<&Row> = rows.iter().filter(|r| r.found).collect();
        let range = |f: &dyn Fn(&Row) -> f64| {
            let v: Vec<f64> = found.iter().map(|r| f(r)).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, min_nan);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, max_nan);
            format!("{lo:.3}–{hi:.3}")
        };
        let notes: Vec<String> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.found)
            .map(|(i, r)| format!("seed {}: {}", i + 1, r.note))
            .collect();
        println!(
            "| {setting} | {}/10 | {} | {} | {} |",
            found.len(),
            range(&|r| r.phase1_ratio),
            range(&|r| r.final_ratio),
            notes.join("; ")
        );
    }
}
