//! Performance report: `cargo run --release --example perf_report` writes
//! `docs/performance.md`. Every comparison is a ratio of two timings taken in the same run
//! (medians of repeats): the machines are shared and noisy. Peak memory comes from child
//! processes (this binary re-run with `--child`), read from `VmHWM` in `/proc/self/status`.
//! `--quick` shrinks the scaling grid (M ≤ 10⁴). `--round-only` prints the IFCA round against
//! its memory floor and two Phase 2 rounds (s = 1, 5) and writes nothing: a quick before/after
//! probe for kernel changes (build the old commit in a worktree and alternate the two binaries).

use fedmix::algorithms::fedmd::{subspace_bases, MomentOperator};

use fedmix::algorithms::fedx_clustering::{phase2_replicate, phase2_round_fused};
use fedmix::algorithms::ifca::IfcaConfig;
use fedmix::algorithms::ifca::{
    ifca_round, official_init, official_step, official_step_batch, IfcaParams,
};
use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::client_pass::batched_sums;
use fedmix::engine::init::random_init;
use fedmix::federation::Federation;
use fedmix::linalg::top_k_symmetric;
use fedmix::params::IfcaOption;
use fedmix::params::Pairing;
use fedmix::params::{ParamGuard, Phase2Params};
use fedmix::params::{Phase1Config, Phase2Config, StepRule, TwoPhaseParams};
use fedmix::synthetic::generate_named;
use nalgebra::DMatrix;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::time::Instant;

fn fed(setting: &str, sets: &[(&str, String)]) -> Federation {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(a, b)| (a.to_string(), b.clone()))
        .collect();
    generate_named(setting, 1, &sets)
        .expect("setting generates")
        .train
}

/// Median wall time of `reps` calls of `f`, seconds.
fn median_time(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// STREAM-like floor: read every feature and response twice (what a round must read), on the
/// current rayon pool, with 8 independent accumulators per chunk so that memory, not the add
/// latency, is the limit.
fn stream_twice(f: &Federation) -> f64 {
    let sum = |s: &[f64]| -> f64 {
        s.par_chunks(1 << 15)
            .map(|c| {
                let mut acc = [0.0f64; 8];
                let mut it = c.chunks_exact(8);
                for ch in &mut it {
                    for (a, v) in acc.iter_mut().zip(ch) {
                        *a += v;
                    }
                }
                acc.iter().sum::<f64>() + it.remainder().iter().sum::<f64>()
            })
            .sum()
    };
    (0..2)
        .map(|_| sum(f.features().as_slice()) + sum(f.responses().as_slice()))
        .sum()
}

/// Medians of `reps` interleaved timings of `a` and `b` (a, b, a, b, …): both see the same
/// machine load.
fn interleaved(reps: usize, a: impl FnMut(), b: impl FnMut()) -> (f64, f64) {
    let (ta, tb) = interleaved_all(reps, a, b);
    (ta[reps / 2], tb[reps / 2])
}

/// Sorted timings of `reps` interleaved calls of `a` and `b`.
fn interleaved_all(reps: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (Vec<f64>, Vec<f64>) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let s = Instant::now();
        a();
        ta.push(s.elapsed().as_secs_f64());
        let s = Instant::now();
        b();
        tb.push(s.elapsed().as_secs_f64());
    }
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    (ta, tb)
}

/// Single-core GEMM rate (GFLOP/s) of a cache-resident 512³ product through the same
/// matrixmultiply path as the kernels.
fn gemm_gflops() -> f64 {
    let n = 512;
    let a = DMatrix::from_fn(n, n, |r, c| ((r * 7 + c * 3) % 11) as f64 * 0.1);
    let b = a.transpose();
    let mut c = DMatrix::zeros(n, n);
    let t = in_pool(1, || {
        median_time(5, || {
            c.gemm(1.0, &a, &b, 0.0);
            std::hint::black_box(&c);
        })
    });
    2.0 * (n * n * n) as f64 / t / 1e9
}

fn ifca_params(f: &Federation, k: usize) -> IfcaParams {
    let cfg = IfcaConfig {
        option: IfcaOption::Gradient,
        phase2: Phase2Config {
            step: StepRule::Fixed(0.01),
            ..Phase2Config::default()
        },
        k: Some(k),
        ..IfcaConfig::default()
    };
    IfcaParams::resolve(&cfg.check().expect("valid"), f).expect("valid")
}

/// (round seconds, floor seconds) for IFCA option I on `f`: the best of `reps` interleaved
/// timings each (best-of is STREAM's convention: the floor is what the hardware can do, and
/// interleaving gives the round the same chances).
fn round_and_floor(f: &Federation, k: usize, reps: usize) -> (f64, f64) {
    let p = ifca_params(f, k);
    let theta = random_init(f.d(), k, 1.0, 1, 0);
    let all: Vec<usize> = (0..f.num_clients()).collect();
    let (round, floor) = interleaved_all(
        reps,
        || {
            std::hint::black_box(ifca_round(f, &theta, &all, &p, None));
        },
        || {
            std::hint::black_box(stream_twice(f));
        },
    );
    (round[0], floor[0])
}

fn vm_hwm_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Child: generate M clients of n = 10 at d, time IFCA rounds (k = 3), print
/// `round_s floor_s peak_bytes raw_bytes baseline_bytes` (baseline: the high-water mark before
/// any data exists — the binary, its libraries and thread stacks).
fn child(m: usize, d: usize) {
    let baseline = vm_hwm_bytes();
    let f = fed(
        "sxy-balanced",
        &[
            ("clients", m.to_string()),
            ("samples", "10".into()),
            ("d", d.to_string()),
        ],
    );
    let (round, floor) = round_and_floor(&f, 3, 7);
    let raw = (f.total_samples() * (d + 1) * 8) as u64;
    println!("{round} {floor} {} {raw} {baseline}", vm_hwm_bytes());
}

fn run_child(m: usize, d: usize) -> Option<(f64, f64, u64, u64, u64)> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .args(["--child", &m.to_string(), &d.to_string()])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    let v: Vec<&str> = s.split_whitespace().collect();
    Some((
        v.first()?.parse().ok()?,
        v.get(1)?.parse().ok()?,
        v.get(2)?.parse().ok()?,
        v.get(3)?.parse().ok()?,
        v.get(4)?.parse().ok()?,
    ))
}

