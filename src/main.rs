//! The `fedmix` command-line interface. User mistakes print one line and exit with status 2.

use clap::{Parser, Subcommand};
use fedmix::error::{FedmixError, Result};
use fedmix::io::{read_dataset, write_dataset, Dataset};
use fedmix::metrics;
use fedmix::progress::Watcher;
use fedmix::synthetic::{self, SettingParams};
use std::path::PathBuf;
use std::process::ExitCode;

/// `println!` that returns [`FedmixError::Io`] instead of panicking when stdout is closed
/// (`fedmix settings | head -1`); `main` then exits quietly.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(|e| FedmixError::io("<stdout>", e))?
    }};
}

/// The subcommands with their own module.
mod cli {
    pub mod validate;
}

#[derive(Parser)]
#[command(
    name = "fedmix",
    version,
    about = "Clustered federated learning for mixed regression: reference implementation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--algorithm`'s help: every name, from the algorithms' one declaration.
fn algorithm_help() -> String {
    format!(
        "Algorithm: {} (docs/algorithms.md). Required, except for `validate --candidate`, whose \
         `params.json` may name it",
        fedmix::params::AlgorithmKind::names(" | ")
    )
}

/// What to run and on which data (shared by `run` and `validate`).
#[derive(clap::Args, Clone)]
struct SourceArgs {
    // The help lists the names from the algorithms' declaration (`AlgorithmKind::ALL`). Parsed
    // here rather than by clap, so that an unknown name gets the one-line typed error every
    // other bad input gets.
    #[arg(long, help = algorithm_help())]
    algorithm: Option<String>,
    /// Dataset directory (alternative to --setting).
    #[arg(long, conflicts_with = "setting")]
    data: Option<PathBuf>,
    /// Synthetic setting to generate in memory.
    #[arg(long)]
    setting: Option<String>,
    /// Master seed (data generation with --setting, and the algorithm's own streams).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// No progress display on stderr (otherwise, after 2 s: rounds of the planned total, the
    /// last d(θ_t, θ*) and an ETA — a bar on a terminal, a line every 10 s otherwise).
    #[arg(long)]
    quiet: bool,
    /// TOML configuration (unknown keys are rejected).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override: `--set key=value`; with --setting, generator keys go to the data (`data.KEY`
    /// and `run.KEY` say which explicitly: `--set k=3 --set run.k=2` generates 3 clusters and
    /// fits 2).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Initial models, k × d float64 .npy (two-phase, fedavg: 1 × d); IFCA: restarts × k × d
    /// for every restart (k × d: restart 0 only); ifca-official: inits × k × d, one start per
    /// init seed (each run with every learning rate).
    #[arg(long)]
    init: Option<PathBuf>,
    /// Phase 1 anchors (and faithful client sets) from a JSON file (docs/validating.md §2).
    #[arg(long)]
    anchors: Option<PathBuf>,
    /// Phase 1 orthogonal-iteration starts Q₀: iterations × anchors × d × k float64 .npy.
    #[arg(long)]
    q0: Option<PathBuf>,
    /// Phase 1 power-iteration starts: iterations × anchors × k float64 .npy.
    #[arg(long)]
    power_start: Option<PathBuf>,
    /// Participation schedule: restarts × rounds × M (or rounds × M) int64 0/1 .npy.
    #[arg(long)]
    participation: Option<PathBuf>,
}

impl SourceArgs {
    /// The randomness files given.
    fn randomness_paths(&self) -> fedmix::engine::randomness::RandomnessPaths {
        fedmix::engine::randomness::RandomnessPaths {
            init: self.init.clone(),
            anchors: self.anchors.clone(),
            q0: self.q0.clone(),
            power_start: self.power_start.clone(),
            participation: self.participation.clone(),
        }
    }
}

