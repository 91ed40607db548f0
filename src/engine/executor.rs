//! One driver for every round loop (argmin's `Executor` over `Solver::{init, next_iter,
//! terminate}`): an algorithm provides its start ([`RoundSolver::init`]) and one round
//! ([`RoundSolver::next_round`], state in, state out); the [`Executor`] owns the loop — the
//! finiteness check of the models after each round, the row each round leaves in the
//! [`Recorder`], stopping (the round budget, an optional tolerance on the change of the models,
//! the algorithm's own [`RoundSolver::terminate`]) — and runs exactly one round from any given
//! state ([`Executor::step`]).
//!
//! A round's state carries the rounds done so far, so a round computed from a state equals the
//! same round of a full run (participants drawn for round `t`, CFL's warm-up) whatever produced
//! the state.

use crate::engine::contract::Termination;
use crate::engine::randomness::Randomness;
use crate::engine::recorder::{Comm, Phase, Recorder};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use nalgebra::DMatrix;

/// What the driver reads of a state: the rounds done, the models, the clients' choices and the
/// communication of the last round.
pub trait RoundState {
    /// Rounds completed (0 at the start).
    fn round(&self) -> usize;
    /// The models after the last round (`d × K̂`; the start before the first).
    fn models(&self) -> &DMatrix<f64>;
    /// Every client's cluster after the last round, when the algorithm assigns them.
    fn labels(&self) -> Option<&[usize]>;
    /// What crossed the network in the last round.
    fn comm(&self) -> Comm;
    /// Whether the driver's finiteness check applies to these models (default: yes). Only
    /// SR-FCA's RECLUSTER + MERGE rows say no (averages of checked iterates, never checked).
    fn finiteness_checked(&self) -> bool {
        true
    }
}

/// The state most algorithms need: models, labels and the last round's communication, plus the
/// algorithm's own `extra` (CFL's clusters and splits; `()` for the others).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelState<X = ()> {
    /// Rounds completed.
    pub round: usize,
    /// Models (`d × K̂`).
    pub theta: DMatrix<f64>,
    /// Every client's cluster.
    pub labels: Vec<usize>,
    /// Communication of the last round (zero before the first).
    pub comm: Comm,
    /// What else the algorithm carries from round to round.
    pub extra: X,
}

impl<X> ModelState<X> {
    /// The state before the first round.
    pub fn start(theta: DMatrix<f64>, labels: Vec<usize>, extra: X) -> Self {
        Self {
            round: 0,
            theta,
            labels,
            comm: Comm::default(),
            extra,
        }
    }

    /// The state one round later: its models, labels and communication.
    #[must_use]
    pub fn advance(self, theta: DMatrix<f64>, labels: Vec<usize>, comm: Comm) -> Self {
        Self {
            round: self.round + 1,
            theta,
            labels,
            comm,
            extra: self.extra,
        }
    }
}

impl<X> RoundState for ModelState<X> {
    fn round(&self) -> usize {
        self.round
    }
    fn models(&self) -> &DMatrix<f64> {
        &self.theta
    }
    fn labels(&self) -> Option<&[usize]> {
        Some(&self.labels)
    }
    fn comm(&self) -> Comm {
        self.comm
    }
}

/// One round of an algorithm (argmin's `Solver`): its start and its round, nothing else.
pub trait RoundSolver {
    /// What one round carries to the next.
    type State: RoundState;

    /// The name a divergence reports (`FedmixError::Divergence`'s `phase`).
    fn name(&self) -> &'static str;

    /// The phase its rounds are recorded under.
    fn phase(&self) -> Phase {
        Phase::Phase2
    }

