//! The run keys each algorithm is said to read (`fedmix::params::keys_of`) are exactly what
//! `fedmix run` may refuse: a key outside the list is rejected with the algorithm's name, so the
//! list must never omit a key the algorithm reads. Shown here by running every algorithm with
//! every key outside its list changed to a valid non-default value and asserting the final
//! models and labels are bit-identical — the key was indeed ignored. (`KEYS` agrees with the
//! fields of `RunConfig`; a key the lists name is a real key.)

use fedmix::algorithms::registry::build;
use fedmix::engine::recorder::Recorder;
use fedmix::params::{check_applicable, keys_of, AlgorithmKind, RunConfig};
use fedmix::synthetic::generate_named;

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A valid value of `key` that differs from the base configuration below.
fn other_value(key: &str) -> &'static str {
    match key {
        "eta" => "0.05",
        "eta_gamma" => "0.5",
        "local_steps" => "2",
        "local_solver" => "fedprox",
        "rounds" => "3",
        "phase1_variant" => "faithful",
        "phase1_iterations" => "3",
        "anchors" => "4",
        "anchor_min_samples" => "3",
        "epsilon" => "0.1",
        "separation" => "1.5",
        "alpha" => "0.5",
        "beta" => "2.0",
        "pairing" => "halves",
        "subspace" => "orthogonal-iteration",
        "t1" => "20",
        "t2" => "50",
        "m" => "3",
        "ell" => "2",
        "init_scale" => "2.0",
        "k" => "3",
        "restarts" => "2",
        "participation" => "0.5",
        "replicate_batch" => "4",
        "ifca_option" => "gradient",
        "ifca_init" => "bernoulli",
        "ifca_official_inits" => "2",
        "ifca_official_lrs" => "[0.5]",
        "ifca_official_iterations" => "7",
        "ifca_official_sigma" => "0.3",
        "ifca_official_offset" => "0.01",
        "local_ridge" => "0.1",
        "kmeans_inits" => "2",
        "kmeans_max_iter" => "7",
        "srfca_lambda" => "0.5",
        "srfca_lambda_quantile" => "0.3",
        "srfca_size" => "1",
        "srfca_beta" => "0.2",
        "srfca_refine_steps" => "1",
        "srfca_local_iterations" => "3",
        "srfca_refine_rounds" => "7",
        "srfca_dist" => "cross-loss",
        "srfca_diameter" => "10.0",
        "cfl_eps1" => "0.5",
        "cfl_eps2" => "0.5",
        "cfl_gamma_max" => "0.5",
        "cfl_warmup_rounds" => "2",
        other => panic!("no test value for key `{other}`"),
    }
}

const BASE: &[(&str, &str)] = &[
    ("rounds", "5"),
    ("ifca_official_iterations", "5"),
    ("ifca_official_inits", "3"),
    ("srfca_refine_rounds", "10"),
    ("kmeans_max_iter", "20"),
];

#[test]
fn keys_agree_with_the_configuration_fields() {
    let json = serde_json::to_value(RunConfig::default()).unwrap();
    let fields: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut declared: Vec<&str> = RunConfig::KEYS.to_vec();
    let mut serialised = fields.clone();
    declared.sort_unstable();
    serialised.sort_unstable();
    assert_eq!(declared, serialised);
    for kind in AlgorithmKind::ALL {
        for key in keys_of(kind) {
            assert!(RunConfig::KEYS.contains(&key), "{kind}: {key}");
        }
    }
    // Every key is read by at least one algorithm.
    for key in RunConfig::KEYS {
        assert!(
            AlgorithmKind::ALL.iter().any(|&k| keys_of(k).contains(key)),
            "{key} is read by no algorithm"
        );
    }
}

#[test]
fn keys_outside_an_algorithms_list_do_not_change_its_result() {
    let fed = generate_named(
        "sxy-balanced",
        3,
        &sets(&[("d", "6"), ("clients", "24"), ("samples", "20"), ("k", "2")]),
    )
    .unwrap()
    .train;
    let base = RunConfig::from_sources(None, &sets(BASE)).unwrap();
    let mut checked = 0;
    for kind in AlgorithmKind::ALL {
        let run = |cfg: &RunConfig| {
            let alg = build(kind, cfg, None, Some(0.3)).unwrap();
            alg.run(&fed, 11, &mut Recorder::quiet())
                .map(|o| {
                    (
                        o.theta_hat.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        o.labels,
                    )
                })
                .map_err(|e| e.to_string())
        };
        let reference = run(&base);
        assert!(reference.is_ok(), "{kind}: {reference:?}");
        let reads = keys_of(kind);
        for key in RunConfig::KEYS.iter().filter(|k| !reads.contains(k)) {
            let mut s = sets(BASE);
            s.retain(|(k, _)| k != key);
            s.push((key.to_string(), other_value(key).to_string()));
            let cfg = RunConfig::from_sources(None, &s)
                .unwrap_or_else(|e| panic!("{key} = {}: {e}", other_value(key)));
            assert_ne!(cfg, base, "{key}: the test value equals the base");
            assert_eq!(
                run(&cfg),
                reference,
                "{kind} reads `{key}` but does not list it"
            );
            assert!(check_applicable(kind, [(*key, "1".to_string())]).is_err());
            checked += 1;
        }
        assert!(check_applicable(kind, reads.iter().map(|k| (*k, "1".to_string()))).is_ok());
    }
    assert!(checked > 300, "{checked}");
}

#[test]
fn an_inapplicable_key_is_refused_with_the_algorithm_and_its_keys() {
    let e = RunConfig::from_sources_for(AlgorithmKind::Ifca, None, &sets(&[("anchors", "5")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("anchors") && e.contains("`ifca`"), "{e}");
    assert!(e.contains("restarts"), "lists the keys it takes: {e}");
    let text = "anchors = 5\n";
    let e = RunConfig::from_sources_for(
        AlgorithmKind::Local,
        Some((std::path::Path::new("c.toml"), text)),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`local`"), "{e}");
    assert!(
        RunConfig::from_sources_for(AlgorithmKind::TwoPhase, None, &sets(&[("anchors", "5")]))
            .is_ok()
    );
}

#[test]
fn an_unknown_key_gets_the_nearest_key_or_where_it_belongs() {
    let msg = |k: &str| {
        RunConfig::from_sources(None, &sets(&[(k, "3")]))
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
    let m = RunConfig::from_sources(Some((std::path::Path::new("c.toml"), text)), &[])
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("in c.toml") && m.contains("`local_steps`"),
        "{m}"
    );
}
