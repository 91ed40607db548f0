//! Runner: every theory check → `docs/theory/` (one SVG + JSON per check, a README table and
//! `summary.json`), then every experiment of `experiments/` → `docs/experiments/` and
//! `docs/REPORT.md`; subcommands `experiment` (a shard of one sweep) and `merge`. Exit status 1
//! when a check fails or is inconclusive, 2 on a usage or I/O error.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use theory_checks::check_docs::{suite_position, write_reports};
use theory_checks::experiment::{parse_shard, Experiment, RunOptions};
use theory_checks::framework::Verdict;
use theory_checks::report;
use theory_checks::robustness::{self, Robustness, RobustnessFile, SeedOutcome};
use theory_checks::{figure, run_all, run_selected, selected, CheckConfig, Profile};

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
    /// Seed robustness: run the checks (respecting `--only`) at every master seed A..=B and
    /// report per check how many seeds it passes (stdout, `seed-robustness.md` and
    /// `seed-robustness.json` in `--out`); the per-check reports, README.md and summary.json
    /// are left untouched. Implies `--no-experiments`.
    #[arg(long, value_name = "A..B")]
    seeds: Option<String>,
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
    /// recomputing them (the default of the full profile); with `--seeds`, keep the outcomes in
    /// `--out`'s `seed-robustness.json` and compute only the missing (check, seed) pairs.
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
        /// Start no new cell after this many minutes (started cells finish and are written;
        /// the rest wait for a later `--resume`), so a run fits a session or job time limit.
        #[arg(long, value_name = "MINUTES")]
        stop_after: Option<f64>,
    },
    /// Rebuild the report (figures, `<experiment>.json`, REPORT.md with the claim ledger) from
    /// the cells on disk under the work directory, running nothing.
    Report,
    /// Redraw the theory checks' figures (`<check>.svg`) from their saved records
    /// (`<check>.json`) in the checks' output directory, running nothing.
    Figures,
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
    // The working tree's commit, read before this process writes anything (provenance).
    let _ = theory_checks::report::current_commit();
    let result = match &args.cmd {
        Some(Cmd::Experiment {
            file,
            out,
            shard,
            resume,
            force,
            stop_after,
        }) => (|| {
            let plan = Experiment::from_file(file)
                .and_then(|e| e.plan(&args.profile))
                .map_err(|e| e.to_string())?;
            let opts = RunOptions {
                shard: parse_shard(shard).map_err(|e| e.to_string())?,
                resume: *resume,
                force: *force,
                jobs: jobs(args.jobs),
                stop_after: match stop_after {
                    Some(m) => Some(
                        std::time::Duration::try_from_secs_f64(m * 60.0)
                            .ok()
                            .filter(|_| *m >= 0.0)
                            .ok_or_else(|| {
                                format!("--stop-after {m}: must be a finite number of minutes ≥ 0 (at most ~10^17 s)")
                            })?,
                    ),
                    None => None,
                },
            };
            let r = report::run_experiment(&plan, out, &opts, shard)?;
            println!(
                "{}: {} cells computed, {} already present, {} left for --resume (shard {shard})",
                plan.experiment.name, r.ran, r.skipped, r.left
            );
            Ok(true)
        })(),
        Some(Cmd::Merge { dir, figures }) => (|| {
            let out = figures.clone().unwrap_or_else(|| dir.join("figures"));
            let m = report::merge_and_render(dir, &out)?;
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
        Some(Cmd::Figures) => redraw_check_figures(&dirs(&args).0),
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

/// Redraw every `<check>.svg` of `dir` from its `<check>.json` record.
fn redraw_check_figures(dir: &Path) -> Result<bool, String> {
    let mut n = 0;
    for (name, _) in theory_checks::registry() {
        let path = dir.join(format!("{name}.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let record: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(fig) = record.get("figure").filter(|f| !f.is_null()) else {
            continue;
        };
        let fig: theory_checks::framework::Figure =
            serde_json::from_value(fig.clone()).map_err(|e| format!("{}: {e}", path.display()))?;
        figure::render_svg(&fig, &dir.join(format!("{name}.svg")))?;
        n += 1;
    }
    println!("{n} figures redrawn in {}", dir.display());
    Ok(true)
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
    for f in report::experiment_files(&args.experiments)? {
        exps.push(Experiment::from_file(&f).map_err(|e| e.to_string())?.name);
    }
    for name in only.split(',') {
        let known = (!args.no_checks && checks.contains(&name))
            || (!args.no_experiments && exps.iter().any(|e| e == name));
        if !known {
            let mut pool: Vec<&str> = Vec::new();
            if !args.no_checks {
                pool.extend(checks.iter().copied());
            }
            if !args.no_experiments {
                pool.extend(exps.iter().map(String::as_str));
            }
            return Err(format!(
                "--only: `{name}` is {}{} (checks: {}; experiments: {})",
                match (args.no_checks, args.no_experiments) {
                    (true, _) => "not an experiment",
                    (_, true) => "not a check",
                    _ => "neither a check nor an experiment",
                },
                did_you_mean(name, &pool),
                checks.join(", "),
                exps.join(", ")
            ));
        }
    }
    Ok(())
}

/// `; did you mean …?` for a name that starts the wanted names (`theorem2` →
/// `theorem2_phase2_contraction`, `theorem2_misclustering_term`) or is a near typo of one.
fn did_you_mean(name: &str, pool: &[&str]) -> String {
    let mut near: Vec<&str> = pool
        .iter()
        .copied()
        .filter(|p| !name.is_empty() && p.starts_with(name))
        .collect();
    if near.is_empty() {
        near = pool
            .iter()
            .copied()
            .filter(|p| fedmix::params::keys::edit_distance(name, p) <= 2.max(p.len() / 5))
            .collect();
    }
    if near.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
        format!("; did you mean {}?", list.join(" or "))
    }
}

fn run_everything(args: &Args) -> Result<bool, String> {
    let profile = profile_of(&args.profile)?;
    check_only(args)?;
    if let Some(range) = &args.seeds {
        return seed_robustness(args, profile, parse_seed_range(range)?);
    }
    let mut ok = true;
    if !args.no_checks {
        let cfg = CheckConfig {
            profile,
            seed: args.seed,
            sabotage: false,
        };
        let records = run_all(&cfg, args.only.as_deref());
        write_reports(&dirs(args).0, &cfg, &records, args.only.is_some())?;
        let count = |v: Verdict| records.iter().filter(|r| r.verdict() == v).count();
        let (failed, inconclusive) = (count(Verdict::Fail), count(Verdict::Inconclusive));
        println!(
            "theory checks: {} passed, {failed} failed, {inconclusive} inconclusive",
            count(Verdict::Pass)
        );
        ok = failed == 0 && inconclusive == 0;
    }
    if !args.no_experiments {
        run_experiments(args)?;
    }
    Ok(ok)
}

/// `A..B` (inclusive) → `(A, B)`.
fn parse_seed_range(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--seeds expects A..B with A ≤ B (inclusive), got `{s}`");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let b = b.strip_prefix('=').unwrap_or(b);
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// `--seeds A..B`: every selected check at every master seed in turn (sequential over seeds;
/// each check is seeded from its master seed alone, so a record is the same as in a
/// single-seed run), then the table of passes out of seeds. Writes only
/// `seed-robustness.{md,json}`, `power.{md,json}` and `detectable-effect.json` in `--out`, rewritten (atomically) after
/// every seed, so a run cut off keeps every finished seed; `--resume` keeps the outcomes of
/// `seed-robustness.json` (same profile) and computes only the missing (check, seed) pairs.
/// `Ok(false)` when any check fails at any seed.
fn seed_robustness(args: &Args, profile: Profile, (a, b): (u64, u64)) -> Result<bool, String> {
    let only = args.only.as_deref();
    let out = dirs(args).0;
    let names: Vec<String> = selected(only).iter().map(|(n, _)| n.to_string()).collect();
    if names.is_empty() {
        return Err(format!("--only {only:?} selects no check"));
    }
    let path = out.join("seed-robustness.json");
    let mut kept: Option<RobustnessFile> = None;
    if args.resume && path.is_file() {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let f: RobustnessFile = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a resumable seed-robustness file ({e})",
                path.display()
            )
        })?;
        if f.profile != profile_name(profile) {
            return Err(format!(
                "{}: computed at the {} profile, this run is {}; use another --out",
                path.display(),
                f.profile,
                profile_name(profile)
            ));
        }
        kept = Some(f);
    }
    let mut earlier_secs = kept.as_ref().map_or(0.0, |f| f.wall_seconds);
    let mut table: Vec<Robustness> = names
        .iter()
        .map(|name| {
            // Every kept outcome stays in the file, also those outside `a..=b`; the tables
            // count only the range.
            let outcomes: Vec<SeedOutcome> = kept
                .as_mut()
                .and_then(|f| f.checks.iter_mut().find(|r| &r.name == name))
                .map(|r| std::mem::take(&mut r.outcomes))
                .unwrap_or_default();
            Robustness::new(name.clone(), outcomes)
        })
        .collect();
    // Checks of the kept file outside this selection stay in it and in its tables, in the
    // suite's order.
    table.extend(
        kept.into_iter()
            .flat_map(|f| f.checks)
            .filter(|r| !names.contains(&r.name)),
    );
    table.sort_by_key(|r| suite_position(&r.name));
    fedmix::io::prepare_output_dir(&out).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let mut all_ok = true;
    for seed in a..=b {
        let missing: Vec<&str> = table
            .iter()
            .filter(|r| names.contains(&r.name) && !r.outcomes.iter().any(|o| o.seed == seed))
            .map(|r| r.name.as_str())
            .collect();
        if !missing.is_empty() {
            let cfg = CheckConfig {
                profile,
                seed,
                sabotage: false,
            };
            let list = missing.join(",");
            for r in run_selected(&cfg, Some(&list), false) {
                if let Some(row) = table.iter_mut().find(|row| row.name == r.name) {
                    row.outcomes.push(SeedOutcome {
                        seed,
                        passed: r.passed,
                        inconclusive: r.verdict() == Verdict::Inconclusive,
                        statistic: r.statistic,
                        bound: r.bound,
                        slopes: r.slopes.clone(),
                        constants: r.constants.clone(),
                        commit: report::build_commit(),
                    });
                }
            }
        }
        let secs = earlier_secs + started.elapsed().as_secs_f64();
        // Every row over the whole range: a check not yet computed past `seed` counts the
        // seeds it has, and the others keep their counts (a partial file stays true).
        robustness::write(&out, &mut table, profile_name(profile), (a, b), secs)?;
        all_ok = table
            .iter()
            .filter(|r| names.contains(&r.name))
            .all(Robustness::always_passed);
    }
    earlier_secs += started.elapsed().as_secs_f64();
    let md = robustness::markdown(&table, profile_name(profile), (a, b), earlier_secs);
    print!("{md}");
    Ok(all_ok)
}

fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Quick => "quick",
        Profile::Full => "full",
    }
}

