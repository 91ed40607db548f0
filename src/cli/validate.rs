//! `fedmix validate`: a candidate's iterates (and labels) against the reference run, round by
//! round ([`fedmix::validate`]): its flags, the candidate directory's `params.json`, and the
//! report as text or JSON.

use crate::{prepare, watch, SourceArgs};
use fedmix::error::{FedmixError, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub src: SourceArgs,
    /// A candidate directory: `iterates.npy`, `labels.npy` (if present) and `params.json`
    /// (`{"algorithm": …, "set": {key: value, …}, "init": path}` in fedmix's key names, as
    /// `examples/python/fedmix_numpy.py` writes it); flags given explicitly take precedence.
    #[arg(long, value_name = "DIR")]
    candidate: Option<PathBuf>,
    /// Candidate iterates: rounds × k × d float64 .npy (the models after each round). A NaN or
    /// infinite entry fails its round whatever the tolerance (rounds with fewer models than k:
    /// the slots beyond them must be NaN, as `run --save-iterates` pads them).
    #[arg(long, required_unless_present = "candidate")]
    iterates: Option<PathBuf>,
    /// Candidate labels: rounds × M int64 .npy, or float64 holding integers only (each client's
    /// cluster choice per round, -1 for unassigned); NaN, a fraction or a label outside the
    /// round's models is an error (exit 2).
    #[arg(long)]
    labels: Option<PathBuf>,
    /// Relative tolerance (to the round's largest reference entry).
    #[arg(long, default_value_t = 1e-9)]
    rtol: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 0.0)]
    atol: f64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print one line per round (default: a summary, the rounds beyond tolerance and the
    /// diagnosis).
    #[arg(long, conflicts_with = "summary")]
    per_round: bool,
    /// Print only the verdict, the first round beyond tolerance, the largest deviation and the
    /// diagnosis.
    #[arg(long)]
    summary: bool,
    /// One-step (teacher-forced) mode: each candidate round against the reference's round run
    /// from the candidate's own previous models (`--help` says more).
    #[arg(long, long_help = one_step_help())]
    one_step: bool,
}

/// A candidate directory's `params.json`: the algorithm, its keys in fedmix's names and the
/// initial models it started from.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateParams {
    algorithm: Option<String>,
    #[serde(default)]
    set: serde_json::Map<String, serde_json::Value>,
    init: Option<PathBuf>,
    participation: Option<PathBuf>,
}