#[derive(clap::Args)]
struct RunArgs {
    #[command(flatten)]
    src: SourceArgs,
    /// Also write iterates.npy (rounds × k × d).
    #[arg(long)]
    save_iterates: bool,
    /// Overwrite a non-empty output directory.
    #[arg(long)]
    force: bool,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Print the final metrics as one JSON object (for machines) instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write every randomness the run used into this directory (init.npy, anchors.json,
    /// q0.npy, power_start.npy, participation.npy: those the algorithm uses), in the formats
    /// the flags read.
    #[arg(long, value_name = "DIR")]
    export_randomness: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// List the synthetic settings and their parameters with defaults.
    Settings,
    /// Generate a synthetic federation into a dataset directory.
    Generate {
        /// Setting name (see `fedmix settings`).
        #[arg(long)]
        setting: String,
        /// Master seed (default 0, as for `run` and `validate`).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Override a parameter: `--set key=value` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Replace the contents of a non-empty output directory.
        #[arg(long)]
        force: bool,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// No progress display on stderr.
        #[arg(long)]
        quiet: bool,
    },
    /// Run an algorithm on a dataset directory or a generated setting; write a run directory.
    #[command(after_help = fedmix::params::keys_help())]
    Run(RunArgs),
    /// Compare another implementation's trajectory with the reference, round by round
    /// (exit 0 when every round is within tolerance, 1 otherwise).
    Validate(cli::validate::ValidateArgs),
    /// Describe a dataset directory: sizes, χ²(n), γ for a given η, Δ, ρ.
    Describe {
        /// Dataset directory.
        #[arg(long)]
        data: PathBuf,
        /// Step size η for γ = η max_i ‖φ_i‖²/n_i; default: the step `fedmix run` takes by
        /// default (`eta_gamma` = 0.8, i.e. η = 0.8 / max_i ‖φ_i‖²/n_i).
        #[arg(long)]
        eta: Option<f64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): nothing left to tell anyone.
        Err(FedmixError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Settings => settings(),
        Command::Generate {
            setting,
            seed,
            sets,
            force,
            out,
            quiet,
        } => {
            fedmix::output::check_fresh_output(&out, force)?;
            let sets = parse_sets(&sets)?;
            let progress =
                (!quiet).then(|| Watcher::start(format!("generating {setting}"), None, None));
            let data = synthetic::generate_named(&setting, seed, &sets)?;
            let ds = Dataset::from(data);
            write_dataset(&out, &ds)?;
            drop(progress);
            say!(
                "wrote {} (M = {}, N = {}, d = {})",
                out.display(),
                ds.manifest.clients,
                ds.manifest.total_samples,
                ds.manifest.d
            );
            Ok(())
        }
        Command::Describe { data, eta } => describe(&data, eta),
        Command::Run(args) => run_algorithm(args),
        Command::Validate(args) => {
            if !cli::validate::validate(args)? {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// Split `key=value` overrides.
fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(FedmixError::MalformedOverride { given: s.clone() }),
        })
        .collect()
}

/// Progress of `prep`'s run on stderr (rounds of the planned total, the last d(θ_t, θ*), ETA)
/// until the returned watcher is dropped; nothing with `--quiet`.
fn watch(prep: &mut fedmix::runner::Prepared, what: String, quiet: bool) -> Option<Watcher> {
    if quiet {
        return None;
    }
    let state = std::sync::Arc::new(fedmix::progress::RunProgress::default());
    prep.progress = Some(state.clone());
    Some(Watcher::start(what, prep.planned_rows(), Some(state)))
}

/// One `--set key=value`.
type Set = (String, String);

/// Split `--set` pairs between the data generator and the run. `data.KEY` and `run.KEY` say
/// which explicitly; a bare generator key goes to the data when the data are generated
/// (`--setting`), everything else to the run. `k` is both a generator key (clusters generated)
/// and a run key (clusters fitted): bare, it sets the data's `k` and the run fits that many;
/// `run.k` fits another number.
fn split_sets(sets: Vec<Set>, generated: bool) -> Result<(Vec<Set>, Vec<Set>)> {
    let data_keys: Vec<&str> = synthetic::PARAMETERS.iter().map(|p| p.0).collect();
    let (mut data, mut run) = (Vec::new(), Vec::new());
    for (key, value) in sets {
        if let Some(k) = key.strip_prefix("data.") {
            if !generated {
                return Err(FedmixError::invalid(
                    "--set",
                    format!("{key}={value}"),
                    "a data parameter applies only to generated data (--setting); a dataset read with --data is fixed",
                ));
            }
            data.push((k.to_string(), value));
        } else if let Some(k) = key.strip_prefix("run.") {
            run.push((k.to_string(), value));
        } else if generated && data_keys.contains(&key.as_str()) {
            data.push((key, value));
        } else {
            run.push((key, value));
        }
    }
    Ok((data, run))
}

fn settings() -> Result<()> {
    for (name, doc) in synthetic::SETTINGS {
        let p = SettingParams::named(name)?;
        say!("{name}: {doc}");
        let table = toml::Table::try_from(&p)
            .map_err(|e| FedmixError::invalid("settings", name, e.to_string()))?;
        for (key, value) in table {
            say!("    {key} = {value}");
        }
    }
    say!("\nparameters:");
    for (key, doc) in synthetic::PARAMETERS {
        say!("    {key:<18} {doc}");
    }
    Ok(())
}

fn describe(dir: &std::path::Path, eta: Option<f64>) -> Result<()> {
    let ds = read_dataset(dir)?;
    let fed = &ds.train;
    let (eta, which) = match eta {
        Some(e) if !(e.is_finite() && e > 0.0) => {
            return Err(FedmixError::invalid("--eta", e, "must be finite and > 0"))
        }
        Some(e) => (e, "--eta"),
        None => (
            fedmix::algorithms::AlgorithmParams::default_for(
                fedmix::params::AlgorithmKind::TwoPhase,
            )
            .phase2(fed)
            .eta,
            "the run's default step",
        ),
    };
    let sizes = fed.sizes();
    let m = &ds.manifest;
    say!("dataset      {}", dir.display());
    say!(
        "setting      {}",
        m.setting.as_deref().unwrap_or("(external)")
    );
    say!(
        "seed         {}",
        m.seed.map_or("-".into(), |s| s.to_string())
    );
    say!(
        "M, N, d, k   {}, {}, {}, {}",
        fed.num_clients(),
        fed.total_samples(),
        fed.d(),
        fed.k().map_or("-".into(), |k| k.to_string())
    );
    let (min, max) = (
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
    );
    say!(
        "n_i          min {min}, max {max}, mean {:.3}",
        fed.total_samples() as f64 / sizes.len() as f64
    );
    say!("chi2(n)      {:.6}", metrics::chi2(&sizes));
    let (g, client) = metrics::gamma(fed, eta);
    say!(
        "gamma        {g:.6} at eta = {eta:.6e}, {which} (client {client}; eta < {:.6e} keeps gamma < 1)",
        eta / g
    );
    if let (Some(labels), Some(k)) = (fed.labels(), fed.k()) {
        say!("rho          {:.6}", metrics::rho(&sizes, labels, k));
        say!(
            "p_min        {:.6} (fraction of clients)",
            metrics::p_min(labels, k)
        );
        let nj = metrics::cluster_samples(&sizes, labels, k);
        say!("N_j          {nj:?}");
    }
    if let Some(ts) = fed.theta_star() {
        say!("Delta        {:.6}", metrics::separation(ts));
        let norms: Vec<String> = ts
            .column_iter()
            .map(|c| format!("{:.4}", c.norm()))
            .collect();
        say!("|theta*_j|   [{}]", norms.join(", "));
    }
    if let Some(ts) = &m.test_sizes {
        say!("held-out     {} samples", ts.iter().sum::<usize>());
    }
    Ok(())
}

fn prepare(args: &SourceArgs, export: bool) -> Result<fedmix::runner::Prepared> {
    use fedmix::algorithms::AlgorithmParams;
    use fedmix::engine::randomness::load;
    let name = args
        .algorithm
        .as_deref()
        .ok_or_else(|| FedmixError::Missing {
            what: "--algorithm NAME".into(),
        })?;
    let kind = fedmix::params::AlgorithmKind::parse(name)?;
    let sets = parse_sets(&args.sets)?;
    let (data_sets, run_sets) = split_sets(sets, args.setting.is_some())?;
    let ds = match (&args.data, &args.setting) {
        (Some(dir), _) => read_dataset(dir)?,
        (None, Some(name)) => {
            Dataset::from(synthetic::generate_named(name, args.seed, &data_sets)?)
        }
        (None, None) => {
            return Err(FedmixError::Missing {
                what: "a data source (--data DIR or --setting NAME)".into(),
            })
        }
    };
    let config_text = match &args.config {
        Some(p) => Some((
            p.clone(),
            std::fs::read_to_string(p).map_err(|e| FedmixError::io(p, e))?,
        )),
        None => None,
    };
    let params = AlgorithmParams::from_sources(
        kind,
        config_text.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        &run_sets,
    )?;
    let given = load(
        &args.randomness_paths(),
        ds.train.d(),
        ds.train.num_clients(),
    )?;
    fedmix::runner::prepare(params, std::sync::Arc::new(ds), args.seed, given, export)
}

fn run_algorithm(args: RunArgs) -> Result<()> {
    let started = std::time::Instant::now();
    fedmix::output::check_fresh_output(&args.out, args.force)?;
    if let Some(dir) = &args.export_randomness {
        fedmix::output::check_fresh_output(dir, args.force)?;
    }
    let mut prep = prepare(&args.src, args.export_randomness.is_some())?;
    let args_src = &args.src;
    let what = prep.alg.name().to_string();
    let progress = watch(&mut prep, what, args.src.quiet);
    let ran = prep.run(args.save_iterates);
    drop(progress);
    // The randomness is resolved before the run, so it is written even when the run ends in a
    // typed error (e.g. Phase 1 finding fewer than k clusters among the anchors): the failure
    // can then be replayed by another implementation from the same draws.
    let written = match (&args.export_randomness, &prep.resolved) {
        (Some(dir), Some(r)) => Some((dir, fedmix::engine::randomness::export(dir, r))),
        _ => None,
    };
    let (out, rec) = match ran {
        Ok(done) => done,
        Err(e) => {
            // The run's error is the one reported; an export that also failed is only named.
            match &written {
                Some((dir, Ok(files))) if !files.is_empty() => eprintln!(
                    "the run failed; the randomness it used was written to {} ({})",
                    dir.display(),
                    files.join(", ")
                ),
                Some((dir, Err(x))) => eprintln!(
                    "the run failed, and writing its randomness to {} failed too: {x}",
                    dir.display()
                ),
                _ => {}
            }
            return Err(e);
        }
    };
    let exported = match written {
        Some((dir, files)) => Some((dir, files?)),
        None => None,
    };
    let prov = fedmix::runner::Provenance {
        data_dir: args_src.data.as_ref().map(|p| p.display().to_string()),
        init_file: args_src.init.as_ref().map(|p| p.display().to_string()),
        exported: exported
            .as_ref()
            .map(|(dir, files)| (dir.display().to_string(), files.clone())),
        wall_time_seconds: Some(started.elapsed().as_secs_f64()),
    };
    let summary = prep.summary(&out, &rec, &prov);
    fedmix::output::write_run(&args.out, &prep.dataset().train, &out, &rec, &summary)?;
    let alg = &prep.alg;
    // The final metrics as the summary computed them (once).
    let fin = summary.get("final").cloned().unwrap_or_default();
    if args.json {
        say!(
            "{}",
            serde_json::json!({
                "algorithm": alg.name(),
                "rounds": rec.rows.len(),
                "final": fin,
                "wall_time_seconds": summary.get("wall_time_seconds"),
                "out": args.out.display().to_string(),
                "exported": exported.as_ref().map(|(d, f)| serde_json::json!({"dir": d.display().to_string(), "files": f})),
            })
        );
        return Ok(());
    }
    say!("{} finished: {} rounds", alg.name(), rec.rows.len());
    say!("{}", fedmix::output::final_lines(&fin));
    say!("wall time    {:.2} s", started.elapsed().as_secs_f64());
    say!("wrote {}", args.out.display());
    if let Some((dir, files)) = &exported {
        match files.is_empty() {
            true => say!(
                "{}: nothing to export ({} draws no randomness)",
                dir.display(),
                alg.name()
            ),
            false => say!("wrote {} ({})", dir.display(), files.join(", ")),
        }
    }
    Ok(())
}
