//! Property tests for the assignment metrics (SXY22 eq. 6's bottleneck distance, the sum
//! assignment and the misclustering rate under the best label permutation): the fast exact
//! algorithms in `fedmix::metrics` against slow brute-force references written here.
//!
//! - `bottleneck_distance` (SXY22 eq. 6, `min_π max_j ‖θ̂_{π(j)} − θ*_j‖`) vs enumeration of all
//!   permutations (k ≤ 7) and all injective maps when estimates outnumber true models;
//! - `sum_assignment` (`min_π Σ_j ‖θ̂_{π(j)} − θ*_j‖`) vs enumeration (k ≤ 6);
//! - `misclustering` vs enumeration of label permutations (k ≤ 5), and its invariance to
//!   relabelling the estimated clusters.
//!
//! Tied distances are exercised by integer-valued coordinates drawn from a tiny range.
//! Distances in the references are computed exactly as the library does (nalgebra `norm` of the
//! column difference), so the bottleneck value, which is one of those distances, must agree
//! bit for bit; sums are compared within `fedmix::prec::rounding`.

use fedmix::metrics::{bottleneck_distance, misclustering, sum_assignment, Assignment};
use fedmix::prec::{amax_nan, max_nan, min_nan, rounding};
use nalgebra::DMatrix;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// `C[j][l] = ‖θ̂_l − θ*_j‖`, computed as the library does.
fn costs(theta_hat: &DMatrix<f64>, theta_star: &DMatrix<f64>) -> DMatrix<f64> {
    DMatrix::from_fn(theta_star.ncols(), theta_hat.ncols(), |j, l| {
        (theta_hat.column(l) - theta_star.column(j)).norm()
    })
}

/// Every injective map `0..k → 0..m` (as `perm[j]`), in lexicographic order.
fn injections(k: usize, m: usize) -> Vec<Vec<usize>> {
    fn rec(k: usize, m: usize, cur: &mut Vec<usize>, used: &mut [bool], out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for l in 0..m {
            if !used[l] {
                used[l] = true;
                cur.push(l);
                rec(k, m, cur, used, out);
                cur.pop();
                used[l] = false;
            }
        }
    }
    let mut out = Vec::new();
    rec(
        k,
        m,
        &mut Vec::with_capacity(k),
        &mut vec![false; m],
        &mut out,
    );
    out
}

fn max_of(c: &DMatrix<f64>, perm: &[usize]) -> f64 {
    perm.iter()
        .enumerate()
        .map(|(j, &l)| c[(j, l)])
        .fold(f64::NEG_INFINITY, max_nan)
}

fn sum_of(c: &DMatrix<f64>, perm: &[usize]) -> f64 {
    perm.iter().enumerate().map(|(j, &l)| c[(j, l)]).sum()
}

/// Brute-force bottleneck value, and the smallest sum among bottleneck-optimal maps.
fn brute_bottleneck(c: &DMatrix<f64>) -> (f64, f64) {
    let maps = injections(c.nrows(), c.ncols());
    let best = maps
        .iter()
        .map(|p| max_of(c, p))
        .fold(f64::INFINITY, min_nan);
    let best_sum = maps
        .iter()
        .filter(|p| max_of(c, p) <= best)
        .map(|p| sum_of(c, p))
        .fold(f64::INFINITY, min_nan);
    (best, best_sum)
}

fn brute_sum(c: &DMatrix<f64>) -> f64 {
    injections(c.nrows(), c.ncols())
        .iter()
        .map(|p| sum_of(c, p))
        .fold(f64::INFINITY, min_nan)
}

/// `perm` is injective into `0..m` and `per_cluster[j] = C[j][perm[j]]` exactly.
fn assert_consistent(a: &Assignment, c: &DMatrix<f64>) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.perm.len(), c.nrows());
    prop_assert_eq!(a.per_cluster.len(), c.nrows());
    let mut seen = vec![false; c.ncols()];
    for (j, &l) in a.perm.iter().enumerate() {
        prop_assert!(l < c.ncols(), "perm[{}] = {} out of range", j, l);
        prop_assert!(!seen[l], "perm {:?} repeats {}", a.perm, l);
        seen[l] = true;
        prop_assert_eq!(a.per_cluster[j].to_bits(), c[(j, l)].to_bits());
    }
    Ok(())
}

/// A `d × cols` matrix: continuous entries in [−3, 3], or (ties) integers in −1..=1.
fn matrix(d: usize, cols: usize, ties: bool) -> BoxedStrategy<DMatrix<f64>> {
    let n = d * cols;
    if ties {
        prop::collection::vec((-1i32..=1).prop_map(f64::from), n)
            .prop_map(move |v| DMatrix::from_vec(d, cols, v))
            .boxed()
    } else {
        prop::collection::vec(-3.0f64..3.0, n)
            .prop_map(move |v| DMatrix::from_vec(d, cols, v))
            .boxed()
    }
}

