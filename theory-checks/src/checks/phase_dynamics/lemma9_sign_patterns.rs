//! SXY22 Lemma 9 (App. E.2): the classes `F^I_j`, `F^II_j` of misclustering indicators have VC
//! dimension `O(dk log k)`. The proof counts sign patterns: for m points `(x_i, y_i)` the
//! `m(k−1)` quadratic polynomials `P_{jl}[x_i,y_i](θ) = ‖y_i − φ(x_i)θ_j‖² − ‖y_i − φ(x_i)θ_l‖²`
//! (`l ≠ j`) in the `dk` entries of θ have, by the Milnor–Thom theorem [Mat13, Thm 6.2.1], at
//! most `(100 m(k−1)/(dk))^{dk}` sign patterns when `m(k−1) ≥ dk ≥ 2`; shattering m points
//! needs `2^m` patterns, so `m ≤` the largest m with `2^m ≤ (100 m(k−1)/(dk))^{dk}`.
//!
//! Experiment: (d, k) ∈ {(1, 2), (1, 3), (2, 2)}; points are clients with two samples,
//! `x ~ N(0, I_d)`, `y ~ N(0, 1)`; θ is sampled as `s·N(0, I_{dk})` with `s` log-uniform in
//! `[10⁻², 10²]`, j = 1. Sampling finds a **subset** of the patterns, so observed counts are lower
//! bounds of the true counts — consistent with checking an upper bound, but the bound is only
//! "exercised" where the sample is large compared with the count.
//!
//! Checks: (1) for every m with `m(k−1) ≥ dk` the number of distinct sign patterns of the
//! `P_{jl}` is ≤ the Milnor–Thom bound, including the m where that bound is below the trivial
//! `2^{m(k−1)}` (where it bites; at least one such m per (d, k)); (2) the empirical shattering
//! number of the binary class `θ ↦ 1{i ∈ S_j(θ)}` (clients of cluster j: misclustered iff some
//! `P_{jl} ≥ 0`) — the largest m for which some of [`POINT_SETS`] random point sets shows all
//! `2^m` patterns — is ≤ the Milnor–Thom VC bound, and beyond it the count stays < 2^m;
//! (3) against a vacuous run, that number is at least [`MIN_SHATTERED`] = 2: two generic points
//! are shattered (each point's membership is the sign of its own `P_{jl}`, and with `dk ≥ 2`
//! free entries of θ the two signs can be set independently), so a search that shatters fewer
//! saw no data — an upper bound alone is met by no points at all. (Master seeds 1–20 and 20221,
//! quick profile: 2 at (1, 2) and (1, 3), 4 or 5 at (2, 2).)
//! Statistic: the largest observed count / bound. Sabotage: the bound `2^{dk}/100`, which the
//! observed counts provably exceed (any single θ gives one pattern, and `2^{dk}/100 < 1`).

use super::support::child;
use crate::framework::{loglog_fit, outcome, CheckConfig, CheckRecord, Figure, Guard, Series};
use fedmix::prec::max_nan;
use fedmix::seed_streams::{stream, Purpose, Rng};
use nalgebra::DMatrix;
use rand::RngExt;
use rand_distr::StandardNormal;
use std::collections::HashSet;

/// Random point sets tried per m when looking for a shattered set.
pub const POINT_SETS: usize = 4;
/// The fewest points the shattering search must shatter at every `(d, k)` (guard (3) above).
pub const MIN_SHATTERED: usize = 2;
/// Samples per client (point).
const SAMPLES: usize = 2;
const CONFIGS: [(usize, usize); 3] = [(1, 2), (1, 3), (2, 2)];

/// `(100 m(k−1)/(dk))^{dk}` (Milnor–Thom as used in Lemma 9), or the sabotaged `2^{dk}/100`.
fn bound(m: usize, d: usize, k: usize, sabotage: bool) -> f64 {
    let dk = (d * k) as f64;
    if sabotage {
        return 2f64.powf(dk) / 100.0;
    }
    (100.0 * (m * (k - 1)) as f64 / dk).powf(dk)
}

/// Whether the Milnor–Thom bound is below `2^{m(k−1)}`, the count of sign patterns of the
/// `m(k−1)` differences `P_jl` were every pattern realised: only there does Lemma 9 say more
/// than the trivial count.
fn bites(m: usize, d: usize, k: usize) -> bool {
    bound(m, d, k, false) < 2f64.powi((m * (k - 1)) as i32)
}

