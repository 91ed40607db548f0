//! A run that advances one round per call: the algorithm's [`RoundSolver`], its state and its
//! round budget, owned, so a front end can hold it between rounds (the Python `Session`
//! inspects the models and labels after each round), and the algorithm's own `run` drives the
//! same object to the end ([`drive`]). Stepping and running are therefore one computation, not
//! a replay of one by the other. The trait ([`LiveRun`]) is the contract's; this is its one
//! implementation, over the [`Executor`].

use crate::engine::contract::{LiveRun, RunOutput};
use crate::engine::executor::{Advance, Executor, Finished, RoundSolver, RoundState};
use crate::engine::recorder::Recorder;
use crate::error::Result;
use crate::federation::Federation;
use nalgebra::DMatrix;

/// How a stopped run becomes the algorithm's [`RunOutput`] (its summary).
pub type Output<St> = Box<dyn FnOnce(&Federation, Finished<St>) -> RunOutput + Send>;

/// [`LiveRun`] for a [`RoundSolver`]: the solver, its current state, the round budget and how
/// the final state becomes the run's output.
pub struct Live<S: RoundSolver + 'static> {
    solver: S,
    state: Option<S::State>,
    done: Option<Finished<S::State>>,
    max_rounds: usize,
    output: Output<S::State>,
}

impl<S: RoundSolver + 'static> Live<S> {
    /// `solver` from `start` (its [`RoundSolver::init`] or a given state) for at most
    /// `max_rounds` rounds; `output` makes the final state the run's output.
    pub fn new(solver: S, start: S::State, max_rounds: usize, output: Output<S::State>) -> Self {
        Self {
            solver,
            state: Some(start),
            done: None,
            max_rounds,
            output,
        }
    }

    fn current(&self) -> &S::State {
        match (&self.state, &self.done) {
            (Some(s), _) => s,
            (None, Some(f)) => &f.state,
            // `advance` puts the state back before returning, except after an error, which
            // ends the run; a failed run keeps no state to show.
            (None, None) => unreachable!("a failed live run was used after its error"),
        }
    }
}

impl<S> LiveRun for Live<S>
where
    S: RoundSolver + Send + 'static,
    S::State: Send,
{
    fn advance(&mut self, fed: &Federation, rec: &mut Recorder) -> Result<bool> {
        let Some(state) = self.state.take() else {
            return Ok(false);
        };
        match Executor::new(fed, &self.solver, self.max_rounds).advance(state, rec)? {
            Advance::Ran(next) => {
                self.state = Some(next);
                Ok(true)
            }
            Advance::Stopped(done) => {
                self.done = Some(done);
                Ok(false)
            }
        }
    }

    fn round(&self) -> usize {
        self.current().round()
    }

    fn models(&self) -> &DMatrix<f64> {
        self.current().models()
    }

    fn labels(&self) -> Option<&[usize]> {
        self.current().labels()
    }

    fn stopped(&self) -> bool {
        self.done.is_some()
    }

    fn finish(
        self: Box<Self>,
        fed: &Federation,
    ) -> std::result::Result<RunOutput, Box<dyn LiveRun>> {
        match self.done.is_some() {
            true => {
                let Live { done, output, .. } = *self;
                Ok(output(fed, done.expect("checked: the run has stopped")))
            }
            false => Err(self),
        }
    }
}

pub use crate::engine::contract::drive;
