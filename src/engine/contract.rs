//! The algorithm contract: what every algorithm is given and returns (argmin's `Solver` in
//! spirit) — a federation, a master seed and a [`Recorder`]; the final models, labels, why the
//! run stopped and its own typed summary ([`RunSummary`]).

use crate::engine::randomness::Randomness;
use crate::engine::recorder::Recorder;
use crate::engine::summary::RunSummary;
use crate::error::Result;
use crate::federation::Federation;
use crate::params::AlgorithmKind;
use nalgebra::DMatrix;
use serde::Serialize;

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Termination {
    /// The configured number of rounds was run.
    MaxRounds,
    /// A fixed sequence of stages was completed (local solve; SR-FCA's ONE_SHOT + R REFINE
    /// steps; the official IFCA protocol's grid of runs).
    Completed,
    /// A round moved no model entry by more than the driver's tolerance
    /// ([`crate::engine::executor::Executor::tolerance`]).
    Converged,
}

/// What every algorithm returns.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Final cluster models, `d × k`, in the run's label order.
    pub theta_hat: DMatrix<f64>,
    /// Final cluster of each client (`M`).
    pub labels: Vec<usize>,
    /// Why the run stopped.
    pub termination: Termination,
    /// What the algorithm reports about its run (`summary.json`).
    pub summary: RunSummary,
}

/// A run in progress, one [`LiveRun::advance`] per round ([`crate::engine::live::Live`] for any round solver).
pub trait LiveRun: Send {
    /// One turn of the executor's loop (`Executor::advance`): `true` when a round ran (and
    /// was recorded in `rec`), `false` once the run has stopped (then nothing more runs).
    ///
    /// # Errors
    /// The round's errors, divergence included; the run is over after one.
    fn advance(&mut self, fed: &Federation, rec: &mut Recorder) -> Result<bool>;

    /// Rounds completed.
    fn round(&self) -> usize;

    /// The models after the last round (the start before the first).
    fn models(&self) -> &DMatrix<f64>;

    /// Every client's cluster after the last round, when the algorithm assigns them.
    fn labels(&self) -> Option<&[usize]>;

    /// Whether the run has stopped.
    fn stopped(&self) -> bool;

    /// The run's output on `fed` (the federation it ran on) once it has stopped; the run
    /// itself back while it has not.
    ///
    /// # Errors
    /// The run, unchanged, when it has not stopped.
    fn finish(
        self: Box<Self>,
        fed: &Federation,
    ) -> std::result::Result<RunOutput, Box<dyn LiveRun>>;
}

/// The boundary between the shared machinery and the algorithms (argmin's `Solver` in spirit):
/// run on a federation under a master seed, recording rounds into `rec`.
pub trait Algorithm {
    /// Which algorithm this is.
    fn kind(&self) -> AlgorithmKind;
    /// Public algorithm name (`--algorithm`, `summary.json`).
    fn name(&self) -> &'static str {
        self.kind().as_str()
    }
    /// Run to completion. Provided: its [`Algorithm::live`] run driven to its stop
    /// ([`drive`]); an algorithm without a live run implements this instead.
    ///
    /// # Errors
    /// Any typed error of the algorithm (bad parameters for this federation, divergence…).
    fn run(&self, fed: &Federation, seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        match self.live(fed, seed, rec)? {
            Some(live) => drive(live, fed, rec),
            None => Err(no_run(self.kind())),
        }
    }

    /// The run as a [`LiveRun`], before its first round, when its rounds are one executor
    /// loop (`None`: it runs only to completion). What precedes the loop (SXY22 Phase 1 for
    /// `two-phase`) has run and is recorded in `rec`. Driving it to its stop is [`Algorithm::run`],
    /// bit for bit.
    ///
    /// # Errors
    /// As [`Algorithm::run`] before its first round.
    fn live(
        &self,
        _fed: &Federation,
        _seed: u64,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        Ok(None)
    }
}

