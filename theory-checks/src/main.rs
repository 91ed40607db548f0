//! Runner: every theory check → `docs/theory/` (one SVG + JSON per check, a README table and
//! `summary.json`), then every experiment of `experiments/` → `docs/experiments/` and
//! `docs/REPORT.md`; subcommands `experiment` (a shard of one sweep) and `merge`. Exit status 1
//! when a check fails, 2 on a usage or I/O error.

use clap::{Parser, Subcommand};
use fedmix::experiment::{parse_shard, Experiment, RunOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use theory_checks::experiments;
use theory_checks::{figure, run_all, CheckConfig, CheckRecord, Profile};

#[derive(Parser)]
#[command(
    name = "theory-checks",
    about = "Run every theory check and paper experiment: docs/theory/, docs/experiments/, docs/REPORT.md"
)]
struct Args {
    /// Profile: quick (default) or full.
    #[arg(long, default_value = "quick", global = true)]
    profile: String,
    /// Master seed of the theory checks.
    #[arg(long, default_value_t = 20221)]
    seed: u64,
    /// Only these checks / experiments (comma-separated names).
    #[arg(long)]
    only: Option<String>,
    /// Output directory of the theory checks (default: `docs/theory` for the full profile,
    /// `target/fedmix-quick/theory` for quick, so a quick run never touches the committed docs).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Directory of the experiment files.
    #[arg(long, default_value = "experiments", global = true)]
    experiments: PathBuf,
    /// Where the experiments' figures and REPORT.md go (figures under `experiments/`); default:
    /// `docs` for the full profile, `target/fedmix-quick` for quick.
    #[arg(long, global = true)]
    docs: Option<PathBuf>,
    /// Working directory of experiment cells, one subdirectory per experiment; default: the
    /// tracked `experiments/results/full` for the full profile (the cells behind the committed
    /// docs, so a later session resumes from git), `target/fedmix-experiments/quick` for quick.
    #[arg(long, global = true)]
    work: Option<PathBuf>,
    /// Keep experiment cells already computed (after checking they match) instead of
    /// recomputing them (the default of the full profile).
    #[arg(long)]
    resume: bool,
    /// Recompute experiment cells already on disk (the full profile otherwise resumes).
    #[arg(long)]
    force: bool,
    /// Skip the theory checks.
    #[arg(long)]
    no_checks: bool,
    /// Skip the experiments.
    #[arg(long)]
    no_experiments: bool,
    /// Worker threads for experiment cells (results do not depend on it).
    #[arg(long, global = true)]
    jobs: Option<usize>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run (a shard of) one experiment's cells into a directory (for clusters: one shard per
    /// job-array task, then `merge`).
    Experiment {
        /// Experiment file (experiments/*.toml).
        file: PathBuf,
        /// Output directory of the cells.
        #[arg(long)]
        out: PathBuf,
        /// Run only shard i of n (1-based), e.g. 3/8.
        #[arg(long, default_value = "1/1")]
        shard: String,
        /// Skip cells already on disk.
        #[arg(long)]
        resume: bool,
        /// Recompute cells already on disk.
        #[arg(long)]
        force: bool,
    },
    /// Rebuild the report (figures, `<experiment>.json`, REPORT.md with the claim ledger) from
    /// the cells on disk under the work directory, running nothing.
    Report,
    /// Assemble figures (SVG + JSON) from whatever cells exist in a directory.
    Merge {
        /// Directory written by `experiment`.
        dir: PathBuf,
        /// Where the figures go (default: DIR/figures).
        #[arg(long)]
        figures: Option<PathBuf>,
    },
}

fn profile_of(name: &str) -> Result<Profile, String> {
    match name {
        "quick" => Ok(Profile::Quick),
        "full" => Ok(Profile::Full),
        other => Err(format!("unknown profile `{other}` (quick | full)")),
    }
}

/// The profile's default directories: (theory checks, docs, experiment work).
fn dirs(args: &Args) -> (PathBuf, PathBuf, PathBuf) {
    let full = args.profile == "full";
    let docs = args
        .docs
        .clone()
        .unwrap_or_else(|| PathBuf::from(if full { "docs" } else { "target/fedmix-quick" }));
    let out = args.out.clone().unwrap_or_else(|| docs.join("theory"));
    let work = args.work.clone().unwrap_or_else(|| {
        PathBuf::from(if full {
            "experiments/results/full"
        } else {
            "target/fedmix-experiments/quick"
        })
    });
    (out, docs, work)
}

