//! Seed robustness (`--seeds A..B`): each check's verdict at many master seeds, counted as
//! passes, fails and inconclusive runs, with each rate's Wilson interval beside the check's
//! stated false-failure probability α = 1 %/#checks ([`crate::framework::check_alpha`]); the
//! same runs read as a power analysis of the slope tests ([`crate::power`]).

use crate::framework::{check_alpha, nan_if_null, ConstantTest, SlopeFit, Verdict};
use crate::power;
use crate::stats::wilson;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One check's outcome at one master seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeedOutcome {
    /// The master seed.
    pub seed: u64,
    /// Every test and guard held.
    pub passed: bool,
    /// A guard failed with every test holding (absent in files written before the verdict
    /// had three values, where such a run counted as a fail).
    #[serde(default)]
    pub inconclusive: bool,
    /// The decisive statistic.
    #[serde(deserialize_with = "nan_if_null")]
    pub statistic: f64,
    /// Its bound.
    #[serde(deserialize_with = "nan_if_null")]
    pub bound: f64,
    /// Fitted slopes.
    pub slopes: Vec<SlopeFit>,
    /// Measured constants against their exact values (absent in files written before them).
    #[serde(default)]
    pub constants: Vec<ConstantTest>,
    /// The commit of the binary that computed it.
    pub commit: String,
}

impl SeedOutcome {
    /// The verdict this outcome records.
    pub fn verdict(&self) -> Verdict {
        Verdict::of(self.passed, self.inconclusive)
    }
}

/// Per check: its verdicts over the seeds of the range, and its outcome at each seed computed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Robustness {
    /// Check name.
    pub name: String,
    /// Seeds of the range where it passed.
    pub passes: usize,
    /// Seeds of the range computed.
    pub seeds: usize,
    /// Seeds of the range where it failed.
    pub failing_seeds: Vec<u64>,
    /// Seeds of the range where it was inconclusive.
    #[serde(default)]
    pub inconclusive_seeds: Vec<u64>,
    /// Every outcome kept, also outside the range.
    pub outcomes: Vec<SeedOutcome>,
}

impl Robustness {
    /// A row with the `outcomes` kept from an earlier run.
    pub fn new(name: String, outcomes: Vec<SeedOutcome>) -> Self {
        Self {
            name,
            passes: 0,
            seeds: 0,
            failing_seeds: Vec::new(),
            inconclusive_seeds: Vec::new(),
            outcomes,
        }
    }

    /// Sort the outcomes by seed and recount the range `a..=b`.
    pub fn recount(&mut self, (a, b): (u64, u64)) {
        self.outcomes.sort_by_key(|o| o.seed);
        let upto: Vec<&SeedOutcome> = self
            .outcomes
            .iter()
            .filter(|o| (a..=b).contains(&o.seed))
            .collect();
        let seeds_with = |v: Verdict| -> Vec<u64> {
            upto.iter()
                .filter(|o| o.verdict() == v)
                .map(|o| o.seed)
                .collect()
        };
        self.seeds = upto.len();
        self.passes = seeds_with(Verdict::Pass).len();
        self.failing_seeds = seeds_with(Verdict::Fail);
        self.inconclusive_seeds = seeds_with(Verdict::Inconclusive);
    }

    /// Whether the check passed at every seed of the range.
    pub fn always_passed(&self) -> bool {
        self.passes == self.seeds
    }
}

/// `seed-robustness.json`: the table plus what a resumed run must match.
#[derive(Debug, Serialize, Deserialize)]
pub struct RobustnessFile {
    /// `quick` or `full`.
    pub profile: String,
    /// Wall seconds of every invocation that computed outcomes, summed.
    pub wall_seconds: f64,
    /// One row per check.
    pub checks: Vec<Robustness>,
}

