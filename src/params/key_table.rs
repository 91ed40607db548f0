//! The keys as written: every `--set` / TOML key of every algorithm, declared once in the
//! `run_keys!` list below with its type, default, readers, range check and meaning (the doc
//! comments are the keys' reference), parsed and range-checked once. Only the parameter groups
//! read it, through their `bind_keys!` lines ([`super::groups`]):
//! [`crate::algorithms::AlgorithmParams`] takes from it the typed group of one algorithm, and no
//! public function takes a `KeyTable`.

use super::baselines::{IfcaOption, InitDist, SrfcaDist, MAX_RESTARTS, MAX_ROUNDS};
use super::key_decl::{any, at_least_one, non_negative, positive, rule, run_keys};
use super::phase1::{Pairing, Phase1Variant, SubspaceMethod};
use super::phase2::LocalSolver;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use serde::{Deserialize, Serialize};

/// Default `γ = η max_i ‖φ_i‖²/n_i` when `eta` is not given: `η = 0.8 / max_i ‖φ_i‖²/n_i`.
///
/// Decision, measured (seeds 1–10 of the SXY22 settings): γ < 1 is required for every client
/// \[SXY21\], and Phase 2's per-round progress `sη/κ = (1 − (1−γ)^s)/max_i(‖φ_i‖²/n_i)` grows
/// with γ, so the rule takes the largest γ that keeps a 20% margin below 1. The worst client
/// sets γ: in `sxy-unbalanced-*` the 900 clients with n_i = 10 < d = 100 have
/// ‖φ_i‖²/n_i ≈ 17, so γ = 1/4 gives η ≈ 0.014 and Phase 2 (s = 5) is still far from converged
/// after 400 rounds (final/oracle up to 2.4 on seeds 1–10 of `sxy-unbalanced-both`; 1.16 with
/// γ = 1/2; ≤ 1.04 with γ = 0.8). The price is a slightly larger FedAvg fixed-point error (the
/// oracle's converged error on `sxy-balanced` seed 1 is 0.0191 at γ = 1/4, 0.0203 at γ = 0.8).
pub const DEFAULT_ETA_GAMMA: f64 = 0.8;