/// `(θ̂, θ*)` with `k` true models in `1..=max_k`, `k + extra` estimates, `d ∈ 1..=6`.
fn models(max_k: usize, max_extra: usize) -> impl Strategy<Value = (DMatrix<f64>, DMatrix<f64>)> {
    (1..=max_k, 0..=max_extra, 1usize..=6, any::<bool>())
        .prop_flat_map(|(k, extra, d, ties)| (matrix(d, k + extra, ties), matrix(d, k, ties)))
}

/// The columns of `m` reordered: column `i` of the result is column `order[i]` of `m`.
fn permute_columns(m: &DMatrix<f64>, order: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(m.nrows(), m.ncols(), |r, c| m[(r, order[c])])
}

/// `(θ̂, θ*)` with `k = k̂ ≤ 7`, plus a relabelling of each.
fn models_and_relabelling(
) -> impl Strategy<Value = (DMatrix<f64>, DMatrix<f64>, Vec<usize>, Vec<usize>)> {
    models(7, 0).prop_flat_map(|(h, s)| {
        let k = s.ncols();
        let ph = Just((0..k).collect::<Vec<_>>()).prop_shuffle();
        let ps = Just((0..k).collect::<Vec<_>>()).prop_shuffle();
        (Just(h), Just(s), ph, ps)
    })
}

/// Proptest configuration: `cases` cases, failures persisted (and replayed first) in
/// `tests/proptest-regressions/metrics_props.txt` (cargo runs integration tests from the
/// package root).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/metrics_props.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn bottleneck_equals_brute_force((theta_hat, theta_star) in models(7, 0)) {
        let c = costs(&theta_hat, &theta_star);
        let a = bottleneck_distance(&theta_hat, &theta_star).unwrap();
        assert_consistent(&a, &c)?;
        let (best, best_sum) = brute_bottleneck(&c);
        prop_assert_eq!(a.value.to_bits(), best.to_bits(), "value {} vs brute force {}", a.value, best);
        let max = a.per_cluster.iter().copied().fold(f64::NEG_INFINITY, max_nan);
        prop_assert_eq!(max.to_bits(), a.value.to_bits(), "max per-cluster {} vs value {}", max, a.value);
        // Documented tie-break: the smallest sum among bottleneck-optimal matchings.
        let sum: f64 = a.per_cluster.iter().sum();
        let tol = rounding(c.nrows(), amax_nan(&c));
        prop_assert!((sum - best_sum).abs() <= tol, "sum {} vs brute force {}", sum, best_sum);
    }

    #[test]
    fn bottleneck_with_surplus_estimates((theta_hat, theta_star) in models(5, 2)) {
        let c = costs(&theta_hat, &theta_star);
        let a = bottleneck_distance(&theta_hat, &theta_star).unwrap();
        assert_consistent(&a, &c)?;
        let (best, _) = brute_bottleneck(&c);
        prop_assert_eq!(a.value.to_bits(), best.to_bits(), "value {} vs brute force {}", a.value, best);
    }

    #[test]
    fn bottleneck_invariant_to_relabelling((theta_hat, theta_star, ph, ps) in models_and_relabelling()) {
        let a = bottleneck_distance(&theta_hat, &theta_star).unwrap();
        let h2 = permute_columns(&theta_hat, &ph);
        let s2 = permute_columns(&theta_star, &ps);
        let b = bottleneck_distance(&h2, &s2).unwrap();
        prop_assert_eq!(a.value.to_bits(), b.value.to_bits(), "{} vs relabelled {}", a.value, b.value);
        let s = sum_assignment(&theta_hat, &theta_star).unwrap();
        let t = sum_assignment(&h2, &s2).unwrap();
        let tol = rounding(theta_star.ncols(), amax_nan(&costs(&theta_hat, &theta_star)));
        prop_assert!((s.value - t.value).abs() <= tol, "sum {} vs relabelled {}", s.value, t.value);
    }

    #[test]
    fn sum_assignment_equals_brute_force((theta_hat, theta_star) in models(6, 1)) {
        let c = costs(&theta_hat, &theta_star);
        let a = sum_assignment(&theta_hat, &theta_star).unwrap();
        assert_consistent(&a, &c)?;
        let best = brute_sum(&c);
        let tol = rounding(c.nrows(), amax_nan(&c));
        prop_assert!((a.value - best).abs() <= tol, "value {} vs brute force {}", a.value, best);
        let sum: f64 = a.per_cluster.iter().sum();
        prop_assert_eq!(sum.to_bits(), a.value.to_bits());
        // The min-sum matching can never beat the bottleneck on its own max.
        let b = bottleneck_distance(&theta_hat, &theta_star).unwrap();
        prop_assert!(max_of(&c, &a.perm) >= b.value);
    }
}

