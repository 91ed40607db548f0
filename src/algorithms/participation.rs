//! Partial participation: which clients take part in a round (IFCA Algorithm 2 line 4,
//! "M_t ← random subset of worker machines"; FedAvg's client fraction, McMahan et al. 2017).
//!
//! Every draw comes from `stream(seed, Purpose::Sampling, restart · 2²⁴ + round)`, so the subset
//! of round `t` of restart `r` does not depend on any other round, restart or knob.

use crate::error::{FedmixError, Result};
use crate::rng::{stream, Purpose};
use rand::RngExt;

/// Rounds per restart that get distinct sampling streams (`2²⁴`).
pub const MAX_ROUNDS: usize = 1 << 24;
/// Restarts that get distinct sampling streams (`2¹⁶`; stream indices have 40 bits).
pub const MAX_RESTARTS: usize = 1 << 16;

/// `|M_t| = ⌈fraction · M⌉` (at least one client; all of them when `fraction = 1`).
///
/// Decision: the papers give a fraction, not a rounding rule; the ceiling never yields an empty
/// round and equals `M` exactly at `fraction = 1`.
pub fn participant_count(m: usize, fraction: f64) -> usize {
    ((fraction * m as f64).ceil() as usize).clamp(1, m.max(1))
}

/// Check `fraction ∈ (0, 1]` and that `rounds`/`restarts` fit the stream layout.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] naming `participation`, `rounds` or `restarts`.
pub fn check(fraction: f64, rounds: usize, restarts: usize) -> Result<()> {
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(FedmixError::invalid(
            "participation",
            fraction,
            "must be in (0, 1]",
        ));
    }
    if rounds >= MAX_ROUNDS {
        return Err(FedmixError::invalid(
            "rounds",
            rounds,
            format!("must be < {MAX_ROUNDS}"),
        ));
    }
    if restarts == 0 || restarts > MAX_RESTARTS {
        return Err(FedmixError::invalid(
            "restarts",
            restarts,
            format!("must be in 1..={MAX_RESTARTS}"),
        ));
    }
    Ok(())
}

/// The participants of round `round` (0-based) of restart `restart`, sorted by client index:
/// all `m` clients when `fraction = 1` (no randomness used), otherwise `⌈fraction·m⌉` clients
/// uniformly without replacement (partial Fisher–Yates on the Sampling stream).
pub fn participants(
    seed: u64,
    restart: usize,
    round: usize,
    m: usize,
    fraction: f64,
) -> Vec<usize> {
    let count = participant_count(m, fraction);
    if count >= m {
        return (0..m).collect();
    }
    let index = ((restart % MAX_RESTARTS) as u64) << 24 | (round % MAX_ROUNDS) as u64;
    let mut rng = stream(seed, Purpose::Sampling, index);
    let mut pool: Vec<usize> = (0..m).collect();
    for i in 0..count {
        let j = rng.random_range(i..m);
        pool.swap(i, j);
    }
    let mut chosen = pool[..count].to_vec();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_subsets() {
        assert_eq!(participant_count(10, 1.0), 10);
        assert_eq!(participant_count(10, 0.25), 3);
        assert_eq!(participant_count(10, 1e-9), 1);
        let a = participants(4, 0, 7, 50, 0.3);
        assert_eq!(a.len(), 15);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a[14] < 50);
        assert_eq!(a, participants(4, 0, 7, 50, 0.3));
        assert_ne!(a, participants(4, 0, 8, 50, 0.3));
        assert_ne!(a, participants(4, 1, 7, 50, 0.3));
        assert_eq!(participants(4, 0, 7, 50, 1.0), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn bad_fractions_are_typed() {
        for f in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(matches!(
                check(f, 10, 1),
                Err(FedmixError::InvalidParameter { ref name, .. }) if name == "participation"
            ));
        }
        assert!(check(1.0, 10, 0).is_err());
        assert!(check(0.5, 10, 3).is_ok());
    }
}
