//! One run exactly as `fedmix run` and `fedmix validate` perform it, for every front end (the
//! CLI, the Python package): the algorithm built from its validated keys and the supplied
//! randomness, run on the training federation, and the `summary.json` object. Two front ends
//! that go through [`Prepared`] give the same bits and the same errors for the same inputs.

use crate::algorithms::one_step::{refusal, round_step};
use crate::algorithms::registry::{build_with, resolve};
use crate::algorithms::AlgorithmParams;
use crate::engine::contract::{Algorithm, LiveRun, RunOutput};
use crate::engine::randomness::{self, Randomness};
use crate::engine::recorder::{Phase, Recorder};
use crate::error::FedmixError;
use crate::error::Result;
use crate::io::Dataset;
use crate::params::{AlgorithmKind, IfcaOption, Phase2Params, RoundRule};
use crate::progress::RunProgress;
use crate::validate::{
    compare_one_step, compare_under, Candidate, Mode, Reference, Tolerance, UpdateRule,
    ValidationReport,
};
use nalgebra::DMatrix;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// An algorithm ready to run: its kind, its keys, the algorithm built from them and the
/// randomness it takes from files.
pub struct Prepared {
    /// Which algorithm.
    pub kind: AlgorithmKind,
    /// Its typed parameters.
    pub params: AlgorithmParams,
    /// The algorithm, bound to `resolved` (or `given`).
    pub alg: Box<dyn Algorithm>,
    /// The randomness supplied from files.
    pub given: Randomness,
    /// With `export`: every randomness the run uses (the algorithm runs from exactly this).
    pub resolved: Option<Randomness>,
    /// Where runs publish the rounds recorded so far and the last distance, for a progress
    /// display on another thread (`None`: not published; results never depend on it).
    pub progress: Option<Arc<RunProgress>>,
    /// The data the run is on (its training federation, held-out samples, manifest).
    ds: Arc<Dataset>,
    /// The master seed of the run, its summary and its randomness export alike.
    seed: u64,
    /// Phase 2's parameters resolved on the data (the step `η` of the default rule computed
    /// once): the summary's `eta`, the constants and `validate`'s update rule read them.
    phase2: Phase2Params,
    /// `params` with Phase 2's step fixed to `phase2.eta`
    /// ([`AlgorithmParams::with_step_of`]): what the algorithm and its one-step stepper are
    /// built from. `params` itself stays as given, for the keys a run reports.
    run_params: AlgorithmParams,
}

/// A run stepped round by round ([`Prepared::session`]): its [`LiveRun`] and the recorder its
/// rounds are recorded in (iterates kept), so after each round the models, labels and trace row
/// are those [`Prepared::run`] computes for that round, bit for bit (it drives the same
/// object). Rows recorded before the first round (SXY22 Phase 1 of `two-phase`) are in the
/// recorder from the start.
pub struct Session {
    ds: Arc<Dataset>,
    live: Option<Box<dyn LiveRun>>,
    rec: Recorder,
    out: Option<RunOutput>,
}

impl Session {
    /// One more round: `true` when a round ran, `false` once the run has stopped (its output
    /// is then [`Session::output`]).
    ///
    /// # Errors
    /// The round's errors (divergence included); the session is over after one.
    pub fn advance(&mut self) -> Result<bool> {
        let Some(live) = self.live.as_mut() else {
            return Ok(false);
        };
        match live.advance(&self.ds.train, &mut self.rec) {
            Ok(true) => Ok(true),
            Ok(false) => {
                if let Some(live) = self.live.take() {
                    match live.finish(&self.ds.train) {
                        Ok(out) => self.out = Some(out),
                        Err(running) => self.live = Some(running),
                    }
                }
                Ok(false)
            }
            Err(e) => {
                self.live = None;
                Err(e)
            }
        }
    }

