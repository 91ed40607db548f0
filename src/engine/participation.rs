//! Partial participation: which clients take part in a round (IFCA Algorithm 2 line 4,
//! "M_t ← random subset of worker machines"; FedAvg's client fraction, McMahan et al. 2017).
//!
//! Every draw comes from `stream(seed, Purpose::Sampling, restart · 2²⁴ + round)`, so the subset
//! of round `t` of restart `r` does not depend on any other round, restart or knob. A
//! [`Schedule`] supplied from a file (`--participation`) replaces these draws.

use crate::error::{FedmixError, Result};
use crate::params::{MAX_RESTARTS, MAX_ROUNDS};
use crate::seed_streams::{stream, Purpose};
use rand::RngExt;

/// `|M_t| = ⌈fraction · M⌉` (at least one client; all of them when `fraction = 1`).
///
/// Decision: the papers give a fraction, not a rounding rule; the ceiling never yields an empty
/// round and equals `M` exactly at `fraction = 1`.
pub fn participant_count(m: usize, fraction: f64) -> usize {
    ((fraction * m as f64).ceil() as usize).clamp(1, m.max(1))
}

/// The participants of round `round` of restart `restart`: from a given `schedule` when there is
/// one (a user's file, already checked against the run's shape), otherwise drawn by
/// [`participants`] from `seed`.
pub fn round_participants(
    schedule: Option<&Schedule>,
    seed: u64,
    restart: usize,
    round: usize,
    m: usize,
    fraction: f64,
) -> Vec<usize> {
    match schedule {
        Some(s) => s.participants(restart, round).to_vec(),
        None => participants(seed, restart, round, m, fraction),
    }
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

/// A participation schedule: the participants of every round of every restart, supplied from
/// a file (`--participation participation.npy`) or drawn from the seed ([`Schedule::draw`]).
///
/// File format (docs/validating.md): int64, C order, shape `restarts × rounds × M` (or
/// `rounds × M` when there is one restart), entry `1` when the client takes part in that round
/// and `0` otherwise; every round needs at least one participant. A supplied schedule replaces
/// the `participation` fraction (its rounds may have any number of participants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Number of restarts (first axis).
    pub restarts: usize,
    /// Rounds per restart (second axis).
    pub rounds: usize,
    /// Number of clients `M` (last axis).
    pub clients: usize,
    /// Sorted participants of round `t` of restart `r` at index `r · rounds + t`.
    pub sets: Vec<Vec<usize>>,
}

impl Schedule {
    /// The schedule fedmix draws from `seed` ([`participants`] for every restart and round).
    pub fn draw(seed: u64, restarts: usize, rounds: usize, m: usize, fraction: f64) -> Self {
        let sets = (0..restarts)
            .flat_map(|r| (0..rounds).map(move |t| participants(seed, r, t, m, fraction)))
            .collect();
        Self {
            restarts,
            rounds,
            clients: m,
            sets,
        }
    }

    /// Build from a 0/1 mask of `shape` (`[R, T, M]` or `[T, M]`), C order; `source` names the
    /// file in errors.
    ///
    /// # Errors
    /// [`FedmixError::InvalidRandomness`] for a shape that is not 2-D/3-D or an entry other than
    /// 0/1 (naming its index), [`FedmixError::EmptyRound`] for a round without participants.
    pub fn from_mask(source: &std::path::Path, shape: &[usize], mask: &[i64]) -> Result<Self> {
        let (restarts, rounds, clients) = match *shape {
            [t, m] => (1, t, m),
            [r, t, m] => (r, t, m),
            _ => {
                return Err(FedmixError::InvalidRandomness {
                    path: source.into(),
                    field: "participation".into(),
                    reason: format!(
                        "shape {shape:?}: expected restarts × rounds × M (or rounds × M)"
                    ),
                })
            }
        };
        if let Some(pos) = mask.iter().position(|&v| v != 0 && v != 1) {
            return Err(FedmixError::InvalidRandomness {
                path: source.into(),
                field: format!(
                    "participation[{}][{}][{}]",
                    pos / (rounds * clients).max(1),
                    pos / clients.max(1) % rounds.max(1),
                    pos % clients.max(1)
                ),
                reason: format!("value {} (entries must be 0 or 1)", mask[pos]),
            });
        }
        let sets: Vec<Vec<usize>> = if clients == 0 {
            vec![Vec::new(); restarts * rounds]
        } else {
            mask.chunks_exact(clients)
                .map(|row| (0..clients).filter(|&i| row[i] == 1).collect())
                .collect()
        };
        if let Some(pos) = sets.iter().position(Vec::is_empty) {
            return Err(FedmixError::EmptyRound {
                path: source.into(),
                restart: pos / rounds.max(1),
                round: pos % rounds.max(1),
            });
        }
        Ok(Self {
            restarts,
            rounds,
            clients,
            sets,
        })
    }

