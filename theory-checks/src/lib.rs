//! Empirical checks of the lemma-level bounds of SXY22, IFCA and SR-FCA, one module per
//! lemma/theorem under [`checks`] (the methodology is in [`framework`]). Each check is a
//! deterministic, seeded experiment that returns a [`CheckRecord`] and prints its statistic next
//! to its bound; the runner
//! (`cargo run --release -p theory-checks`) writes every record, figure and a summary table to
//! `docs/theory/`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Tolerance tests are written `!(x <= tol)` (fail unless provably within), never `x > tol`,
// which a NaN passes; the lint would rewrite the first into the second.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod check_docs;
pub mod checks;
pub mod experiment;
pub mod figure;
pub mod framework;
pub mod ledger;
pub mod power;
pub mod report;
pub mod robustness;
pub mod stats;
pub mod style;
/// The progress display, shared with the `fedmix` CLI.
pub use fedmix::progress;

pub use framework::{Check, CheckConfig, CheckRecord, Profile};

/// Every check, in report order.
pub fn registry() -> Vec<Check> {
    checks::all()
}

/// The checks named in `only` (comma-separated), or every check.
pub fn selected(only: Option<&str>) -> Vec<Check> {
    registry()
        .into_iter()
        .filter(|(name, _)| only.is_none_or(|o| o.split(',').any(|x| x == *name)))
        .collect()
}

/// Run every check under `cfg`, printing each record as it completes.
pub fn run_all(cfg: &CheckConfig, only: Option<&str>) -> Vec<CheckRecord> {
    run_selected(cfg, only, true)
}

/// Run the checks named in `only` under `cfg`; print each record in full when `verbose`, else
/// one verdict line per check.
pub fn run_selected(cfg: &CheckConfig, only: Option<&str>, verbose: bool) -> Vec<CheckRecord> {
    let chosen = selected(only);
    let progress = progress::Progress::new("theory checks", chosen.len());
    let records = chosen
        .into_iter()
        .enumerate()
        .map(|(i, (name, f))| {
            let started = std::time::Instant::now();
            let mut r = f(cfg);
            r.details.push(format!(
                "wall time {:.2} s",
                started.elapsed().as_secs_f64()
            ));
            progress.println(&if verbose {
                r.summary_line()
            } else {
                format!("[{}] {} (seed {})", r.verdict().label(), r.name, cfg.seed)
            });
            progress.step(i + 1, name);
            r
        })
        .collect();
    progress.finish();
    records
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_suite_size_is_the_registrys() {
        assert_eq!(super::registry().len(), super::framework::SUITE_SIZE);
    }
}
