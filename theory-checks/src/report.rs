//! Paper experiments (SXY22 App. C Figs. 1–3, IFCA §6.1 Fig. 3, SR-FCA §5) from
//! `experiments/*.toml`: run the cells through
//! [`crate::experiment`], render each merged figure as an SVG (median line, interquartile or Wilson
//! band, Phase 1 shaded) and write `docs/REPORT.md`.

use crate::experiment::{self, Experiment, Failure, Merged, MergedFigure, Plan, RunOptions};
use crate::progress::Progress;
use std::path::{Path, PathBuf};

/// Every experiment file under `dir`, sorted by name.
///
/// # Errors
/// A message when the directory cannot be read.
pub fn experiment_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

/// Run (a shard of) one experiment into `work`, with progress, logging to `runs.jsonl` as it
/// goes: one line per finished cell (`ran = 1`, the wall time since the invocation's previous
/// line), then one closing line (`ran = 0`: the cells kept from disk and the wall time after
/// the last cell). The wall times of an invocation's lines sum to its wall time, and a run
/// killed mid-way (a session's end, a preempted job) loses only the time since its last cell.
///
/// # Errors
/// The library's typed error or a log that cannot be written, as a message.
pub fn run_experiment(
    plan: &Plan,
    work: &Path,
    opts: &RunOptions,
    shard: &str,
) -> Result<experiment::RunReport, String> {
    let total = plan.shard(opts.shard).len();
    let progress = Progress::new(&plan.experiment.name, total);
    let last = std::sync::Mutex::new(std::time::Instant::now());
    let since_last = || {
        let now = std::time::Instant::now();
        last.lock().map_or(0.0, |mut t| {
            let secs = (now - *t).as_secs_f64();
            *t = now;
            secs
        })
    };
    let line = |ran: usize, skipped: usize| RunLog {
        commit: build_commit(),
        shard: shard.into(),
        ran,
        skipped,
        wall_seconds: since_last(),
        jobs: opts.jobs,
    };
    let log_error: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let report = experiment::run_plan(plan, work, opts, &|done, _, id| {
        progress.step(done, id);
        if let Err(e) = append_log(work, &line(1, 0)) {
            if let Ok(mut slot) = log_error.lock() {
                slot.get_or_insert(e);
            }
        }
    })
    .map_err(|e| e.to_string());
    progress.finish();
    if let Some(e) = log_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let report = report?;
    if report.ran > 0 {
        append_log(work, &line(0, report.skipped))?;
    }
    Ok(report)
}

/// Merge `work` and write `<figure>.svg` for every figure plus `<experiment>.json` into `out`.
///
/// # Errors
/// Messages from the merge, plotters or the file system.
pub fn merge_and_render(work: &Path, out: &Path) -> Result<Merged, String> {
    let merged = experiment::merge(work).map_err(|e| e.to_string())?;
    fedmix::io::prepare_output_dir(out).map_err(|e| e.to_string())?;
    let plan = experiment::read_plan(work).map_err(|e| e.to_string())?;
    for f in &merged.figures {
        crate::experiment::figures::render(
            f,
            &plan.experiment,
            &merged.profile,
            &out.join(format!("{}.svg", f.name)),
        )?;
    }
    let mut json = serde_json::to_value(&merged).map_err(|e| e.to_string())?;
    let prov = provenance(work, &merged)?;
    if let Some(obj) = json.as_object_mut() {
        obj.insert(
            "provenance".into(),
            serde_json::to_value(&prov).map_err(|e| e.to_string())?,
        );
    }
    fedmix::io::write_json(&out.join(format!("{}.json", merged.experiment)), &json)
        .map_err(|e| e.to_string())?;
    Ok(merged)
}

/// A line of `runs.jsonl`: a finished cell of an invocation (`ran = 1`) or an invocation's
/// closing line (`ran = 0`); see [`run_experiment`]. (Older logs hold one line per invocation.)
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunLog {
    /// fedmix commit of the binary's source (`git rev-parse`, `-dirty` with local changes).
    pub commit: String,
    /// Shard `i/n`.
    pub shard: String,
    /// Cells computed.
    pub ran: usize,
    /// Cells found on disk and kept.
    pub skipped: usize,
    /// Wall seconds covered by this line.
    pub wall_seconds: f64,
    /// Worker threads.
    pub jobs: usize,
}

