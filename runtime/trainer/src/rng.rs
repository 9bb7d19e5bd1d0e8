//! The trainer's seeded random number generator, with a serialisable state so a run resumes exactly.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The full state of a [`ChaCha8Rng`]: seed, stream and position. Restoring it continues the
/// exact same random sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RngState {
    /// The 32-byte seed.
    pub seed: [u8; 32],
    /// The stream number.
    pub stream: u64,
    /// The position in the stream, in 32-bit words (stored as a decimal string: JSON numbers cannot hold u128).
    pub word_pos: String,
}

/// Mixes `seed` and `stream` into a new seed (SplitMix64's finaliser over their combination):
/// nearby streams give unrelated seeds.
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z =
        seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Build a generator from a u64 seed.
pub fn rng_from_seed(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Capture a generator's state.
pub fn rng_state(rng: &ChaCha8Rng) -> RngState {
    RngState {
        seed: rng.get_seed(),
        stream: rng.get_stream(),
        word_pos: rng.get_word_pos().to_string(),
    }
}

/// Rebuild a generator from a captured state.
pub fn rng_restore(state: &RngState) -> crate::Result<ChaCha8Rng> {
    let mut rng = ChaCha8Rng::from_seed(state.seed);
    rng.set_stream(state.stream);
    let pos: u128 = state
        .word_pos
        .parse()
        .map_err(|e| crate::TrainerError::Checkpoint(format!("bad rng word_pos: {e}")))?;
    rng.set_word_pos(pos);
    Ok(rng)
}
