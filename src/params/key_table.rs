//! The keys as written: every `--set` / TOML key of every algorithm, with its default and its
//! meaning (the field docs of [`KeyTable`] are the keys' reference), parsed and range-checked
//! once. Only the parameter layer reads it: [`super::AlgorithmParams`] takes from it the typed
//! group of one algorithm, and no algorithm or public function takes a `KeyTable`.

use super::baselines::{check_participation, IfcaOption, InitDist, SrfcaDist};
use super::baselines::{
    CflConfig, FedAvgParams, IfcaConfig, IfcaOfficialConfig, LocalParams, OneShotParams,
    OracleLabelsParams, SrfcaConfig,
};
use super::keys::{check_applicable, check_known};
use super::kind::AlgorithmKind;
use super::phase1::{
    Pairing, Phase1Config, Phase1Variant, Phase2OnlyParams, SubspaceMethod, TwoPhaseParams,
};
use super::phase2::{LocalSolver, Phase2Config, StepRule};
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

/// Every key of every algorithm with its default: the syntax of `--set` / TOML and the keys'
/// reference. Parse keys with [`super::AlgorithmParams::from_sources`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KeyTable {
    /// Phase 2 step size; `None` = `eta_gamma / max_i ‖φ_i‖²/n_i`.
    pub eta: Option<f64>,
    /// Target γ for the default step size.
    pub eta_gamma: f64,
    /// FedAvg local steps `s`.
    pub local_steps: usize,
    /// Local solver.
    pub local_solver: LocalSolver,
    /// Phase 2 / main-loop rounds.
    pub rounds: usize,
    /// Phase 1 variant.
    pub phase1_variant: Phase1Variant,
    /// Phase 1 iterations `T` (default 10). Decision, measured: the practical variant's anchors
    /// stall after about 6 iterations (their σ̂ falls below εΔ, so SXY22 Phase 1 step 12 stops
    /// moving them); 10 and 20 gave the same table on seeds 1–10 of the three SXY22 settings,
    /// the paper's 5 (App. C) with 10 anchors did not (7/10 on `sxy-unbalanced-both`; the
    /// anchors, not the iterations, were short).
    pub phase1_iterations: usize,
    /// Number of anchors `n_H`; `None` = `min(⌈k ln N⌉, eligible)`: Theorem 1's
    /// `n_H ≥ log N / p_min` with `p_min = 1/k` (p is unknown to a real PS), capped by the
    /// clients holding `anchor_min_samples`. 28 on `sxy-balanced`, 20 (all eligible) on the
    /// unbalanced settings, against the paper's ⌈3k ln k⌉ = 10.
    pub anchors: Option<usize>,
    /// Minimum `n_i` of a practical-variant anchor; `None` = `5k`. Decision: App. C picks
    /// anchors "randomly" without a size rule, while an anchor is defined by `n_i = Ω̃(k)`
    /// (SXY22 §3) and its `k × k` moment `A` needs several samples per dimension; `5k` is 15 on
    /// the SXY22 settings, so in C.2/C.3 only the 20 clients with 50 samples qualify.
    pub anchor_min_samples: Option<usize>,
    /// Stopping threshold `ε` (`σ̂ ≤ εΔ`).
    pub epsilon: f64,
    /// Separation `Δ`; `None` = from `θ*` (synthetic data).
    pub separation: Option<f64>,
    /// `α` (covariance lower bound).
    pub alpha: f64,
    /// `β` (covariance upper bound).
    pub beta: f64,
    /// Sample pairing of the practical variant.
    pub pairing: Pairing,
    /// Subspace method of the practical variant.
    pub subspace: SubspaceMethod,
    /// Orthogonal-iteration steps `T₁` (even).
    pub t1: usize,
    /// Power-iteration steps `T₂`.
    pub t2: usize,
    /// Fresh clients per iteration (faithful); `None` = all available split over `T`.
    pub m: Option<usize>,
    /// Fresh sample pairs per anchor per iteration (faithful); `None` = the largest the anchors allow.
    pub ell: Option<usize>,
    /// Random initialisation: `θ₀ ~ N(0, init_scale² I_d / d)`.
    pub init_scale: f64,
    /// Number of clusters; `None` = the data's k.
    pub k: Option<usize>,
    /// Restarts (baselines; the two-phase algorithm needs none).
    pub restarts: usize,
    /// Fraction of clients per round (baselines).
    pub participation: f64,
    /// Replicates advanced together in one pass over the data (IFCA restarts, the
    /// `ifca-official` grid): ≥ 1, default 32; 1 = one at a time. Results are identical for
    /// every value ([`crate::engine::client_pass`]); larger batches turn memory-bound
    /// passes into compute-bound products.
    pub replicate_batch: usize,
    /// IFCA aggregation: `gradient` (option I) | `model` (option II, default; `local_steps` = τ).
    pub ifca_option: IfcaOption,
    /// IFCA random init law: `gaussian` (default, N(0, init_scale² I/d)) | `bernoulli`
    /// (init_scale · Bernoulli(0.5)^d, IFCA §6.1).
    pub ifca_init: InitDist,
    /// `ifca-official`: init seeds (≥ 1; default 10, the official `train_seed ∈ range(10)`).
    pub ifca_official_inits: usize,
    /// `ifca-official`: learning-rate grid (values > 0); default {1, 0.1, 0.01} for k = 2,
    /// {2, 1, 0.5} for k = 4.
    pub ifca_official_lrs: Option<Vec<f64>>,
    /// `ifca-official`: iterations per run (default 300).
    pub ifca_official_iterations: usize,
    /// `ifca-official`: σ of the success rule `min_dist < 0.6σ + offset` (≥ 0); default: the
    /// data's generator σ.
    pub ifca_official_sigma: Option<f64>,
    /// `ifca-official`: threshold offset (≥ 0; default 0.001 as in the official r–noise sweeps;
    /// 0 reproduces the m–n sweeps).
    pub ifca_official_offset: f64,
    /// `local` / `one-shot`: ridge λ ≥ 0 of the local estimate (default 0 = min-norm least squares).
    pub local_ridge: f64,
    /// `one-shot`: seeded k-means++ starts (≥ 1; default 10).
    pub kmeans_inits: usize,
    /// `one-shot`: Lloyd iterations per start (default 300).
    pub kmeans_max_iter: usize,
    /// `sr-fca`: threshold λ > 0; default: the `srfca_lambda_quantile` rule.
    pub srfca_lambda: Option<f64>,
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
    pub srfca_lambda_quantile: f64,
    /// `sr-fca`: size parameter t ≥ 1 (clients per kept component; default 2).
    pub srfca_size: usize,
    /// `sr-fca`: trimming level β ∈ [0, 1/2) of TrMean_β (default 0.1).
    pub srfca_beta: f64,
    /// `sr-fca`: REFINE steps R ≥ 1 (default 2).
    pub srfca_refine_steps: usize,
    /// `sr-fca`: ONE_SHOT local GD steps ≥ 1; default (unset): exact min-norm least squares.
    pub srfca_local_iterations: Option<usize>,
    /// `sr-fca`: TrimmedMeanGD steps T ≥ 1 (default 200).
    pub srfca_refine_rounds: usize,
    /// `sr-fca`: distance `l2` (default) | `cross-loss`.
    pub srfca_dist: SrfcaDist,
    /// `sr-fca`: diameter D > 0 of the ball W (default: unconstrained).
    pub srfca_diameter: Option<f64>,
    /// `cfl`: ε₁ > 0, split when ‖mean update‖ < ε₁ (default 0.02).
    pub cfl_eps1: f64,
    /// `cfl`: ε₂ > 0, split when max ‖update‖ > ε₂ (default 0.1).
    pub cfl_eps2: f64,
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
    pub cfl_gamma_max: f64,
    /// `cfl`: no split before this round (default 20).
    pub cfl_warmup_rounds: usize,
}

