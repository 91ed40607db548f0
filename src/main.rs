//! The `fedmix` command-line interface. User mistakes print one line and exit with status 2.

use clap::{Parser, Subcommand};
use fedmix::error::{FedmixError, Result};
use fedmix::io::{read_dataset, write_dataset, Dataset};
use fedmix::metrics;
use fedmix::synthetic::{self, SettingParams};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "fedmix", version, about = "Clustered federated learning for mixed regression: reference implementation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
        /// Master seed.
        #[arg(long)]
        seed: u64,
        /// Override a parameter: `--set key=value` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
    },
    /// Describe a dataset directory: sizes, χ²(n), γ for a given η, Δ, ρ.
    Describe {
        /// Dataset directory.
        #[arg(long)]
        data: PathBuf,
        /// Step size η for γ = η max_i ‖φ_i‖²/n_i.
        #[arg(long, default_value_t = 0.01)]
        eta: f64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Settings => settings(),
        Command::Generate { setting, seed, sets, out } => {
            let sets = parse_sets(&sets)?;
            let data = synthetic::generate_named(&setting, seed, &sets)?;
            let ds = Dataset::from(data);
            write_dataset(&out, &ds)?;
            println!(
                "wrote {} (M = {}, N = {}, d = {})",
                out.display(),
                ds.manifest.clients,
                ds.manifest.total_samples,
                ds.manifest.d
            );
            Ok(())
        }
        Command::Describe { data, eta } => describe(&data, eta),
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

fn settings() -> Result<()> {
    for (name, doc) in synthetic::SETTINGS {
        let p = SettingParams::named(name)?;
        println!("{name}: {doc}");
        let table = toml::Table::try_from(&p).map_err(|e| FedmixError::invalid("settings", name, e.to_string()))?;
        for (key, value) in table {
            println!("    {key} = {value}");
        }
    }
    println!("\nparameters:");
    for (key, doc) in synthetic::PARAMETERS {
        println!("    {key:<18} {doc}");
    }
    Ok(())
}

fn describe(dir: &std::path::Path, eta: f64) -> Result<()> {
    let ds = read_dataset(dir)?;
    let fed = &ds.train;
    let sizes = fed.sizes();
    let m = &ds.manifest;
    println!("dataset      {}", dir.display());
    println!("setting      {}", m.setting.as_deref().unwrap_or("(external)"));
    println!("seed         {}", m.seed.map_or("-".into(), |s| s.to_string()));
    println!("M, N, d, k   {}, {}, {}, {}", fed.num_clients(), fed.total_samples(), fed.d(), fed.k().map_or("-".into(), |k| k.to_string()));
    let (min, max) = (sizes.iter().min().unwrap_or(&0), sizes.iter().max().unwrap_or(&0));
    println!("n_i          min {min}, max {max}, mean {:.3}", fed.total_samples() as f64 / sizes.len() as f64);
    println!("chi2(n)      {:.6}", metrics::chi2(&sizes));
    let (g, client) = metrics::gamma(fed, eta);
    println!("gamma        {g:.6} at eta = {eta} (client {client}; eta < {:.6e} keeps gamma < 1)", eta / g);
    if let (Some(labels), Some(k)) = (fed.labels(), fed.k()) {
        println!("rho          {:.6}", metrics::rho(&sizes, labels, k));
        println!("p_min        {:.6} (fraction of clients)", metrics::p_min(labels, k));
        let nj = metrics::cluster_samples(&sizes, labels, k);
        println!("N_j          {nj:?}");
    }
    if let Some(ts) = fed.theta_star() {
        println!("Delta        {:.6}", metrics::separation(ts));
        let norms: Vec<String> = ts.column_iter().map(|c| format!("{:.4}", c.norm())).collect();
        println!("|theta*_j|   [{}]", norms.join(", "));
    }
    if let Some(ts) = &m.test_sizes {
        println!("held-out     {} samples", ts.iter().sum::<usize>());
    }
    Ok(())
}
