//! SXY22 Lemma 7 (App. E.2): for `K_j = BΛ_jφ(x) = (1/N)φ_{I_j}ᵀP_{I_j}φ_{I_j}` (true
//! labels; Lemma 1's operator), w.p. `≥ 1 − k e^{−d}`,
//! `c α s N_j/(κN) ≤ λ_min(K_j) ≤ λ_max(K_j) ≤ C β s N_j/N`, given `N_j ≳ d`. Its deterministic
//! core, from `s/κ ≤ λ(P_i) ≤ s` ([SXY21, Lemma 3]; the `p_spectrum` check), is the sandwich
//! `(s/κ) λ_min(φ_{I_j}ᵀφ_{I_j})/N ≤ λ_min(K_j)` and `λ_max(K_j) ≤ s λ_max(φ_{I_j}ᵀφ_{I_j})/N`,
//! checked exactly (relative rounding allowance `SANDWICH_RTOL`, relative to
//! `s λ_max(φ_{I_j}ᵀφ_{I_j})/N`). FedProx enters with `s = 1`, `κ = 1 + γ`.
//!
//! Data: `k = 2` clusters, labels `i mod 2`, `n_i = 10`, `x ~ N(0, Σ_j)` with
//! `Σ_j = diag(U[0.5, 2])`, from [`super::common::Mixture`] — so that the instance's own
//! `α_j = λ_min(Σ_j)` and `β_j = λ_max(Σ_j)` are known (the fedmix generator keeps `Σ_j`
//! private; normalising by the class bound 0.5 instead made the constant depend on how close the
//! draw of `Σ_j` came to it). `K_j` from `fedmix::algorithms::lemma1::GlobalOperator::K` and
//! `lambda_diag`; `η = γ/max_i(‖φ_i‖²/n_i)` with `γ = GAMMA`; `κ` from
//! `fedmix::metrics::kappa_fedavg` / `kappa_fedprox`. A series (one `d`) shares its model and its
//! clients: larger cells extend smaller ones.
//!
//! Constant: the ratio `r = λ_min(K_j) κN/(s N_j α_j)` must stay above one constant `c > 0`:
//! `c` = the smallest ratio on the calibration series (`d = 6`) divided by the safety factor
//! `SAFETY`; every validation ratio (`d ∈ {4, 12}`, `N_j/d` over more than two orders of
//! magnitude, FedAvg `s ∈ {1, 5, 20}` and FedProx, both clusters) must be `≥ c`. Regime:
//! `N_j ≥ 5d`. One more validation series has cluster-dependent client sizes
//! ([`SEPARATED_SIZES`]: sample share `N_0/N ≈ 0.167` against a client share of ½), where the
//! sample share the lemma is stated in and a client share differ by 3× (sandwich and constant
//! only). Slope: the smallest `λ_min(K_j)·κN/(sα_j)` of a validation cell against `N_j`,
//! over `N_j ≥ 20d` (where `λ_min(φ_{I_j}ᵀφ_{I_j})/N_j ≈ α_j(1 − √(d/N_j))²` rises from ≈ 0.6α_j
//! to its limit: effective exponent ≈ 1.1), predicted `1 ± SLOPE_TOL`.
//!
//! Statistic: `1/r` for the smallest validation ratio `r`, printed next to the bound `1/c`
//! (passes when `≤`, the convention of every row of `docs/theory/README.md`; the constant column
//! shows `c` itself); the sandwich's largest relative violation is in the details and must be
//! `≤ SANDWICH_RTOL`.
//!
//! Sabotage: the sandwich's lower end uses `1/κ` for `κ`, i.e. `sκ λ_min(φᵀφ)/N ≤ λ_min(K_j)`.
//! This provably fails whenever `κ > 1` (FedAvg with `s ≥ 2`, FedProx): `P ⪯ sI` gives
//! `λ_min(K_j) ≤ s λ_min(φ_{I_j}ᵀφ_{I_j})/N < sκ λ_min(φ_{I_j}ᵀφ_{I_j})/N`.