/// The `m` of configuration `(d, k)`'s rows at which the bound [`bites`] (rows of other
/// configurations left out).
fn biting_ms(rows: &[Row], d: usize, k: usize) -> Vec<usize> {
    rows.iter()
        .filter(|r| r.is(d, k) && bites(r.m, d, k))
        .map(|r| r.m)
        .collect()
}

/// Largest m with `2^m ≤ (100 m(k−1)/(dk))^{dk}` (the VC bound implied by Milnor–Thom).
fn vc_bound(d: usize, k: usize) -> usize {
    (1..100_000)
        .filter(|&m| m * (k - 1) >= d * k)
        .take_while(|&m| (m as f64) * 2f64.ln() <= bound(m, d, k, false).ln())
        .last()
        .unwrap_or(d * k)
}

/// Points: `m` clients, each `(X_i ∈ R^{2×d}, y_i ∈ R²)`.
fn points(m: usize, d: usize, rng: &mut Rng) -> Vec<(DMatrix<f64>, Vec<f64>)> {
    (0..m)
        .map(|_| {
            let x = DMatrix::from_fn(SAMPLES, d, |_, _| rng.sample::<f64, _>(StandardNormal));
            let y = (0..SAMPLES)
                .map(|_| rng.sample::<f64, _>(StandardNormal))
                .collect();
            (x, y)
        })
        .collect()
}

/// Distinct sign patterns of all `P_{jl}` (j = 0) and of the binary misclustering class.
fn count_patterns(
    pts: &[(DMatrix<f64>, Vec<f64>)],
    d: usize,
    k: usize,
    samples: usize,
    rng: &mut Rng,
) -> (usize, usize) {
    let mut poly: HashSet<u128> = HashSet::new();
    let mut binary: HashSet<u128> = HashSet::new();
    let mut theta = vec![0.0; d * k];
    let mut loss = vec![0.0; k];
    for _ in 0..samples {
        let s = 10f64.powf(rng.random_range(-2.0..2.0));
        theta
            .iter_mut()
            .for_each(|t| *t = s * rng.sample::<f64, _>(StandardNormal));
        let (mut pp, mut bp) = (0u128, 0u128);
        for (i, (x, y)) in pts.iter().enumerate() {
            for (l, lv) in loss.iter_mut().enumerate() {
                let th = &theta[l * d..(l + 1) * d];
                *lv = (0..SAMPLES)
                    .map(|r| {
                        let pred: f64 = (0..d).map(|c| x[(r, c)] * th[c]).sum();
                        (y[r] - pred).powi(2)
                    })
                    .sum();
            }
            let mut mis = false;
            for l in 1..k {
                // P_{0l} ≥ 0: model l fits at least as well as model 0.
                let bit = loss[0] - loss[l] >= 0.0;
                mis |= bit;
                if bit {
                    pp |= 1u128 << pattern_bit(i, l, k);
                }
            }
            if mis {
                bp |= 1u128 << i;
            }
        }
        poly.insert(pp);
        binary.insert(bp);
    }
    (poly.len(), binary.len())
}

struct Row {
    d: usize,
    k: usize,
    m: usize,
    poly: usize,
    binary: usize,
    bound: f64,
}

impl Row {
    /// Whether the row belongs to configuration `(d, k)`.
    fn is(&self, d: usize, k: usize) -> bool {
        self.d == d && self.k == k
    }

    /// Whether the row enters the growth-exponent fit: its pattern count is far from what
    /// `samples` draws of θ can find (below 1/20 of them, so sampling does not cap it) and `m`
    /// is past the shattering regime (`m(k − 1) ≥ 2dk`, where the count is polynomial in `m`).
    fn unsaturated(&self, samples: usize) -> bool {
        (self.poly as f64) < samples as f64 / 20.0 && self.m * (self.k - 1) >= 2 * self.d * self.k
    }
}

/// The bit of `P_{0l}[x_i, y_i]`'s sign in a pattern key: point `i`'s `k − 1` polynomials
/// (`l = 1, …, k − 1`) take bits `i(k − 1)` to `i(k − 1) + k − 2`.
fn pattern_bit(i: usize, l: usize, k: usize) -> usize {
    i * (k - 1) + l - 1
}