fn jobs(j: Option<usize>) -> usize {
    j.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match &args.cmd {
        Some(Cmd::Experiment {
            file,
            out,
            shard,
            resume,
            force,
        }) => (|| {
            let plan = Experiment::from_file(file)
                .and_then(|e| e.plan(&args.profile))
                .map_err(|e| e.to_string())?;
            let opts = RunOptions {
                shard: parse_shard(shard).map_err(|e| e.to_string())?,
                resume: *resume,
                force: *force,
                jobs: jobs(args.jobs),
            };
            let started = std::time::Instant::now();
            let r = experiments::run_experiment(&plan, out, &opts)?;
            experiments::log_run(out, shard, &r, started.elapsed().as_secs_f64(), opts.jobs)?;
            println!(
                "{}: {} cells computed, {} already present (shard {shard})",
                plan.experiment.name, r.ran, r.skipped
            );
            Ok(true)
        })(),
        Some(Cmd::Merge { dir, figures }) => (|| {
            let out = figures.clone().unwrap_or_else(|| dir.join("figures"));
            let m = experiments::merge_and_render(dir, &out)?;
            println!(
                "{}: merged {}/{} cells into {}",
                m.experiment,
                m.cells_found,
                m.cells_planned,
                out.display()
            );
            Ok(true)
        })(),
        Some(Cmd::Report) => (|| {
            profile_of(&args.profile)?;
            check_only(&args)?;
            write_report(&args, &[])?;
            Ok(true)
        })(),
        None => run_everything(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The README's main command: every theory check, then every experiment; `Ok(false)` when a
/// check failed (after writing every report).
/// Every name of `--only` must be a check or an experiment: a typo must not pass as an empty
/// run that exits 0.
fn check_only(args: &Args) -> Result<(), String> {
    let Some(only) = args.only.as_deref() else {
        return Ok(());
    };
    let checks: Vec<&str> = theory_checks::registry().iter().map(|c| c.0).collect();
    let mut exps = Vec::new();
    for f in experiments::experiment_files(&args.experiments)? {
        exps.push(Experiment::from_file(&f).map_err(|e| e.to_string())?.name);
    }
    for name in only.split(',') {
        let known = (!args.no_checks && checks.contains(&name))
            || (!args.no_experiments && exps.iter().any(|e| e == name));
        if !known {
            return Err(format!(
                "--only: `{name}` is {} (checks: {}; experiments: {})",
                match (args.no_checks, args.no_experiments) {
                    (true, _) => "not an experiment",
                    (_, true) => "not a check",
                    _ => "neither a check nor an experiment",
                },
                checks.join(", "),
                exps.join(", ")
            ));
        }
    }
    Ok(())
}

fn run_everything(args: &Args) -> Result<bool, String> {
    let profile = profile_of(&args.profile)?;
    check_only(args)?;
    let mut ok = true;
    if !args.no_checks {
        let cfg = CheckConfig {
            profile,
            seed: args.seed,
            sabotage: false,
        };
        let records = run_all(&cfg, args.only.as_deref());
        write_reports(&dirs(args).0, &cfg, &records, args.only.is_some())?;
        let failed = records.iter().filter(|r| !r.passed).count();
        println!(
            "theory checks: {} passed, {} failed",
            records.len() - failed,
            failed
        );
        ok = failed == 0;
    }
    if !args.no_experiments {
        run_experiments(args)?;
    }
    Ok(ok)
}

fn run_experiments(args: &Args) -> Result<(), String> {
    let (_, _, work_root) = dirs(args);
    let files = experiments::experiment_files(&args.experiments)?;
    let mut timings = Vec::new();
    for file in files {
        let e = Experiment::from_file(&file).map_err(|e| e.to_string())?;
        if args
            .only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x == e.name))
        {
            continue;
        }
        let plan = e.plan(&args.profile).map_err(|e| e.to_string())?;
        let work = work_root.join(&e.name);
        let started = std::time::Instant::now();
        // The full profile's cells are the tracked results behind docs/: keep them unless told
        // otherwise. The quick profile recomputes (it is the current code's smoke run).
        let resume = (args.resume || args.profile == "full") && !args.force;
        let opts = RunOptions {
            shard: (1, 1),
            resume,
            force: !resume,
            jobs: jobs(args.jobs),
        };
        let r = experiments::run_experiment(&plan, &work, &opts)?;
        let secs = started.elapsed().as_secs_f64();
        experiments::log_run(&work, "1/1", &r, secs, opts.jobs)?;
        println!(
            "experiment {}: {} computed, {} resumed in {secs:.1} s",
            e.name, r.ran, r.skipped
        );
        timings.push((e.name.clone(), (secs, r.ran)));
    }
    write_report(args, &timings)
}

/// Merge every experiment's work directory that exists, render its figures and write REPORT.md
/// (with the claim ledger) — or, with `--only`, just those experiments' figures.
fn write_report(args: &Args, timings: &[(String, (f64, usize))]) -> Result<(), String> {
    let (_, docs, work_root) = dirs(args);
    let figures = docs.join("experiments");
    let mut entries = Vec::new();
    let mut loaded = std::collections::BTreeMap::new();
    for file in experiments::experiment_files(&args.experiments)? {
        let e = Experiment::from_file(&file).map_err(|e| e.to_string())?;
        if args
            .only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x == e.name))
        {
            continue;
        }
        let work = work_root.join(&e.name);
        if !work.join("plan.json").exists() {
            entries.push((e, None));
            continue;
        }
        let m = experiments::merge_and_render(&work, &figures)?;
        loaded.insert(e.name.clone(), theory_checks::ledger::load(&work)?);
        let t = timings.iter().find(|(n, _)| *n == e.name).map(|(_, t)| *t);
        entries.push((e, Some((m, t))));
    }
    if args.only.is_none() {
        let md = experiments::report(&entries, &loaded, "experiments", &args.profile);
        fedmix::io::write_atomic(&docs.join("REPORT.md"), md.as_bytes())
            .map_err(|e| e.to_string())?;
        println!("report: {}", docs.join("REPORT.md").display());
    }
    Ok(())
}

