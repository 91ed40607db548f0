//! The report's two tables beside the ledger, on SXY22's settings: the fitted Phase 2 rates per
//! setting and number of local steps, and SXY22 App. C's parameters against our defaults.

use super::claims_sxy22::{ORACLE, S_PREFIX, TWO_PHASE};
use super::statistics::{
    contraction_rate, final_over, median_str, per_seed, rounds_to_oracle, series, Loaded,
};
use crate::experiment::SeriesResult;
use crate::stats::{geomean_ci, mean_ci, wilson};
use std::collections::BTreeMap;

/// SXY22's settings: App. C's number and the experiment holding its cells.
const SETTINGS: [(u64, &str); 3] = [(1, "sxy22-fig1"), (2, "sxy22-fig2"), (3, "sxy22-fig3")];

/// Fitted Phase 2 contraction rates λ (per round) per setting and local solver, with the
/// number of seeds whose trace had a rate (converged, ≥ 4 rounds in the linear window).
pub fn rate_table(loaded: &BTreeMap<String, Loaded>) -> String {
    let labels: Vec<String> = [1u32, 2, 5, 10]
        .iter()
        .map(|&s| format!("{S_PREFIX}{s}"))
        .chain(std::iter::once("two-phase, FedProx".to_string()))
        .collect();
    let mut md = String::from("| setting | ");
    md.push_str(&labels.join(" | "));
    md.push_str(" |\n|---|");
    md.push_str(&"---|".repeat(labels.len()));
    md.push('\n');
    for (fig, name) in SETTINGS {
        let Some(l) = loaded.get(name) else { continue };
        md.push_str(&format!("| C.{fig} |"));
        for (i, label) in labels.iter().enumerate() {
            let v = per_seed(&l.cells, |c| contraction_rate(series(c, label)?));
            md.push_str(&format!(
                " {} |",
                mean_ci(&v, 80 + 10 * fig + i as u64).fmt(4)
            ));
        }
        md.push('\n');
    }
    md
}

/// Anchors n_H of our default per setting (`min(⌈k ln N⌉, eligible)`).
const OUR_ANCHORS: [usize; 3] = [28, 20, 20];

/// The parameter table: SXY22 App. C's choices against our defaults, one row per differing
/// parameter, measured on the SXY22 figures' cells.
pub fn parameter_table(loaded: &BTreeMap<String, Loaded>) -> String {
    let mut md = String::from(
        "| parameter | paper (App. C) | our default | setting | Phase 1 success (runs without a \
         typed error, Wilson 95 %) | final error / oracle (geometric mean, 95 % CI) | median \
         rounds to 2× oracle |\n|---|---|---|---|---|---|---|\n",
    );
    for ((fig, name), nh) in SETTINGS.into_iter().zip(OUR_ANCHORS) {
        let Some(l) = loaded.get(name) else { continue };
        for (param, paper, ours, label) in [
            ("—", "all of the paper's", "—", TWO_PHASE.to_string()),
            (
                "anchors n_H",
                "⌈3k ln k⌉ = 10",
                "min(⌈k ln N⌉, eligible)",
                format!("two-phase s=5, n_H = {nh} (our default)"),
            ),
            (
                "Phase 1 iterations T",
                "5",
                "10",
                "two-phase s=5, T = 10 (our default)".to_string(),
            ),
            (
                "n_H and T",
                "10, 5",
                &*format!("{nh}, 10"),
                format!("two-phase s=5, n_H = {nh} and T = 10 (our defaults)"),
            ),
        ] {
            let runs: Vec<&SeriesResult> =
                l.cells.iter().filter_map(|c| series(c, &label)).collect();
            let ok = runs.iter().filter(|s| s.error.is_none()).count();
            let (wl, wh) = wilson(ok, runs.len());
            let ratio = geomean_ci(
                &per_seed(&l.cells, |c| final_over(c, &label, ORACLE)),
                60 + fig,
            );
            let rounds = per_seed(&l.cells, |c| rounds_to_oracle(c, &label, ORACLE, 2.0));
            let ours = if param == "anchors n_H" {
                format!("{ours} = {nh}")
            } else {
                ours.to_string()
            };
            md.push_str(&format!(
                "| {param} | {paper} | {ours} | C.{fig} | {ok}/{} [{wl:.2}, {wh:.2}] | {} | {} |\n",
                runs.len(),
                ratio.fmt(3),
                median_str(&rounds)
            ));
        }
    }
    md
}
