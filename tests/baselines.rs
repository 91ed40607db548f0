//! Tests of the baselines — vanilla FedAvg, local estimates, one-shot clustering (IFCA
//! Algorithm 1), IFCA (Algorithm 2) and its official-code mode, oracle labels, SR-FCA (SR-FCA
//! Algorithms 1–4), CFL (Sattler et al.) and FedSoft (Ruan & Joe-Wong; its own tests are in
//! `tests/fedsoft.rs`): determinism, client-order invariance, clustering on well-separated data,
//! oracle labels, SR-FCA recovery, CFL's index mapping, typed errors, and the CLI names.

use fedmix::algorithms::cfl::CflConfig;
use fedmix::algorithms::cfl::CflSummary;
use fedmix::algorithms::cfl::{Cfl, Split};
use fedmix::algorithms::fedavg::FedAvg;
use fedmix::algorithms::fedavg::FedAvgParams;
use fedmix::algorithms::fedsoft::FedSoft;
use fedmix::algorithms::fedsoft::FedSoftConfig;
use fedmix::algorithms::ifca::{Ifca, IfcaOfficial};
use fedmix::algorithms::ifca::{IfcaConfig, IfcaOfficialConfig};
use fedmix::algorithms::local::Local;
use fedmix::algorithms::local::LocalParams;
use fedmix::algorithms::one_shot::OneShot;
use fedmix::algorithms::one_shot::OneShotParams;
use fedmix::algorithms::oracle_labels::OracleLabels;
use fedmix::algorithms::oracle_labels::OracleLabelsParams;
use fedmix::algorithms::sr_fca::SrFca;
use fedmix::algorithms::sr_fca::SrfcaConfig;
use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::contract::{Algorithm, RunOutput};
use fedmix::engine::recorder::Recorder;
use fedmix::error::FedmixError;
use fedmix::federation::Federation;
use fedmix::metrics::misclustering;
use fedmix::params::IfcaOption;
use fedmix::params::LocalSolver;
use fedmix::params::SrfcaDist;
use fedmix::params::{AlgorithmKind, Phase2Config, StepRule};
use fedmix::params::{ParamGuard, Valid};
use fedmix::synthetic::generate_named;
use std::collections::HashMap;

/// Parameters the tests write, checked as every algorithm's parameters are.
fn ok<P: ParamGuard>(p: P) -> Valid<P> {
    p.check().expect("test parameters in range")
}