/// What every committed `<experiment>.json` states about how it was made.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Provenance {
    /// Profile.
    pub profile: String,
    /// Data seeds of the cells found.
    pub seeds: Vec<u64>,
    /// Cells found.
    pub cells_found: usize,
    /// Cells planned.
    pub cells_planned: usize,
    /// Sum of the wall seconds of every logged invocation that computed cells.
    pub wall_seconds: f64,
    /// Commits the cells were computed with (from `runs.jsonl`).
    pub commits: Vec<String>,
    /// Commit of the merge.
    pub merged_at: String,
}

/// The commit this binary was built from (`-dirty` when built with uncommitted changes to
/// tracked files; `unknown` without git): what computed the cells, whatever HEAD is by the
/// time a long run ends.
pub fn build_commit() -> String {
    env!("THEORY_CHECKS_BUILD_COMMIT").to_string()
}

/// The current commit of the working directory (`unknown` outside a git checkout).
pub fn current_commit() -> String {
    // Read once per process: a report writes figure files as it goes, and a later read would
    // see its own output as uncommitted changes.
    static COMMIT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COMMIT.get_or_init(read_current_commit).clone()
}

fn read_current_commit() -> String {
    let out = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match out(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) => {
            let dirty = out(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}-dirty")
            } else {
                c
            }
        }
        None => "unknown".into(),
    }
}