use super::common::{line, markers, slope_fit, Mixture};
use crate::framework::{calibrate_then_validate, CheckConfig, CheckRecord, Figure};
use fedmix::algorithms::lemma1::{lambda_diag, GlobalOperator};
use fedmix::federation::Federation;
use fedmix::metrics::{gamma, kappa_fedavg, kappa_fedprox};
use fedmix::params::{LocalSolver, Phase2Params};
use fedmix::prec::{max_nan, min_nan};
use fedmix::seed_streams::child_seed;
use nalgebra::{DMatrix, SymmetricEigen};

/// Relative rounding allowance of the deterministic sandwich.
const SANDWICH_RTOL: f64 = 1e-12;
/// Safety factor applied to the calibrated lower constant (`c = min ratio / SAFETY`).
const SAFETY: f64 = 2.0;
/// `γ = η max_i ‖φ_i‖²/n_i` of every run.
const GAMMA: f64 = 0.5;
/// Tolerance of the slope in `N_j` (predicted 1).
const SLOPE_TOL: f64 = 0.15;
/// Smallest `N_j/d` of the slope fit.
const SLOPE_MIN_RATIO: usize = 20;
/// Range of the diagonal entries of `Σ_j`.
const COV_RANGE: (f64, f64) = (0.5, 2.0);
/// Samples per client.
const N_I: usize = 10;
/// Solver configurations `(solver, s)`.
const CONFIGS: [(LocalSolver, usize); 4] = [
    (LocalSolver::Fedavg, 1),
    (LocalSolver::Fedavg, 5),
    (LocalSolver::Fedavg, 20),
    (LocalSolver::Fedprox, 1),
];
/// Seed tag of this check.
const SEED_TAG: u64 = 7_000;
/// The sample-vs-client series: client `i` of cluster `i mod 2` holds `SEPARATED_SIZES[i mod 2]`
/// samples, so each cluster has half the clients (client share ½) but cluster 0 only
/// `N_0/N = 4/24 ≈ 0.167` of the samples (3× apart). Lemma 7's bound is in the sample share
/// `N_j/N` (SXY22 App. E.2: `K_j = (1/N)φ_{I_j}ᵀP_{I_j}φ_{I_j}`, the Phase 2 weights `n_i/N` of
/// Lemma 1, eq. 11), so an operator built with per-client weights `1/M` scales cluster 0's
/// `K_0` by `N/(M n_i) = 3` and cluster 1's by 0.6 — which the sandwich, exact to rounding,
/// rejects; with equal `n_i`, as on every other series, the two weights coincide.
pub const SEPARATED_SIZES: [usize; 2] = [4, 20];
/// `d` and `N_0/d` of the sample-vs-client series (validation only; `N_0 ≥ 20d`, the slope
/// fits' regime, where the constant is far from binding).
const SEPARATED_D: usize = 6;
const SEPARATED_RATIOS: [usize; 2] = [20, 200];
/// Seed tag of the sample-vs-client series (apart from the grids' `SEED_TAG + series`).
const SEPARATED_TAG: u64 = SEED_TAG + 100;

/// `(λ_min, λ_max)` of a symmetric matrix (symmetrised against rounding).
fn extremes(a: &DMatrix<f64>) -> (f64, f64) {
    let e = SymmetricEigen::new((a + a.transpose()) * 0.5).eigenvalues;
    // NaN-propagating: nalgebra's `min`/`max` skip a NaN eigenvalue.
    (
        e.iter().copied().fold(f64::INFINITY, min_nan),
        e.iter().copied().fold(f64::NEG_INFINITY, max_nan),
    )
}

/// One measurement of a (configuration, cluster).
struct Measure {
    /// `λ_min(K_j) κN/(s N_j α_j)`.
    ratio: f64,
    /// `λ_min(K_j) κN/(s α_j)` (the figure's y).
    lower: f64,
    /// `λ_max(K_j) N/(s N_j β_j)` (the upper constant).
    upper: f64,
    /// Relative violation of the sandwich.
    violation: f64,
}