    /// The 0/1 mask (`restarts × rounds × M`, C order) of [`Schedule::from_mask`].
    pub fn to_mask(&self) -> (Vec<usize>, Vec<i64>) {
        let mut mask = vec![0i64; self.sets.len() * self.clients];
        for (row, set) in self.sets.iter().enumerate() {
            for &i in set {
                mask[row * self.clients + i] = 1;
            }
        }
        (vec![self.restarts, self.rounds, self.clients], mask)
    }

    /// Check the schedule against a run of `restarts × rounds` on `m` clients.
    ///
    /// # Errors
    /// [`FedmixError::InvalidRandomness`] naming the axis that disagrees.
    pub fn check(
        &self,
        source: &std::path::Path,
        restarts: usize,
        rounds: usize,
        m: usize,
    ) -> Result<()> {
        for (axis, found, want, what) in [
            ("M (last axis)", self.clients, m, "clients in the data"),
            ("rounds", self.rounds, rounds, "`rounds`"),
            ("restarts", self.restarts, restarts, "`restarts`"),
        ] {
            if found != want {
                return Err(FedmixError::InvalidRandomness {
                    path: source.into(),
                    field: format!("participation: {axis}"),
                    reason: format!("{found}, but the run has {want} {what}"),
                });
            }
        }
        Ok(())
    }

    /// The participants of round `round` of restart `restart` (sorted).
    ///
    /// # Panics
    /// When `(restart, round)` is outside the schedule; [`Schedule::check`] rules that out.
    pub fn participants(&self, restart: usize, round: usize) -> &[usize] {
        &self.sets[restart * self.rounds + round]
    }
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
                crate::params::check_participation(f, 10, 1),
                Err(FedmixError::InvalidParameter { ref name, .. }) if name == "participation"
            ));
        }
        assert!(crate::params::check_participation(1.0, 10, 0).is_err());
        assert!(crate::params::check_participation(0.5, 10, 3).is_ok());
    }

    #[test]
    fn schedule_mask_round_trip_and_errors() {
        let s = Schedule::draw(3, 2, 4, 9, 0.4);
        assert_eq!(s.participants(1, 2), participants(3, 1, 2, 9, 0.4));
        let (shape, mask) = s.to_mask();
        let p = std::path::Path::new("p.npy");
        assert_eq!(Schedule::from_mask(p, &shape, &mask).unwrap(), s);
        let mut bad = mask.clone();
        bad[9..18].fill(0);
        assert!(matches!(
            Schedule::from_mask(p, &shape, &bad),
            Err(FedmixError::EmptyRound {
                restart: 0,
                round: 1,
                ..
            })
        ));
        bad[0] = 2;
        assert!(matches!(
            Schedule::from_mask(p, &shape, &bad),
            Err(FedmixError::InvalidRandomness { .. })
        ));
        assert!(s.check(p, 2, 4, 9).is_ok());
        assert!(s.check(p, 1, 4, 9).is_err());
    }
}