/// Least-squares slope of log y on log x.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = (
        xs.iter().map(|x| x.ln()).collect(),
        ys.iter().map(|y| y.ln()).collect(),
    );
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let sxy: f64 = lx.iter().zip(&ly).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = lx.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
        .install(f)
}

/// The scaling study's data: `sxy-balanced` with `m` clients of n_i = 10 at d = 20, plus
/// `large` clients of 50 samples (Phase 1's anchor-capable clients), data seed `seed`.
fn scaling_data(m: usize, large: usize, seed: u64) -> Federation {
    generate_named(
        "sxy-balanced",
        seed,
        &[
            ("clients".to_string(), m.to_string()),
            ("samples".to_string(), "10".to_string()),
            ("d".to_string(), "20".to_string()),
            ("large_clients".to_string(), large.to_string()),
            ("large_samples".to_string(), "50".to_string()),
        ],
    )
    .expect("setting generates")
    .train
}

/// The two-phase algorithm (20 Phase 2 rounds; `anchors` anchors, `None` = the default
/// `min(⌈k ln N⌉, eligible)`, of ≥ `anchor_min_samples` samples, `None` = the default 5k) as
/// `fedmix run` builds it; `d(θ̂, θ*)` or the typed error.
fn scaling_run(
    f: &Federation,
    anchors: Option<usize>,
    anchor_min_samples: Option<usize>,
    seed: u64,
) -> String {
    let params = AlgorithmParams::TwoPhase(
        TwoPhaseParams {
            phase1: Phase1Config {
                anchors,
                anchor_min_samples,
                ..Phase1Config::default()
            },
            phase2: Phase2Config {
                rounds: 20,
                ..Phase2Config::default()
            },
            ..TwoPhaseParams::default()
        }
        .check()
        .expect("in range"),
    );
    let alg = fedmix::algorithms::registry::build(&params, None, None);
    match alg.run(f, seed, &mut fedmix::engine::recorder::Recorder::quiet()) {
        Ok(o) => match f.theta_star() {
            Some(ts) => fedmix::metrics::bottleneck_distance(&o.theta_hat, ts)
                .map_or_else(|e| format!("error:{e}"), |a| format!("{:.3e}", a.value)),
            None => "-".into(),
        },
        Err(e) => format!("error:{}", e.to_string().replace(' ', "_")),
    }
}

/// Anchors of the scaling study: SXY22 App. C's ⌈3k ln k⌉ = 10 for k = 3, fixed, so that the
/// work per client is the same at every M. (The default `⌈k ln N⌉` grows with N — 10 at
/// M = 10³, where only M/100 = 10 clients are eligible, to 49 at 10⁶ — and Phase 1's time is
/// anchors × a pass over the data, so with it the wall time grows like N log N by design.)
const SCALING_ANCHORS: usize = 10;

/// Two-phase child: generate the scaling data at M clients (M/100 of them with 50 samples, the
/// anchor-capable clients; seed 2) in this process, run the two-phase algorithm with
/// [`SCALING_ANCHORS`] anchors of the default size (≥ 5k = 15 samples) as `fedmix run` does (`registry::build`, a quiet
/// recorder), and print `wall_s generate_s run_s peak_bytes raw_bytes baseline_bytes
/// distance_or_error`.
fn child_two_phase(m: usize) {
    let baseline = vm_hwm_bytes();
    let start = Instant::now();
    let f = scaling_data(m, m / 100, 2);
    let generated = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let outcome = scaling_run(&f, Some(SCALING_ANCHORS), None, 2);
    let run = t.elapsed().as_secs_f64();
    let raw = (f.total_samples() * (f.d() + 1) * 8) as u64;
    println!(
        "{} {generated} {run} {} {raw} {baseline} {outcome}",
        start.elapsed().as_secs_f64(),
        vm_hwm_bytes()
    );
}

/// Phase 1's outcome at 10⁴ clients of n_i = 10 over seeds 1..=10 with anchors of 10 samples
/// (every client eligible) against anchors among 100 clients of 50 samples: a markdown table.
fn anchor_size_study() -> String {
    let mut md = String::from(
        "\n## Why the anchors are clients of 50 samples\n\n\
         SXY22 defines an anchor client by n_i = Ω̃(k) samples (§3) and its App. C draws anchors \
         among clients of 50 samples. With only clients of n_i = 10 at d = 20, k = 3, the anchors' \
         k × k moments rest on 10 samples each and Phase 1 is unreliable — it is a statistical \
         limit of the regime, not of the scale. Measured at M = 10⁴ (data and run seed s, 20 \
         Phase 2 rounds), d(θ̂, θ*) or the typed error:\n\n\
         | seed | anchors of n_i = 10 (anchor_min_samples = 10) | anchors among 100 clients of 50 samples (default ≥ 15) |\n|---|---|---|\n",
    );
    let (mut ok_small, mut ok_large) = (0, 0);
    let good = |o: &str| o.parse::<f64>().is_ok_and(|v| v < 0.1);
    for seed in 1..=10u64 {
        let small = scaling_run(&scaling_data(10_000, 0, seed), None, Some(10), seed);
        let large = scaling_run(&scaling_data(10_000, 100, seed), None, None, seed);
        ok_small += usize::from(good(&small));
        ok_large += usize::from(good(&large));
        let _ = writeln!(
            md,
            "| {seed} | {} | {} |",
            small.replace('_', " "),
            large.replace('_', " ")
        );
    }
    let _ = writeln!(
        md,
        "\nRuns ending within 0.1 of θ* (the oracle's error here is ≈ 0.02): {ok_small}/10 with \
         anchors of 10 samples, {ok_large}/10 with anchors of 50."
    );
    md
}

/// One row of the two-phase scaling table, from a child process.
struct ScalingRow {
    m: usize,
    wall: f64,
    generate: f64,
    run: f64,
    peak: u64,
    raw: u64,
    baseline: u64,
    outcome: String,
}

fn run_child_two_phase(m: usize) -> Option<ScalingRow> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .args(["--child-two-phase", &m.to_string()])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    let v: Vec<&str> = s.split_whitespace().collect();
    Some(ScalingRow {
        m,
        wall: v.first()?.parse().ok()?,
        generate: v.get(1)?.parse().ok()?,
        run: v.get(2)?.parse().ok()?,
        peak: v.get(3)?.parse().ok()?,
        raw: v.get(4)?.parse().ok()?,
        baseline: v.get(5)?.parse().ok()?,
        outcome: v.get(6)?.to_string(),
    })
}