impl Default for KeyTable {
    fn default() -> Self {
        Self {
            eta: None,
            eta_gamma: DEFAULT_ETA_GAMMA,
            local_steps: 5,
            local_solver: LocalSolver::Fedavg,
            rounds: 400,
            phase1_variant: Phase1Variant::Practical,
            phase1_iterations: 10,
            anchors: None,
            anchor_min_samples: None,
            epsilon: 0.05,
            separation: None,
            alpha: 1.0,
            beta: 1.0,
            pairing: Pairing::AllPairs,
            subspace: SubspaceMethod::Svd,
            t1: 40,
            t2: 100,
            m: None,
            ell: None,
            init_scale: 1.0,
            k: None,
            restarts: 1,
            participation: 1.0,
            replicate_batch: 32,
            ifca_option: IfcaOption::Model,
            ifca_init: InitDist::Gaussian,
            ifca_official_inits: 10,
            ifca_official_lrs: None,
            ifca_official_iterations: 300,
            ifca_official_sigma: None,
            ifca_official_offset: 0.001,
            local_ridge: 0.0,
            kmeans_inits: 10,
            kmeans_max_iter: 300,
            srfca_lambda: None,
            srfca_lambda_quantile: 0.1,
            srfca_size: 2,
            srfca_beta: 0.1,
            srfca_refine_steps: 2,
            srfca_local_iterations: None,
            srfca_refine_rounds: 200,
            srfca_dist: SrfcaDist::L2,
            srfca_diameter: None,
            cfl_eps1: 0.02,
            cfl_eps2: 0.1,
            cfl_gamma_max: 0.0,
            cfl_warmup_rounds: 20,
        }
    }
}