    /// The state before round 1, under master seed `seed`, taking from `given` what it supplies.
    ///
    /// # Errors
    /// The algorithm's errors about its start (a supplied start that does not fit the run).
    fn init(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Self::State>;

    /// Round `state.round() + 1` from `state`; the result has `round()` one higher.
    ///
    /// # Errors
    /// The algorithm's errors within a round (not divergence: the driver checks that).
    fn next_round(&self, fed: &Federation, state: Self::State) -> Result<Self::State>;

    /// Why the algorithm stops at `state` on its own, if it does (checked before each round).
    fn terminate(&self, _state: &Self::State) -> Option<Termination> {
        None
    }
}

/// The end of a driven run: the last state and why the loop stopped.
#[derive(Clone, Debug)]
pub struct Finished<S> {
    /// The state after the last round run.
    pub state: S,
    /// Why the loop stopped.
    pub termination: Termination,
}

/// What one [`Executor::advance`] did: ran and recorded a round, or stopped.
#[derive(Clone, Debug)]
pub enum Advance<S> {
    /// A round ran; the state after it.
    Ran(S),
    /// The loop stopped (before a round, or after one on the tolerance).
    Stopped(Finished<S>),
}

/// The driver of a [`RoundSolver`] on a federation: `max_rounds` rounds at most, stopping
/// earlier on the solver's own termination or, when set, the tolerance.
#[derive(Clone, Copy, Debug)]
pub struct Executor<'a, S> {
    fed: &'a Federation,
    solver: &'a S,
    max_rounds: usize,
    tolerance: Option<f64>,
}

impl<'a, S: RoundSolver> Executor<'a, S> {
    /// Drive `solver` on `fed` for at most `max_rounds` rounds (counted from round 0: a state
    /// that has done `max_rounds` rounds runs none).
    pub fn new(fed: &'a Federation, solver: &'a S, max_rounds: usize) -> Self {
        Self {
            fed,
            solver,
            max_rounds,
            tolerance: None,
        }
    }

    /// Stop, with [`Termination::Converged`], after a round that moved no model entry by more
    /// than `tol` (`max |θ_t − θ_{t−1}| ≤ tol`, same shape). Default: unset (never).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] when `tol` is not finite and `≥ 0` (a NaN tolerance
    /// would silently never stop the run).
    pub fn tolerance(self, tol: f64) -> Result<Self> {
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(FedmixError::invalid(
                "tolerance",
                tol,
                "must be finite and ≥ 0",
            ));
        }
        Ok(Self {
            tolerance: Some(tol),
            ..self
        })
    }

    /// The solver's start ([`RoundSolver::init`]).
    ///
    /// # Errors
    /// As [`RoundSolver::init`].
    pub fn init(&self, seed: u64, given: &Randomness) -> Result<S::State> {
        self.solver.init(self.fed, seed, given)
    }

    /// Exactly one round from `state`, checked: the solver's round, then the finiteness of its
    /// models (where [`RoundState::finiteness_checked`]). Records nothing and ignores the round
    /// budget.
    ///
    /// # Errors
    /// The solver's; [`FedmixError::Divergence`] naming the round when a model entry is NaN or
    /// infinite.
    pub fn step(&self, state: S::State) -> Result<S::State> {
        let next = self.round(state)?;
        if next.finiteness_checked() {
            check_finite_iterate(next.models(), self.solver.name(), next.round())?;
        }
        Ok(next)
    }

    /// Exactly one round from `state`, unchecked: [`Executor::step`] without the finiteness
    /// check, for a caller that reports non-finite models itself, entry by entry (the one-step
    /// comparison of `validate`). Records nothing and ignores the round budget.
    ///
    /// # Errors
    /// The solver's.
    pub fn round(&self, state: S::State) -> Result<S::State> {
        self.solver.next_round(self.fed, state)
    }

    /// Start under `seed` and `given`, then [`Executor::run_from`] the start.
    ///
    /// # Errors
    /// As [`Executor::init`] and [`Executor::run_from`].
    pub fn run(
        &self,
        seed: u64,
        given: &Randomness,
        rec: &mut Recorder,
    ) -> Result<Finished<S::State>> {
        self.run_from(self.init(seed, given)?, rec)
    }

    /// Rounds from `state` until a stop, each [`Executor::advance`].
    ///
    /// # Errors
    /// As [`Executor::step`]; the rounds before a failing one stay recorded.
    pub fn run_from(&self, mut state: S::State, rec: &mut Recorder) -> Result<Finished<S::State>> {
        loop {
            match self.advance(state, rec)? {
                Advance::Ran(next) => state = next,
                Advance::Stopped(done) => return Ok(done),
            }
        }
    }

    /// One turn of the loop from `state`: stop before the round (the solver's termination, the
    /// round budget), or [`Executor::step`] it and record it as one row, then stop if the
    /// tolerance says so. [`Executor::run_from`] is this until it stops; a front end that
    /// steps a run round by round (the Python `Session`) calls it once per round.
    ///
    /// # Errors
    /// As [`Executor::step`].
    pub fn advance(&self, state: S::State, rec: &mut Recorder) -> Result<Advance<S::State>> {
        if let Some(termination) = self.stop_before(&state) {
            return Ok(Advance::Stopped(Finished { state, termination }));
        }
        let before = self.tolerance.map(|_| state.models().clone());
        let state = self.step(state)?;
        record_round(self.fed, self.solver.phase(), &state, rec);
        if self.converged(before.as_ref(), &state) {
            return Ok(Advance::Stopped(Finished {
                state,
                termination: Termination::Converged,
            }));
        }
        Ok(Advance::Ran(state))
    }

    /// The solver's own termination, else the round budget.
    fn stop_before(&self, state: &S::State) -> Option<Termination> {
        self.solver
            .terminate(state)
            .or_else(|| (state.round() >= self.max_rounds).then_some(Termination::MaxRounds))
    }

    /// Whether the tolerance is set and the round from `before` to `state` stayed within it.
    fn converged(&self, before: Option<&DMatrix<f64>>, state: &S::State) -> bool {
        match (self.tolerance, before) {
            (Some(tol), Some(b)) if b.shape() == state.models().shape() => {
                crate::prec::amax_nan(&(state.models() - b)) <= tol
            }
            _ => false,
        }
    }
}

