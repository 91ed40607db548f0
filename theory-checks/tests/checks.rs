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
