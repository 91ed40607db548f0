//! Each algorithm's typed parameter group bound to its keys: one line per field names the key
//! it comes from, and the forward map (keys → group), the inverse (group → keys, what
//! `summary.json` and [`crate::algorithms::AlgorithmParams::keys`] write), the group's checks (the keys'
//! own range checks, [`super::key_table::KeyTable`]) and its `Default` (the keys' defaults) are
//! all derived from that line.

use super::key_table::{check_key, KeyTable};
use super::phase1::{Phase1Config, Phase2OnlyParams, TwoPhaseParams};
use super::phase2::{Phase2Config, StepRule};
use super::valid::{ParamGuard, Valid};
use crate::error::Result;

/// A parameter group read from keys.
pub(crate) trait Keyed: Sized {
    /// The group from its keys.
    fn from_keys(t: &KeyTable) -> Self;
    /// Write the group's keys into `t` (the inverse of [`Keyed::from_keys`]).
    fn put_keys(&self, t: &mut KeyTable);
    /// The range checks of the group's keys.
    fn check_keys(&self) -> Result<()>;
}

/// Binds each group's fields to keys (`field: key`) and sub-groups (`; field: Group`).
macro_rules! bind_keys {
    ($($group:ident { $($field:ident : $key:ident),* $(; $($sub:ident : $subty:ident),*)? })*) => {$(
        #[allow(clippy::clone_on_copy)]
        impl $crate::params::groups::Keyed for $group {
            fn from_keys(t: &$crate::params::key_table::KeyTable) -> Self {
                Self {
                    $($field: t.$key.clone(),)*
                    $($($sub: <$subty as $crate::params::groups::Keyed>::from_keys(t),)*)?
                }
            }
            fn put_keys(&self, t: &mut $crate::params::key_table::KeyTable) {
                $(t.$key = self.$field.clone();)*
                $($($crate::params::groups::Keyed::put_keys(&self.$sub, t);)*)?
            }
            fn check_keys(&self) -> $crate::error::Result<()> {
                $($crate::params::key_table::check_key::$key(&self.$field)?;)*
                $($($crate::params::groups::Keyed::check_keys(&self.$sub)?;)*)?
                Ok(())
            }
        }

        impl $crate::params::valid::ParamGuard for $group {
            fn check_ref(&self) -> $crate::error::Result<()> {
                $crate::params::groups::Keyed::check_keys(self)
            }
        }

        /// Every key at its default.
        impl Default for $group {
            fn default() -> Self {
                <Self as $crate::params::groups::Keyed>::from_keys(
                    &$crate::params::key_table::KeyTable::default(),
                )
            }
        }
    )*};
}
pub(crate) use bind_keys;

bind_keys! {
    Phase1Config {
        variant: phase1_variant,
        iterations: phase1_iterations,
        anchors: anchors,
        anchor_min_samples: anchor_min_samples,
        epsilon: epsilon,
        separation: separation,
        alpha: alpha,
        beta: beta,
        pairing: pairing,
        subspace: subspace,
        t1: t1,
        t2: t2,
        m: m,
        ell: ell
    }
    TwoPhaseParams { k: k, init_scale: init_scale; phase1: Phase1Config, phase2: Phase2Config }
    Phase2OnlyParams { k: k, init_scale: init_scale; phase2: Phase2Config }
}

/// Phase 2's step is one field for two keys: a fixed `eta`, or the rule from `eta_gamma`.
impl Keyed for Phase2Config {
    fn from_keys(t: &KeyTable) -> Self {
        Self {
            step: t.eta.map_or(StepRule::Gamma(t.eta_gamma), StepRule::Fixed),
            local_steps: t.local_steps,
            local_solver: t.local_solver,
            rounds: t.rounds,
        }
    }
    fn put_keys(&self, t: &mut KeyTable) {
        match self.step {
            StepRule::Fixed(eta) => t.eta = Some(eta),
            StepRule::Gamma(g) => t.eta_gamma = g,
        }
        t.local_steps = self.local_steps;
        t.local_solver = self.local_solver;
        t.rounds = self.rounds;
    }
    fn check_keys(&self) -> Result<()> {
        match self.step {
            StepRule::Fixed(eta) => check_key::eta(&Some(eta))?,
            StepRule::Gamma(g) => check_key::eta_gamma(&g)?,
        }
        check_key::local_steps(&self.local_steps)?;
        check_key::local_solver(&self.local_solver)?;
        check_key::rounds(&self.rounds)
    }
}

impl ParamGuard for Phase2Config {
    fn check_ref(&self) -> Result<()> {
        self.check_keys()
    }
}

/// Every key at its default.
impl Default for Phase2Config {
    fn default() -> Self {
        Self::from_keys(&KeyTable::default())
    }
}

impl KeyTable {
    /// The checked group `G` of these keys (for the unit tests, which write keys).
    ///
    /// # Errors
    /// [`crate::error::FedmixError::InvalidParameter`] naming the first key of `G` out of range.
    #[cfg(test)]
    pub(crate) fn group<G: Keyed + ParamGuard>(&self) -> Result<Valid<G>> {
        G::from_keys(self).check()
    }
}

/// The paper's literal Phase 1 choices (SXY22 App. C): `⌈3k log k⌉` anchors, 5 iterations.
/// Decision: natural log in `⌈3k log k⌉` (App. C gives no base), because the paper's logarithms
/// are natural elsewhere (e.g. `log(e/ν)` in Theorem 2); for k = 3 it gives 10 anchors (base 2
/// would give 15).
pub fn paper_preset(k: usize) -> Valid<TwoPhaseParams> {
    let t = KeyTable {
        anchors: Some((3.0 * k as f64 * (k as f64).ln()).ceil() as usize),
        phase1_iterations: 5,
        ..KeyTable::default()
    };
    TwoPhaseParams::from_keys(&t)
        .check()
        .expect("the paper's choices are in range")
}