/// Recount `table` for master seeds `a..=b` and write `seed-robustness.{md,json}`,
/// `power.{md,json}` (with the detectable-effect table) and `detectable-effect.json` into
/// `out`, each atomically.
///
/// # Errors
/// An I/O or serialisation error, as text.
pub fn write(
    out: &Path,
    table: &mut [Robustness],
    profile: &str,
    (a, b): (u64, u64),
    secs: f64,
) -> Result<(), String> {
    for row in table.iter_mut() {
        row.recount((a, b));
    }
    let md = markdown(table, profile, (a, b), secs);
    fedmix::io::write_atomic(&out.join("seed-robustness.md"), md.as_bytes())
        .map_err(|e| e.to_string())?;
    let file = serde_json::json!({
        "profile": profile,
        "wall_seconds": secs,
        "checks": &*table,
    });
    let json = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    fedmix::io::write_atomic(&out.join("seed-robustness.json"), json.as_bytes())
        .map_err(|e| e.to_string())?;
    // The same runs, read as a power analysis of the slope tests.
    let in_range = |row: &Robustness| -> Vec<SeedOutcome> {
        row.outcomes
            .iter()
            .filter(|o| (a..=b).contains(&o.seed))
            .cloned()
            .collect()
    };
    let runs: Vec<(String, u64, Vec<SlopeFit>)> = table
        .iter()
        .flat_map(|row| {
            in_range(row)
                .into_iter()
                .map(|o| (row.name.clone(), o.seed, o.slopes))
        })
        .collect();
    let rows = power::power_table(&runs);
    let constant_runs: Vec<(String, u64, Vec<ConstantTest>)> = table
        .iter()
        .flat_map(|row| {
            in_range(row)
                .into_iter()
                .map(|o| (row.name.clone(), o.seed, o.constants))
        })
        .collect();
    let effects = power::effect_table(&constant_runs);
    if !rows.is_empty() || !effects.is_empty() {
        let header = format!(
            "Master seeds {a}..={b}, {profile} profile, from the runs of [seed-robustness.md](seed-robustness.md)."
        );
        let mut md = power::power_markdown(&rows, &header);
        if !effects.is_empty() {
            md.push_str(&power::effect_markdown(&effects));
        }
        fedmix::io::write_atomic(&out.join("power.md"), md.as_bytes())
            .map_err(|e| e.to_string())?;
        let json = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        fedmix::io::write_atomic(&out.join("power.json"), json.as_bytes())
            .map_err(|e| e.to_string())?;
        let json = serde_json::to_string_pretty(&effects).map_err(|e| e.to_string())?;
        fedmix::io::write_atomic(&out.join("detectable-effect.json"), json.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A rate `x/n` with its 95 % Wilson interval, e.g. `0/100 [0, 0.037]`.
fn rate(x: usize, n: usize) -> String {
    let (lo, hi) = wilson(x, n);
    format!("{x}/{n} [{}, {}]", short(lo), short(hi))
}

fn short(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else {
        format!("{p:.2e}")
    }
}

/// Whether the fail rate is shown to exceed α: the Wilson interval lies above it.
fn above_alpha(fails: usize, n: usize, alpha: f64) -> bool {
    n > 0 && wilson(fails, n).0 > alpha
}

/// The `seed-robustness.md` text for master seeds `a..=b`.
pub fn markdown(table: &[Robustness], profile: &str, (a, b): (u64, u64), secs: f64) -> String {
    let alpha = check_alpha();
    let mut md = format!(
        "# Theory checks: seed robustness\n\nMaster seeds {a}..={b}, {profile} profile, {secs:.0} s. \
         Power of the slope tests over the same runs: [power.md](power.md).\n\n\
         Each check states a false-failure probability α = 1 %/#checks = {alpha:.2e}. A run is a \
         fail when a test fails and inconclusive when only a guard of the design failed (the \
         check could not test: a region it speaks about unreached, a bound that does not bite, \
         a test without power); intervals are 95 % Wilson intervals of the rate over the seeds. \
         A fail rate whose interval lies above α would show the check's stated α false (column \
         \"above α\"); with n seeds a rate below about 3.7/n cannot be told from α.\n\n\
         | check | passes / seeds | fails [95 % Wilson] | above α | inconclusive [95 % Wilson] | failing seeds | inconclusive seeds |\n|---|---|---|---|---|---|---|\n"
    );
    // Which binaries computed the outcomes (a resumed run may span commits).
    let mut commits: Vec<(String, usize)> = Vec::new();
    for o in table.iter().flat_map(|r| &r.outcomes) {
        match commits.iter_mut().find(|(c, _)| *c == o.commit) {
            Some((_, n)) => *n += 1,
            None => commits.push((o.commit.clone(), 1)),
        }
    }
    if !commits.is_empty() {
        let list: Vec<String> = commits
            .iter()
            .map(|(c, n)| format!("`{c}` ({n})"))
            .collect();
        md.insert_str(
            md.find("\n\nEach check").unwrap_or(md.len()),
            &format!(" (check, seed) outcomes computed by: {}.", list.join(", ")),
        );
    }
    let span = usize::try_from(b.saturating_sub(a) + 1).unwrap_or(usize::MAX);
    if table.iter().any(|r| r.seeds < span) {
        md.insert_str(
            md.find("| check |").unwrap_or(md.len()),
            &format!(
                "*Rows counting fewer than {span} seeds are not computed at every seed of the \
                 range yet (a run in progress, continued by `--resume`); their rates are over \
                 the seeds they have.*\n\n"
            ),
        );
    }
    let seeds = |s: &[u64]| -> String {
        if s.is_empty() {
            "—".into()
        } else {
            s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        }
    };
    for row in table {
        let fails = row.failing_seeds.len();
        md.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {} | {} |\n",
            row.name,
            row.passes,
            row.seeds,
            rate(fails, row.seeds),
            if above_alpha(fails, row.seeds, alpha) {
                "**yes**"
            } else {
                "no"
            },
            rate(row.inconclusive_seeds.len(), row.seeds),
            seeds(&row.failing_seeds),
            seeds(&row.inconclusive_seeds),
        ));
    }
    let all = table.iter().filter(|r| r.always_passed()).count();
    let above = table
        .iter()
        .filter(|r| above_alpha(r.failing_seeds.len(), r.seeds, alpha))
        .count();
    md.push_str(&format!(
        "\n{all} of {} checks pass at every seed; {above} fail more often than their α.\n",
        table.len()
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(seed: u64, passed: bool, inconclusive: bool) -> SeedOutcome {
        SeedOutcome {
            seed,
            passed,
            inconclusive,
            statistic: 0.0,
            bound: 1.0,
            slopes: Vec::new(),
            constants: Vec::new(),
            commit: "c".into(),
        }
    }

    #[test]
    fn recount_separates_fails_from_inconclusive_runs_within_the_range() {
        let mut row = Robustness::new(
            "x".into(),
            vec![
                outcome(3, false, false),
                outcome(1, true, false),
                outcome(2, false, true),
                outcome(9, false, false),
            ],
        );
        row.recount((1, 3));
        assert_eq!((row.passes, row.seeds), (1, 3));
        assert_eq!(row.failing_seeds, vec![3]);
        assert_eq!(row.inconclusive_seeds, vec![2]);
        assert!(!row.always_passed());
        assert_eq!(
            row.outcomes.iter().map(|o| o.seed).collect::<Vec<_>>(),
            vec![1, 2, 3, 9]
        );
    }

    #[test]
    fn a_fail_rate_is_above_alpha_only_when_its_interval_is() {
        // 0 of 100: the Wilson interval [0, 0.037] contains any small α.
        assert!(!above_alpha(0, 100, 4e-4));
        // 1 of 100: lower limit 1.8e-3 > 4e-4 (a one-sided binomial p-value of 0.04 at α = 4e-4).
        assert!(above_alpha(1, 100, 4e-4));
        assert!(!above_alpha(1, 100, 0.01));
        assert!(!above_alpha(0, 0, 0.0));
    }

    #[test]
    fn an_old_file_without_the_inconclusive_field_reads_as_pass_or_fail() {
        let json = r#"{"seed": 4, "passed": false, "statistic": 2.0, "bound": 1.0, "slopes": [], "commit": "x"}"#;
        let o: SeedOutcome = serde_json::from_str(json).unwrap();
        assert_eq!(o.verdict(), Verdict::Fail);
    }

    /// A failed run's NaN statistic is written as `null` (JSON has no NaN); `--resume` must
    /// read it back as NaN, still a fail, instead of refusing the whole file.
    #[test]
    fn a_nan_statistic_round_trips_through_the_resumable_file() {
        let mut o = outcome(7, false, false);
        o.statistic = f64::NAN;
        o.bound = f64::INFINITY;
        let text = serde_json::to_string(&o).unwrap();
        assert!(text.contains("\"statistic\":null"), "{text}");
        let back: SeedOutcome = serde_json::from_str(&text).unwrap();
        assert!(back.statistic.is_nan() && back.bound.is_nan());
        assert_eq!(back.verdict(), Verdict::Fail);
    }

    /// A run in progress rewrites the files after every seed: each row counts the seeds it has
    /// over the whole range (the checks not selected keep their counts), and the text says
    /// which rows are partial.
    #[test]
    fn a_partial_run_counts_each_row_over_the_seeds_it_has() {
        let mut table = vec![
            Robustness::new(
                "done".into(),
                (1..=20).map(|s| outcome(s, true, false)).collect(),
            ),
            Robustness::new(
                "running".into(),
                (1..=4).map(|s| outcome(s, true, false)).collect(),
            ),
        ];
        for row in &mut table {
            row.recount((1, 20));
        }
        assert_eq!((table[0].passes, table[0].seeds), (20, 20));
        assert_eq!((table[1].passes, table[1].seeds), (4, 4));
        let md = markdown(&table, "full", (1, 20), 1.0);
        assert!(
            md.contains("| done | 20/20 |") && md.contains("| running | 4/4 |"),
            "{md}"
        );
        assert!(md.contains("Rows counting fewer than 20 seeds"), "{md}");
        assert!(md.find("Rows counting").unwrap() < md.find("| check |").unwrap());
        table.truncate(1);
        assert!(!markdown(&table, "full", (1, 20), 1.0).contains("Rows counting"));
    }
}