/// An algorithm that can run with supplied randomness and say what it would draw. Its
/// [`Algorithm`] implementation is this trait's, with nothing supplied (the blanket impl below):
/// `run(fed, seed, rec)` is `run_with(fed, seed, &Randomness::default(), rec)`.
pub trait WithRandomness {
    /// Which algorithm this is.
    fn kind(&self) -> AlgorithmKind;

    /// Run, taking from `given` what it supplies and drawing the rest from `seed`. Provided:
    /// its [`WithRandomness::live_with`] run driven to its stop ([`drive`]); an algorithm
    /// without a live run implements this instead.
    ///
    /// # Errors
    /// As the algorithm; [`crate::error::FedmixError::InvalidRandomness`] for a supplied value that does not
    /// fit the run.
    fn run_with(
        &self,
        fed: &Federation,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<RunOutput> {
        match self.live_with(fed, seed, given, rec)? {
            Some(live) => drive(live, fed, rec),
            None => Err(no_run(self.kind())),
        }
    }

    /// Every randomness the run would use: `given` where it supplies a value, the seed's draw
    /// otherwise. `run_with` fed the result reproduces `run_with` fed `given` bit for bit.
    ///
    /// # Errors
    /// As the algorithm's parameter checks.
    fn resolve(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Randomness>;

    /// [`Algorithm::live`] taking from `given` what it supplies.
    ///
    /// # Errors
    /// As [`WithRandomness::run_with`] before its first round.
    fn live_with(
        &self,
        _fed: &Federation,
        _seed: u64,
        _given: &Randomness,
        _rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        Ok(None)
    }
}

/// Run `live` to its stop, recording every round in `rec`: what an algorithm's `run` is when
/// its rounds are a [`LiveRun`].
///
/// # Errors
/// The rounds' errors.
pub fn drive(
    mut live: Box<dyn LiveRun>,
    fed: &Federation,
    rec: &mut Recorder,
) -> Result<RunOutput> {
    loop {
        while live.advance(fed, rec)? {}
        match live.finish(fed) {
            Ok(out) => return Ok(out),
            Err(running) => live = running,
        }
    }
}

/// The error of an algorithm that implements neither a live run nor its own `run`: a
/// programming error, reported as a typed error rather than a panic.
fn no_run(kind: AlgorithmKind) -> crate::error::FedmixError {
    crate::error::FedmixError::invalid(
        "algorithm",
        kind,
        "implements neither a live run nor its own run (engine::contract)",
    )
}

impl<T: WithRandomness> Algorithm for T {
    fn kind(&self) -> AlgorithmKind {
        WithRandomness::kind(self)
    }
    fn run(&self, fed: &Federation, seed: u64, rec: &mut Recorder) -> Result<RunOutput> {
        self.run_with(fed, seed, &Randomness::default(), rec)
    }
    fn live(
        &self,
        fed: &Federation,
        seed: u64,
        rec: &mut Recorder,
    ) -> Result<Option<Box<dyn LiveRun>>> {
        self.live_with(fed, seed, &Randomness::default(), rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An algorithm that implements neither a live run nor `run`.
    struct Neither;

    impl Algorithm for Neither {
        fn kind(&self) -> AlgorithmKind {
            AlgorithmKind::Local
        }
    }

    /// The provided `run` of an algorithm without a live run is a typed error naming it, not a
    /// panic; with a live run it is that run driven to its stop (every live algorithm's
    /// `tests/session.rs` case checks the bits).
    #[test]
    fn the_provided_run_needs_a_live_run() {
        let fed = crate::synthetic::train_federation("sxy-balanced", 2, &[("clients", "4")]);
        let err = Neither
            .run(&fed, 1, &mut Recorder::quiet())
            .expect_err("no live run");
        let text = err.to_string();
        assert!(
            text.contains("local") && text.contains("live run"),
            "{text}"
        );
    }
}