/// `(estimated labels, true labels, sizes)` with `M ∈ 1..=30`, both label sets in `0..k`,
/// `k ∈ 1..=5` (estimates may use fewer or more labels than the truth).
fn labellings() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    (1usize..=30, 1usize..=5, 1usize..=5).prop_flat_map(|(m, k_est, k)| {
        (
            prop::collection::vec(0..k_est, m),
            prop::collection::vec(0..k, m),
            prop::collection::vec(1usize..=20, m),
        )
    })
}

/// Every permutation of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    injections(n, n)
}

/// Brute force over all label maps (permutations of `0..K`, `K` = the larger label count, so
/// surplus labels on either side stay unmatched): the largest number of correctly clustered
/// clients, and among maps attaining it the largest number of correctly clustered samples.
fn brute_misclustering(est: &[usize], truth: &[usize], sizes: &[usize]) -> (usize, usize) {
    let kk = est.iter().chain(truth).max().map_or(1, |m| m + 1);
    permutations(kk)
        .iter()
        .map(|pi| {
            let ok = |i: &usize| pi[est[*i]] == truth[*i];
            let idx = 0..est.len();
            let clients = idx.clone().filter(ok).count();
            let samples: usize = idx.filter(ok).map(|i| sizes[i]).sum();
            (clients, samples)
        })
        .max()
        .unwrap_or((0, 0))
}

