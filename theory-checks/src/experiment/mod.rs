//! Experiments as files (the figures of SXY22 App. C Figs. 1–3, IFCA §6.1 Fig. 3 and SR-FCA §5,
//! and our own sweeps): a TOML under `experiments/` names a synthetic setting,
//! algorithms ("series"), an optional parameter axis, variants (e.g. several σ), seeds per
//! profile and the figures to draw. The runner splits it into independent **cells** — one per
//! axis value × variant × data seed; a cell generates its data once and runs every series on
//! it — and writes each cell's result atomically to `OUT/cells/<id>.json`. A shard `i/n` runs
//! the cells whose index is `i − 1 (mod n)`; `resume` skips cells already on disk; [`merge()`]
//! assembles the figure data from whatever cells exist. A cell's file depends only on its
//! specification (no wall times inside), so one process, many shards, or a killed-and-resumed
//! run give byte-identical merged results.
//!
//! Two-phase series of one cell that differ only in Phase 2 parameters share one Phase 1 run
//! (the same anchors, samples and `θ₀` they would draw alone; a test checks that the shared
//! path equals [`fedmix::algorithms::two_phase::TwoPhase`] bit for bit).
//!
//! Files: [`spec`] (the TOML definition, profiles, cells and plans), [`cells`] (running and
//! storing cells, shards, resume), [`mod@merge`] (figure data from the cells present).

pub mod cells;
pub mod figures;
pub mod merge;
pub mod spec;

pub use cells::*;
pub use merge::*;
pub use spec::*;

#[cfg(test)]
mod tests {
    use super::*;
    use fedmix::engine::recorder::Recorder;
    use fedmix::synthetic;

    #[test]
    fn shards_partition_the_cells() {
        for n in 1..5 {
            let mut all: Vec<usize> = Vec::new();
            let plan_cells = 11;
            for i in 1..=n {
                all.extend((0..plan_cells).filter(|c| c % n == i - 1));
            }
            all.sort_unstable();
            assert_eq!(all, (0..plan_cells).collect::<Vec<_>>());
        }
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert!(parse_shard("x").is_err());
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    }

    #[test]
    fn shared_phase1_equals_the_two_phase_algorithm_bit_for_bit() {
        let text = r#"
name = "t"
title = "t"
paper = "t"
claim = "t"
setting = "sxy-balanced"
data = { d = 6, clients = 30, samples = 25 }
[profiles.quick]
seeds = 1
config = { rounds = 30 }
[[series]]
label = "s1"
algorithm = "two-phase"
config = { local_steps = 1 }
[[series]]
label = "prox"
algorithm = "two-phase"
config = { local_solver = "fedprox" }
[[series]]
label = "s5 eta"
algorithm = "two-phase"
config = { local_steps = 5, eta_gamma = 0.5 }
[[figures]]
name = "f"
kind = "trace"
metric = "distance"
"#;
        let e: Experiment = toml::from_str(text).unwrap();
        let plan = e.plan("quick").unwrap();
        let cell = &plan.cells[0];
        let got = run_cell(&plan, cell).unwrap();
        let data = synthetic::generate_named("sxy-balanced", 1, &cell.data).unwrap();
        for (series, cfg) in got.series.iter().zip(&cell.configs) {
            let fedmix::algorithms::AlgorithmParams::TwoPhase(params) = cfg else {
                panic!("a two-phase series");
            };
            let alg = fedmix::algorithms::two_phase::TwoPhase {
                params: *params,
                init: None,
            };
            let mut rec = Recorder::new(false);
            let out =
                fedmix::engine::contract::Algorithm::run(&alg, &data.train, 1, &mut rec).unwrap();
            let want: Vec<Option<f64>> = rec.rows.iter().map(|r| r.distance).collect();
            assert_eq!(series.error, None);
            assert_eq!(series.distance, want, "{}", series.label);
            assert_eq!(series.phase1_rounds, 10);
            let fin = fedmix::output::final_metrics(&data.train, None, &out);
            assert_eq!(series.final_distance, fin["distance"].as_f64());
        }
    }

    /// Sweep-only experiments record communication only (no per-round metrics, no re-run of
    /// the reported restart or official run); their final values equal those of the same
    /// cells recorded in full.
    #[test]
    fn sweep_cells_without_traces_give_the_same_final_values() {
        let text = |kind: &str| {
            format!(
                r#"
name = "t"
title = "t"
paper = "t"
claim = "t"
setting = "ifca-official"
data = {{ d = 12, clients = 16, samples = 20, r = 1.0, sigma = 0.1 }}
[axis]
parameter = "r"
target = "data"
label = "r"
values = [1.0]
[profiles.quick]
seeds = 1
config = {{ rounds = 25, ifca_official_inits = 3, ifca_official_iterations = 40, restarts = 3 }}
[[series]]
label = "official"
algorithm = "ifca-official"
[[series]]
label = "ifca"
algorithm = "ifca"
[[series]]
label = "two-phase"
algorithm = "two-phase"
config = {{ anchors = 6, anchor_min_samples = 4 }}
[[figures]]
name = "f"
kind = "{kind}"
metric = "distance"
"#
            )
        };
        let run = |kind: &str| {
            let e: Experiment = toml::from_str(&text(kind)).unwrap();
            assert_eq!(needs_traces(&e), kind == "trace");
            let plan = e.plan("quick").unwrap();
            run_cell(&plan, &plan.cells[0]).unwrap()
        };
        let (full, quiet) = (run("trace"), run("sweep"));
        for (a, b) in full.series.iter().zip(&quiet.series) {
            assert_eq!(a.error, b.error, "{}", a.label);
            assert!(a.error.is_none(), "{}: {:?}", a.label, a.error);
            assert_eq!(a.final_distance, b.final_distance, "{}", a.label);
            assert_eq!(a.final_misclustering, b.final_misclustering, "{}", a.label);
            assert_eq!(a.official_success, b.official_success, "{}", a.label);
            assert_eq!(a.floats, b.floats, "{}: communication", a.label);
            assert!(a.distance.iter().any(Option::is_some));
            // (Phase 1 rows carry the anchors' error either way: they cost nothing extra.)
            assert!(b.distance[b.phase1_rounds..].iter().all(Option::is_none));
        }
    }
}