fn sets(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// k = 3, d = 5, M = 60, n_i = 30, ‖θ*_j‖ ≈ 3, σ = 0.1: local estimates are accurate and the
/// clusters far apart.
fn separated(seed: u64, labels: &str) -> Federation {
    generate_named(
        "sxy-balanced",
        seed,
        &sets(&[
            ("d", "5"),
            ("clients", "60"),
            ("samples", "30"),
            ("r", "3"),
            ("labels", labels),
        ]),
    )
    .unwrap()
    .train
}

/// Phase 2 of every test algorithm: 60 rounds, the other keys at their defaults.
fn p2() -> Phase2Config {
    Phase2Config {
        rounds: 60,
        ..Phase2Config::default()
    }
}

/// `p2` with local solver FedProx.
fn fedprox() -> Phase2Config {
    Phase2Config {
        local_solver: LocalSolver::Fedprox,
        ..p2()
    }
}

fn ifca() -> IfcaConfig {
    IfcaConfig {
        phase2: p2(),
        ..IfcaConfig::default()
    }
}

fn ifca_official() -> IfcaOfficialConfig {
    IfcaOfficialConfig::default()
}

fn fedavg() -> FedAvgParams {
    FedAvgParams {
        phase2: p2(),
        ..FedAvgParams::default()
    }
}

fn local() -> LocalParams {
    LocalParams::default()
}

fn one_shot() -> OneShotParams {
    OneShotParams {
        phase2: p2(),
        ..OneShotParams::default()
    }
}

fn oracle_labels() -> OracleLabelsParams {
    OracleLabelsParams { phase2: p2() }
}

fn srfca() -> SrfcaConfig {
    SrfcaConfig {
        phase2: p2(),
        ..SrfcaConfig::default()
    }
}

fn cfl() -> CflConfig {
    CflConfig {
        phase2: p2(),
        ..CflConfig::default()
    }
}

fn fedsoft() -> FedSoft {
    FedSoft {
        params: ok(FedSoftConfig {
            phase2: p2(),
            interval: 2,
            ..FedSoftConfig::default()
        }),
        init: None,
    }
}

/// Every baseline algorithm (and the IFCA, FedAvg, local, SR-FCA and CFL variants), with small
/// settings.
fn algorithms() -> Vec<Box<dyn Algorithm>> {
    vec![
        Box::new(Ifca {
            params: ok(IfcaConfig {
                restarts: 2,
                participation: 0.5,
                ..ifca()
            }),
            init: None,
        }),
        Box::new(Ifca {
            params: ok(IfcaConfig {
                option: IfcaOption::Gradient,
                ..ifca()
            }),
            init: None,
        }),
        Box::new(IfcaOfficial {
            params: ok(IfcaOfficialConfig {
                k: Some(2),
                inits: 2,
                iterations: 20,
                lrs: Some(vec![0.1, 0.01]),
                ..ifca_official()
            }),
            data_sigma: Some(0.1),
        }),
        Box::new(FedAvg {
            params: ok(fedavg()),
        }),
        Box::new(FedAvg {
            params: ok(FedAvgParams {
                participation: 0.3,
                phase2: fedprox(),
                ..fedavg()
            }),
        }),
        Box::new(Ifca {
            params: ok(IfcaConfig {
                phase2: fedprox(),
                ..ifca()
            }),
            init: None,
        }),
        Box::new(Local {
            params: ok(local()),
        }),
        Box::new(Local {
            params: ok(LocalParams { ridge: 0.1 }),
        }),
        Box::new(OneShot {
            params: ok(one_shot()),
        }),
        Box::new(OracleLabels {
            params: ok(oracle_labels()),
        }),
        Box::new(SrFca {
            params: ok(SrfcaConfig {
                refine_rounds: 40,
                ..srfca()
            }),
        }),
        Box::new(SrFca {
            params: ok(SrfcaConfig {
                refine_rounds: 40,
                dist: SrfcaDist::CrossLoss,
                local_iterations: Some(30),
                ..srfca()
            }),
        }),
        Box::new(Cfl { params: ok(cfl()) }),
        Box::new(Cfl {
            params: ok(CflConfig {
                phase2: fedprox(),
                ..cfl()
            }),
        }),
        Box::new(fedsoft()),
    ]
}

#[test]
fn same_seed_gives_bit_identical_models() {
    let fed = separated(1, "iid");
    for alg in algorithms() {
        let a = alg.run(&fed, 7, &mut Recorder::quiet()).unwrap();
        let b = alg.run(&fed, 7, &mut Recorder::new(true)).unwrap();
        let bits = |o: &RunOutput| o.theta_hat.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "{}", alg.name());
        assert_eq!(a.labels, b.labels, "{}", alg.name());
    }
    // The seed matters where randomness is used (participation sampling, random init).
    let ifca = &algorithms()[0];
    let a = ifca.run(&fed, 7, &mut Recorder::quiet()).unwrap();
    let c = ifca.run(&fed, 8, &mut Recorder::quiet()).unwrap();
    assert_ne!(a.theta_hat, c.theta_hat);
}