/// Fill `args` from a candidate directory (`--candidate`): its files and `params.json`, the
/// flags given explicitly taking precedence (a `--set` after the candidate's keys wins).
fn with_candidate(mut args: ValidateArgs) -> Result<ValidateArgs> {
    let Some(dir) = args.candidate.clone() else {
        return Ok(args);
    };
    let path = dir.join("params.json");
    let text = std::fs::read_to_string(&path).map_err(|e| FedmixError::io(&path, e))?;
    let c: CandidateParams = serde_json::from_str(&text).map_err(|e| FedmixError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut sets: Vec<String> = c
        .set
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect();
    sets.append(&mut args.src.sets);
    args.src.sets = sets;
    args.src.algorithm = args.src.algorithm.or(c.algorithm);
    args.src.init = args.src.init.or(c.init);
    args.src.participation = args.src.participation.or(c.participation);
    args.iterates = args.iterates.or_else(|| Some(dir.join("iterates.npy")));
    let labels = dir.join("labels.npy");
    if args.labels.is_none() && labels.is_file() {
        args.labels = Some(labels);
    }
    Ok(args)
}

/// Run `fedmix validate`; `Ok(false)` when the candidate fails (exit status 1).
///
/// # Errors
/// The reference's and the candidate files' typed errors (exit status 2).
pub fn validate(args: ValidateArgs) -> Result<bool> {
    let tol = fedmix::runner::tolerance(args.rtol, args.atol)?;
    let args = with_candidate(args)?;
    let mut prep = prepare(&args.src, false)?;
    let iterates = args.iterates.clone().ok_or_else(|| FedmixError::Missing {
        what: "--iterates FILE (or --candidate DIR)".into(),
    })?;
    let fed = &prep.dataset().train;
    let (shape, cand) = fedmix::io::read_f64(&iterates, &[None, None, Some(fed.d())])?;
    let cand_labels = match &args.labels {
        Some(p) => Some(fedmix::validate::read_labels(p, fed.num_clients())?),
        None => None,
    };
    let what = format!("reference {}", prep.alg.name());
    let progress = watch(&mut prep, what, args.src.quiet);
    let mode = match args.one_step {
        true => fedmix::validate::Mode::OneStep,
        false => fedmix::validate::Mode::Trajectory,
    };
    let report = prep.validate_as(
        mode,
        &fedmix::validate::Candidate {
            iterates: &cand,
            shape: &shape,
            labels: cand_labels.as_ref().map(|(s, l)| (&l[..], &s[..])),
        },
        tol,
    )?;
    drop(progress);
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        // The reference as resolved: the keys this algorithm reads, with their values.
        let shown: Vec<String> = prep
            .reference_params()
            .into_iter()
            .map(|(key, v)| format!("{key}={v}"))
            .collect();
        say!("reference: {} with {}", prep.alg.name(), shown.join(" "));
        if args.one_step {
            say!("mode: one-step (each round t from the candidate's own models after round t − 1)");
        }
        // The first round with the largest deviation (NaN counts as the largest).
        let worst = report
            .rounds
            .iter()
            .rev()
            .max_by(|a, b| a.max_rel_deviation.total_cmp(&b.max_rel_deviation));
        let beyond = report.rounds.iter().filter(|r| !r.ok).count();
        say!(
            "{} rounds compared, {} beyond tolerance; largest relative deviation {}",
            report.rounds.len(),
            beyond,
            worst.map_or("-".into(), |w| format!(
                "{:.3e} at round {}",
                w.max_rel_deviation, w.round
            ))
        );
        if args.summary {
            say!(
                "verdict: {}",
                if report.passed { "matches" } else { "DIFFERS" }
            );
            if let (Some(t), Some(d)) = (&report.first_failure, &report.diagnosis) {
                say!("first round beyond tolerance: {t}\n{d}");
            }
            if let (true, Some(s)) = (args.one_step, &report.summary) {
                say!("across rounds: {s}");
            }
            return Ok(report.passed);
        }
        say!("round  max rel. deviation  max abs. deviation  label disagreements  status");
        // At most the first ten rounds beyond tolerance (the rest are counted above).
        let first_bad: Vec<usize> = report
            .rounds
            .iter()
            .filter(|r| !r.ok)
            .take(10)
            .map(|r| r.round)
            .collect();
        let listed = |r: &fedmix::validate::RoundReport| {
            args.per_round
                || first_bad.contains(&r.round)
                || r.round == 1
                || r.round == report.rounds.len()
                || report.first_failure == Some(r.round + 1)
        };
        let mut skipped = false;
        for r in &report.rounds {
            if !listed(r) {
                if !skipped {
                    say!("  ...  (--per-round lists every round)");
                }
                skipped = true;
                continue;
            }
            skipped = false;
            say!(
                "{:>5}  {:>18.3e}  {:>18.3e}  {:>19}  {}",
                r.round,
                r.max_rel_deviation,
                r.max_abs_deviation,
                r.label_disagreements
                    .as_ref()
                    .map_or("-".into(), |l| l.len().to_string()),
                match (r.ok, &r.bad_entry) {
                    (true, _) => "ok".into(),
                    (false, Some(e)) => format!("DIFFERS: {}", e.describe()),
                    (false, None) => "DIFFERS".to_string(),
                }
            );
        }
        match (&report.first_failure, &report.diagnosis) {
            (Some(_), Some(_)) if args.one_step => {
                // Every failing round has its own diagnosis: the first in full, the next nine
                // up to their explanation (all in full in --json).
                for (i, f) in report.failures.iter().take(10).enumerate() {
                    let short = f.diagnosis.split_once("): ").map(|(a, _)| format!("{a})"));
                    match (i, short) {
                        (0, _) | (_, None) => say!("{}", f.diagnosis),
                        (_, Some(s)) => say!("{s}"),
                    }
                }
                if report.failures.len() > 10 {
                    say!(
                        "… ({} more diagnosed rounds in --json)",
                        report.failures.len() - 10
                    );
                }
                if let Some(s) = &report.summary {
                    say!("across rounds: {s}");
                }
            }
            (Some(t), Some(d)) => say!("first round beyond tolerance: {t}\n{d}"),
            _ => say!(
                "all {} rounds within rtol = {:e}, atol = {:e}",
                report.rounds.len(),
                args.rtol,
                args.atol
            ),
        }
    }
    Ok(report.passed)
}

/// `--one-step`'s long help: the refused algorithms from their declaration
/// (`AlgorithmKind::one_step_refusal`).
fn one_step_help() -> String {
    format!(
        "One-step (teacher-forced) mode: run the reference's round t from the candidate's own \
         models after round t − 1 (round 1 from the common start) and compare it with the \
         candidate's round t, for every round; every failing round is diagnosed on its own. \
         Refused (exit 2) for {} (why: docs/algorithms.md)",
        fedmix::params::AlgorithmKind::names_without_one_step(", ")
    )
}