    /// The trace and iterates recorded so far.
    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    /// Rounds completed by the live part (Phase 2 for `two-phase`); `None` once over.
    pub fn round(&self) -> Option<usize> {
        self.live.as_ref().map(|l| l.round())
    }

    /// The current models (`d × K̂`) and labels: the live state's, or the output's once over.
    pub fn state(&self) -> Option<(&DMatrix<f64>, Option<&[usize]>)> {
        match (&self.live, &self.out) {
            (Some(l), _) => Some((l.models(), l.labels())),
            (None, Some(o)) => Some((&o.theta_hat, Some(&o.labels))),
            (None, None) => None,
        }
    }

    /// The run's output once it has stopped.
    pub fn output(&self) -> Option<&RunOutput> {
        self.out.as_ref()
    }
}

/// Where a run's inputs came from, for the summary (`None` where not applicable).
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    /// The dataset directory (`--data`).
    pub data_dir: Option<String>,
    /// The initial-models file (`--init`).
    pub init_file: Option<String>,
    /// The directory and files `--export-randomness` wrote.
    pub exported: Option<(String, Vec<String>)>,
    /// Wall time of the whole command, seconds.
    pub wall_time_seconds: Option<f64>,
}

/// Validation tolerances, checked: each finite and ≥ 0.
///
/// # Errors
/// [`crate::error::FedmixError::InvalidParameter`] naming `rtol` or `atol`.
pub fn tolerance(rtol: f64, atol: f64) -> Result<Tolerance> {
    for (name, v) in [("rtol", rtol), ("atol", atol)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(crate::error::FedmixError::invalid(
                name,
                v,
                "must be finite and ≥ 0",
            ));
        }
    }
    Ok(Tolerance { rtol, atol })
}

/// Build the algorithm of `params` for dataset `ds` under `seed`, taking `given` from
/// files; with `export`, also resolve every draw the run will make (the algorithm then runs
/// from exactly that, bit-identical to running from `given`).
///
/// # Errors
/// Key out of range, a randomness file the algorithm does not use, a supplied value that does
/// not fit the data, or (with `export`) an algorithm whose draws cannot be exported.
pub fn prepare(
    params: AlgorithmParams,
    ds: Arc<Dataset>,
    seed: u64,
    given: Randomness,
    export: bool,
) -> Result<Prepared> {
    let sigma = ds.manifest.parameters.as_ref().map(|p| p.sigma);
    // `η` is resolved here, once; the algorithm, its randomness export and `validate`'s
    // one-step stepper are built from the parameters with that `η` fixed.
    let phase2 = params.phase2(&ds.train);
    let run_params = params.with_step_of(&phase2);
    let resolved = match export {
        true => Some(resolve(&run_params, &ds.train, seed, &given, sigma)?),
        false => None,
    };
    let alg = build_with(
        &run_params,
        resolved.clone().unwrap_or_else(|| given.clone()),
        sigma,
    )?;
    Ok(Prepared {
        kind: params.kind(),
        phase2,
        run_params,
        params,
        alg,
        given,
        resolved,
        progress: None,
        ds,
        seed,
    })
}

impl Prepared {
    /// The data the run is on.
    pub fn dataset(&self) -> &Dataset {
        &self.ds
    }

    /// The run's master seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Run on the training federation of `ds`, keeping every round's models and labels when
    /// `save_iterates`.
    ///
    /// # Errors
    /// The algorithm's typed errors.
    pub fn run(&self, save_iterates: bool) -> Result<(RunOutput, Recorder)> {
        let mut rec = Recorder::new(save_iterates);
        rec.progress = self.progress.clone();
        let out = self.alg.run(&self.ds.train, self.seed, &mut rec)?;
        Ok((out, rec))
    }