/// `b` ran on the clients of `a` in the order `perm` (client j of b = client perm[j] of a).
/// Labels must correspond one-to-one and matched models agree to `tol` (relative).
fn same_up_to_relabel(a: &RunOutput, b: &RunOutput, perm: &[usize], tol: f64, name: &str) {
    let mut map: HashMap<usize, usize> = HashMap::new();
    let mut back: HashMap<usize, usize> = HashMap::new();
    for (j, &i) in perm.iter().enumerate() {
        let (lb, la) = (b.labels[j], a.labels[i]);
        assert_eq!(
            *map.entry(lb).or_insert(la),
            la,
            "{name}: labels disagree at client {i}"
        );
        assert_eq!(
            *back.entry(la).or_insert(lb),
            lb,
            "{name}: labels merge at client {i}"
        );
    }
    assert_eq!(
        a.theta_hat.ncols(),
        b.theta_hat.ncols(),
        "{name}: model count"
    );
    for (&lb, &la) in &map {
        let (x, y) = (a.theta_hat.column(la), b.theta_hat.column(lb));
        let err = (x - y).norm() / x.norm().max(1e-300);
        assert!(err <= tol, "{name}: model {la} differs by {err:e}");
    }
}

/// Every algorithm is invariant, up to relabelling, to the order of the clients.
/// (Full participation; IFCA's init does not depend on client order. One-shot's k-means++
/// draws point indices, so its starts differ after permuting, but on separated data every start
/// reaches the same partition.)
#[test]
fn client_order_does_not_matter() {
    let fed = separated(2, "iid");
    let m = fed.num_clients();
    let perm: Vec<usize> = (0..m).map(|j| (j * 37 + 11) % m).collect();
    let permuted = fed.subset(&perm).unwrap();
    let algs: Vec<Box<dyn Algorithm>> = vec![
        Box::new(Ifca {
            params: ok(IfcaConfig {
                restarts: 2,
                ..ifca()
            }),
            init: None,
        }),
        Box::new(Ifca {
            params: ok(IfcaConfig {
                option: IfcaOption::Gradient,
                ..ifca()
            }),
            init: None,
        }),
        Box::new(FedAvg {
            params: ok(fedavg()),
        }),
        Box::new(Local {
            params: ok(local()),
        }),
        Box::new(OneShot {
            params: ok(one_shot()),
        }),
        Box::new(OracleLabels {
            params: ok(oracle_labels()),
        }),
        Box::new(SrFca {
            params: ok(SrfcaConfig {
                refine_rounds: 40,
                ..srfca()
            }),
        }),
        Box::new(Cfl { params: ok(cfl()) }),
        Box::new(fedsoft()),
        Box::new(IfcaOfficial {
            params: ok(IfcaOfficialConfig {
                k: Some(3),
                inits: 2,
                iterations: 30,
                lrs: Some(vec![0.1]),
                ..ifca_official()
            }),
            data_sigma: Some(0.1),
        }),
    ];
    for alg in algs {
        let a = alg.run(&fed, 3, &mut Recorder::quiet()).unwrap();
        let b = alg.run(&permuted, 3, &mut Recorder::quiet()).unwrap();
        same_up_to_relabel(&a, &b, &perm, 1e-9, alg.name());
    }
}

#[test]
fn one_shot_clusters_separated_data_perfectly() {
    let fed = separated(3, "iid");
    let out = OneShot {
        params: ok(one_shot()),
    }
    .run(&fed, 1, &mut Recorder::quiet())
    .unwrap();
    let m = misclustering(&out.labels, fed.labels().unwrap(), &fed.sizes()).unwrap();
    assert!(m.clients.abs() < 1e-15, "misclustering {}", m.clients);
}

#[test]
fn oracle_labels_never_change() {
    let fed = separated(4, "iid");
    let mut rec = Recorder::new(true);
    let out = OracleLabels {
        params: ok(oracle_labels()),
    }
    .run(&fed, 1, &mut rec)
    .unwrap();
    let truth = fed.labels().unwrap();
    assert_eq!(rec.labels.len(), 60);
    assert!(rec.labels.iter().all(|l| l == truth));
    assert_eq!(out.labels, truth);
}

