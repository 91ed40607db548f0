//! The SXY22 two-phase pipeline (Phase 1 FedMD, then Phase 2 FedX + clustering), Phase 2 alone,
//! and the oracle, behind the [`Algorithm`](crate::engine::contract::Algorithm) trait, each
//! holding its validated parameters ([`TwoPhaseParams`], [`Phase2OnlyParams`]).
//!
//! Their keys (TOML and `--set`): `eta`, `eta_gamma`, `local_steps`, `local_solver` (`fedavg` |
//! `fedprox`), `rounds`, `k`, `init_scale` (not the oracle), and for `two-phase` also `phase1_variant`
//! (`practical` | `faithful`), `phase1_iterations`, `anchors`, `anchor_min_samples`, `epsilon`,
//! `separation`, `alpha`, `beta`, `pairing`, `subspace`, `t1`, `t2`, `m`, `ell`; each is
//! documented on its field of [`crate::params::key_table::KeyTable`], and any other key is refused
//! ([`crate::params::keys_of`]).

use crate::algorithms::fedmd::{phase1_randomness, run_fedmd_with, FedMdOutput};
use crate::engine::init::{check_init, random_init, single_init};
use crate::params::AlgorithmKind;
use crate::params::{resolve_k, Phase2OnlyParams, TwoPhaseParams};
use serde::Serialize;

use crate::algorithms::fedx_clustering::{run_phase2, run_phase2_batch, Phase2Job, Phase2Rounds};
use crate::engine::contract::{LiveRun, WithRandomness};
use crate::engine::contract::{RunOutput, Termination};
use crate::engine::randomness::{Randomness, Supplied};
use crate::engine::recorder::Recorder;
use crate::engine::summary::RunSummary;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::metrics;
use crate::params::FedMdParams;
use crate::params::Phase2Params;
use nalgebra::{DMatrix, DVector};

/// The SXY22 two-phase algorithm (`two-phase`).
#[derive(Clone, Debug)]
pub struct TwoPhase {
    /// Parameters.
    pub params: crate::params::Valid<TwoPhaseParams>,
    /// Common Phase 1 start `θ₀` (`d × 1`); random when `None`.
    pub init: Option<DMatrix<f64>>,
}

impl TwoPhase {
    /// Run and also return the Phase 1 output.
    ///
    /// # Errors
    /// As [`super::fedmd::run_fedmd`] and [`run_phase2`].
    pub fn run_detailed(
        &self,
        fed: &Federation,
        seed: u64,
        rec: &mut Recorder,
    ) -> Result<(RunOutput, FedMdOutput)> {
        self.run_detailed_with(fed, seed, &Randomness::default(), rec)
    }

    /// Phase 1 and Phase 2 parameters, checked.
    fn params(&self, fed: &Federation) -> Result<(FedMdParams, Phase2Params)> {
        let p1 = self
            .params
            .phase1
            .resolve(resolve_k(self.params.k, fed)?, fed);
        if p1.k < 2 {
            return Err(FedmixError::invalid(
                "k",
                p1.k,
                "the two-phase algorithm needs k ≥ 2 (the separation Δ is undefined for one cluster)",
            ));
        }
        let p2 = self.params.phase2.resolve(fed);
        p2.check(fed)?;
        Ok((p1, p2))
    }