fn measure(fed: &Federation, mix: &Mixture, sabotage: bool) -> Vec<Measure> {
    let labels = fed.labels().expect("labelled").to_vec();
    let n = fed.total_samples() as f64;
    let (g1, _) = gamma(fed, 1.0);
    let mut out = Vec::new();
    for (solver, s) in CONFIGS {
        let p = Phase2Params {
            eta: GAMMA / g1,
            local_steps: s,
            local_solver: solver,
            rounds: 1,
        };
        let kappa = match solver {
            LocalSolver::Fedavg => kappa_fedavg(GAMMA, s),
            LocalSolver::Fedprox => kappa_fedprox(GAMMA),
        };
        let op = GlobalOperator::new(fed, &p).expect("finite data");
        let s = s as f64;
        for j in 0..2 {
            let (kmin, kmax) = extremes(&op.K(&lambda_diag(fed, &labels, j)));
            let clients: Vec<usize> = (0..fed.num_clients()).filter(|&i| labels[i] == j).collect();
            let gram = clients
                .iter()
                .fold(DMatrix::zeros(fed.d(), fed.d()), |acc, &i| {
                    acc + fed.x(i) * fed.x(i).transpose()
                });
            let (gmin, gmax) = extremes(&gram);
            let nj = clients.iter().map(|&i| fed.n(i)).sum::<usize>() as f64;
            let cov = mix.cov.column(j);
            out.push(Measure::new(
                Spectra {
                    k: (kmin, kmax),
                    gram: (gmin, gmax),
                    cov: (cov.min(), cov.max()),
                },
                Sizes { n, nj, s, kappa },
                sabotage,
            ));
        }
    }
    out
}

/// Extreme eigenvalues of one (configuration, cluster): `K_j`, `φ_Iᵀφ_I` and `Σ_j` (α_j, β_j).
struct Spectra {
    k: (f64, f64),
    gram: (f64, f64),
    cov: (f64, f64),
}

/// `N`, `N_j`, `s` and `κ` of one (configuration, cluster).
struct Sizes {
    n: f64,
    nj: f64,
    s: f64,
    kappa: f64,
}

impl Measure {
    /// Lemma 7's quantities: the sandwich `(s/κ)λ_min(φ_Iᵀφ_I)/N ≤ λ_min(K_j)`, `λ_max(K_j) ≤
    /// sλ_max(φ_Iᵀφ_I)/N` (its violation relative to the upper side; sabotage: `sκ` for `s/κ`)
    /// and the lower constant's ratio `λ_min(K_j)κN/(s N_j α_j)`.
    fn new(sp: Spectra, sz: Sizes, sabotage: bool) -> Self {
        let ((kmin, kmax), (gmin, gmax), (alpha_j, beta_j)) = (sp.k, sp.gram, sp.cov);
        let Sizes { n, nj, s, kappa } = sz;
        let lower_factor = if sabotage { s * kappa } else { s / kappa };
        let scale = s * gmax / n;
        let violation = max_nan(
            max_nan(lower_factor * gmin / n - kmin, kmax - s * gmax / n),
            0.0,
        ) / scale;
        Measure {
            ratio: kmin * kappa * n / (s * nj * alpha_j),
            lower: kmin * kappa * n / (s * alpha_j),
            upper: kmax * n / (s * nj * beta_j),
            violation,
        }
    }
}

/// A grid of `(d, N_j/d)` series.
type Grid = Vec<(usize, Vec<usize>)>;

