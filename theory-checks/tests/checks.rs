//! Every theory check passes in the quick profile, and fails when sabotaged (a check must be
//! able to fail).

use theory_checks::{registry, CheckConfig};

const SEED: u64 = 20221;

#[test]
fn every_check_passes_and_fails_when_sabotaged() {
    for (name, f) in registry() {
        let ok = f(&CheckConfig::quick(SEED));
        ok.print();
        assert!(ok.passed, "{name} failed in the quick profile");
        let broken = f(&CheckConfig::quick(SEED).sabotaged());
        broken.print();
        assert!(!broken.passed, "{name} passed although sabotaged");
    }
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
    assert_eq!(names.len(), 22);
    assert_eq!(names, committed);
}
