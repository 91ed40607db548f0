//! Every theory check passes in the quick profile, and fails when sabotaged (a check must be
//! able to fail); and every check reports, number for number, the quick-profile record pinned in
//! [`REFERENCE`].

use serde_json::Value;
use std::path::PathBuf;
use theory_checks::framework::Verdict;
use theory_checks::{registry, CheckConfig};

const SEED: u64 = 20221;

/// The quick-profile records of every check at [`SEED`] (claim, statistic, bound, constant,
/// slopes, verdict, detail lines and figure data), as written by this test with
/// `THEORY_CHECKS_BLESS=1`. A regression reference, not a value from the papers: it pins what the
/// checks report, so a change to a check's arithmetic, its report or its figure — deliberate or
/// not — fails here until the reference is regenerated (and the change reviewed in its diff).
const REFERENCE: &str = "tests/data/quick-report-20221.json";

/// Relative tolerance on numbers stored as JSON numbers (statistics, figure data): far above
/// the rounding differences of another CPU's kernels, far below any change of arithmetic.
const JSON_RTOL: f64 = 1e-9;

#[test]
fn every_check_passes_fails_when_sabotaged_and_reports_the_pinned_numbers() {
    let mut records = Vec::new();
    for (name, f) in registry() {
        let ok = f(&CheckConfig::quick(SEED));
        ok.print();
        assert_eq!(ok.verdict(), Verdict::Pass, "{name} in the quick profile");
        let broken = f(&CheckConfig::quick(SEED).sabotaged());
        broken.print();
        // Sabotage must fail a test, not only leave the check unable to test.
        assert_eq!(broken.verdict(), Verdict::Fail, "{name} sabotaged");
        records.push(serde_json::to_value(&ok).expect("records serialise"));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(REFERENCE);
    if std::env::var_os("THEORY_CHECKS_BLESS").is_some() {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(&records).expect("records serialise");
        std::fs::write(&tmp, text + "\n").expect("write the reference");
        std::fs::rename(&tmp, &path).expect("replace the reference");
        return;
    }
    let pinned: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(&path).expect("the pinned quick-profile report"),
    )
    .expect("the reference parses");
    assert_eq!(pinned.len(), records.len(), "one pinned record per check");
    let differences: Vec<String> = records
        .iter()
        .zip(&pinned)
        .flat_map(|(got, want)| {
            let mut out = Vec::new();
            compare(got, want, got["name"].as_str().unwrap_or("?"), &mut out);
            out
        })
        .collect();
    assert!(
        differences.is_empty(),
        "{} differences from {REFERENCE} (regenerate with THEORY_CHECKS_BLESS=1 if the change is \
         intended):\n{}",
        differences.len(),
        differences
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Record every difference between `got` and the pinned `want` under `at`: numbers within
/// [`JSON_RTOL`], strings equal up to one unit in the last printed digit of each decimal number
/// (a rounding flip), everything else exactly.
fn compare(got: &Value, want: &Value, at: &str, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            if !((a - b).abs() <= JSON_RTOL * a.abs().max(b.abs()) || a.to_bits() == b.to_bits()) {
                out.push(format!("{at}: {a:e} vs pinned {b:e}"));
            }
        }
        (Value::String(a), Value::String(b)) => {
            if !same_text(a, b) {
                out.push(format!("{at}:\n    got    {a}\n    pinned {b}"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare(x, y, &format!("{at}[{i}]"), out);
            }
        }
        (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
            for (k, x) in a {
                match b.get(k) {
                    Some(y) => compare(x, y, &format!("{at}.{k}"), out),
                    None => out.push(format!("{at}: field {k} not pinned")),
                }
            }
        }
        _ if got == want => {}
        _ => out.push(format!("{at}: {got} vs pinned {want}")),
    }
}

/// A decimal number as printed (`12`, `-0.4758`, `1.9044e-1`), with one unit in its last
/// printed digit; integers have no tolerance (counts must match exactly).
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Text(&'a str),
    Number { value: f64, ulp: f64 },
}

fn tokens(s: &str) -> Vec<Token<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut text_start) = (0, 0);
    while i < b.len() {
        // A number starts at a digit not preceded by a letter, digit or '_' (so `C2`, `x1` and
        // `θ_2` stay text).
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
        let mut j = i;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let mut decimals = 0i32;
        if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
                decimals += 1;
            }
        }
        let mut exponent = 0i32;
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            let mut e = j + 1;
            if e < b.len() && (b[e] == b'-' || b[e] == b'+') {
                e += 1;
            }
            let digits = e;
            while e < b.len() && b[e].is_ascii_digit() {
                e += 1;
            }
            if e > digits {
                exponent = s[j + 1..e].parse().expect("digits");
                j = e;
            }
        }
        out.push(Token::Text(&s[text_start..start]));
        let value: f64 = s[start..j].parse().expect("a decimal number");
        let ulp = if decimals == 0 && exponent == 0 {
            0.0
        } else {
            10f64.powi(exponent - decimals)
        };
        out.push(Token::Number { value, ulp });
        text_start = j;
        i = j;
    }
    out.push(Token::Text(&s[text_start..]));
    out
}