/// The experiment files of `--experiments`, those named by `--only` when it is given.
fn selected_experiments(args: &Args) -> Result<Vec<Experiment>, String> {
    let mut out = Vec::new();
    for file in report::experiment_files(&args.experiments)? {
        let e = Experiment::from_file(&file).map_err(|e| e.to_string())?;
        if args
            .only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == e.name))
        {
            out.push(e);
        }
    }
    Ok(out)
}

fn run_experiments(args: &Args) -> Result<(), String> {
    let (_, _, work_root) = dirs(args);
    let mut timings = Vec::new();
    for e in selected_experiments(args)? {
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
            stop_after: None,
        };
        let r = report::run_experiment(&plan, &work, &opts, "1/1")?;
        let secs = started.elapsed().as_secs_f64();
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
    for e in selected_experiments(args)? {
        let work = work_root.join(&e.name);
        if !work.join("plan.json").exists() {
            entries.push((e, None));
            continue;
        }
        let m = report::merge_and_render(&work, &figures)?;
        loaded.insert(e.name.clone(), theory_checks::ledger::load(&work)?);
        let t = timings.iter().find(|(n, _)| *n == e.name).map(|(_, t)| *t);
        entries.push((e, Some((m, t))));
    }
    if args.only.is_none() {
        let md = report::report(&entries, &loaded, "experiments", &args.profile);
        fedmix::io::write_atomic(&docs.join("REPORT.md"), md.as_bytes())
            .map_err(|e| e.to_string())?;
        println!("report: {}", docs.join("REPORT.md").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, parse_seed_range};

    #[test]
    fn unknown_names_get_suggestions() {
        let pool = [
            "theorem2_phase2_contraction",
            "theorem2_misclustering_term",
            "sxy22-fig1",
        ];
        assert_eq!(
            did_you_mean("theorem2", &pool),
            "; did you mean `theorem2_phase2_contraction` or `theorem2_misclustering_term`?"
        );
        assert_eq!(
            did_you_mean("sxy22-fig9", &pool),
            "; did you mean `sxy22-fig1`?"
        );
        assert_eq!(did_you_mean("lemma99", &pool), "");
    }

    #[test]
    fn seed_ranges_are_inclusive() {
        assert_eq!(parse_seed_range("1..20"), Ok((1, 20)));
        assert_eq!(parse_seed_range("7..=7"), Ok((7, 7)));
        assert!(parse_seed_range("20..1").is_err());
        assert!(parse_seed_range("1-20").is_err());
        assert!(parse_seed_range("a..3").is_err());
    }
}