fn labellings_and_relabelling(
) -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>)> {
    labellings().prop_flat_map(|(e, t, s)| {
        let kk = e.iter().chain(&t).max().map_or(1, |m| m + 1);
        let pi = Just((0..kk).collect::<Vec<_>>()).prop_shuffle();
        (Just(e), Just(t), Just(s), pi)
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn misclustering_equals_brute_force((est, truth, sizes) in labellings()) {
        let m = misclustering(&est, &truth, &sizes).unwrap();
        let (clients, samples) = brute_misclustering(&est, &truth, &sizes);
        let want_c = 1.0 - clients as f64 / est.len() as f64;
        let want_s = 1.0 - samples as f64 / sizes.iter().sum::<usize>() as f64;
        prop_assert!((m.clients - want_c).abs() <= 1e-12, "clients {} vs brute force {}", m.clients, want_c);
        prop_assert!((m.samples - want_s).abs() <= 1e-12, "samples {} vs brute force {}", m.samples, want_s);
        // The reported map is injective on the labels it matches and reproduces the rates.
        let mut used = std::collections::HashSet::new();
        for t in m.map.iter().flatten() {
            prop_assert!(used.insert(*t), "map {:?} is not injective", m.map);
        }
        let ok = |i: &usize| m.map.get(est[*i]).copied().flatten() == Some(truth[*i]);
        let correct = (0..est.len()).filter(ok).count();
        prop_assert_eq!(correct, clients);
    }

    #[test]
    fn misclustering_invariant_to_relabelling((est, truth, sizes, pi) in labellings_and_relabelling()) {
        let a = misclustering(&est, &truth, &sizes).unwrap();
        let relabelled: Vec<usize> = est.iter().map(|&l| pi[l]).collect();
        let b = misclustering(&relabelled, &truth, &sizes).unwrap();
        prop_assert!((a.clients - b.clients).abs() <= 1e-12, "clients {} vs relabelled {}", a.clients, b.clients);
        prop_assert!((a.samples - b.samples).abs() <= 1e-12, "samples {} vs relabelled {}", a.samples, b.samples);
        // Relabelling the truth the same way is also invisible.
        let kt = truth.iter().max().map_or(1, |m| m + 1);
        if pi.len() >= kt {
            let t2: Vec<usize> = truth.iter().map(|&z| pi[z]).collect();
            let c = misclustering(&est, &t2, &sizes).unwrap();
            prop_assert!((a.clients - c.clients).abs() <= 1e-12);
            prop_assert!((a.samples - c.samples).abs() <= 1e-12);
        }
    }
}

/// A case the brute force settles by hand: two label maps tie on clients (2 of 4 correct),
/// only one of them gets the heavy client right. Expected values worked out by hand:
/// identity map → samples correct 1 + 1 = 2 of 8; swapped map → 1 + 5 = 6 of 8.
#[test]
fn misclustering_sample_rate_is_well_defined_under_client_ties() {
    let truth = [0, 0, 1, 1];
    let sizes = [1, 5, 1, 1];
    for est in [[0, 1, 0, 1], [1, 0, 1, 0]] {
        let m = misclustering(&est, &truth, &sizes).unwrap();
        assert!((m.clients - 0.5).abs() <= 1e-15, "{m:?}");
        assert!((m.samples - 0.25).abs() <= 1e-15, "{m:?}");
    }
}

/// Bottleneck vs sum on a hand case where they choose different matchings (d = 2).
/// θ*_0 = (0, 0), θ*_1 = (4, 0); θ̂_0 = (0, 4), θ̂_1 = (0.5, 0). Costs worked out by hand:
/// C = [[4, 0.5], [√32, 3.5]] (rows: true). Identity: max 4, sum 7.5. Swap: max √32 ≈ 5.66,
/// sum 0.5 + √32 ≈ 6.16. So the bottleneck keeps the identity, the sum swaps.
#[test]
fn bottleneck_and_sum_pick_different_matchings() {
    let theta_star = DMatrix::from_column_slice(2, 2, &[0.0, 0.0, 4.0, 0.0]);
    let theta_hat = DMatrix::from_column_slice(2, 2, &[0.0, 4.0, 0.5, 0.0]);
    let b = bottleneck_distance(&theta_hat, &theta_star).unwrap();
    assert_eq!(b.perm, vec![0, 1]);
    assert_eq!(b.value.to_bits(), 4.0f64.to_bits());
    let s = sum_assignment(&theta_hat, &theta_star).unwrap();
    assert_eq!(s.perm, vec![1, 0]);
    assert!((s.value - (0.5 + 32f64.sqrt())).abs() <= 1e-14, "{s:?}");
}

/// No true models (k = 0) is a typed error, not a panic (the binary search over candidate
/// thresholds had no candidates).
#[test]
fn no_true_models_is_an_error() {
    let theta_hat = DMatrix::<f64>::zeros(3, 2);
    let theta_star = DMatrix::<f64>::zeros(3, 0);
    for r in [
        bottleneck_distance(&theta_hat, &theta_star),
        sum_assignment(&theta_hat, &theta_star),
    ] {
        match r {
            Err(fedmix::error::FedmixError::InvalidParameter { name, .. }) => assert_eq!(name, "k"),
            other => panic!("expected InvalidParameter(k), got {other:?}"),
        }
    }
}

/// Per-client errors: each client's assigned estimate against its own true model, and typed
/// errors (not panics) for an assignment that names a model that does not exist.
#[test]
fn per_client_errors_use_each_clients_model() {
    use fedmix::error::FedmixError;
    let pairs = [
        ("clients", "4"),
        ("samples", "3"),
        ("d", "2"),
        ("labels", "modulo"),
        ("k", "2"),
    ];
    let sets: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let fed = fedmix::synthetic::generate_named("sxy-balanced", 1, &sets)
        .unwrap()
        .train;
    let ts = fed.theta_star().unwrap().clone();
    // Estimates: θ̂_0 = θ*_1, θ̂_1 = θ*_0, θ̂_2 = θ*_0 + (3, 4) (error 5 exactly for cluster 0).
    let mut est = DMatrix::zeros(2, 3);
    est.set_column(0, &ts.column(1));
    est.set_column(1, &ts.column(0));
    est.set_column(2, &(ts.column(0) + nalgebra::Vector2::new(3.0, 4.0)));
    // Labels are i mod 2 = [0, 1, 0, 1].
    let e = fedmix::metrics::per_client_errors(&fed, &est, &[1, 0, 0, 1]).unwrap();
    assert_eq!(e[0].to_bits(), 0f64.to_bits());
    assert_eq!(e[1].to_bits(), 0f64.to_bits());
    let d01 = (ts.column(0) - ts.column(1)).norm();
    assert!(
        (e[2] - d01).abs() <= 1e-15 && (e[3] - d01).abs() <= 1e-15,
        "{e:?}"
    );
    let e = fedmix::metrics::per_client_errors(&fed, &est, &[2, 0, 1, 0]).unwrap();
    assert!((e[0] - 5.0).abs() <= 1e-14, "{e:?}");
    match fedmix::metrics::per_client_errors(&fed, &est, &[0, 0, 3, 0]) {
        Err(FedmixError::LabelOutOfRange {
            client: 2,
            label: 3,
            k: 3,
        }) => {}
        other => panic!("expected LabelOutOfRange, got {other:?}"),
    }
    assert!(matches!(
        fedmix::metrics::per_client_errors(&fed, &est, &[0, 0]),
        Err(FedmixError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        fedmix::metrics::per_client_errors(&fed, &DMatrix::zeros(3, 2), &[0, 0, 0, 0]),
        Err(FedmixError::DimensionMismatch { .. })
    ));
}