/// Two printed lines agree: the same text, and each number within one unit of its last printed
/// digit (plus a relative 10⁻¹² for float noise in the last place). A timing — a number printed
/// as `(… s)`, seconds of wall time — is not compared.
fn same_text(a: &str, b: &str) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    let timing = |t: &[Token], i: usize| matches!(t.get(i + 1), Some(Token::Text(x)) if x.starts_with(" s)"));
    ta.len() == tb.len()
        && ta.iter().zip(&tb).enumerate().all(|(i, pair)| match pair {
            (Token::Text(x), Token::Text(y)) => x == y,
            (Token::Number { .. }, Token::Number { .. }) if timing(&ta, i) => true,
            (
                Token::Number { value: x, ulp: u },
                Token::Number {
                    value: y, ulp: v, ..
                },
            ) => u == v && (x - y).abs() <= u * (1.0 + 1e-9) + 1e-12 * x.abs().max(y.abs()),
            _ => false,
        })
}

#[test]
fn printed_numbers_compare_to_their_last_digit_and_counts_exactly() {
    // A rounding flip in the last printed digit passes.
    assert!(same_text("c = 0.4758 (ok)", "c = 0.4759 (ok)"));
    assert!(same_text("ratio 1.9044e-1", "ratio 1.9045e-1"));
    // Two units, a count, a sign, a precision or a word do not.
    assert!(!same_text("c = 0.4758 (ok)", "c = 0.4760 (ok)"));
    assert!(!same_text("ratio 1.9044e-1", "ratio 1.9044e-2"));
    assert!(!same_text("12 of 300 replicates", "13 of 300 replicates"));
    assert!(!same_text("slope -0.50", "slope 0.50"));
    assert!(!same_text("c = 0.476", "c = 0.4760"));
    assert!(!same_text("verdict ok", "verdict FAIL"));
    // Wall times `(… s)` are not compared; other numbers before `s` are.
    assert!(same_text("ratio 1.3e-2 (0.16 s)", "ratio 1.3e-2 (0.28 s)"));
    assert!(!same_text("ratio 1.3e-2 (0.16 s)", "ratio 1.5e-2 (0.28 s)"));
    assert!(!same_text("with 2 s", "with 3 s"));
    // Digits inside names are text: `C2` and `θ_2` stay words, so only the value is a number.
    assert_eq!(
        tokens("C2 = 3.5"),
        vec![
            Token::Text("C2 = "),
            Token::Number {
                value: 3.5,
                ulp: 0.1
            },
            Token::Text(""),
        ]
    );
    // JSON numbers: relative 10⁻⁹.
    let mut out = Vec::new();
    compare(
        &serde_json::json!(1.0),
        &serde_json::json!(1.0 + 1e-12),
        "x",
        &mut out,
    );
    assert!(out.is_empty());
    compare(
        &serde_json::json!(1.0),
        &serde_json::json!(1.0 + 1e-6),
        "x",
        &mut out,
    );
    assert_eq!(out.len(), 1);
}

/// The registry holds every check, and only those, in report order: its names are exactly the
/// checks of the committed full-profile run (`docs/theory/summary.json`, one record per check),
/// so a check dropped from the registry (or an empty registry, which the loop above would pass)
/// fails here.
#[test]
fn the_registry_is_every_committed_check() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/theory/summary.json");
    let summary: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let committed: Vec<&str> = summary
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let names: Vec<&str> = registry().iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), 24);
    assert_eq!(names, committed);
}