/// Per-check reports, plus the index (`README.md`, `summary.json`) when every check ran: a
/// partial run (`--only`) never replaces the index with its subset.
fn write_reports(
    out: &Path,
    cfg: &CheckConfig,
    records: &[CheckRecord],
    partial: bool,
) -> Result<(), String> {
    fedmix::io::prepare_output_dir(out).map_err(|e| e.to_string())?;
    let mut md = format!(
        "# Theory checks\n\nGenerated by `cargo run --release -p theory-checks -- --profile {}` \
         (seed {}). Each check prints its statistic next to its bound; constants that the papers \
         leave unspecified are calibrated on one grid and validated on a disjoint one (SPEC §7).\n\n\
         | check | source | statistic | bound | constant | slopes | result |\n|---|---|---|---|---|---|---|\n",
        cfg.pick("quick", "full"),
        cfg.seed
    );
    for r in records {
        fedmix::io::write_atomic(
            &out.join(format!("{}.md", r.name)),
            check_markdown(r).as_bytes(),
        )
        .map_err(|e| e.to_string())?;
        let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        fedmix::io::write_atomic(&out.join(format!("{}.json", r.name)), json.as_bytes())
            .map_err(|e| e.to_string())?;
        let fig = match &r.figure {
            Some(f) => {
                let svg = out.join(format!("{}.svg", r.name));
                figure::render_svg(f, &svg)?;
                format!("[{}]({}.svg)", r.name, r.name)
            }
            None => r.name.clone(),
        };
        let slopes: Vec<String> = r
            .slopes
            .iter()
            .map(|s| {
                format!(
                    "{}: {:.3} (pred. {:.3}±{:.2})",
                    s.parameter, s.slope, s.predicted, s.tolerance
                )
            })
            .collect();
        md.push_str(&format!(
            "| {fig} | {} | {:.4e} | {:.4e} | {} | {} | {} |\n",
            r.source,
            r.statistic,
            r.bound,
            r.constant.map_or("—".into(), |c| format!("{c:.3e}")),
            slopes.join("; "),
            if r.passed { "pass" } else { "**FAIL**" }
        ));
    }
    md.push_str("\n## Claims and details\n");
    for r in records {
        md.push_str(&format!(
            "\n### {}\n\n{} ({})\n\n",
            r.name, r.claim, r.source
        ));
        for d in &r.details {
            md.push_str(&format!("- {d}\n"));
        }
        if r.figure.is_some() {
            md.push_str(&format!("\n![{}]({}.svg)\n", r.name, r.name));
        }
    }
    if partial {
        println!(
            "partial run (--only): {} check report(s) written to {}; README.md and summary.json \
             left as they were",
            records.len(),
            out.display()
        );
        return Ok(());
    }
    fedmix::io::write_atomic(&out.join("README.md"), md.as_bytes()).map_err(|e| e.to_string())?;
    let summary = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    fedmix::io::write_atomic(&out.join("summary.json"), summary.as_bytes())
        .map_err(|e| e.to_string())
}

/// `docs/theory/<check>.md`: claim with its source, setup, statistic vs bound, constant,
/// slopes, verdict, figure.
fn check_markdown(r: &CheckRecord) -> String {
    let mut md = format!(
        "# {}\n\n**Claim.** {} ({})\n\n| statistic | bound | constant | verdict |\n|---|---|---|---|\n| {:.6e} | {:.6e} | {} | {} |\n",
        r.name,
        r.claim,
        r.source,
        r.statistic,
        r.bound,
        r.constant.map_or("—".into(), |c| format!("{c:.6e}")),
        if r.passed { "pass" } else { "**FAIL**" }
    );
    if !r.slopes.is_empty() {
        md.push_str(
            "\n| parameter | fitted slope | predicted | tolerance | ok |\n|---|---|---|---|---|\n",
        );
        for s in &r.slopes {
            md.push_str(&format!(
                "| {} | {:.4} | {:.4} | ±{:.3} | {} |\n",
                s.parameter,
                s.slope,
                s.predicted,
                s.tolerance,
                if s.ok() { "yes" } else { "**no**" }
            ));
        }
    }
    md.push_str("\n**Setup and details.**\n\n");
    for d in &r.details {
        md.push_str(&format!("- {d}\n"));
    }
    if r.figure.is_some() {
        md.push_str(&format!("\n![{}]({}.svg)\n", r.name, r.name));
    }
    md
}