/// Whether `m` points enter configuration `(d, k)`'s rows: Milnor–Thom's count [Mat13, Thm
/// 6.2.1] holds for `m(k−1)` polynomials in `dk` variables when `m(k−1) ≥ dk`, and `m(k−1) ≤
/// 128` keeps the `m(k−1)` signs in one `u128` pattern key.
fn in_range(m: usize, d: usize, k: usize) -> bool {
    (d * k..=128).contains(&(m * (k - 1)))
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let samples = cfg.pick(60_000, 1_000_000);
    let ms: Vec<usize> = cfg.pick(
        vec![2, 3, 4, 6, 8, 12, 16, 24, 32, 48],
        vec![2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 56],
    );
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut ok = true;
    let mut guards = Vec::new();
    for (ci, &(d, k)) in CONFIGS.iter().enumerate() {
        let dk = d * k;
        for &m in &ms {
            if !in_range(m, d, k) {
                continue;
            }
            let mut rng = stream(child(cfg.seed, 25, ci as u64), Purpose::Sampling, m as u64);
            let pts = points(m, d, &mut rng);
            let (poly, binary) = count_patterns(&pts, d, k, samples, &mut rng);
            rows.push(Row {
                d,
                k,
                m,
                poly,
                binary,
                bound: bound(m, d, k, cfg.sabotage),
            });
        }
        // Empirical shattering number of the binary class.
        let m_vc = vc_bound(d, k);
        let mut m_emp = 0;
        for m in 1..=m_vc.min(16) {
            let shattered = (0..POINT_SETS).any(|s| {
                let mut rng = stream(
                    child(cfg.seed, 26, ci as u64),
                    Purpose::Sampling,
                    (m * POINT_SETS + s) as u64,
                );
                let pts = points(m, d, &mut rng);
                count_patterns(&pts, d, k, samples.min(200_000), &mut rng).1 == 1 << m
            });
            if shattered {
                m_emp = m;
            } else {
                break;
            }
        }
        let bites = biting_ms(&rows, d, k);
        let beyond_ok = rows
            .iter()
            .filter(|r| r.is(d, k) && r.m > m_emp)
            .all(|r| (r.binary as f64) < 2f64.powi(r.m as i32));
        let ours: Vec<&Row> = rows
            .iter()
            .filter(|r| r.is(d, k) && r.unsaturated(samples))
            .collect();
        let growth = if ours.len() >= 2 {
            loglog_fit(
                &ours.iter().map(|r| r.m as f64).collect::<Vec<_>>(),
                &ours.iter().map(|r| r.poly as f64).collect::<Vec<_>>(),
            )
            .0
        } else {
            f64::NAN
        };
        ok &= m_emp <= m_vc && beyond_ok;
        guards.push(Guard::new(
            format!("(d, k) = ({d}, {k}): shattering number ≥ {MIN_SHATTERED} (got {m_emp})"),
            m_emp >= MIN_SHATTERED,
        ));
        guards.push(Guard::new(
            format!("(d, k) = ({d}, {k}): the bound bites at some m"),
            !bites.is_empty(),
        ));
        notes.push(format!(
            "(d, k) = ({d}, {k}), dk log k = {:.2}: empirical shattering number {m_emp} ≤ Milnor–Thom VC bound {m_vc}: {}, ≥ {MIN_SHATTERED} (the search saw data): {}; bound below 2^(m(k−1)) (bites) at m ∈ {bites:?}; binary count < 2^m for every m > {m_emp}: {beyond_ok}; growth exponent of the pattern count (unsaturated m) {growth:.2} (Milnor–Thom exponent dk = {dk})",
            dk as f64 * (k as f64).ln(),
            m_emp <= m_vc,
            m_emp >= MIN_SHATTERED
        ));
    }
    let worst = rows
        .iter()
        .map(|r| r.poly as f64 / r.bound)
        .fold(0.0, max_nan);
    let (passed, inconclusive) = outcome(ok && worst <= 1.0, &guards);
    let series_for = |d: usize, k: usize| -> Vec<Series> {
        let sel: Vec<&Row> = rows.iter().filter(|r| r.is(d, k)).collect();
        vec![
            Series {
                label: format!("sign patterns of P_jl, (d,k)=({d},{k})"),
                points: sel.iter().map(|r| (r.m as f64, r.poly as f64)).collect(),
                line: false,
            },
            Series {
                label: format!("Milnor–Thom (100m(k−1)/dk)^dk, (d,k)=({d},{k})"),
                points: sel
                    .iter()
                    .map(|r| (r.m as f64, bound(r.m, d, k, false)))
                    .collect(),
                line: true,
            },
        ]
    };
    let mut series = series_for(1, 2);
    series.extend(series_for(2, 2));
    let sel: Vec<&Row> = rows.iter().filter(|r| r.d == 1 && r.k == 2).collect();
    series.push(Series {
        label: "binary misclustering patterns, (d,k)=(1,2)".into(),
        points: sel.iter().map(|r| (r.m as f64, r.binary as f64)).collect(),
        line: false,
    });
    series.push(Series {
        label: "2^m (shattering)".into(),
        points: sel
            .iter()
            .filter(|r| r.m <= 40)
            .map(|r| (r.m as f64, 2f64.powi(r.m as i32)))
            .collect(),
        line: true,
    });
    CheckRecord {
        name: "lemma9_sign_patterns".into(),
        claim: "m points give ≤ (100m(k−1)/(dk))^{dk} sign patterns of the P_jl; shattering fails beyond the implied O(dk log k) VC bound".into(),
        source: "SXY22 Lemma 9 (App. E.2), Milnor–Thom [Mat13 Thm 6.2.1]".into(),
        statistic: worst,
        bound: 1.0,
        constant: None,
        slopes: Vec::new(),
        constants: Vec::new(),
        passed,
        inconclusive,
        details: [
            vec![
                format!("{samples} sampled θ per (d, k, m); θ = s·N(0, I_dk), s log-uniform in [1e−2, 1e2]; points: clients with {SAMPLES} samples x ~ N(0, I_d), y ~ N(0, 1); seeds child(seed, 25/26, ·)"),
                "observed counts are LOWER bounds of the true pattern counts (sampling can miss cells)".into(),
                format!("statistic = max over (d, k, m) of observed / bound = {worst:.4e}"),
                if cfg.sabotage { "SABOTAGED: bound 2^(dk)/100".into() } else { "bound (100 m(k−1)/(dk))^(dk)".into() },
            ],
            notes,
            rows.iter().map(|r| format!("(d,k,m)=({},{},{}): patterns {} (binary {}), bound {:.3e}", r.d, r.k, r.m, r.poly, r.binary, r.bound)).collect(),
        ]
        .concat(),
        figure: Some(Figure {
            title: "Lemma 9: sign patterns vs number of points m".into(),
            x_label: "m (points)".into(),
            y_label: "distinct sign patterns".into(),
            log_x: true,
            log_y: true,
            series,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_bits_fill_0_to_m_k_minus_1_once() {
        // k = 3, m = 64 (m(k − 1) = 128, the largest key): bits 0..128, each once.
        let k = 3;
        let mut bits: Vec<usize> = (0..64)
            .flat_map(|i| (1..k).map(move |l| pattern_bit(i, l, k)))
            .collect();
        bits.sort_unstable();
        assert_eq!(bits, (0..128).collect::<Vec<_>>());
        assert_eq!(pattern_bit(5, 2, 3), 11);
    }

    #[test]
    fn points_are_m_clients_of_two_gaussian_samples() {
        let mut rng = stream(3, Purpose::Features, 0);
        let pts = points(400, 3, &mut rng);
        assert_eq!(pts.len(), 400);
        assert!(pts
            .iter()
            .all(|(x, y)| x.shape() == (SAMPLES, 3) && y.len() == SAMPLES));
        // 2400 N(0, 1) features and 800 responses: mean square 1 ± 0.03 and ± 0.05 (one SD).
        let xs: f64 = pts.iter().map(|(x, _)| x.norm_squared()).sum::<f64>() / 2400.0;
        let ys: f64 = pts.iter().flat_map(|(_, y)| y).map(|v| v * v).sum::<f64>() / 800.0;
        assert!(
            (xs - 1.0).abs() < 0.15 && (ys - 1.0).abs() < 0.25,
            "{xs} {ys}"
        );
    }

    #[test]
    fn the_growth_fit_takes_rows_below_the_sampling_cap_past_shattering() {
        let row = |d, k, m, poly| Row {
            d,
            k,
            m,
            poly,
            binary: 0,
            bound: 0.0,
        };
        // 60 000 draws: the cap is a count below 3000.
        assert!(row(1, 2, 4, 2999).unsaturated(60_000));
        assert!(!row(1, 2, 4, 3000).unsaturated(60_000));
        // d = 2, k = 2: m(k − 1) = m must reach 2dk = 8.
        assert!(row(2, 2, 8, 10).unsaturated(60_000));
        assert!(!row(2, 2, 7, 10).unsaturated(60_000));
        // d = 1, k = 3: 2m ≥ 6 ⇔ m ≥ 3.
        assert!(row(1, 3, 3, 10).unsaturated(60_000));
        assert!(!row(1, 3, 2, 10).unsaturated(60_000));
    }

    #[test]
    fn rows_need_m_k_minus_1_between_dk_and_128() {
        // d = 2, k = 3: m(k − 1) = 2m ∈ [6, 128] ⇔ m ∈ [3, 64].
        let ms: Vec<usize> = (1..80).filter(|&m| in_range(m, 2, 3)).collect();
        assert_eq!(ms, (3..=64).collect::<Vec<_>>());
        // d = 1, k = 2: m ∈ [2, 128].
        assert!(!in_range(1, 1, 2) && in_range(2, 1, 2) && in_range(128, 1, 2));
        assert!(!in_range(129, 1, 2));
    }

    #[test]
    fn the_bound_bites_from_m_20_at_d_1_k_2() {
        // (50m)² against 2^m: 2500·19² = 902 500 > 2^19 = 524 288; 2500·20² = 10⁶ < 2^20.
        assert!(!bites(19, 1, 2) && bites(20, 1, 2));
        // k = 3, d = 1: (100m·2/3)³ against 2^(2m): m = 16 gives 1.2·10⁹ < 2^32 = 4.3·10⁹, m = 8
        // gives 1.5·10⁸ > 2^16.
        assert!(bites(16, 1, 3) && !bites(8, 1, 3));
    }

    #[test]
    fn a_row_belongs_to_its_own_configuration_only() {
        let row = |d, k| Row {
            d,
            k,
            m: 4,
            poly: 0,
            binary: 0,
            bound: 0.0,
        };
        assert!(row(1, 2).is(1, 2));
        assert!(!row(1, 2).is(2, 2) && !row(1, 2).is(1, 3) && !row(2, 3).is(1, 2));
    }

    #[test]
    fn the_biting_list_holds_this_configurations_biting_rows_only() {
        let row = |d, k, m| Row {
            d,
            k,
            m,
            poly: 0,
            binary: 0,
            bound: 0.0,
        };
        // (1, 2) bites from m = 20 (the test above); (1, 3)'s row at m = 40 bites too but is
        // another configuration.
        let rows = [row(1, 2, 10), row(1, 2, 20), row(1, 3, 40), row(1, 2, 30)];
        assert!(bites(40, 1, 3));
        assert_eq!(biting_ms(&rows, 1, 2), vec![20, 30]);
        assert_eq!(biting_ms(&rows, 1, 3), vec![40]);
        assert!(biting_ms(&rows, 2, 2).is_empty());
    }

    #[test]
    fn the_milnor_thom_bound_and_its_vc_dimension_by_hand() {
        // (100·4·1/2)² = 200²; sabotaged 2²/100.
        assert!((bound(4, 1, 2, false) - 40_000.0).abs() < 1e-9);
        assert!((bound(4, 1, 2, true) - 0.04).abs() < 1e-15);
        // Largest m with m ln 2 ≤ dk ln(100 m(k−1)/(dk)) (Python): d = 1, k = 2: 19
        // (19 ln 2 = 13.17 ≤ 2 ln 950 = 13.71; 20 ln 2 = 13.86 > 2 ln 1000 = 13.82); (1, 3): 33;
        // (2, 2): 39.
        assert_eq!(vc_bound(1, 2), 19);
        assert_eq!(vc_bound(1, 3), 33);
        assert_eq!(vc_bound(2, 2), 39);
        // Many clusters, where the search must start at Milnor–Thom's m(k − 1) ≥ dk and not
        // later: d = 1, k = 17 gives 246 (246 ln 2 = 170.51 ≤ 17 ln(100·246·16/17) = 170.85;
        // 247 ln 2 = 171.21 > 170.92; Python).
        assert_eq!(vc_bound(1, 17), 246);
    }
}