run_keys! {
    /// Phase 2 step size; `None` = `eta_gamma / max_i ‖φ_i‖²/n_i`.
    eta: Option<f64> = None;
        Phase2, "0.05", |v| v.map_or(Ok(()), positive);
    /// Target γ for the default step size.
    eta_gamma: f64 = DEFAULT_ETA_GAMMA;
        Phase2, "0.5", |v| rule(*v > 0.0 && *v < 1.0, v, "must be in (0, 1)");
    /// FedAvg local steps `s`.
    local_steps: usize = 5;
        Phase2, "2", at_least_one;
    /// Local solver.
    local_solver: LocalSolver = LocalSolver::Fedavg;
        Phase2, "fedprox", any;
    /// Phase 2 / main-loop rounds.
    rounds: usize = 400;
        Phase2, "3", |v| rule(*v < MAX_ROUNDS, v, format!("must be < {MAX_ROUNDS}"));
    /// Phase 1 variant.
    phase1_variant: Phase1Variant = Phase1Variant::Practical;
        Phase1, "faithful", any;
    /// Phase 1 iterations `T` (default 10). Decision, measured: the practical variant's anchors
    /// stall after about 6 iterations (their σ̂ falls below εΔ, so SXY22 Phase 1 step 12 stops
    /// moving them); 10 and 20 gave the same table on seeds 1–10 of the three SXY22 settings,
    /// the paper's 5 (App. C) with 10 anchors did not (7/10 on `sxy-unbalanced-both`; the
    /// anchors, not the iterations, were short).
    phase1_iterations: usize = 10;
        Phase1, "3", any;
    /// Number of anchors `n_H`; `None` = `min(⌈k ln N⌉, eligible)`: Theorem 1's
    /// `n_H ≥ log N / p_min` with `p_min = 1/k` (p is unknown to a real PS), capped by the
    /// clients holding `anchor_min_samples`. 28 on `sxy-balanced`, 20 (all eligible) on the
    /// unbalanced settings, against the paper's ⌈3k ln k⌉ = 10.
    anchors: Option<usize> = None;
        Phase1, "4", any;
    /// Minimum `n_i` of a practical-variant anchor; `None` = `5k`. Decision: App. C picks
    /// anchors "randomly" without a size rule, while an anchor is defined by `n_i = Ω̃(k)`
    /// (SXY22 §3) and its `k × k` moment `A` needs several samples per dimension; `5k` is 15 on
    /// the SXY22 settings, so in C.2/C.3 only the 20 clients with 50 samples qualify.
    anchor_min_samples: Option<usize> = None;
        Phase1, "3", any;
    /// Stopping threshold `ε` (`σ̂ ≤ εΔ`).
    epsilon: f64 = 0.05;
        Phase1, "0.1", any;
    /// Separation `Δ`; `None` = from `θ*` (synthetic data).
    separation: Option<f64> = None;
        Phase1, "1.5", any;
    /// `α` (covariance lower bound).
    alpha: f64 = 1.0;
        Phase1, "0.5", any;
    /// `β` (covariance upper bound).
    beta: f64 = 1.0;
        Phase1, "2.0", any;
    /// Sample pairing of the practical variant.
    pairing: Pairing = Pairing::AllPairs;
        Phase1, "halves", any;
    /// Subspace method of the practical variant.
    subspace: SubspaceMethod = SubspaceMethod::Svd;
        Phase1, "orthogonal-iteration", any;
    /// Orthogonal-iteration steps `T₁` (even).
    t1: usize = 40;
        Phase1, "20", any;
    /// Power-iteration steps `T₂`.
    t2: usize = 100;
        Phase1, "50", any;
    /// Fresh clients per iteration (faithful); `None` = all available split over `T`.
    m: Option<usize> = None;
        Phase1, "3", any;
    /// Fresh sample pairs per anchor per iteration (faithful); `None` = the largest the anchors allow.
    ell: Option<usize> = None;
        Phase1, "2", any;
    /// Random initialisation: `θ₀ ~ N(0, init_scale² I_d / d)`.
    init_scale: f64 = 1.0;
        Own, "2.0", |v| non_negative(*v);
    /// Number of clusters; `None` = the data's k.
    k: Option<usize> = None;
        Own, "3", |v| v.as_ref().map_or(Ok(()), at_least_one);
    /// Restarts (baselines; the two-phase algorithm needs none).
    restarts: usize = 1;
        Own, "2", |v| {
            at_least_one(v)?;
            rule(*v <= MAX_RESTARTS, v, format!("must be in 1..={MAX_RESTARTS}"))
        };
    /// Fraction of clients per round (baselines).
    participation: f64 = 1.0;
        Own, "0.5", |v| rule(*v > 0.0 && *v <= 1.0, v, "must be in (0, 1]");
    /// Replicates advanced together in one pass over the data (IFCA restarts, the
    /// `ifca-official` grid): ≥ 1, default 32; 1 = one at a time. Results are identical for
    /// every value ([`crate::engine::client_pass`]); larger batches turn memory-bound
    /// passes into compute-bound products.
    replicate_batch: usize = 32;
        Own, "4", at_least_one;
    /// IFCA aggregation: `gradient` (option I) | `model` (option II, default; `local_steps` = τ).
    ifca_option: IfcaOption = IfcaOption::Model;
        Own, "gradient", any;
    /// IFCA random init law: `gaussian` (default, N(0, init_scale² I/d)) | `bernoulli`
    /// (init_scale · Bernoulli(0.5)^d, IFCA §6.1).
    ifca_init: InitDist = InitDist::Gaussian;
        Own, "bernoulli", any;
    /// `ifca-official`: init seeds (≥ 1; default 10, the official `train_seed ∈ range(10)`).
    ifca_official_inits: usize = 10;
        Own, "2", |v| rule((1..=MAX_RESTARTS).contains(v), v, format!("must be in 1..={MAX_RESTARTS}"));
    /// `ifca-official`: learning-rate grid (values > 0); default {1, 0.1, 0.01} for k = 2,
    /// {2, 1, 0.5} for k = 4.
    ifca_official_lrs: Option<Vec<f64>> = None;
        Own, "[0.5]", |v| v.as_ref().map_or(Ok(()), |lrs| rule(!lrs.is_empty() && lrs.iter().all(|x| x.is_finite() && *x > 0.0), format!("{lrs:?}"), "must be a non-empty list of finite values > 0"));
    /// `ifca-official`: iterations per run (default 300).
    ifca_official_iterations: usize = 300;
        Own, "7", |v| rule(*v < MAX_ROUNDS, v, format!("must be < {MAX_ROUNDS}"));
    /// `ifca-official`: σ of the success rule `min_dist < 0.6σ + offset` (≥ 0); default: the
    /// data's generator σ.
    ifca_official_sigma: Option<f64> = None;
        Own, "0.3", |v| v.map_or(Ok(()), non_negative);
    /// `ifca-official`: threshold offset (≥ 0; default 0.001 as in the official r–noise sweeps;
    /// 0 reproduces the m–n sweeps).
    ifca_official_offset: f64 = 0.001;
        Own, "0.01", |v| non_negative(*v);
    /// `local` / `one-shot`: ridge λ ≥ 0 of the local estimate (default 0 = min-norm least squares).
    local_ridge: f64 = 0.0;
        Own, "0.1", |v| non_negative(*v);
    /// `one-shot`: seeded k-means++ starts (≥ 1; default 10).
    kmeans_inits: usize = 10;
        Own, "2", at_least_one;
    /// `one-shot`: Lloyd iterations per start (default 300).
    kmeans_max_iter: usize = 300;
        Own, "7", any;
    /// `sr-fca`: threshold λ > 0; default: the `srfca_lambda_quantile` rule.
    srfca_lambda: Option<f64> = None;
        Own, "0.5", |v| v.map_or(Ok(()), positive);
    /// `sr-fca`: λ = this quantile of the ONE_SHOT pairwise distances when `srfca_lambda` is
    /// unset (in (0, 1]; default 0.1, the authors' `dist_fraction` rule).
    ///
    /// Decision, measured (`examples/baselines_table.rs`, `docs/baselines.md`): kept
    /// at 0.1. ONE_SHOT links clients and takes **connected components** (SRFCA Algorithm 1),
    /// so λ must lie in the narrow window between the largest edge needed to connect each true
    /// cluster and the smallest cross-cluster distance — at the low end of the distances, not
    /// in "the middle" of their histogram (SRFCA §5): on `sxy-balanced` seed 1 (ℓ2) the window
    /// is (0.703, 0.747), within-cluster distances 0.736 ± 0.040, cross 1.054 ± 0.074; the
    /// 0.1-quantile gives 0.716, inside it, while a midpoint/valley rule (≈ 0.9) would chain
    /// all clusters into one. On `srfca-linear` (n_i = 100 ≪ d = 1000) **no λ works**: the
    /// min-norm local models are `w_i ≈ P_i θ*` (P_i the projection on client i's 100-dim row
    /// space), whose distances are dominated by the per-client norm ‖P_i θ*‖, not the cluster
    /// (seed 1: within 9.62 ± 0.45, cross 9.88 ± 0.43; the smallest cross distance 8.76 is
    /// below the 9.98 needed to connect a cluster; cross-loss: within 231 ± 23, cross
    /// 255 ± 25). Every quantile from 0.002 to 0.5 gives one ONE_SHOT cluster on 4 of seeds
    /// 1–5 (seed 3 at 0.002 is the exception) and SR-FCA can never add clusters later
    /// (RECLUSTER/MERGE only reassign and merge), so it ends with K̂ = 1 (misclustering 1 under
    /// SRFCA Def. 3.1). That is outside the paper's guarantee (Lemma 4.6 needs
    /// n^{2/3}Δ^{4/3}/(D^{2/3}L̂^{2/3}) ≳ d); no threshold rule can fix it.
    srfca_lambda_quantile: f64 = 0.1;
        Own, "0.3", |v| rule(*v > 0.0 && *v <= 1.0, v, "must be in (0, 1]");
    /// `sr-fca`: size parameter t ≥ 1 (clients per kept component; default 2).
    srfca_size: usize = 2;
        Own, "1", |v| rule(*v >= 1, v, "t must be ≥ 1");
    /// `sr-fca`: trimming level β ∈ [0, 1/2) of TrMean_β (default 0.1).
    srfca_beta: f64 = 0.1;
        Own, "0.2", |v| rule((0.0..0.5).contains(v), v, "β must be in [0, 1/2)");
    /// `sr-fca`: REFINE steps R ≥ 1 (default 2).
    srfca_refine_steps: usize = 2;
        Own, "1", |v| rule(*v >= 1, v, "R must be ≥ 1");
    /// `sr-fca`: ONE_SHOT local GD steps ≥ 1; default (unset): exact min-norm least squares.
    srfca_local_iterations: Option<usize> = None;
        Own, "3", |v| rule(*v != Some(0), 0, "must be ≥ 1 (unset = exact local least squares)");
    /// `sr-fca`: TrimmedMeanGD steps T ≥ 1 (default 200).
    srfca_refine_rounds: usize = 200;
        Own, "7", |v| rule(*v >= 1, v, "T must be ≥ 1");
    /// `sr-fca`: distance `l2` (default) | `cross-loss`.
    srfca_dist: SrfcaDist = SrfcaDist::L2;
        Own, "cross-loss", any;
    /// `sr-fca`: diameter D > 0 of the ball W (default: unconstrained).
    srfca_diameter: Option<f64> = None;
        Own, "10.0", |v| v.map_or(Ok(()), |d| rule(d.is_finite() && d > 0.0, d, "D must be finite and > 0"));
    /// `cfl`: ε₁ > 0, split when ‖mean update‖ < ε₁ (default 0.02).
    cfl_eps1: f64 = 0.02;
        Own, "0.5", |v| positive(*v);
    /// `cfl`: ε₂ > 0, split when max ‖update‖ > ε₂ (default 0.1).
    cfl_eps2: f64 = 0.1;
        Own, "0.5", |v| positive(*v);
    /// `cfl`: γ_max ∈ [0, 1), accept a split when √((1 − α_max^cross)/2) > γ_max (default 0).
    ///
    /// Decision, measured (`examples/baselines_table.rs`, `docs/baselines.md`): kept at 0 (the
    /// authors' notebook applies no γ test). With it CFL over-splits when clients are
    /// underdetermined: a client with n_i < d keeps a non-vanishing update at its cluster's
    /// stationary point, so `max ‖Δθ_i‖ > ε₂` holds in every round, and the optimal bipartition
    /// (single linkage) then peels off the one client least similar to the rest — one singleton per
    /// round after the warm-up: 155/301/316 clusters on `sxy-unbalanced-both` seeds 1–3 (n_i = 10,
    /// d = 100; every split's γ in 0.58–0.65), 16, 19, 11 on `srfca-linear` seeds 1–3 (correct
    /// first split, then small fragments of a true cluster; γ 0.70–0.71), 3 (correct) on
    /// `sxy-balanced` (γ of the correct splits 0.66–0.75). No γ_max separates correct from spurious
    /// splits across settings: in high dimension noise updates are nearly orthogonal, γ ≈ √½ ≈
    /// 0.707, which is also the γ of `srfca-linear`'s correct split.
    cfl_gamma_max: f64 = 0.0;
        Own, "0.5", |v| rule((0.0..1.0).contains(v), v, "must be in [0, 1)");
    /// `cfl`: no split before this round (default 20).
    cfl_warmup_rounds: usize = 20;
        Own, "2", any;
    /// `fedsoft`: proximal weight λ ≥ 0 (finite) of each client's local objective
    /// `F_i(w) + (λ/2) Σ_s u_is ‖w − c_s‖²` (default 1.0).
    ///
    /// In fedmix's loss convention (`F_i = ‖y_i − φ_iw‖²/(2n_i)`); FedSoft's authors
    /// (`ycruan/FedSoft`, `solvers.py`: `LRClientSolver.reg_weight = 1.0`) add the same penalty to
    /// torch's `MSELoss`, which is `2F_i`, so their `(lr, reg_weight)` is fedmix's
    /// `(eta, fedsoft_lambda) = (2·lr, reg_weight/2)`: the default 1.0 is their 2.0.
    fedsoft_lambda: f64 = 1.0;
        Own, "0.5", |v| non_negative(*v);
    /// `fedsoft`: smoother σ ∈ (0, 1), the importance weight `u_is` of a cluster that none of
    /// client i's samples chose (default 1e-4, the authors' `count_smoother`).
    fedsoft_smoother: f64 = 1e-4;
        Own, "0.01", |v| rule(*v > 0.0 && *v < 1.0, v, "must be in (0, 1)");
    /// `fedsoft`: importance estimation every τ ≥ 1 rounds (default 1, the authors'
    /// `ServerSolver.estimation_interval`).
    fedsoft_interval: usize = 1;
        Own, "2", at_least_one;
}

/// The number of clusters: `k` when given, else the data's.
///
/// # Errors
/// [`FedmixError::Missing`] when neither is known; k > M.
pub fn resolve_k(k: Option<usize>, fed: &Federation) -> Result<usize> {
    let k = k.or(fed.k()).ok_or_else(|| FedmixError::Missing {
        what: "k (set `k`)".into(),
    })?;
    if k > fed.num_clients() {
        return Err(FedmixError::invalid(
            "k",
            k,
            format!("exceeds the number of clients M = {}", fed.num_clients()),
        ));
    }
    Ok(k)
}