#[test]
fn sr_fca_recovers_the_clusters_without_unassigned_clients() {
    let fed = separated(5, "iid");
    for dist in [SrfcaDist::L2, SrfcaDist::CrossLoss] {
        let alg = SrFca {
            params: ok(SrfcaConfig { dist, ..srfca() }),
        };
        let (out, report) = alg.run_detailed(&fed, &mut Recorder::quiet()).unwrap();
        assert_eq!(out.theta_hat.ncols(), 3, "{dist:?}: {report:?}");
        assert!(report.unassigned_ids.is_empty(), "{dist:?}: {report:?}");
        let m = misclustering(&out.labels, fed.labels().unwrap(), &fed.sizes()).unwrap();
        assert!(m.clients.abs() < 1e-15, "{dist:?}: {}", m.clients);
        let d = fedmix::metrics::bottleneck_distance(&out.theta_hat, fed.theta_star().unwrap())
            .unwrap();
        assert!(d.value < 0.05, "{dist:?}: distance {}", d.value);
    }
}

/// A threshold so small that no two clients link leaves every client alone: with t = 2 no
/// cluster forms, a typed error naming the stage.
#[test]
fn sr_fca_without_clusters_is_typed() {
    let fed = separated(5, "iid");
    let alg = SrFca {
        params: ok(SrfcaConfig {
            lambda: Some(1e-9),
            ..srfca()
        }),
    };
    assert!(matches!(
        alg.run(&fed, 0, &mut Recorder::quiet()),
        Err(FedmixError::NoClustersFormed { ref stage, .. }) if stage == "ONE_SHOT"
    ));
}

/// CFL: after two nested splits every client id appears exactly once, each split's
/// children partition its parent, and the final clusters are the true ones. Labels `i mod 3`
/// interleave the clusters, so a nested split's positions are not client ids: the mapping the
/// authors' notebook skips would be wrong here (checked).
#[test]
fn cfl_nested_splits_map_back_to_client_ids() {
    let fed = separated(6, "modulo");
    let out = Cfl {
        params: ok(CflConfig {
            phase2: Phase2Config {
                rounds: 120,
                ..p2()
            },
            ..cfl()
        }),
    }
    .run(&fed, 1, &mut Recorder::quiet())
    .unwrap();
    let Some(cfl) = out.summary.get::<CflSummary>("cfl") else {
        panic!("cfl reports a CFL summary")
    };
    let splits: &[Split] = &cfl.splits;
    assert!(splits.len() >= 2, "{} splits", splits.len());
    let mut nested = 0;
    for s in splits {
        let mut union: Vec<usize> = s.children.0.iter().chain(&s.children.1).copied().collect();
        union.sort_unstable();
        assert_eq!(union, s.parent, "children partition the parent");
        if s.parent.len() < fed.num_clients() {
            nested += 1;
            let positions: Vec<usize> = s
                .children
                .0
                .iter()
                .map(|id| s.parent.iter().position(|p| p == id).unwrap())
                .collect();
            assert_ne!(
                positions, s.children.0,
                "positions would equal ids: not a discriminating case"
            );
        }
    }
    assert!(nested >= 1);
    let clusters = &cfl.clusters;
    let mut all: Vec<usize> = clusters.concat();
    all.sort_unstable();
    assert_eq!(all, (0..fed.num_clients()).collect::<Vec<_>>());
    let m = misclustering(&out.labels, fed.labels().unwrap(), &fed.sizes()).unwrap();
    assert_eq!(clusters.len(), 3);
    assert!(m.clients.abs() < 1e-15, "{}", m.clients);
}