    /// The common Phase 1 start: supplied (`1 × d`), `self.init`, or drawn.
    fn theta0(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<DVector<f64>> {
        Ok(match (&given.init, &self.init) {
            (Some(s), _) => single_init(s, fed.d(), 1)?.column(0).clone_owned(),
            (None, Some(m)) => {
                check_init(m, fed.d(), 1)?;
                m.column(0).clone_owned()
            }
            (None, None) => random_init(fed.d(), 1, self.params.init_scale, seed, 0)
                .column(0)
                .clone_owned(),
        })
    }

    /// [`TwoPhase::run_detailed`] with randomness from files where `given` supplies it.
    ///
    /// # Errors
    /// As [`super::fedmd::run_fedmd_with`] and [`run_phase2`].
    pub fn run_detailed_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<(RunOutput, FedMdOutput)> {
        let phase1 = self.run_phase1_with(fed, seed, given, rec)?;
        let out = self.run_phase2_from(fed, &phase1, rec)?;
        Ok((out, phase1))
    }

    /// Phase 1 alone (after checking the parameters of both phases).
    ///
    /// # Errors
    /// As [`run_fedmd_with`], and parameter errors of either phase.
    pub fn run_phase1_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<FedMdOutput> {
        let (p1, _) = self.params(fed)?;
        let theta0 = self.theta0(fed, seed, given)?;
        run_fedmd_with(fed, &p1, &theta0, seed, given, rec)
    }

    /// Phase 2 from a Phase 1 output (which sweeps may share between configurations that
    /// differ only in Phase 2 parameters).
    ///
    /// # Errors
    /// As [`run_phase2`], and parameter errors of either phase.
    pub fn run_phase2_from(
        &self,
        fed: &Federation,
        phase1: &FedMdOutput,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        let (p1, p2) = self.params(fed)?;
        let (theta_hat, labels) = run_phase2(fed, &phase1.theta_hat, &p2, None, rec)?;
        Ok(phase2_output(fed, &p1, &p2, phase1, theta_hat, labels))
    }

    /// Phase 2 of several configurations `algs` (e.g. the local-step counts of SXY22 Fig. 1)
    /// from one shared Phase 1 output, in lock-step ([`run_phase2_batch`]: one pass over the
    /// data per round for all of them); configuration `j` is recorded into `recs[j]`. Each
    /// result equals [`TwoPhase::run_phase2_from`] of that configuration, trace included, bit
    /// for bit.
    ///
    /// # Panics
    /// When `algs` and `recs` differ in length.
    pub fn run_phase2_batch_from(
        algs: &[&TwoPhase],
        fed: &Federation,
        phase1: &FedMdOutput,
        recs: &mut [Recorder],
    ) -> Vec<Result<RunOutput>> {
        assert_eq!(algs.len(), recs.len(), "one recorder per configuration");
        let params: Vec<Result<(FedMdParams, Phase2Params)>> =
            algs.iter().map(|a| a.params(fed)).collect();
        let ok: Vec<usize> = (0..algs.len()).filter(|&j| params[j].is_ok()).collect();
        let jobs: Vec<Phase2Job<'_>> = ok
            .iter()
            .filter_map(|&j| params[j].as_ref().ok())
            .map(|(_, p2)| Phase2Job {
                theta0: &phase1.theta_hat,
                params: *p2,
                fixed_labels: None,
            })
            .collect();
        let mut sub: Vec<Recorder> = ok.iter().map(|&j| std::mem::take(&mut recs[j])).collect();
        let mut outs = run_phase2_batch(fed, &jobs, &mut sub).into_iter();
        for (&j, r) in ok.iter().zip(sub) {
            recs[j] = r;
        }
        params
            .into_iter()
            .map(|p| {
                let (p1, p2) = p?;
                let (theta_hat, labels) = outs
                    .next()
                    .unwrap_or_else(|| unreachable!("one outcome per valid configuration"))?;
                Ok(phase2_output(fed, &p1, &p2, phase1, theta_hat, labels))
            })
            .collect()
    }
}

/// The run output of Phase 2 from `phase1`: final models and labels, with both phases'
/// parameters and Phase 1's summary in `extra`.
fn phase2_output(
    fed: &Federation,
    p1: &FedMdParams,
    p2: &Phase2Params,
    phase1: &FedMdOutput,
    theta_hat: DMatrix<f64>,
    labels: Vec<usize>,
) -> RunOutput {
    RunOutput {
        theta_hat,
        labels,
        termination: Termination::MaxRounds,
        summary: RunSummary::new()
            .with("phase1", phase1_summary(fed, p1, phase1))
            .with("phase2", *p2),
    }
}

/// What `summary.json` says of Phase 1.
fn phase1_summary(fed: &Federation, p1: &FedMdParams, phase1: &FedMdOutput) -> Phase1Summary {
    Phase1Summary {
        params: p1.clone(),
        anchors: phase1.anchors.clone(),
        components_found: phase1.components_found,
        excluded_clients: phase1.excluded_clients,
        separation: phase1.separation,
        phase1_distance: fed
            .theta_star()
            .and_then(|ts| metrics::bottleneck_distance(&phase1.theta_hat, ts).ok())
            .map(|a| a.value),
    }
}

impl WithRandomness for TwoPhase {
    fn kind(&self) -> AlgorithmKind {
        AlgorithmKind::TwoPhase
    }

    fn run_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        self.run_detailed_with(fed, seed, given, rec).map(|r| r.0)
    }