/// The calibration and validation grids of a profile.
fn grids(cfg: &CheckConfig) -> (Grid, Grid) {
    // (d, N_j/d) series.
    let cal: Grid = vec![(
        6,
        cfg.pick(vec![5, 20, 200, 2000], vec![5, 10, 20, 200, 2000, 5000]),
    )];
    let val: Grid = cfg.pick(
        vec![(4, vec![10, 30, 300, 3000]), (12, vec![5, 20, 200, 2000])],
        // The slope uses N_j ≥ SLOPE_MIN_RATIO·d: FULL_SLOPE_POINTS geometric ratios from there.
        // Below it, no validation cell is harder than the calibration's hardest (d = 6,
        // N_j = 5d): d = 4 starts at 10d, where λ_min fluctuates less (as in the quick profile).
        [(4, 10, 10_000), (12, 5, 2000), (32, 5, 2000)]
            .into_iter()
            .map(|(d, lo, hi)| {
                let mut r = vec![lo];
                if lo < 10 {
                    r.push(10);
                }
                r.extend(super::common::geometric_grid(
                    SLOPE_MIN_RATIO,
                    hi,
                    super::common::FULL_SLOPE_POINTS,
                ));
                (d, r)
            })
            .collect(),
    );
    (cal, val)
}

/// `N_0` and `N` of one sample-vs-client federation.
struct SeparatedSizes {
    nj0: usize,
    n: usize,
}

/// The sample-vs-client series ([`SEPARATED_SIZES`]): one model, a federation per `N_0/d`,
/// each measured like a grid cell.
fn separated_series(cfg: &CheckConfig) -> Vec<(SeparatedSizes, Vec<Measure>)> {
    let seed = child_seed(cfg.seed, SEPARATED_TAG);
    let mix = Mixture::draw(SEPARATED_D, &[0.5, 0.5], 1.0, COV_RANGE, 0.1, seed);
    SEPARATED_RATIOS
        .iter()
        .map(|&ratio| {
            let per_cluster = (SEPARATED_D * ratio).div_ceil(SEPARATED_SIZES[0]);
            let labels: Vec<usize> = (0..2 * per_cluster).map(|i| i % 2).collect();
            let sizes: Vec<usize> = labels.iter().map(|&z| SEPARATED_SIZES[z]).collect();
            let fed = mix.federation(&sizes, Some(labels), seed, 0);
            let sz = SeparatedSizes {
                nj0: per_cluster * SEPARATED_SIZES[0],
                n: fed.total_samples(),
            };
            (sz, measure(&fed, &mix, cfg.sabotage))
        })
        .collect()
}