/// Append one line to `work/runs.jsonl` (a single `write` of one short line).
///
/// # Errors
/// A message from the file system.
fn append_log(work: &Path, line: &RunLog) -> Result<(), String> {
    let line = serde_json::to_string(line).map_err(|e| e.to_string())?;
    use std::io::Write;
    let path = work.join("runs.jsonl");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Read `work/runs.jsonl` (missing file: no runs).
///
/// # Errors
/// A message for an unreadable file or a malformed line.
pub fn read_runs(work: &Path) -> Result<Vec<RunLog>, String> {
    let path = work.join("runs.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(Vec::new());
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn provenance(work: &Path, m: &Merged) -> Result<Provenance, String> {
    let plan = experiment::read_plan(work).map_err(|e| e.to_string())?;
    let runs = read_runs(work)?;
    let mut seeds: Vec<u64> = plan
        .cells
        .iter()
        .filter(|c| !m.missing.contains(&c.id))
        .map(|c| c.seed)
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    let mut commits: Vec<String> = Vec::new();
    for r in &runs {
        if !commits.contains(&r.commit) {
            commits.push(r.commit.clone());
        }
    }
    Ok(Provenance {
        profile: m.profile.clone(),
        seeds,
        cells_found: m.cells_found,
        cells_planned: m.cells_planned,
        wall_seconds: runs.iter().map(|r| r.wall_seconds).sum(),
        commits,
        merged_at: current_commit(),
    })
}

/// A markdown table of a figure's last point (trace) or every axis point (sweep) per line.
/// "failed runs" counts the runs that ended in a typed error at that point (for a trace: over the
/// whole line) and quotes the first; sweep points where every run failed get a row of their own.
fn table(f: &MergedFigure) -> String {
    let mut md = format!(
        "| line | {} | median | mean | band (25 % – 75 %, or Wilson 95 %) | seeds | failed runs |\n|---|---|---|---|---|---|---|\n",
        f.x_label
    );
    let describe = |fails: &[&Failure]| match fails.first() {
        None => "—".to_string(),
        Some(first) => format!("{} (seed {}: {})", fails.len(), first.seed, first.message),
    };
    for l in &f.lines {
        if f.x_label == "round" {
            let fails: Vec<&Failure> = l.failures.iter().collect();
            let fail = describe(&fails);
            match l.points.last() {
                Some(p) => md.push_str(&format!(
                    "| {} | {} | {:.4e} | {:.4e} | {:.3e} – {:.3e} | {} | {} |\n",
                    l.label, p.x, p.median, p.mean, p.lo, p.hi, p.n, fail
                )),
                None if !fails.is_empty() => {
                    md.push_str(&format!("| {} | — | — | — | — | 0 | {} |\n", l.label, fail))
                }
                None => {}
            }
            continue;
        }
        let mut xs: Vec<f64> = l.points.iter().map(|p| p.x).collect();
        xs.extend(l.failures.iter().filter_map(|e| e.x));
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        for x in xs {
            let fails: Vec<&Failure> = l.failures.iter().filter(|e| e.x == Some(x)).collect();
            let fail = describe(&fails);
            match l.points.iter().find(|p| p.x == x) {
                Some(p) => md.push_str(&format!(
                    "| {} | {} | {:.4e} | {:.4e} | {:.3e} – {:.3e} | {} | {} |\n",
                    l.label, p.x, p.median, p.mean, p.lo, p.hi, p.n, fail
                )),
                None => md.push_str(&format!("| {} | {x} | — | — | — | 0 | {fail} |\n", l.label)),
            }
        }
    }
    md
}

/// An experiment of the report: its definition and, when its work directory exists, the merged
/// figures and (wall seconds, cells computed) of this invocation if it computed any.
pub type ReportEntry = (Experiment, Option<(Merged, Option<(f64, usize)>)>);

/// `docs/REPORT.md`: the claim ledger and the parameter table first, then per experiment the
/// paper's claim, the figures, the numbers behind them and our discussion.
/// `entries`: each experiment with, when its work directory exists, its merged figures and
/// (wall seconds, cells computed) of this invocation if it ran any.
pub fn report(
    entries: &[ReportEntry],
    loaded: &std::collections::BTreeMap<String, crate::ledger::Loaded>,
    figures_rel: &str,
    profile: &str,
) -> String {
    let (ledger, _) = crate::ledger::ledger(loaded);
    let mut md = format!(
        "# fedmix — reproduction report\n\nProfile **{profile}**, built by `cargo run --release -p \
         theory-checks -- --profile {profile}` (or `theory-checks report --profile {profile}` from \
         the cells on disk) at commit `{}` from the experiment files in `experiments/` (one TOML \
         per figure; copy one, change a knob, rerun). The cells behind the full profile are \
         tracked in `experiments/results/full/` and each figure's JSON states its provenance \
         (seeds, cells found / planned, wall time, commits). Every error figure shows the median over \
         data seeds with its interquartile band (the tables give the mean beside it: a few \
         diverging runs can put the mean outside the band); every success figure shows the \
         proportion of seeds with its Wilson 95 % interval. The \
         lemma-level checks are in [theory/README.md](theory/README.md).\n\n\
         ## Claim ledger\n\nEvery claim of the experiment sections of SXY22 (App. C), IFCA \
         (§6.1) and SR-FCA (§5), measured on our implementation. Every interval is a 95 % \
         interval over data seeds, computed by the method the row's \"interval\" column names: \
         a percentile bootstrap (4000 resamples) of a mean, a geometric mean or a ratio of \
         means, or a Wilson score interval of a proportion (`theory-checks/src/ledger/statistics.rs` \
         defines each statistic). A verdict without a number beside it is not allowed; rows whose sweep has \
         not run at the paper's scale say so.\n\n{ledger}\n",
        current_commit()
    );
    md.push_str(&format!(
        "\n## SXY22's parameters against our defaults\n\nThe SXY22 figures run the paper's \
         parameters (App. C). Each row switches one of ours back on, over the same data seeds. \
         The step size is not given by the paper: every series uses γ = 0.8, i.e. \
         η = 0.8 / max_i ‖φ_i‖²/n_i. σ = 0.2 is the paper's noise level (our CLI default is 0.1); \
         N = 10⁴ points (the paper's text says \"a total of N = 1000 data points\", but its \
         M × n_i = 200 × 50 and 900 × 10 + 20 × 50 are 10⁴).\n\n{}\n",
        crate::ledger::parameter_table(loaded)
    ));
    md.push_str(&format!(
        "\n## Phase 2 contraction rates\n\nThe per-round rate λ of each seed's trace \
         d_t = d(θ_t, θ*): minus the least-squares slope of ln(d_t − d_(t+5)) on t, over the \
         Phase 2 rounds from where that difference has fallen below half its Phase 2 maximum \
         until it falls below 1e-4·d_t (differences at a lag remove the unknown floor: for \
         d_t = f + A e^(−λt) they decay like e^(−λt) whatever f; a trace with fewer than 4 \
         rounds in that window has no rate and its seed is dropped; `theory-checks/src/ledger/statistics.rs`), \
         mean and 95 % percentile bootstrap interval over the seeds with a rate (n). SXY22 \
         Theorem 2 (eq. 9) predicts λ ≈ C₁sηρ/κ.\n\n{}\n",
        crate::ledger::rate_table(loaded)
    ));
    md.push_str(
        "\n## Experiments\n\n| experiment | paper | profile | seeds | cells found / planned | \
         computed in this invocation | wall time (all logged runs) |\n|---|---|---|---|---|---|---|\n",
    );
    for (e, m) in entries {
        match m {
            Some((m, t)) => {
                let seeds: std::collections::BTreeSet<u64> = loaded
                    .get(&e.name)
                    .map(|l| l.cells.iter().map(|c| c.cell.seed).collect())
                    .unwrap_or_default();
                md.push_str(&format!(
                    "| [{}](#{}) | {} | {} | {} | {}/{} | {} | see `{}.json` |\n",
                    e.name,
                    e.name,
                    e.paper,
                    m.profile,
                    seed_range(&seeds),
                    m.cells_found,
                    m.cells_planned,
                    t.map_or("0 (all resumed)".into(), |(secs, ran)| format!(
                        "{ran} in {secs:.0} s"
                    )),
                    e.name
                ));
            }
            None => md.push_str(&format!(
                "| {} | {} | — | — | not run at this profile yet | — | — |\n",
                e.name, e.paper
            )),
        }
    }
    for (e, m) in entries {
        let Some((m, _)) = m else { continue };
        md.push_str(&format!(
            "\n<a id=\"{}\"></a>\n## {} — {}\n\n**Paper.** {}\n\n",
            e.name, e.name, e.title, e.claim
        ));
        if !m.missing.is_empty() {
            md.push_str(&format!(
                "**Incomplete:** {} of {} cells missing.\n\n",
                m.missing.len(),
                m.cells_planned
            ));
        }
        for f in &m.figures {
            md.push_str(&format!(
                "![{}]({figures_rel}/{}.svg)\n\n*{}*\n\n",
                f.name,
                f.name,
                crate::experiment::figures::caption(f, e, &m.profile),
            ));
            if let Some(beside) = crate::experiment::figures::beside_paper(f, e, &m.profile) {
                md.push_str(&format!("{beside}\n"));
            }
            md.push_str(&format!("{}\n", table(f)));
        }
        if !e.discussion.is_empty() {
            md.push_str(&format!("**What we observe.** {}\n", e.discussion));
        }
    }
    md
}

/// `1–20`, or a list when the seeds are not consecutive.
fn seed_range(seeds: &std::collections::BTreeSet<u64>) -> String {
    match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if (b - a + 1) as usize == seeds.len() => format!("{a}–{b}"),
        (Some(_), Some(_)) => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        _ => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Band, Line};

    fn point(x: f64, n: usize) -> Band {
        Band {
            x,
            median: 0.4,
            mean: 0.5,
            lo: 0.25,
            hi: 0.75,
            n,
        }
    }

    /// A sweep line whose runs fail at one axis value only: the table attributes the failures to
    /// that value (not to every point of the line), and a value where every run failed, which has
    /// no band, still gets a row saying so.
    #[test]
    fn failures_are_reported_at_their_own_axis_point() {
        let fail = |seed, x: f64| Failure {
            seed,
            x: Some(x),
            message: format!("too few clusters (seed {seed})"),
        };
        let fig = MergedFigure {
            name: "t-error".into(),
            title: "t".into(),
            x_label: "machines m".into(),
            y_label: "error".into(),
            log_x: false,
            log_y: false,
            lines: vec![Line {
                label: "two-phase".into(),
                points: vec![point(200.0, 1), point(400.0, 2)],
                phase1_rounds: 0,
                failures: vec![fail(1, 100.0), fail(2, 100.0), fail(2, 200.0)],
            }],
        };
        let md = table(&fig);
        let rows: Vec<&str> = md.lines().skip(2).collect();
        assert_eq!(rows.len(), 3, "{md}");
        assert_eq!(
            rows[0],
            "| two-phase | 100 | — | — | — | 0 | 2 (seed 1: too few clusters (seed 1)) |"
        );
        assert!(
            rows[1]
                .starts_with("| two-phase | 200 | 4.0000e-1 | 5.0000e-1 | 2.500e-1 – 7.500e-1 |"),
            "{md}"
        );
        assert!(
            rows[1].ends_with("| 1 | 1 (seed 2: too few clusters (seed 2)) |"),
            "{md}"
        );
        assert!(rows[2].starts_with("| two-phase | 400 |"), "{md}");
        assert!(rows[2].ends_with("| 2 | — |"), "{md}");
    }
}