/// Parse a `--set` value as a TOML value (number, bool, string…), falling back to a string.
/// The 1-based line on which top-level key `key` is assigned in TOML `text` (`key = …`,
/// optionally quoted), if it is.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let l = line.trim_start();
            let rest = l
                .strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn toml_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
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

impl KeyTable {
    /// [`KeyTable::from_sources`] for algorithm `kind`: a key it does not read is refused
    /// ([`check_applicable`]) instead of being silently ignored.
    ///
    /// # Errors
    /// As [`KeyTable::from_sources`]; [`FedmixError::InvalidParameter`] for an inapplicable key.
    pub(crate) fn from_sources_for(
        kind: AlgorithmKind,
        toml_text: Option<(&std::path::Path, &str)>,
        sets: &[(String, String)],
    ) -> Result<Self> {
        let cfg = Self::from_sources(toml_text, sets)?;
        let mut keys: Vec<(&str, String)> = Vec::new();
        let table = toml_text.and_then(|(_, text)| toml::from_str::<toml::Table>(text).ok());
        if let Some(t) = &table {
            keys.extend(t.iter().map(|(k, v)| (k.as_str(), v.to_string())));
        }
        keys.extend(sets.iter().map(|(k, v)| (k.as_str(), v.clone())));
        check_applicable(kind, keys)?;
        Ok(cfg)
    }