    /// The run as a [`Session`], before its first round, when the algorithm's rounds are one
    /// executor loop ([`Algorithm::live`]; `None` otherwise: it runs only to completion).
    ///
    /// # Errors
    /// The algorithm's errors before its first round (parameters; Phase 1 for `two-phase`).
    pub fn session(&self) -> Result<Option<Session>> {
        let mut rec = Recorder::new(true);
        rec.progress = self.progress.clone();
        Ok(self
            .alg
            .live(&self.ds.train, self.seed, &mut rec)?
            .map(|live| Session {
                ds: self.ds.clone(),
                live: Some(live),
                rec,
                out: None,
            }))
    }

    /// How many trace rows the run will record, where that is known before it runs (a progress
    /// bar's total; [`AlgorithmParams::planned_rows`]).
    pub fn planned_rows(&self) -> Option<usize> {
        self.params.planned_rows()
    }

    /// The keys this algorithm reads with the values it runs with (`eta` resolved from the
    /// default rule where unset); keys whose value is unset (`null`) are left out.
    pub fn reference_params(&self) -> Vec<(&'static str, Value)> {
        let eta = self.phase2.eta;
        let keys = self.params.keys();
        crate::params::keys_of(self.kind)
            .into_iter()
            .filter_map(|key| {
                let v = match key {
                    "eta" => json!(eta),
                    _ => keys.get(key)?.clone(),
                };
                (!v.is_null()).then_some((key, v))
            })
            .collect()
    }

    /// The update rule the run applies each round, for [`crate::validate::compare_under`]'s
    /// diagnosis.
    pub fn update_rule(&self) -> UpdateRule {
        let p2 = &self.phase2;
        match self.kind.round_rule() {
            RoundRule::Phase2 => UpdateRule::Phase2 {
                eta: p2.eta,
                local_steps: p2.local_steps,
                local_solver: p2.local_solver,
            },
            RoundRule::Ifca => match self.params.ifca_option() {
                Some(IfcaOption::Gradient) => UpdateRule::IfcaGradient { step: p2.eta },
                _ => UpdateRule::IfcaModel {
                    step: p2.eta,
                    local_steps: p2.local_steps,
                },
            },
            RoundRule::Other => UpdateRule::Other,
        }
    }

    /// `fedmix validate`: run the reference with its iterates recorded and compare `candidate`
    /// with it round by round, the diagnosis naming this algorithm's update rule. The given
    /// initial models are the start of round 1 when they are the models the rounds update
    /// (not for `two-phase`, whose `init` is Phase 1's start).
    ///
    /// # Errors
    /// The algorithm's errors; the candidate's shape against the reference's
    /// ([`crate::validate::compare_under`]).
    pub fn validate(&self, candidate: &Candidate<'_>, tol: Tolerance) -> Result<ValidationReport> {
        let (_, rec) = self.run(true)?;
        let k = rec
            .iterates
            .first()
            .map_or(candidate.shape.get(1).copied().unwrap_or(0), |m| m.ncols());
        let start = self
            .given
            .first_init()
            .filter(|m| m.ncols() == k && self.kind.init_starts_rounds());
        let reference = Reference {
            init: start,
            iterates: &rec.iterates,
            labels: (!rec.labels.is_empty()).then_some(&rec.labels[..]),
        };
        compare_under(&self.update_rule(), &reference, candidate, tol)
    }

    /// [`Prepared::validate`] (`Mode::Trajectory`) or [`Prepared::validate_one_step`]
    /// (`Mode::OneStep`).
    ///
    /// # Errors
    /// As the mode's function.
    pub fn validate_as(
        &self,
        mode: Mode,
        candidate: &Candidate<'_>,
        tol: Tolerance,
    ) -> Result<ValidationReport> {
        match mode {
            Mode::Trajectory => self.validate(candidate, tol),
            Mode::OneStep => self.validate_one_step(candidate, tol),
        }
    }

