//! Property: any generator configuration that `generate` accepts produces finite data
//! (features, responses, θ*, held-out samples) of the declared shapes, and any it refuses is
//! refused with a typed error — never a panic — over wide ranges that include extreme scales
//! (σ, r up to 1e308), heavy-tailed sizes and every law.

use fedmix::synthetic::{generate_named, SETTINGS};
use proptest::prelude::*;

fn extreme() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1e-300".to_string()),
        Just("1e200".to_string()),
        Just("1e308".to_string()),
        (0.0f64..10.0).prop_map(|v| v.to_string()),
        (-1.0f64..0.0).prop_map(|v| v.to_string()),
    ]
}

fn overrides() -> impl Strategy<Value = Vec<(String, String)>> {
    let kv = |k: &'static str| move |v: String| (k.to_string(), v);
    let word = |k: &'static str, words: &'static [&'static str]| {
        proptest::sample::select(words).prop_map(move |w| (k.to_string(), w.to_string()))
    };
    let pairs: Vec<BoxedStrategy<(String, String)>> = vec![
        (1usize..5)
            .prop_map(|v| v.to_string())
            .prop_map(kv("k"))
            .boxed(),
        (1usize..12)
            .prop_map(|v| v.to_string())
            .prop_map(kv("d"))
            .boxed(),
        (1usize..30)
            .prop_map(|v| v.to_string())
            .prop_map(kv("clients"))
            .boxed(),
        (1usize..25)
            .prop_map(|v| v.to_string())
            .prop_map(kv("samples"))
            .boxed(),
        extreme().prop_map(kv("sigma")).boxed(),
        extreme().prop_map(kv("r")).boxed(),
        word("sizes", &["fixed", "lognormal", "zipf"]).boxed(),
        (0.0f64..4.0)
            .prop_map(|v| v.to_string())
            .prop_map(kv("size_spread"))
            .boxed(),
        word("theta", &["gaussian", "bernoulli", "bernoulli-rescaled"]).boxed(),
        word("feature_map", &["identity", "polynomial"]).boxed(),
        word("covariance", &["identity", "diagonal"]).boxed(),
        extreme().prop_map(kv("cov_max")).boxed(),
        (0usize..3)
            .prop_map(|v| v.to_string())
            .prop_map(kv("singleton_clients"))
            .boxed(),
        (0usize..3)
            .prop_map(|v| v.to_string())
            .prop_map(kv("test_samples"))
            .boxed(),
        word("labels", &["iid", "blocks", "modulo"]).boxed(),
    ];
    (pairs, proptest::collection::vec(any::<bool>(), 15)).prop_map(|(all, keep)| {
        all.into_iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(kv, _)| kv)
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn accepted_generator_configs_give_finite_data(
        setting in 0usize..SETTINGS.len(),
        sets in overrides(),
        seed in 0u64..1000,
    ) {
        let name = SETTINGS[setting].0;
        // Keep the big settings small enough for a property test.
        let mut sets = sets;
        if !sets.iter().any(|(k, _)| k == "d") {
            sets.insert(0, ("d".to_string(), "6".to_string()));
        }
        if !sets.iter().any(|(k, _)| k == "clients") {
            sets.insert(0, ("clients".to_string(), "12".to_string()));
        }
        sets.insert(0, ("large_clients".to_string(), "0".to_string()));
        match generate_named(name, seed, &sets) {
            Ok(data) => {
                for fed in std::iter::once(&data.train).chain(data.test.as_ref()) {
                    prop_assert!(fed.features().iter().all(|v| v.is_finite()), "{name} {sets:?}");
                    prop_assert!(fed.responses().iter().all(|v| v.is_finite()), "{name} {sets:?}");
                    prop_assert_eq!(fed.features().ncols(), fed.total_samples());
                    prop_assert_eq!(fed.sizes().iter().sum::<usize>(), fed.total_samples());
                    prop_assert!(fed.sizes().iter().all(|&n| n >= 1));
                    if let Some(ts) = fed.theta_star() {
                        prop_assert!(ts.iter().all(|v| v.is_finite()));
                        prop_assert_eq!(ts.nrows(), fed.d());
                    }
                }
            }
            Err(e) => {
                // A typed, one-line refusal naming what is wrong.
                let msg = e.to_string();
                prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{msg}");
            }
        }
    }
}