    /// Phase 1 runs here (its iterations recorded in `rec`); Phase 2's rounds are live.
    fn live_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        let phase1 = self.run_phase1_with(fed, seed, given, rec)?;
        let (p1, p2) = self.params(fed)?;
        let summary = phase1_summary(fed, &p1, &phase1);
        let rounds = Phase2Rounds::new(fed, phase1.theta_hat, &p2, None)?;
        let live = rounds.live(
            fed,
            Box::new(move |_, done| RunOutput {
                theta_hat: done.state.theta,
                labels: done.state.labels,
                termination: done.termination,
                summary: RunSummary::new().with("phase1", summary).with("phase2", p2),
            }),
        )?;
        Ok(Some(live))
    }

    /// The Phase 1 start `θ₀` (`1 × d`), anchors (and client sets), `Q₀`s when the orthogonal
    /// iteration runs, and power-iteration starts. Phase 2 draws nothing.
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let (p1, _) = self.params(fed)?;
        let theta0 = self.theta0(fed, seed, given)?;
        let mut r = phase1_randomness(fed, &p1, seed, given)?;
        r.init = Some(given.init.clone().unwrap_or_else(|| Supplied {
            source: format!("<drawn from seed {seed}>").into(),
            value: vec![DMatrix::from_column_slice(fed.d(), 1, theta0.as_slice())],
        }));
        Ok(r)
    }
}

/// Phase 2 alone (`phase2`) from given or random models, or from `θ*` (`oracle`).
#[derive(Clone, Debug)]
pub struct Phase2Only {
    /// Parameters.
    pub params: crate::params::Valid<Phase2OnlyParams>,
    /// Initial models (`d × k`); random when `None`.
    pub init: Option<DMatrix<f64>>,
    /// Start at `θ*` (the oracle, SXY22 App. C (4)).
    pub oracle: bool,
}

impl Phase2Only {
    /// The start: `θ*` (oracle), supplied, `self.init`, or drawn.
    fn theta0(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<DMatrix<f64>> {
        let k = resolve_k(self.params.k, fed)?;
        let theta0 = if self.oracle {
            fed.require_theta_star("the oracle")?.clone()
        } else {
            match (&given.init, &self.init) {
                (Some(s), _) => single_init(s, fed.d(), k)?,
                (None, Some(m)) => m.clone(),
                (None, None) => random_init(fed.d(), k, self.params.init_scale, seed, 0),
            }
        };
        check_init(&theta0, fed.d(), k)?;
        Ok(theta0)
    }
}

impl Phase2Only {
    /// Phase 2's rounds from the start ([`Phase2Rounds`]), live.
    fn phase2_live(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
    ) -> Result<Box<dyn LiveRun>> {
        let theta0 = self.theta0(fed, seed, given)?;
        let p2 = self.params.phase2.resolve(fed);
        Phase2Rounds::new(fed, theta0, &p2, None)?.live(
            fed,
            Box::new(move |_, done| RunOutput {
                theta_hat: done.state.theta,
                labels: done.state.labels,
                termination: done.termination,
                summary: RunSummary::new().with("phase2", p2),
            }),
        )
    }
}

impl WithRandomness for Phase2Only {
    fn kind(&self) -> AlgorithmKind {
        if self.oracle {
            AlgorithmKind::Oracle
        } else {
            AlgorithmKind::Phase2
        }
    }

    fn live_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        self.phase2_live(fed, seed, given).map(Some)
    }

    /// The initial models (`k × d`; none for the oracle).
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness> {
        let theta0 = self.theta0(fed, seed, given)?;
        Ok(Randomness {
            init: (!self.oracle).then(|| {
                given.init.clone().unwrap_or_else(|| Supplied {
                    source: format!("<drawn from seed {seed}>").into(),
                    value: vec![theta0],
                })
            }),
            ..Randomness::default()
        })
    }
}

/// Phase 1 of the two-phase algorithm (SXY22 Algorithm 1): parameters and outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase1Summary {
    /// Phase 1's parameters.
    pub params: FedMdParams,
    /// Anchor client ids, in `H` order.
    pub anchors: Vec<usize>,
    /// Connected components found by the `Δ/2` rule.
    pub components_found: usize,
    /// Clients left out of the subspace step for having `n_i < 2`.
    #[serde(rename = "excluded_clients_n_lt_2")]
    pub excluded_clients: usize,
    /// `Δ` used.
    pub separation: f64,
    /// Distance (SXY22 eq. 6) of Phase 1's models to `θ*`, when `θ*` is known.
    pub phase1_distance: Option<f64>,
}
