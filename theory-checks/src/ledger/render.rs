//! The ledger as markdown: one table row per claim, then the verdict rules in the wording each
//! claim declares ([`super::claim::RuleText`]).

use super::claim::{Claim, RuleText};

/// One ledger row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// The claim, quoted short.
    pub claim: String,
    /// Paper, section / figure.
    pub source: String,
    /// What we measured (numbers with intervals and seeds).
    pub measured: String,
    /// How the row's 95 % intervals are computed.
    pub interval: String,
    /// holds / holds partly / does not hold / not testable / not measured yet.
    pub verdict: String,
    /// Cause when it differs.
    pub cause: String,
}

/// The table of `rows` and the list of the `claims`' verdict rules, with the rule every row
/// shares (a statistic needs `min_seeds` seeds).
pub fn markdown<'a>(
    rows: &[Row],
    claims: impl Iterator<Item = &'a Claim>,
    min_seeds: usize,
) -> String {
    let mut md = String::from(
        "| claim | paper | what we measured (value [95 % interval] (n = seeds)) | interval | \
         verdict | cause when it differs |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | **{}** | {} |\n",
            r.claim,
            r.source,
            r.measured,
            r.interval,
            r.verdict,
            if r.cause.is_empty() { "—" } else { &r.cause }
        ));
    }
    md.push_str(
        "\nVerdict rules, every one that `theory-checks/src/ledger/claim.rs` defines and `ledger.rs` applies (\"interval\" is \
         the row's 95 % interval). The proportionality rule was revised on 2026-11-28 to judge the \
         claim where its premise holds; the others are unchanged, and now all printed:\n",
    );
    for bullet in rule_bullets(claims) {
        md.push_str(&format!("- {bullet}\n"));
    }
    md.push_str(&format!(
        "- Every row: a statistic with no seed gives *not measured yet (cells missing)*, one with \
         fewer than {min_seeds} seeds *not measured yet*; a seed whose run failed or whose trace \
         has no rate is dropped, and the row says how many.\n",
    ));
    md
}

/// The claims' rules, one bullet per [`RuleText::New`] with its continuations.
fn rule_bullets<'a>(claims: impl Iterator<Item = &'a Claim>) -> Vec<String> {
    let mut bullets: Vec<String> = Vec::new();
    for c in claims {
        match (c.rule_text, bullets.last_mut()) {
            (RuleText::New(t), _) => bullets.push(t.to_string()),
            (RuleText::Continued(t), Some(last)) => last.push_str(t),
            (RuleText::Continued(t), None) => bullets.push(t.trim_start().to_string()),
            (RuleText::Shared | RuleText::None, _) => {}
        }
    }
    bullets
}
