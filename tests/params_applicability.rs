//! Keys an algorithm does not read are refused with the algorithm's name and its keys, and an
//! unknown key gets the nearest key or the place it belongs. (That each algorithm's key list
//! omits no key it reads is shown by a unit test of `fedmix::params::algorithm`, which runs
//! every algorithm with every other key changed.)

use fedmix::algorithms::AlgorithmParams;
use fedmix::params::AlgorithmKind;

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn an_inapplicable_key_is_refused_with_the_algorithm_and_its_keys() {
    let e = AlgorithmParams::from_sources(AlgorithmKind::Ifca, None, &sets(&[("anchors", "5")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("anchors") && e.contains("`ifca`"), "{e}");
    assert!(e.contains("restarts"), "lists the keys it takes: {e}");
    let text = "anchors = 5\n";
    let e = AlgorithmParams::from_sources(
        AlgorithmKind::Local,
        Some((std::path::Path::new("c.toml"), text)),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`local`"), "{e}");
    // FedSoft's local update is always gradient steps: `local_solver` is not its key.
    let e = AlgorithmParams::from_sources(
        AlgorithmKind::FedSoft,
        None,
        &sets(&[("local_solver", "fedprox")]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("local_solver") && e.contains("`fedsoft`"), "{e}");
    assert!(e.contains("fedsoft_lambda"), "lists the keys it takes: {e}");
    assert!(AlgorithmParams::from_sources(
        AlgorithmKind::TwoPhase,
        None,
        &sets(&[("anchors", "5")])
    )
    .is_ok());
}

#[test]
fn an_unknown_key_gets_the_nearest_key_or_where_it_belongs() {
    let msg = |k: &str| {
        AlgorithmParams::from_sources(AlgorithmKind::TwoPhase, None, &sets(&[(k, "3")]))
            .unwrap_err()
            .to_string()
    };
    let m = msg("local_step");
    assert!(
        m.contains("unknown key `local_step`") && m.contains("did you mean `local_steps`?"),
        "{m}"
    );
    assert!(msg("restart").contains("did you mean `restarts`?"));
    assert!(msg("ifca_optoin").contains("did you mean `ifca_option`?"));
    let m = msg("sigma");
    assert!(
        m.contains("data parameter") && m.contains("--setting"),
        "{m}"
    );
    let m = msg("zzz");
    assert!(m.contains("the run keys are eta, eta_gamma"), "{m}");
    let text = "rounds = 3\nlocal_step = 2\n";
    let m = AlgorithmParams::from_sources(
        AlgorithmKind::TwoPhase,
        Some((std::path::Path::new("c.toml"), text)),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        m.contains("in c.toml") && m.contains("`local_steps`"),
        "{m}"
    );
}