/// Run the check.
pub fn run(cfg: &CheckConfig) -> CheckRecord {
    let (cal, val) = grids(cfg);
    let mut cal_pts = Vec::new();
    let mut val_pts = Vec::new();
    let (mut worst_viol, mut upper_const) = (0.0f64, 0.0f64);
    let mut series = Vec::new();
    let mut slopes = Vec::new();
    let mut bound_line = Vec::new();
    let mut series_id = 0u64;
    for (is_cal, grid) in [(true, &cal), (false, &val)] {
        for (d, ratios) in grid.iter() {
            let seed = child_seed(cfg.seed, SEED_TAG + series_id);
            series_id += 1;
            let mix = Mixture::draw(*d, &[0.5, 0.5], 1.0, COV_RANGE, 0.1, seed);
            let mut obs = Vec::new();
            let mut slope_pts = Vec::new();
            for &ratio in ratios {
                let clients = 2 * (d * ratio).div_ceil(N_I);
                let labels = (0..clients).map(|i| i % 2).collect();
                let fed = mix.federation(&vec![N_I; clients], Some(labels), seed, 0);
                let nj = (clients / 2 * N_I) as f64;
                let m = measure(&fed, &mix, cfg.sabotage);
                for x in &m {
                    worst_viol = max_nan(worst_viol, x.violation);
                    upper_const = max_nan(upper_const, x.upper);
                    // calibrate_then_validate bounds statistic/shape: pass (1, r), so 1/r ≤ 1/c.
                    if is_cal {
                        cal_pts.push((1.0, x.ratio));
                    } else {
                        val_pts.push((1.0, x.ratio));
                    }
                    obs.push((nj, x.lower));
                }
                if !is_cal && ratio >= SLOPE_MIN_RATIO {
                    let min_lower = m.iter().map(|x| x.lower).fold(f64::INFINITY, min_nan);
                    slope_pts.push((nj, min_lower));
                }
                bound_line.push(nj);
            }
            let label = format!("d = {d}{}", if is_cal { " (calibration)" } else { "" });
            series.push(markers(format!("λ_min(K_j)·κN/(sα_j), {label}"), obs));
            if !is_cal {
                slopes.push(slope_fit(
                    &format!("N_j (d = {d}, N_j ≥ {SLOPE_MIN_RATIO}d)"),
                    &slope_pts,
                    1.0,
                    SLOPE_TOL,
                ));
            }
        }
    }
    let separated = separated_series(cfg);
    for x in separated.iter().flat_map(|(_, m)| m) {
        worst_viol = max_nan(worst_viol, x.violation);
        upper_const = max_nan(upper_const, x.upper);
        val_pts.push((1.0, x.ratio));
    }
    let (inv_c, inv_worst) = calibrate_then_validate(&cal_pts, &val_pts, SAFETY);
    let (c, worst_ratio) = (1.0 / inv_c, 1.0 / inv_worst);
    series.push(line(
        format!("c·N_j, c = {c:.3}"),
        bound_line.iter().map(|&x| (x, c * x)).collect(),
    ));
    let sandwich_ok = worst_viol <= SANDWICH_RTOL;
    let passed = sandwich_ok && inv_worst <= inv_c && slopes.iter().all(|s| s.ok());
    CheckRecord {
        name: "lemma7_k_spectrum".into(),
        claim: "(s/κ)λ_min(φ_Iᵀφ_I)/N ≤ λ_min(K_j) ≤ λ_max(K_j) ≤ sλ_max(φ_Iᵀφ_I)/N exactly, and λ_min(K_j) ≥ c α s N_j/(κN) with one c".into(),
        source: "SXY22 Lemma 7 (App. E.2)".into(),
        statistic: inv_worst,
        bound: inv_c,
        constant: Some(c),
        slopes,
        constants: Vec::new(),
        passed,
        inconclusive: None,
        details: vec![
            format!("k = 2, labels i mod 2, n_i = {N_I}, Σ_j = diag(U[{}, {}]) (α_j, β_j the instance's own extremes), σ = 0.1; γ = {GAMMA}; FedAvg s ∈ {{1, 5, 20}} and FedProx (s = 1, κ = 1 + γ); both clusters; series s seeded by child_seed(seed, {SEED_TAG} + s), clients nested along a series", COV_RANGE.0, COV_RANGE.1),
            format!("calibration (d, N_j/d): {cal:?}; validation: {val:?}"),
            format!("sandwich{}: largest relative violation {worst_viol:.3e} (allowance {SANDWICH_RTOL:e}) — {}", if cfg.sabotage { " (SABOTAGED: 1/κ for κ)" } else { "" }, if sandwich_ok { "holds" } else { "VIOLATED" }),
            format!("statistic = 1/r for the smallest validation ratio r = λ_min(K_j)κN/(sN_jα_j) = {worst_ratio:.4}; passes when ≤ 1/c, i.e. r ≥ c = (smallest calibration ratio)/{SAFETY} = {c:.4}"),
            format!("validation sample-vs-client series (d = {SEPARATED_D}, cluster 0: clients × n_i = {}, cluster 1: × {}, client share ½ each; sandwich and constant only): {}", SEPARATED_SIZES[0], SEPARATED_SIZES[1], separated.iter().map(|(sz, m)| format!("N_0 = {}, N = {}: ρ = min_j N_j/N = {:.4} vs client share 0.5, smallest ratio r = {:.4}", sz.nj0, sz.n, sz.nj0 as f64 / sz.n as f64, m.iter().map(|x| x.ratio).fold(f64::INFINITY, min_nan))).collect::<Vec<_>>().join("; ")),
            format!("upper end: largest λ_max(K_j)N/(sN_jβ_j) = {upper_const:.4} (the lemma's C, not tested)"),
            format!("slope of min λ_min(K_j)·κN/(sα_j) in N_j over N_j ≥ {SLOPE_MIN_RATIO}d, predicted 1 ± {SLOPE_TOL}"),
        ],
        figure: Some(Figure {
            title: "Lemma 7: λ_min(K_j)·κN/(sα_j) vs N_j".into(),
            x_label: "N_j".into(),
            y_label: "λ_min(K_j) κN / (s α_j)".into(),
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
    fn extremes_are_the_smallest_and_largest_eigenvalues_by_hand() {
        // [[2, 1], [1, 2]] has eigenvalues 1 and 3; a rounding asymmetry is symmetrised away.
        let a = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0 + 1e-15, 2.0]);
        let (lo, hi) = extremes(&a);
        assert!(
            (lo - 1.0).abs() < 1e-12 && (hi - 3.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        // diag(0.5, 4, 2): 0.5 and 4 whatever the order.
        let (lo, hi) = extremes(&DMatrix::from_diagonal(&nalgebra::dvector![0.5, 4.0, 2.0]));
        assert_eq!((lo, hi), (0.5, 4.0));
    }

    #[test]
    fn the_measures_are_lemma_7s_by_hand() {
        // λ(K) ∈ [0.3, 1.2], λ(φᵀφ) ∈ [100, 400], α = 0.5, β = 2, N = 1000, N_j = 400, s = 5,
        // κ = 2: sandwich 5/2·100/1000 = 0.25 ≤ 0.3 and 1.2 ≤ 5·400/1000 = 2 holds (violation
        // 0); ratio 0.3·2·1000/(5·400·0.5) = 0.6, lower 0.3·2·1000/(5·0.5) = 240, upper
        // 1.2·1000/(5·400·2) = 0.3.
        let spectra = |kmin, kmax| Spectra {
            k: (kmin, kmax),
            gram: (100.0, 400.0),
            cov: (0.5, 2.0),
        };
        let sizes = || Sizes {
            n: 1000.0,
            nj: 400.0,
            s: 5.0,
            kappa: 2.0,
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
        let m = Measure::new(spectra(0.3, 1.2), sizes(), false);
        assert!(close(m.ratio, 0.6) && close(m.lower, 240.0) && close(m.upper, 0.3));
        assert_eq!(m.violation.to_bits(), 0f64.to_bits());
        // λ_min(K) = 0.2 < 0.25: violation 0.05 / 2; λ_max(K) = 2.5 > 2: 0.5 / 2.
        assert!(close(
            Measure::new(spectra(0.2, 1.2), sizes(), false).violation,
            0.025
        ));
        assert!(close(
            Measure::new(spectra(0.3, 2.5), sizes(), false).violation,
            0.25
        ));
        // Sabotaged lower side sκ/N·λ_min(φᵀφ) = 1: violation (1 − 0.3)/2.
        assert!(close(
            Measure::new(spectra(0.3, 1.2), sizes(), true).violation,
            0.35
        ));
    }

    #[test]
    fn the_full_grids_are_the_stated_ones() {
        let cfg = CheckConfig::full(1);
        let (cal, val) = grids(&cfg);
        assert_eq!(cal, vec![(6, vec![5, 10, 20, 200, 2000, 5000])]);
        // From 20d: 7 geometric points (20·(hi/20)^(i/6), rounded), below it 5d and 10d where
        // the series starts there; d = 4 starts at 10d.
        let to_10k = [20, 56, 159, 447, 1260, 3550, 10000];
        let to_2k = [20, 43, 93, 200, 431, 928, 2000];
        let with = |head: &[usize], tail: &[usize]| [head, tail].concat();
        assert_eq!(
            val,
            vec![
                (4, with(&[10], &to_10k)),
                (12, with(&[5, 10], &to_2k)),
                (32, with(&[5, 10], &to_2k)),
            ]
        );
        for (_, r) in cal.iter().chain(&val) {
            assert!(r.windows(2).all(|w| w[0] < w[1]), "{r:?}");
        }
    }
}
