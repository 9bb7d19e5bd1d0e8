//! The thread settings the CPU trainer runs fastest with, applied by a program at start-up.
//! candle runs its element-wise ops on a pool of its own beside rayon's (which runs every
//! product), and that pool's idle worker spins 25,000 rounds before it sleeps: on two cores it
//! spun on the core a product needed, a fifth of a training step (docs/benchmarks.md, "Thread
//! settings"). With a spin limit of 0 the worker sleeps as soon as its share is done. Only where
//! work runs changes, never a result: every element-wise op is the same per element.

/// Environment defaults for candle's CPU thread pool, as (variable, value).
pub const ENV_DEFAULTS: &[(&str, &str)] = &[("CANDLE_BARRIER_POOL_SPIN_LIMIT", "0")];

/// The defaults of [`ENV_DEFAULTS`] the user has not set themselves.
pub fn unset_defaults() -> impl Iterator<Item = (&'static str, &'static str)> {
    ENV_DEFAULTS.iter().copied().filter(|(k, _)| std::env::var_os(k).is_none())
}