    /// Build from an optional TOML text and `key=value` overrides (overrides win).
    ///
    /// # Errors
    /// [`FedmixError::Malformed`] for TOML syntax errors, unknown keys and wrong types (the
    /// message names the key), [`FedmixError::InvalidParameter`] for out-of-range values.
    pub(crate) fn from_sources(
        toml_text: Option<(&std::path::Path, &str)>,
        sets: &[(String, String)],
    ) -> Result<Self> {
        let origin = toml_text.map_or_else(
            || std::path::PathBuf::from("--set"),
            |(p, _)| p.to_path_buf(),
        );
        let mut table: toml::Table = match toml_text {
            Some((path, text)) => toml::from_str(text).map_err(|e| FedmixError::Malformed {
                path: path.into(),
                message: e.to_string().replace('\n', " "),
            })?,
            None => toml::Table::new(),
        };
        // Where a key of the file stands, for the errors that name it.
        let at = |key: &str| -> String {
            match toml_text.and_then(|(p, text)| Some((p, key_line(text, key)?))) {
                Some((p, line)) => format!("{} line {line}", p.display()),
                None => origin.display().to_string(),
            }
        };
        for key in table.keys() {
            check_known(std::iter::once(key.as_str()), &at(key))?;
        }
        check_known(sets.iter().map(|(k, _)| k.as_str()), "--set")?;
        let from_file: Vec<String> = table
            .keys()
            .filter(|k| !sets.iter().any(|(s, _)| s == *k))
            .cloned()
            .collect();
        for (k, v) in sets {
            table.insert(k.clone(), toml_value(v));
        }
        let cfg: KeyTable = table.try_into().map_err(|e: toml::de::Error| {
            let message = e.to_string().replace('\n', " ");
            // A wrong type names its key ("… in `eta`"): point at the key's line in the file.
            let key = message
                .rsplit_once("in `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(k, _)| k.to_string());
            let path = match key {
                Some(k) if from_file.contains(&k) => std::path::PathBuf::from(at(&k)),
                Some(_) => std::path::PathBuf::from("--set"),
                None => origin.clone(),
            };
            FedmixError::Malformed { path, message }
        })?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Range checks independent of the data.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the parameter.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(eta) = self.eta {
            if !(eta.is_finite() && eta > 0.0) {
                return Err(FedmixError::invalid("eta", eta, "must be finite and > 0"));
            }
        }
        if !(self.eta_gamma > 0.0 && self.eta_gamma < 1.0) {
            return Err(FedmixError::invalid(
                "eta_gamma",
                self.eta_gamma,
                "must be in (0, 1)",
            ));
        }
        if self.local_steps == 0 {
            return Err(FedmixError::invalid("local_steps", 0, "must be ≥ 1"));
        }
        if self.k == Some(0) {
            return Err(FedmixError::invalid("k", 0, "must be ≥ 1"));
        }
        if !(self.init_scale.is_finite() && self.init_scale >= 0.0) {
            return Err(FedmixError::invalid(
                "init_scale",
                self.init_scale,
                "must be finite and ≥ 0",
            ));
        }
        if self.restarts == 0 {
            return Err(FedmixError::invalid("restarts", 0, "must be ≥ 1"));
        }
        if self.replicate_batch == 0 {
            return Err(FedmixError::invalid("replicate_batch", 0, "must be ≥ 1"));
        }
        if !(self.participation > 0.0 && self.participation <= 1.0) {
            return Err(FedmixError::invalid(
                "participation",
                self.participation,
                "must be in (0, 1]",
            ));
        }
        self.check_ifca()?;
        self.check_one_shot()?;
        self.check_srfca()?;
        self.check_cfl()?;
        Ok(())
    }

    /// Phase 2's parameters before the data is known.
    pub(crate) fn phase2_config(&self) -> Phase2Config {
        Phase2Config {
            step: self
                .eta
                .map_or(StepRule::Gamma(self.eta_gamma), StepRule::Fixed),
            local_steps: self.local_steps,
            local_solver: self.local_solver,
            rounds: self.rounds,
        }
    }

    /// The local baseline's parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming `local_ridge`.
    pub(crate) fn local(&self) -> Result<LocalParams> {
        self.check_local()?;
        Ok(LocalParams {
            ridge: self.local_ridge,
        })
    }

    /// `one-shot`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key.
    pub(crate) fn one_shot(&self) -> Result<OneShotParams> {
        self.check_one_shot()?;
        Ok(OneShotParams {
            k: self.k,
            local: self.local()?,
            kmeans_inits: self.kmeans_inits,
            kmeans_max_iter: self.kmeans_max_iter,
            phase2: self.phase2_config(),
        })
    }

    /// `fedavg`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming `participation` or `rounds`.
    pub(crate) fn fedavg(&self) -> Result<FedAvgParams> {
        check_participation(self.participation, self.rounds, 1)?;
        Ok(FedAvgParams {
            init_scale: self.init_scale,
            participation: self.participation,
            phase2: self.phase2_config(),
        })
    }

    /// `cfl`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key.
    pub(crate) fn cfl(&self) -> Result<CflConfig> {
        self.check_cfl()?;
        Ok(CflConfig {
            init_scale: self.init_scale,
            phase2: self.phase2_config(),
            eps1: self.cfl_eps1,
            eps2: self.cfl_eps2,
            gamma_max: self.cfl_gamma_max,
            warmup_rounds: self.cfl_warmup_rounds,
        })
    }

    /// `ifca`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key.
    pub(crate) fn ifca(&self) -> Result<IfcaConfig> {
        self.check_ifca()?;
        Ok(IfcaConfig {
            k: self.k,
            option: self.ifca_option,
            phase2: self.phase2_config(),
            participation: self.participation,
            restarts: self.restarts,
            init: self.ifca_init,
            init_scale: self.init_scale,
            replicate_batch: self.replicate_batch,
        })
    }

    /// `ifca-official`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key.
    pub(crate) fn ifca_official(&self) -> Result<IfcaOfficialConfig> {
        self.check_ifca()?;
        Ok(IfcaOfficialConfig {
            k: self.k,
            lrs: self.ifca_official_lrs.clone(),
            inits: self.ifca_official_inits,
            iterations: self.ifca_official_iterations,
            sigma: self.ifca_official_sigma,
            offset: self.ifca_official_offset,
            replicate_batch: self.replicate_batch,
        })
    }

    /// `sr-fca`'s parameters.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the key.
    pub(crate) fn srfca(&self) -> Result<SrfcaConfig> {
        self.check_srfca()?;
        Ok(SrfcaConfig {
            lambda: self.srfca_lambda,
            lambda_quantile: self.srfca_lambda_quantile,
            size: self.srfca_size,
            beta: self.srfca_beta,
            refine_steps: self.srfca_refine_steps,
            local_iterations: self.srfca_local_iterations,
            refine_rounds: self.srfca_refine_rounds,
            dist: self.srfca_dist,
            diameter: self.srfca_diameter,
            phase2: self.phase2_config(),
        })
    }

    /// `oracle-labels`' parameters.
    pub(crate) fn oracle_labels(&self) -> OracleLabelsParams {
        OracleLabelsParams {
            phase2: self.phase2_config(),
        }
    }

    /// Phase 1's parameters before the data is known.
    pub(crate) fn phase1_config(&self) -> Phase1Config {
        Phase1Config {
            variant: self.phase1_variant,
            iterations: self.phase1_iterations,
            anchors: self.anchors,
            anchor_min_samples: self.anchor_min_samples,
            epsilon: self.epsilon,
            separation: self.separation,
            alpha: self.alpha,
            beta: self.beta,
            pairing: self.pairing,
            subspace: self.subspace,
            t1: self.t1,
            t2: self.t2,
            m: self.m,
            ell: self.ell,
        }
    }

    /// `two-phase`'s parameters.
    pub(crate) fn two_phase(&self) -> TwoPhaseParams {
        TwoPhaseParams {
            k: self.k,
            phase1: self.phase1_config(),
            phase2: self.phase2_config(),
            init_scale: self.init_scale,
        }
    }

    /// The parameters of Phase 2 run alone (`phase2`, `oracle`).
    pub(crate) fn phase2_only(&self) -> Phase2OnlyParams {
        Phase2OnlyParams {
            k: self.k,
            phase2: self.phase2_config(),
            init_scale: self.init_scale,
        }
    }
}

/// The paper's literal Phase 1 choices (SXY22 App. C): `⌈3k log k⌉` anchors, 5 iterations.
/// Decision: natural log in `⌈3k log k⌉` (App. C gives no base), because the paper's logarithms
/// are natural elsewhere (e.g. `log(e/ν)` in Theorem 2); for k = 3 it gives 10 anchors (base 2
/// would give 15).
pub fn paper_preset(k: usize) -> TwoPhaseParams {
    KeyTable {
        anchors: Some((3.0 * k as f64 * (k as f64).ln()).ceil() as usize),
        phase1_iterations: 5,
        ..KeyTable::default()
    }
    .two_phase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Errors about a key of a configuration file name the file and the key's line; a value
    /// overridden with `--set` is blamed on `--set`.
    #[test]
    fn file_errors_name_the_line_of_the_key() {
        let p = Path::new("c.toml");
        let err = |text: &str, sets: &[(String, String)]| {
            KeyTable::from_sources(Some((p, text)), sets)
                .unwrap_err()
                .to_string()
        };
        let e = err("rounds = 5\n\neta = \"fast\"\n", &[]);
        assert!(e.contains("c.toml line 3") && e.contains("eta"), "{e}");
        let e = err("rounds = 5\n  local_step = 3\n", &[]);
        assert!(
            e.contains("c.toml line 2") && e.contains("local_steps"),
            "{e}"
        );
        let e = err(
            "eta = 0.1\n",
            &[("local_steps".to_string(), "x".to_string())],
        );
        assert!(e.starts_with("--set") && !e.contains("line"), "{e}");
        assert_eq!(key_line("# eta = 1\n\"eta\" = 2\n", "eta"), Some(2));
        assert_eq!(key_line("etas = 1\n", "eta"), None);
    }
}

/// Each typed group's defaults are its keys' defaults ([`KeyTable::default`]): one source.
macro_rules! default_from_keys {
    ($($ty:ty => $get:expr),* $(,)?) => {$(
        impl Default for $ty {
            fn default() -> Self {
                let f: fn(&KeyTable) -> $ty = $get;
                f(&KeyTable::default())
            }
        }
    )*};
}

default_from_keys! {
    TwoPhaseParams => |t| t.two_phase(),
    Phase2OnlyParams => |t| t.phase2_only(),
    Phase1Config => |t| t.phase1_config(),
    Phase2Config => |t| t.phase2_config(),
    IfcaConfig => |t| t.ifca().expect("defaults in range"),
    IfcaOfficialConfig => |t| t.ifca_official().expect("defaults in range"),
    FedAvgParams => |t| t.fedavg().expect("defaults in range"),
    LocalParams => |t| t.local().expect("defaults in range"),
    OneShotParams => |t| t.one_shot().expect("defaults in range"),
    OracleLabelsParams => |t| t.oracle_labels(),
    SrfcaConfig => |t| t.srfca().expect("defaults in range"),
    CflConfig => |t| t.cfl().expect("defaults in range"),
}
