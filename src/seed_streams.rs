//! Seeding: one master seed, split into named, documented ChaCha streams.
//!
//! Every random draw in fedmix comes from [`stream`]`(seed, purpose, index)`: a
//! `ChaCha8Rng` seeded from the master seed with its 64-bit stream id set to
//! `(purpose << 40) | index`. Purposes never share a stream, and per-client quantities use the
//! client index, so changing one knob (say σ, or the number of clients) does not reshuffle
//! unrelated randomness: the features of client 17 depend only on `(seed, 17, n_17, d)`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The RNG used everywhere.
pub type Rng = ChaCha8Rng;

/// What a random stream is used for. The discriminant is part of the public contract: it fixes
/// which numbers a seed produces, so the values must never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum Purpose {
    /// True parameters `θ*` (one stream; index 0).
    ThetaStar = 1,
    /// Hidden labels `z_i` (index 0).
    Labels = 2,
    /// Client sizes `n_i` (index 0).
    Sizes = 3,
    /// Training features of client `index`.
    Features = 4,
    /// Training noise of client `index`.
    Noise = 5,
    /// Model initialisation (index = restart / replicate).
    Init = 6,
    /// Algorithmic sampling: anchors, client subsets, participation (index = round or role).
    Sampling = 7,
    /// Independent replicates of an experiment (index = replicate).
    Replicate = 8,
    /// Per-cluster feature covariances (index 0).
    Covariance = 9,
    /// Held-out features of client `index`.
    TestFeatures = 10,
    /// Held-out noise of client `index`.
    TestNoise = 11,
    /// Random orthonormal starts `Q₀` of orthogonal iterations (index = call site / anchor).
    Subspace = 12,
}

/// Number of bits reserved for the index within a purpose.
const INDEX_BITS: u32 = 40;

/// The stream for `purpose` and `index` under master seed `seed`.
///
/// # Panics
/// Never: indices are masked to 40 bits (`index` ≥ 2⁴⁰ wraps, which no federation reaches).
pub fn stream(seed: u64, purpose: Purpose, index: u64) -> Rng {
    let mut rng = Rng::seed_from_u64(seed);
    rng.set_stream(((purpose as u64) << INDEX_BITS) | (index & ((1u64 << INDEX_BITS) - 1)));
    rng
}

/// Derive a child master seed (e.g. for replicate `r` of a sweep) from a parent seed.
pub fn child_seed(seed: u64, index: u64) -> u64 {
    use rand::RngExt;
    stream(seed, Purpose::Replicate, index).random::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn streams_differ_by_purpose_and_index() {
        let a: u64 = stream(1, Purpose::Features, 0).random();
        let b: u64 = stream(1, Purpose::Features, 1).random();
        let c: u64 = stream(1, Purpose::Noise, 0).random();
        let a2: u64 = stream(1, Purpose::Features, 0).random();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }
}