#[test]
fn bad_parameters_are_typed() {
    // Each key with an algorithm that reads it.
    use AlgorithmKind::SrFca as SrFcaKind;
    use AlgorithmKind::{Cfl as CflKind, Ifca as IfcaKind, IfcaOfficial as Official};
    use AlgorithmKind::{FedSoft as FedSoftKind, Local as LocalKind, OneShot as OneShotKind};
    let cases: &[(AlgorithmKind, &str, &str)] = &[
        (IfcaKind, "participation", "0"),
        (IfcaKind, "participation", "1.5"),
        (IfcaKind, "restarts", "0"),
        (SrFcaKind, "srfca_beta", "0.5"),
        (SrFcaKind, "srfca_beta", "-0.1"),
        (SrFcaKind, "srfca_lambda", "0"),
        (SrFcaKind, "srfca_lambda", "-1"),
        (SrFcaKind, "srfca_lambda_quantile", "0"),
        (SrFcaKind, "srfca_size", "0"),
        (SrFcaKind, "srfca_refine_steps", "0"),
        (SrFcaKind, "srfca_diameter", "0"),
        (CflKind, "cfl_eps1", "0"),
        (CflKind, "cfl_eps2", "-1"),
        (CflKind, "cfl_gamma_max", "1"),
        (OneShotKind, "kmeans_inits", "0"),
        (LocalKind, "local_ridge", "-1"),
        (Official, "ifca_official_inits", "0"),
        (Official, "ifca_official_lrs", "[]"),
        (Official, "ifca_official_lrs", "[0.1, -1]"),
        (Official, "ifca_official_sigma", "-0.1"),
        (Official, "ifca_official_offset", "-1"),
        (FedSoftKind, "fedsoft_lambda", "-1"),
        (FedSoftKind, "fedsoft_lambda", "inf"),
        (FedSoftKind, "fedsoft_lambda", "nan"),
        (FedSoftKind, "fedsoft_smoother", "0"),
        (FedSoftKind, "fedsoft_smoother", "1"),
        (FedSoftKind, "fedsoft_smoother", "nan"),
        (FedSoftKind, "fedsoft_interval", "0"),
        (FedSoftKind, "local_solver", "fedprox"),
    ];
    for (kind, key, value) in cases {
        let e = AlgorithmParams::from_sources(*kind, None, &sets(&[(key, value)])).unwrap_err();
        assert!(
            matches!(&e, FedmixError::InvalidParameter { name, .. } if name == key),
            "{key}={value}: {e}"
        );
    }
    let e = AlgorithmParams::from_sources(
        AlgorithmKind::Ifca,
        None,
        &sets(&[("ifca_option", "averaging")]),
    )
    .unwrap_err();
    assert!(matches!(e, FedmixError::Malformed { .. }), "{e}");
    // k > M, for every algorithm that takes k.
    let fed = separated(7, "iid");
    let big = Some(61);
    let algs: Vec<Box<dyn Algorithm>> = vec![
        Box::new(Ifca {
            params: ok(IfcaConfig { k: big, ..ifca() }),
            init: None,
        }),
        Box::new(IfcaOfficial {
            params: ok(IfcaOfficialConfig {
                k: big,
                ..ifca_official()
            }),
            data_sigma: Some(0.1),
        }),
        Box::new(OneShot {
            params: ok(OneShotParams {
                k: big,
                ..one_shot()
            }),
        }),
        Box::new(FedSoft {
            params: ok(FedSoftConfig {
                k: big,
                ..FedSoftConfig::default()
            }),
            init: None,
        }),
    ];
    for alg in algs {
        let e = alg.run(&fed, 0, &mut Recorder::quiet()).unwrap_err();
        assert!(
            matches!(&e, FedmixError::InvalidParameter { name, .. } if name == "k"),
            "{}: {e}",
            alg.name()
        );
    }
    // A step too large for local GD (option II) is typed; a mis-shaped init too.
    let e = Ifca {
        params: ok(IfcaConfig {
            phase2: Phase2Config {
                step: StepRule::Fixed(1e3),
                ..p2()
            },
            ..ifca()
        }),
        init: None,
    }
    .run(&fed, 0, &mut Recorder::quiet())
    .unwrap_err();
    assert!(matches!(e, FedmixError::StepTooLarge { .. }), "{e}");
    let e = Ifca {
        params: ok(ifca()),
        init: Some(nalgebra::DMatrix::zeros(4, 3)),
    }
    .run(&fed, 0, &mut Recorder::quiet())
    .unwrap_err();
    assert!(matches!(e, FedmixError::DimensionMismatch { .. }), "{e}");
    // oracle-labels needs the truth.
    let mut parts = fedmix::federation::FederationParts {
        features: fed.features().clone(),
        responses: fed.responses().clone(),
        sizes: fed.sizes(),
        ..Default::default()
    };
    parts.k = Some(3);
    let bare = Federation::new(parts).unwrap();
    let e = OracleLabels {
        params: ok(oracle_labels()),
    }
    .run(&bare, 0, &mut Recorder::quiet())
    .unwrap_err();
    assert!(matches!(e, FedmixError::Missing { .. }), "{e}");
}