/// A plotted series: label, colour, points.
type PlotSeries<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// A log–log line plot as SVG: `series` = (label, colour, points); decade ticks labelled on
/// both axes; the legend in its own column right of the plot area.
fn loglog_svg(title: &str, x_label: &str, y_label: &str, series: &[PlotSeries<'_>]) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 420.0, 80.0, 230.0, 40.0, 60.0);
    let pts = series.iter().flat_map(|s| s.2.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts {
        x0 = x0.min(x.log10());
        x1 = x1.max(x.log10());
        y0 = y0.min(y.log10());
        y1 = y1.max(y.log10());
    }
    let (x0, x1, y0, y1) = (x0.floor(), x1.ceil(), y0.floor(), y1.ceil());
    let px = |x: f64| left + (x.log10() - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y.log10() - y0) / (y1 - y0) * (h - top - bottom);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="13"><rect width="{w}" height="{h}" fill="white"/><text x="{}" y="24" text-anchor="middle" font-size="15">{title}</text>"#,
        (w - right + left) / 2.0
    );
    let _ = write!(
        svg,
        r#"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        w - left - right,
        h - top - bottom
    );
    for e in (x0 as i32)..=(x1 as i32) {
        let x = px(10f64.powi(e));
        let _ = write!(
            svg,
            r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="black"/><text x="{x}" y="{}" text-anchor="middle">1e{e}</text>"#,
            h - bottom,
            h - bottom + 6.0,
            h - bottom + 22.0
        );
    }
    for e in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(e));
        let _ = write!(
            svg,
            r#"<line x1="{}" y1="{y}" x2="{left}" y2="{y}" stroke="black"/><text x="{}" y="{}" text-anchor="end">1e{e}</text>"#,
            left - 6.0,
            left - 9.0,
            y + 4.0
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{x_label}</text><text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{y_label}</text>"#,
        (w - right + left) / 2.0,
        h - 14.0,
        (h - bottom + top) / 2.0,
        (h - bottom + top) / 2.0
    );
    for (i, (label, colour, points)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        // Every other series dashed, so that coinciding lines stay visible.
        let dash = if i % 2 == 1 {
            r#" stroke-dasharray="7,5""#
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for &(x, y) in points {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = top + 20.0 + 22.0 * i as f64;
        let _ = write!(
            svg,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{label}</text>"#,
            w - right + 15.0,
            w - right + 40.0,
            w - right + 46.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// `--two-phase-scaling [M…]`: the two-phase algorithm at 10³…10⁶ clients (one child process
/// each), written to `docs/performance-scaling.md` and `docs/performance-scaling.svg`.
fn two_phase_scaling(sizes: &[usize]) {
    let rows: Vec<ScalingRow> = sizes
        .iter()
        .map(|&m| run_child_two_phase(m).unwrap_or_else(|| panic!("the child for M = {m} failed")))
        .collect();
    let mut md = String::from(
        "# Two-phase scaling in the number of clients\n\n\
         `cargo run --release --example perf_report -- --two-phase-scaling` (one child process per \
         size): `sxy-balanced` with n_i = 10, d = 20, k = 3, plus M/100 clients of 50 samples \
         (`large_clients`, the anchor-capable clients: see the last section; data seed and run \
         seed 2), the two-phase algorithm with Phase 1's default anchor size (≥ 5k = 15 samples), \
         SXY22 App. C's ⌈3k ln k⌉ = 10 anchors at every M (the default ⌈k ln N⌉ grows with N, \
         and Phase 1 costs a pass over the data per anchor) and 20 Phase 2 rounds, as `fedmix \
         run` runs it. Wall = the child's whole life (generation included); \
         peak = its `VmHWM`; data = N·(d + 1)·8 bytes; baseline = the high-water mark before \
         any data exists.\n\n\
         | clients M | wall s | generate s | run s | peak MiB | data MiB | peak / data | (peak − baseline) / data | outcome d(θ̂, θ*) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &rows {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let _ = writeln!(
            md,
            "| {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {} |",
            r.m,
            r.wall,
            r.generate,
            r.run,
            mib(r.peak),
            mib(r.raw),
            r.peak as f64 / r.raw as f64,
            (r.peak.saturating_sub(r.baseline)) as f64 / r.raw as f64,
            r.outcome.replace('_', " ")
        );
    }
    let ms: Vec<f64> = rows.iter().map(|r| r.m as f64).collect();
    let walls: Vec<f64> = rows.iter().map(|r| r.wall).collect();
    let runs: Vec<f64> = rows.iter().map(|r| r.run).collect();
    let _ = writeln!(
        md,
        "\nLog–log slope of wall time on M: {:.3} (whole child), {:.3} (the run alone); target 1 ± 0.1. \
         A run whose Phase 1 ends in a typed error (fewer clusters among the anchors than k) stops \
         before Phase 2; its time is Phase 1's, which dominates the others too (Phase 2's 20 rounds \
         are 20 passes over the data).",
        slope(&ms, &walls),
        slope(&ms, &runs)
    );
    let at = |v: &[f64]| {
        rows.iter()
            .zip(v)
            .map(|(r, &t)| (r.m as f64, t))
            .collect::<Vec<_>>()
    };
    let svg = loglog_svg(
        "Two-phase algorithm: time and memory against clients",
        "clients M",
        "seconds / MiB",
        &[
            ("wall s (child)", "#1f77b4", at(&walls)),
            ("run s", "#2ca02c", at(&runs)),
            (
                "peak MiB",
                "#d62728",
                rows.iter()
                    .map(|r| (r.m as f64, r.peak as f64 / (1u64 << 20) as f64))
                    .collect(),
            ),
            (
                "data MiB",
                "#7f7f7f",
                rows.iter()
                    .map(|r| (r.m as f64, r.raw as f64 / (1u64 << 20) as f64))
                    .collect(),
            ),
        ],
    );
    let _ = writeln!(md, "\n![scaling](performance-scaling.svg)");
    md.push_str(&anchor_size_study());
    std::fs::write("docs/performance-scaling.md", md).expect("write docs/performance-scaling.md");
    std::fs::write("docs/performance-scaling.svg", svg)
        .expect("write docs/performance-scaling.svg");
    println!("wrote docs/performance-scaling.md and .svg");
}

/// One Phase 1 iteration's subspace step for `h` anchors at independent random starts on
/// `ifca-official` data (`d = 1000`, `clients` clients of 100 samples, `k` clusters): the
/// anchors one at a time (each its own block Krylov iteration over the implicit `Y`, the
/// anchors spread over the threads: what Phase 1 did before) against advanced together
/// (`subspace_bases`: every pass over the data serves all anchors' blocks); bit-identical
/// (asserted). Returns (one at a time, together, floor) in seconds per anchor-iteration and the
/// mean search-space dimension `m`; the floor is the `4·N·d·m` flops of the implicit products
/// at the measured GEMM rate on every thread.
fn phase1_step(clients: usize, k: usize, h: u64, reps: usize) -> (f64, f64, f64, f64, f64) {
    let f = fed(
        "ifca-official",
        &[
            ("r", "0.5".into()),
            ("sigma", "0.1".into()),
            ("clients", clients.to_string()),
            ("k", k.to_string()),
        ],
    );
    let (d, n) = (f.d(), f.responses().len());
    let set: Vec<usize> = (0..f.num_clients()).collect();
    let thetas: Vec<nalgebra::DVector<f64>> = (0..h)
        .map(|a| random_init(d, 1, 1.0, 1, a).column(0).clone_owned())
        .collect();
    let block = (k + 8).max(2 * k);
    let tol = fedmix::prec::KRYLOV_RESIDUAL_RTOL;
    let one_at_a_time = || -> Vec<fedmix::linalg::SymmetricTopK> {
        thetas
            .par_iter()
            .map(|th| {
                let op = MomentOperator::new(&f, &set, th);
                top_k_symmetric(|v| op.apply(v), d, k, block, d / 2, tol).expect("converges")
            })
            .collect()
    };
    let together = || subspace_bases(&f, &set, &thetas, Pairing::AllPairs, k).expect("converges");
    let (mut t_one, mut t_tog) = (Vec::new(), Vec::new());
    let mut dims = 0.0;
    // The GEMM rate measured before every repeat, its best kept: the machine is shared, and
    // the best rate is what the cores can do (the lowest, hence strictest, floor).
    let mut gflops: f64 = 0.0;
    for _ in 0..reps {
        gflops = gflops.max(gemm_gflops());
        let s = Instant::now();
        let one = one_at_a_time();
        t_one.push(s.elapsed().as_secs_f64());
        let s = Instant::now();
        let tog = together();
        t_tog.push(s.elapsed().as_secs_f64());
        for (a, b) in one.iter().zip(&tog) {
            assert!(
                a.vectors
                    .iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "bit-identical"
            );
        }
        dims = one.iter().map(|r| r.basis_dim as f64).sum::<f64>() / h as f64;
    }
    let med = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2] / h as f64
    };
    let threads = rayon::current_num_threads() as f64;
    let floor = 4.0 * (n * d) as f64 * dims / (gflops * 1e9 * threads);
    (med(t_one), med(t_tog), floor, dims, gflops)
}

/// Section 3: Phase 1 at `d = 1000` (see [`phase1_step`]).
fn phase1_section(md: &mut String, quick: bool) {
    let _ = writeln!(
        md,
        "## Phase 1 at d = 1000 (ifca-official, R = 0.5, σ = 0.1; {} threads)\n\n\
         One iteration's subspace step (SXY22 Algorithm 1 step 9, practical variant: top-k of the \
         implicit `Y` by block Krylov to a 1e-13 residual) for H anchors at independent random \
         starts. *One at a time*: each anchor's own Krylov iteration, the anchors spread over the \
         threads (Phase 1 before); *together*: the anchors' iterations advanced in step, each \
         pass over the data applying every anchor's block as one stacked product \
         (`fedmd::subspace_bases`); the bases are identical bit for bit (asserted here and in \
         the unit tests). Times per anchor-iteration, medians of {} interleaved repeats. The \
         floor is the products' `4·N·d·m` flops (`m`: the mean final search-space dimension, \
         `b` vectors per block application) at the best rate of a cache-resident 512³ GEMM on one \
         core measured before each repeat, times the threads.\n\n\
         | setting | H anchors | m | one at a time | together | speed-up | GEMM rate | floor | together / floor |\n\
         |---|---|---|---|---|---|---|---|---|",
        rayon::current_num_threads(),
        if quick { 1 } else { 3 }
    );
    let reps = if quick { 1 } else { 3 };
    for (name, clients, k, h) in [
        ("Fig. 3(a): k = 2, M = 100, N = 10⁴", 100, 2, 5),
        ("Fig. 3(b): k = 4, M = 400, N = 4·10⁴", 400, 4, 17),
    ] {
        let (one, tog, floor, m, gflops) = phase1_step(clients, k, h, reps);
        let _ = writeln!(
            md,
            "| {name} | {h} | {m:.0} | {one:.3} s | {tog:.3} s | **{:.2}×** | {gflops:.1} GFLOP/s | {floor:.3} s | **{:.2}** |",
            one / tog,
            tog / floor
        );
    }
    md.push('\n');
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child-two-phase") {
        child_two_phase(args[2].parse().expect("M"));
        return;
    }
    if args.get(1).map(String::as_str) == Some("--two-phase-scaling") {
        let sizes: Vec<usize> = if args.len() > 2 {
            args[2..].iter().map(|a| a.parse().expect("M")).collect()
        } else {
            vec![1_000, 10_000, 100_000, 1_000_000]
        };
        two_phase_scaling(&sizes);
        return;
    }
    if args.get(1).map(String::as_str) == Some("--child") {
        child(args[2].parse().expect("M"), args[3].parse().expect("d"));
        return;
    }
    if args.get(1).map(String::as_str) == Some("--phase1-only") {
        // Section 3 alone, printed (for before/after comparisons of Phase 1).
        let mut md = String::new();
        phase1_section(&mut md, false);
        println!("{md}");
        return;
    }
    if args.get(1).map(String::as_str) == Some("--round-only") {
        // Section 1 alone (for before/after comparisons of the round kernel).
        let f = fed("ifca-official", &[]);
        let (round, floor) = round_and_floor(&f, 2, 15);
        println!(
            "round {:.2} ms, floor {:.2} ms, ratio {:.2}",
            round * 1e3,
            floor * 1e3,
            round / floor
        );
        let sxy = fed("sxy-balanced", &[]);
        let base = Phase2Config::default().resolve(&sxy);
        let theta = random_init(sxy.d(), 3, 1.0, 1, 0);
        for s in [1usize, 5] {
            let p = Phase2Params {
                local_steps: s,
                ..base
            };
            let t = median_time(9, || {
                std::hint::black_box(phase2_round_fused(&sxy, &theta, &p, None, None));
            });
            println!("phase 2 round, sxy-balanced, s = {s}: {:.2} ms", t * 1e3);
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let mut md = String::from(
        "# Performance report\n\nGenerated by `cargo run --release --example perf_report`. \
         Timings are medians of repeats taken in one run on a shared 2-core machine; \
         compare the ratios, not the absolute times.\n\n",
    );

    // 1. Memory floor vs IFCA round, k = 2, m = n = 100, d = 1000.
    let f = fed("ifca-official", &[]);
    let (round, floor) = round_and_floor(&f, 2, 15);
    let _ = writeln!(md, "## Memory floor (IFCA round, k = 2, m = n = 100, d = 1000)\n\n| quantity | value |\n|---|---|");
    let _ = writeln!(
        md,
        "| stream-read of the data twice | {:.2} ms |",
        floor * 1e3
    );
    let _ = writeln!(
        md,
        "| IFCA round (option I, fused, default threads) | {:.2} ms |",
        round * 1e3
    );
    let _ = writeln!(
        md,
        "| **ratio round / floor** (target ≤ 1.5) | **{:.2}** |\n",
        round / floor
    );
    eprintln!("floor done: {:.2}", round / floor);

    // 2. 1 vs 2 threads.
    let p = ifca_params(&f, 2);
    let theta = random_init(f.d(), 2, 1.0, 1, 0);
    let all: Vec<usize> = (0..f.num_clients()).collect();
    let t1 = in_pool(1, || {
        median_time(7, || {
            std::hint::black_box(ifca_round(&f, &theta, &all, &p, None));
        })
    });
    let t2 = in_pool(2, || {
        median_time(7, || {
            std::hint::black_box(ifca_round(&f, &theta, &all, &p, None));
        })
    });
    let _ = writeln!(md, "## Threads (same IFCA round)\n\n| 1 thread | 2 threads | speed-up |\n|---|---|---|\n| {:.2} ms | {:.2} ms | {:.2}× |\n", t1 * 1e3, t2 * 1e3, t1 / t2);
    eprintln!("threads done");

    // 3. Phase 1 at d = 1000: the anchors one at a time vs advanced together.
    phase1_section(&mut md, quick);
    eprintln!("phase1 done");

    // 4. Scaling in M (n = 10, d = 100, k = 3) and d (M = 10⁴).
    let ms: Vec<usize> = if quick {
        vec![1_000, 10_000]
    } else {
        vec![1_000, 10_000, 100_000]
    };
    let _ = writeln!(md, "## Scaling (IFCA round, option I, k = 3, n_i = 10; child processes)\n\n| M | d | N·d | round | round / floor | peak memory / raw data | (peak − process baseline) / raw data |\n|---|---|---|---|---|---|---|");
    let mut nd = Vec::new();
    let mut times = Vec::new();
    let mut grid: Vec<(usize, usize)> = ms.iter().map(|&m| (m, 100)).collect();
    grid.extend([(10_000, 10), (10_000, 1000)]);
    for (m, d) in grid {
        if let Some((round, floor, peak, raw, base)) = run_child(m, d) {
            let _ = writeln!(
                md,
                "| {m} | {d} | {:.1e} | {:.2} ms | {:.2} | {:.2} | {:.2} |",
                (m * 10 * d) as f64,
                round * 1e3,
                round / floor,
                peak as f64 / raw as f64,
                peak.saturating_sub(base) as f64 / raw as f64
            );
            nd.push((m * 10 * d) as f64);
            times.push(round);
        }
        eprintln!("scaling {m} {d} done");
    }
    let _ = writeln!(
        md,
        "\nFitted slope of log(round time) on log(N·d): **{:.2}** (target 1 ± 0.1).\n",
        slope(&nd, &times)
    );

    // 5. Batched vs sequential replicates (same data, same results bit for bit).
    let official = fed("ifca-official", &[]);
    let starts: Vec<DMatrix<f64>> = (0..30)
        .map(|i| official_init(official.d(), 2, 1, i))
        .collect();
    let lrs = [1.0, 0.1, 0.01];
    let gflops = gemm_gflops();
    let _ = writeln!(
        md,
        "## Batched replicates (ifca-official iteration: k = 2, m = n = 100, d = 1000; 2 threads)\n\n\
         One iteration of B official runs (init × lr, option I gradient step): sequential = B \
         passes of the single-run kernel (what `replicate_batch = 1` does), batched = one pass \
         serving all B (`official_step_batch`); results are identical bit for bit \
         (`tests/replicates.rs`). Timings interleaved, medians of 7. The compute floor is the \
         iteration's `6·n·d` flops per run and client (the k = 2 predictions and `φᵀr`) at the \
         measured rate of a cache-resident 512³ matrixmultiply GEMM on each of the 2 cores \
         ({gflops:.1} GFLOP/s per core).\n\n\
         | replicates B | sequential | batched | speed-up | batched / compute floor |\n|---|---|---|---|---|"
    );
    let mut per_iter_30 = 0.0;
    for b in [1usize, 5, 10, 30] {
        let runs: Vec<(&DMatrix<f64>, f64)> = (0..b).map(|i| (&starts[i], lrs[i % 3])).collect();
        let (seq, bat) = in_pool(2, || {
            interleaved(
                7,
                || {
                    for &(t, lr) in &runs {
                        std::hint::black_box(official_step(&official, t, lr));
                    }
                },
                || {
                    std::hint::black_box(official_step_batch(&official, &runs));
                },
            )
        });
        if b == 30 {
            per_iter_30 = bat;
        }
        let flops = 6.0 * (official.total_samples() * official.d() * b) as f64;
        let floor = flops / (2.0 * gflops * 1e9);
        let _ = writeln!(
            md,
            "| {b} | {:.1} ms | {:.1} ms | **{:.1}×** | {:.2} |",
            seq * 1e3,
            bat * 1e3,
            seq / bat,
            bat / floor
        );
    }
    md.push_str("\nTarget: ≥ 5× at 30 replicates.\n\n");
    eprintln!("replicates done");

    // Phase 2 with local steps: s ∈ {1, 2, 5, 10} × 3 starts, sxy-balanced.
    let sxy = fed("sxy-balanced", &[]);
    let base = Phase2Config::default().resolve(&sxy);
    let params: Vec<Phase2Params> = [1usize, 2, 5, 10]
        .iter()
        .map(|&s| Phase2Params {
            local_steps: s,
            ..base
        })
        .collect();
    let thetas: Vec<DMatrix<f64>> = (0..3).map(|r| random_init(sxy.d(), 3, 1.0, 1, r)).collect();
    let jobs: Vec<(&DMatrix<f64>, &Phase2Params)> = thetas
        .iter()
        .flat_map(|t| params.iter().map(move |p| (t, p)))
        .collect();
    let (seq, bat) = in_pool(2, || {
        interleaved(
            7,
            || {
                for &(t, p) in &jobs {
                    std::hint::black_box(phase2_round_fused(&sxy, t, p, None, None));
                }
            },
            || {
                let reps: Vec<_> = jobs
                    .iter()
                    .map(|&(t, p)| phase2_replicate(&sxy, t, p, None, None))
                    .collect();
                std::hint::black_box(batched_sums(&sxy, &reps));
            },
        )
    });
    let _ = writeln!(
        md,
        "Phase 2 round (FedAvg, sxy-balanced: d = 100, M = 200, n = 50) for 12 runs (s ∈ {{1, 2, \
         5, 10}} × 3 starts, the s-sweep of SXY22 Fig. 1): sequential {:.1} ms, batched {:.1} ms, \
         **{:.1}×**.\n",
        seq * 1e3,
        bat * 1e3,
        seq / bat
    );
    eprintln!("phase2 batch done");

    // 6. IFCA Fig. 3 panel extrapolation (2 cores): 30 runs per data seed in one batch.
    let gen = median_time(3, || {
        std::hint::black_box(fed("ifca-official", &[]));
    });
    let single = in_pool(2, || {
        median_time(7, || {
            std::hint::black_box(official_step(&official, &starts[0], 0.1));
        })
    });
    let cells = 10.0 * 3.0 * 40.0;
    let total = cells * (300.0 * per_iter_30 + gen);
    let seq_total = cells * (300.0 * 30.0 * single + gen);
    let floor_total = cells * 300.0 * 6.0 * (official.total_samples() * official.d() * 30) as f64
        / (2.0 * gflops * 1e9);
    let _ = writeln!(
        md,
        "## IFCA Fig. 3 panel, extrapolated (2 threads)\n\n\
         10 R × 3 σ × 40 data seeds, each 30 runs (10 inits × 3 lrs) × 300 iterations at k = 2, \
         m = n = 100, d = 1000, plus generating each data seed ({gen:.2} s): batched {:.1} ms per \
         iteration of all 30 runs → **{:.2} h** for the panel (target ≤ 2 h); one run at a time \
         ({:.1} ms per run-iteration) it would be {:.1} h; the compute floor at the measured GEMM \
         rate is {:.2} h.\n",
        per_iter_30 * 1e3,
        total / 3600.0,
        single * 1e3,
        seq_total / 3600.0,
        floor_total / 3600.0
    );
    md.push_str(concat!(
        "## Before / after\n\n",
        "| optimisation | before | after | where measured |\n|---|---|---|---|\n",
        "| implicit Y + block Krylov (Phase 1 at d = 1000) | dense Y + SVD: 2.251 s (random θ₀), 2.164 s (θ*₁) per anchor-iteration | `subspace_basis`: 0.993 s, 0.789 s | an earlier report of this table (r = 0.3, σ = 0.5; one anchor) |\n",
        "| Phase 1 at d > 256: every anchor's block Krylov iteration advanced together, each pass over the data applying all anchors' blocks as one stacked product (512-column steps, the two products split over both threads); bit-identical (the entries of a matrixmultiply product depend on their own row and column only; tested, and three full-profile ifca-fig3a cells recomputed with every series field identical) | anchors one at a time, each its own Krylov iteration (anchors spread over the threads): Fig. 3(a) setting 0.875 s, Fig. 3(b) setting 2.199 s per anchor-iteration; whole `fedmix run --algorithm two-phase` on Fig. 3(b)'s setting (k = 4, M = 400, n = 100, d = 1000, R = 0.5, σ = 0.1; 17 anchors × 5 iterations, 300 rounds): 220.7 s (measured beside another job before this change), against 86.6 s for the official protocol's 30-run cell (2.55×) | 0.500 s and 0.927 s (**1.75×, 2.37×**; the Phase 1 table above, same run); the whole run: **157.9 s wall, 282 s user**, of which Phase 1 and the data ≈ 119.5 s (the same run with 1 round), against **106.0 s** for the official protocol's cell on the same data (**1.49×**; back to back, other jobs stopped) | `perf_report --phase1-only` and `/usr/bin/time`, 2026-11-28, the machine's other jobs stopped (SIGSTOP) while measuring; the same Phase 1 in a probe gave 0.28–0.30 s per anchor-iteration on the Fig. 3(a) setting (2 threads): the machine's GEMM rate varies between runs (19.8–34 GFLOP/s on one core), so compare within a row. `perf` (Fig. 3(a) setting, 2 threads): 46 % in matrixmultiply's kernel, 25 % in its packing of the data (each chunk of X is packed once per product), 8 % in nalgebra's `tr_mul` (the Krylov orthogonalisation, kept: a GEMM there would change the bits) |\n",
        "| an unpacked product kernel for Phase 1's two stacked products (`vᵀX` and `X·P` of `MomentOperator::apply_many`): 8 × 6 FMA tiles reading `X` and the blocks in place, the 256-index inner blocks outermost, no packing; bit-identical to matrixmultiply (compared bitwise with `matrixmultiply::dgemm` over 1 512 shapes, α = ±1, β ∈ {0, 1}, `B` plain and transposed, and on whole operator applications) — **tried and rejected, not merged** | matrixmultiply (the code as it is), quiet machine: Fig. 3(a) setting 0.279, 0.297, 0.333, 0.338 s per anchor-iteration (**1.97–2.40×** the floor); Fig. 3(b) 0.965, 0.991, 1.006, 1.020 s (1.44–1.66×) | the kernel: Fig. 3(a) 0.324, 0.345 s (2.30×, 2.64×); Fig. 3(b) 1.205, 1.412 s (2.09×, 2.18×): **slower**. The second product `X·P` reads `X` across its columns (one 64-byte line per column for each 8-row tile: 256 pages per tile), which matrixmultiply's packing turns into sequential reads; and with 50–200 stacked columns matrixmultiply's packed 8 × 4 kernel outruns tiles read in place, as measured for the client passes (the unpacked kernel wins only where one side is a single tile). The packing (25 % of the time, `perf` above) is the price of the faster kernel, not waste. Each product alone, one thread, X = 1000 × 10 240 in 512-column steps, best of 7, nothing else running (GFLOP/s, matrixmultiply / kernel): `vᵀX` 13.3 / 17.1 at 20 stacked columns, 20.6 / 26.9 at 50, 25.3 / 27.6 at 100, 29.7 / 19.4 at 200; `X·P` 10.4 / 9.3, 21.9 / 20.2, 24.9 / 17.4, 26.4 / 13.6; a variant of `X·P` that reads `X` 32 columns at a time for every tile (the FMA chains kept in a scratch `C` between passes, the same bits) 8.4, 13.2, 20.8, 19.8. The only win, `vᵀX` at ≤ 100 columns, is ≈ 10 % of a Fig. 3(a) anchor-iteration | `perf_report --phase1-only`, 2026-11-29, the machine's other jobs stopped: the kernel build twice, the same binary with `FEDMIX_NO_KERNELS` once, the committed code three times (medians of 3 repeats each). The committed table above (0.500 s, 3.89×) is a slower day's run of the same code: on a quiet machine the Fig. 3(a) ratio sits at the 2× target's edge, not reliably under it |\n",
        "| Phase 2's client pass in a single run (a two-phase run's Phase 2, oracle): the prediction product `θᵀφ_iᵀ` of each local step after the first has one live model row, and the kernel's lanes run along the models, so 3 of every 4 FMA lanes multiply padding; a transposed copy of each client's block (`φ_i` with samples contiguous per feature) would let the lanes run along the samples with each entry's FMA chain unchanged (bit-identical) — **measured, not built** | `cargo bench --bench bench_main -- narrow_products` (one client, d = 1000, n = 100, its block L2-resident; medians): prediction with 1 live row 29.9 µs, with 4 live rows 29.5 µs (the same time: the 4 rows fill the lanes); gradient `φ_iᵀr` with 1 live column 14.7 µs. A Fig. 3(b) client's round (k = 4 choice, s = 5 local steps): 29.5 + 5 × 14.7 + 4 × 29.9 ≈ 223 µs | the prediction at full lanes would cost about the gradient's 14.7 µs: ≈ 163 µs a client-round, **−27 % of Phase 2's products**, i.e. ≈ −6 % of a Fig. 3(b) two-phase run (Phase 2 is ≈ 24 % of it), for a second copy of the features (320 MB more at N = 4·10⁴, d = 1000; the peak-memory rows above are ≈ 1.04× the data). An in-register 4 × 4 transpose instead of the copy needs 8 shuffles per 16 FMAs on the one shuffle port: no faster than today. Not worth the memory for ≈ 6 % | 2026-11-29, the bench beside two nice-19 sweep jobs (one per core); the same shapes in a scratch program over 400 distinct client blocks (from memory, one thread): 19.7 ms per pass for 1 and for 4 live rows, 31 ms for the gradient |\n",
        "| one client pass for every round (`replicates::batched_sums`) vs the previous fused kernel (nalgebra gemv per sample) | 19.34 ms per IFCA round, 3.72× the floor | 9.08 ms, 1.55× the floor | both commits' reports with this floor, run minutes apart on the same machine (`git worktree add OLD 677b5d2`, patch its `stream_twice` as here) |\n",
        "| batched replicates (official grid, restarts, Phase 2 sweeps) | B passes per iteration | 1 pass | batched tables above (same run) |\n",
        "| whole `fedmix run --algorithm ifca-official --setting ifca-official --set sigma=0.1 --set r=0.1` | 172.6 s | 15.1 s | wall, one run each, same machine, 2026-11-22 |\n",
        "| the baselines table's IFCA grid (10 data seeds × 5 r, 1500 runs × 300 iterations) | ≈ 115 CPU-min estimated, never completed | 9 min wall | docs/baselines.md |\n",
        "| whole `fedmix run --algorithm two-phase --setting ifca-official --set r=0.3 --set sigma=0.5` | 19 min 37 s | 4 min 54 s | wall, one run each (loaded machine) |\n",
        "| narrow products of a client pass without packing (`fedmix-kernels`: AVX2 + FMA, matrixmultiply's per-entry order, bit-identical; only the live, unpadded models computed) | `FEDMIX_NO_KERNELS=1` (nalgebra → matrixmultiply): 16.06 s wall, 17.00 s CPU | 10.89 s wall, 10.47 s CPU: **0.68× wall, 0.62× CPU** (paired A/B ratios, medians of 5) | whole `fedmix run --algorithm ifca --set ifca_option=gradient --set rounds=300` on `ifca-official` data (r = 0.3, σ = 0.5: k = 2, m = n = 100, d = 1000), `farm-bench -n 5 --vs`, 2026-11-26, both cores shared with a mutation-testing run (absolute times inflated; outputs identical byte for byte but the wall-time field). Criterion `narrow_products` (same run, same load): 6 × 1000 × 100 in 67 µs vs 95 µs, 1000 × 100 × 6 in 61 µs vs 85 µs; at 60 rows matrixmultiply's packed panels win, so those stay with it |\n",
        "| the kernels' tiles of ≤ 4 rows (the k = 2 prediction product `Θᵀφᵀ`) use one AVX2 register instead of two, the second of which multiplied masked zeros (bit-identical: lanes are independent entries) | IFCA round (option I, k = 2, m = n = 100, d = 1000): 8.52, 7.88, 7.87, 9.80 ms against a floor of 8.58, 8.21, 7.80, 9.94 ms (round / floor 0.96–1.01) | 7.68, 6.55, 6.92, 7.38 ms against 8.46, 8.75, 8.08, 8.21 ms (round / floor **0.75–0.91**) | `perf_report --round-only`, the two binaries alternated 4 times, 2026-11-27, the machine's other jobs stopped; this machine's streaming floor (≈ 8 ms, 1 MiB L2 per core, so a client's 800 KB block is re-read from L2) is not the report's 4.79 ms: ratios are per machine |\n",
        "| Phase 1's per-client sums S̃ (d × M) streamed through 4096-column blocks like Ẽ, and the residuals into reused buffers (bit-identical) | `two-phase` on `sxy-balanced`, 10⁵ clients, d = 20, n_i = 10 (168 MB of data): 240 MB peak, 1.4 × 10⁸ allocation calls (heaptrack) | 180 MB peak (1.07× the data) | `/usr/bin/time`, one run each, 2026-11-26, both cores shared with other jobs; the scaling to 10⁶ clients: [performance-scaling.md](performance-scaling.md) |\n",
        "| whole 300-round IFCA (option I, k = 2, m = n = 100, d = 1000, γ = 0.5, the same init) against a vectorised numpy implementation of the same update (`examples/python/ifca_numpy_speed.py`: two products over the data per round, OpenBLAS 0.3.31) | numpy: 8.37 s wall, 16.37 s CPU (median of 5; on 2026-11-26 under load: 18.85 s wall, 17.05 s CPU against fedmix's 13.09 s, 8.88 s: 0.70× wall) | fedmix with the kernels, one AVX2 register for ≤ 4 model rows: 4.87 s wall, 8.80 s CPU: **0.56× wall (1.78× faster), 0.52× CPU** (paired A/B ratios, medians of 5, wall ratio min 0.52, max 0.69); final models agree to 4.4e-16 | `farm-bench -n 5 --vs`, 2026-11-27, the machine's other jobs stopped (SIGSTOP) for the measurement; target ≥ 1.5× faster wall: met |\n",
        "| whole `fedmix run --algorithm two-phase --setting sxy-balanced --set clients=20000 --set rounds=20` (772 MB of data) | 6 min 10 s wall, 361 s system, 4.0 GB peak (5.2× the data) | on a quiet machine (2026-11-27, nothing else running): **4 min 25 s wall, 470 s user, 0.81 s system, 802 MiB peak (1.04× the data's 771 MiB)**; with SXY22 App. C's Phase 1 choices (`--set anchors=10 --set phase1_iterations=5`): 66.6 s wall, 93 s user, 0.68 s system, the same peak (d(θ̂, θ*) 1.44e-2 against 1.24e-2 with the defaults) | `/usr/bin/time -v`, one run each. The system time and the memory are fixed; the wall-time target (≤ 60 s) is not met: the user time is Phase 1's arithmetic — every anchor forms its own dense d × d subspace matrix over all N = 10⁶ samples in every iteration (42 anchors = ⌈k ln N⌉ × 10 iterations × 2d²N ≈ 8·10¹² flops at d = 100; `perf`: 46 % in the GEMM kernel, 31 % in the blocked Gram accumulation); the paper's 10 anchors × 5 iterations do 8× less and come within 11 % of the target |\n",
        "| SXY22 §4.2's largest per-client curvature `max_i ‖φ_i‖²/n_i` (the step rule's γ) computed once per federation, clients in parallel, eigenvalues only (bit-identical: nalgebra's implicit QR gives the same diagonal with or without eigenvectors, tested) — the step rule, both phases' parameter checks and the run summary each recomputed it, 20 000 eigendecompositions with eigenvectors every time (`perf`: 38 % of the CPU of the 20 000-client run with SXY22's Phase 1 choices) | `two-phase --setting sxy-balanced --set clients=20000 --set rounds=20`: 2 min 33.8 s wall, 273.7 s user, 828 MB peak; with `--set anchors=10 --set phase1_iterations=5`: 48.1 s wall, 66.6 s user | 2 min 3.8 s wall, 242.7 s user, 826 MB peak (**0.81× wall**); with SXY22's Phase 1 choices **22.4 s wall** (0.47×), 42.0 s user — within the ≤ 60 s target; θ̂ and the trace identical byte for byte | `/usr/bin/time -v`, one run each, before and after back to back on a quiet machine, 2026-11-27 (this machine ran the earlier row's 4 min 25 s run in 2 min 34 s: compare within a row). The default Phase 1 (42 anchors × 10 iterations here) stays above 60 s: its dense d × d Gram products (≈ 8·10¹² flops, the row above) dominate |\n",
        "| Phase 1's Gram products `ẼẼᵀ`, `S̃S̃ᵀ` with `ᵀ` as a strided view instead of a transposed copy of each 4096-column block (bit-identical) | `two-phase --setting sxy-balanced --set clients=2000 --set rounds=20`: 38.99 s wall, 62.20 s CPU | 31.59 s wall, 49.27 s CPU: **0.81× wall, 0.79× CPU** (paired, medians of 3; models and trace identical byte for byte) | `farm-bench -n 3 --vs`, 2026-11-26, loaded machine |\n",
        "| Phase 1's dense subspace matrix (d ≤ 256) streamed through a 4096-column block instead of forming the d × N moments (bit-identical) | `two-phase --setting sxy-balanced --set clients=2500 --set rounds=1`: 67 s system time, 507 MB peak; `clients=20000 --set rounds=20`: 361 s system, 4.0 GB peak (5.2× the data) | 2.8 s system, 131 MB; 15 s system, 874 MB (1.13× the 772 MB of data) | `/usr/bin/time`, one run each, other core busy (wall times not comparable); 2 500 clients before and after on 2026-11-25, 20 000 clients before from an earlier run on the same kind of machine |\n\n",
        "## Notes\n\n",
        "- The memory floor is a 2-thread streaming sum with 8 independent accumulators per chunk (memory-bound); an earlier version of this report used a serial `sum()`, whose add-latency chain is slower than memory, so its ratios are not comparable with these.\n",
        "- A round reads each client block twice (one GEMM for the predictions of every model of every replicate, one for `φᵀR`), and matrixmultiply packs the block into cache-sized panels on the way; small problems pay rayon's per-chunk overhead. Consecutive small clients share one prediction product (up to 256 KiB of features, `PREDICTION_GROUP_FLOATS`): before that grouping the scaling slope was 0.85 and the M = 10³ round 2.4 ms.\n",
        "- The streaming floor is itself noisy on this shared machine (2.5–5.9 ms over this session's runs, best of 15 each), so round/floor ranged 1.55–2.8 between runs minutes apart.\n",
        "- Batching turns that memory-bound pass into compute-bound products: the speed-up grows with B until the GEMMs saturate the cores; at B = 30 the iteration runs close to the compute floor, so the panel's remaining gap to 2 h is arithmetic, not overhead.\n",
        "- Peak memory includes the generator's buffers; at N·d ≥ 10⁷ it is ≤ 1.1× the raw data.\n",
    ));
    std::fs::create_dir_all("docs").expect("docs/");
    std::fs::write("docs/performance.md", &md).expect("write docs/performance.md");
    print!("{md}");
}
