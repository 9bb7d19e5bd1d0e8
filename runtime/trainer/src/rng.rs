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