/// Every baseline's CLI name runs through `fedmix run --algorithm NAME`, and the summary says
/// what a K̂ ≠ k run means.
#[test]
fn cli_runs_every_baseline() {
    let base = std::env::temp_dir().join(format!("fedmix-baselines-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for name in [
        "ifca",
        "ifca-official",
        "fedavg",
        "local",
        "one-shot",
        "oracle",
        "oracle-labels",
        "sr-fca",
        "cfl",
        "fedsoft",
    ] {
        let out = base.join(name);
        let mut args: Vec<String> = ["run", "--algorithm", name, "--seed", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // `rounds` only where the algorithm reads it (a key it ignores is refused).
        let kind: fedmix::params::AlgorithmKind = name.parse().unwrap();
        if fedmix::params::keys_of(kind).contains(&"rounds") {
            args.extend(["--set".to_string(), "rounds=30".to_string()]);
        }
        args.extend(["--out".to_string(), out.display().to_string()]);
        let data: &[&str] = if name == "ifca-official" {
            &[
                "--setting",
                "ifca-official",
                "--set",
                "d=20",
                "--set",
                "clients=10",
                "--set",
                "samples=20",
                "--set",
                "ifca_official_inits=2",
                "--set",
                "ifca_official_iterations=10",
            ]
        } else {
            &[
                "--setting",
                "sxy-balanced",
                "--set",
                "d=6",
                "--set",
                "clients=45",
                "--set",
                "samples=20",
                "--set",
                "r=3",
            ]
        };
        args.extend(data.iter().map(|s| s.to_string()));
        let r = std::process::Command::new(env!("CARGO_BIN_EXE_fedmix"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["algorithm"], name);
        let fin = &summary["final"];
        assert!(fin.get("misclustering_method").is_some(), "{name}: {fin}");
        match name {
            "fedavg" => {
                assert!(fin["distance"].is_null(), "{fin}");
                assert!(fin["distance_absent_reason"]
                    .as_str()
                    .unwrap()
                    .contains("k = 3"));
                assert!(fin["coverage_distance"].as_f64().is_some());
                assert_eq!(fin["misclustering_method"], "majority");
            }
            "sr-fca" => {
                assert!(summary["sr_fca"]["clusters_found"].as_u64().is_some());
                assert!(summary["sr_fca"]["unassigned_clients"].as_u64().is_some());
            }
            "ifca-official" => {
                assert!(summary["ifca_official"]["verdict"]["success"].is_boolean());
            }
            "fedsoft" => {
                assert!(fin["distance"].as_f64().is_some(), "{fin}");
                let u = summary["fedsoft"]["importance_weights"].as_array().unwrap();
                assert_eq!(u.len(), 45, "one row per client");
                assert!(summary["fedsoft"]["personal_model_error"]["mean"].is_f64());
            }
            _ => assert!(fin["distance"].as_f64().is_some(), "{name}: {fin}"),
        }
    }
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_fedmix"))
        .args([
            "run",
            "--algorithm",
            "kmeans",
            "--setting",
            "sxy-balanced",
            "--out",
        ])
        .arg(base.join("bad"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("sr-fca"));
    let _ = std::fs::remove_dir_all(&base);
}