    /// `fedmix validate --one-step`: the reference's round `t` from the candidate's own models
    /// after round `t − 1` (round 1 from the reference's start), for every round, against the
    /// candidate's round `t` ([`crate::validate::compare_one_step`]). The reference runs once
    /// in full first: it fixes the number of rounds and the choices a step needs (IFCA's chosen
    /// restart, `ifca-official`'s reported run); a step uses the reference's randomness of that
    /// round (its participants).
    ///
    /// # Errors
    /// [`FedmixError::OneStepUnsupported`] (before anything runs) for the algorithms whose round
    /// is not a function of the broadcast models; the algorithm's errors; the candidate's shape.
    pub fn validate_one_step(
        &self,
        candidate: &Candidate<'_>,
        tol: Tolerance,
    ) -> Result<ValidationReport> {
        if let Some(reason) = refusal(self.kind) {
            return Err(FedmixError::OneStepUnsupported {
                algorithm: self.kind.to_string(),
                reason: reason.into(),
            });
        }
        let (out, rec) = self.run(true)?;
        let (ds, seed) = (&*self.ds, self.seed);
        let fed = &ds.train;
        let sigma = ds.manifest.parameters.as_ref().map(|p| p.sigma);
        let step = round_step(&self.run_params, fed, seed, &self.given, sigma, &out)?;
        let stepper = step.stepper(fed)?;
        compare_one_step(
            &self.update_rule(),
            &step.start,
            (rec.iterates.len(), fed.num_clients()),
            &|t, theta| stepper.step(fed, t, theta),
            candidate,
            tol,
        )
    }

    /// The `summary.json` object of a finished run: algorithm, seed, data, the keys (with the
    /// step actually taken), supplied randomness, the data constants, final metrics, the
    /// run's termination, communication and the algorithm's own summary.
    pub fn summary(
        &self,
        out: &RunOutput,
        rec: &Recorder,
        prov: &Provenance,
    ) -> Map<String, Value> {
        let (ds, seed, p2) = (&*self.ds, self.seed, &self.phase2);
        let mut summary = Map::new();
        summary.insert("algorithm".into(), json!(self.alg.name()));
        summary.insert("fedmix_version".into(), json!(env!("CARGO_PKG_VERSION")));
        summary.insert("seed".into(), json!(seed));
        summary.insert(
            "data".into(),
            json!({
                "dir": prov.data_dir,
                "setting": ds.manifest.setting,
                "seed": ds.manifest.seed,
                "parameters": ds.manifest.parameters,
            }),
        );
        // The step actually taken: `eta` is `null` in the keys when the default rule
        // (`eta_gamma / max_i ‖φ_i‖²/n_i`) set it; record the value and where it came from.
        let mut config = self.params.keys();
        if self.params.eta_from_rule() {
            config.insert("eta".into(), json!(p2.eta));
            config.insert(
                "eta_from".into(),
                json!("the default rule eta_gamma / max_i |phi_i|^2/n_i"),
            );
        }
        summary.insert("config".into(), Value::Object(config));
        summary.insert("init_file".into(), json!(prov.init_file));
        summary.insert(
            "randomness".into(),
            json!({
                "supplied": randomness::summary(&self.given),
                "drawn_from_seed": "everything not supplied",
                "exported": prov.exported.as_ref().map(|(dir, files)| json!({
                    "dir": dir,
                    "files": files,
                })),
            }),
        );
        summary.insert(
            "constants".into(),
            crate::output::data_constants(&ds.train, p2.eta, p2.local_steps),
        );
        summary.insert(
            "final".into(),
            crate::output::final_metrics(&ds.train, ds.test.as_ref(), out),
        );
        if let Some(w) = prov.wall_time_seconds {
            summary.insert("wall_time_seconds".into(), json!(w));
        }
        summary.insert("termination".into(), json!(out.termination));
        summary.insert("rounds_recorded".into(), json!(rec.rows.len()));
        summary.insert(
            "communication".into(),
            json!({
                "phase1": rec.comm_total(Some(Phase::Phase1)),
                "phase2": rec.comm_total(Some(Phase::Phase2)),
                "total": rec.comm_total(None),
            }),
        );
        summary.extend(out.summary.to_map());
        summary
    }
}