/// Record a checked round's state into `rec` ([`Recorder::model_round`]), the row every driven
/// round leaves; lock-step batches of runs call it for each of their runs.
pub fn record_round<St: RoundState>(
    fed: &Federation,
    phase: Phase,
    state: &St,
    rec: &mut Recorder,
) {
    rec.model_round(fed, phase, state.models(), state.labels(), state.comm());
}

/// The driver's finiteness check: [`FedmixError::Divergence`] naming `phase` and `round` when
/// any entry of `theta` is NaN or infinite. Lock-step batches of runs apply it to each run.
///
/// # Errors
/// As described.
pub fn check_finite_iterate(theta: &DMatrix<f64>, phase: &str, round: usize) -> Result<()> {
    if theta.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(FedmixError::Divergence {
            phase: phase.into(),
            round,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy round, `θ ← θ/2 + shift` (one model, every client in cluster 0), that stops on its
    /// own once `θ` falls below `stop_below`.
    struct Halve {
        shift: f64,
        stop_below: f64,
    }

    impl RoundSolver for Halve {
        type State = ModelState;
        fn name(&self) -> &'static str {
            "halve"
        }
        fn init(&self, fed: &Federation, _seed: u64, given: &Randomness) -> Result<ModelState> {
            let theta = given
                .first_init()
                .cloned()
                .unwrap_or_else(|| DMatrix::from_element(fed.d(), 1, 1.0));
            Ok(ModelState::start(theta, vec![0; fed.num_clients()], ()))
        }
        fn next_round(&self, fed: &Federation, s: ModelState) -> Result<ModelState> {
            let theta = s.theta.map(|v| v / 2.0 + self.shift);
            let comm = Comm::broadcast_and_upload(fed.num_clients() as u64, 1, 1);
            let labels = s.labels.clone();
            Ok(s.advance(theta, labels, comm))
        }
        fn terminate(&self, s: &ModelState) -> Option<Termination> {
            (s.theta[0] < self.stop_below).then_some(Termination::Completed)
        }
    }

    fn fed() -> Federation {
        crate::synthetic::train_federation(
            "sxy-balanced",
            1,
            &[("d", "3"), ("clients", "4"), ("samples", "5")],
        )
    }

    fn halve() -> Halve {
        Halve {
            shift: 0.0,
            stop_below: 0.0,
        }
    }

    /// The budget counts rounds from 0, one row per round in order; a run resumed from a
    /// round-2 state ends where the full run ends, bit for bit, with the rest of the rows.
    #[test]
    fn runs_the_budget_and_resumes_from_any_state() {
        let (fed, solver) = (fed(), halve());
        let ex = Executor::new(&fed, &solver, 5);
        let mut rec = Recorder::quiet();
        let full = ex.run(1, &Randomness::default(), &mut rec).unwrap();
        assert_eq!(full.termination, Termination::MaxRounds);
        assert_eq!(full.state.round, 5);
        assert_eq!(full.state.theta[0].to_bits(), (1.0f64 / 32.0).to_bits());
        let rounds: Vec<usize> = rec.rows.iter().map(|r| r.round).collect();
        assert_eq!(rounds, [1, 2, 3, 4, 5]);
        let mid = ex
            .step(
                ex.step(ex.init(1, &Randomness::default()).unwrap())
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(mid.round, 2);
        let mut rest = Recorder::quiet();
        let resumed = ex.run_from(mid, &mut rest).unwrap();
        assert_eq!(resumed.state, full.state);
        assert_eq!(rest.rows.len(), 3);
    }

    /// The solver's own termination is checked before each round, the tolerance after it.
    #[test]
    fn stops_on_the_solvers_termination_and_on_the_tolerance() {
        let fed = fed();
        let own = Halve {
            stop_below: 0.2,
            ..halve()
        };
        let done = Executor::new(&fed, &own, 100)
            .run(1, &Randomness::default(), &mut Recorder::quiet())
            .unwrap();
        assert_eq!(
            (done.termination, done.state.round),
            (Termination::Completed, 3)
        );
        // θ_t = 1/2^t: the round from θ_{t−1} moves it by 1/2^t ≤ 1/16 first at t = 4.
        let done = Executor::new(&fed, &halve(), 100)
            .tolerance(1.0 / 16.0)
            .unwrap()
            .run(1, &Randomness::default(), &mut Recorder::quiet())
            .unwrap();
        assert_eq!(
            (done.termination, done.state.round),
            (Termination::Converged, 4)
        );
        for bad in [f64::NAN, f64::INFINITY, -1e-3] {
            let Err(e) = Executor::new(&fed, &halve(), 100).tolerance(bad) else {
                panic!("tolerance {bad} accepted");
            };
            assert!(
                matches!(&e, FedmixError::InvalidParameter { name, .. } if name == "tolerance"),
                "{bad}: {e}"
            );
        }
    }

    /// A non-finite model stops the run with the divergence of that round (rounds count from
    /// 1), after recording the rounds before it; `step` reports the same error.
    #[test]
    fn a_non_finite_round_is_a_divergence_naming_the_round() {
        let fed = fed();
        let blowup = Halve {
            shift: f64::MAX,
            ..halve()
        };
        let ex = Executor::new(&fed, &blowup, 10);
        let mut rec = Recorder::quiet();
        let e = ex.run(1, &Randomness::default(), &mut rec).unwrap_err();
        assert!(
            matches!(&e, FedmixError::Divergence { phase, round: 2 } if phase == "halve"),
            "{e}"
        );
        assert_eq!(rec.rows.len(), 1);
        let one = ex
            .step(ex.init(1, &Randomness::default()).unwrap())
            .unwrap();
        assert!(matches!(
            ex.step(one),
            Err(FedmixError::Divergence { round: 2, .. })
        ));
    }

    /// [`Halve`]'s rounds in a state that opts out of the finiteness check.
    struct Unchecked(Halve);

    /// A [`ModelState`] whose models the driver does not check.
    struct UncheckedState(ModelState);

    impl RoundState for UncheckedState {
        fn round(&self) -> usize {
            self.0.round
        }
        fn models(&self) -> &DMatrix<f64> {
            &self.0.theta
        }
        fn labels(&self) -> Option<&[usize]> {
            Some(&self.0.labels)
        }
        fn comm(&self) -> Comm {
            self.0.comm
        }
        fn finiteness_checked(&self) -> bool {
            false
        }
    }

    impl RoundSolver for Unchecked {
        type State = UncheckedState;
        fn name(&self) -> &'static str {
            "unchecked"
        }
        fn init(&self, fed: &Federation, seed: u64, given: &Randomness) -> Result<Self::State> {
            self.0.init(fed, seed, given).map(UncheckedState)
        }
        fn next_round(&self, fed: &Federation, s: Self::State) -> Result<Self::State> {
            self.0.next_round(fed, s.0).map(UncheckedState)
        }
    }

    /// Rounds whose state opts out of the check run on, infinite models recorded as they are.
    #[test]
    fn a_state_that_opts_out_is_not_checked() {
        let fed = fed();
        let blowup = Unchecked(Halve {
            shift: f64::MAX,
            ..halve()
        });
        let mut rec = Recorder::quiet();
        let done = Executor::new(&fed, &blowup, 3)
            .run(1, &Randomness::default(), &mut rec)
            .unwrap();
        assert!(done.state.0.theta[0].is_infinite());
        assert_eq!(rec.rows.len(), 3);
    }
}
