//! The allocator settings the trainer runs fastest with (bench/trainer.sh has always run with
//! them; docs/benchmarks.md): tensors of up to 32 MiB come from the heap instead of a fresh
//! mmap (and its page faults) per op, and freed memory is not handed back to the kernel after
//! every step. glibc's `mallopt`, set once at start-up, unless the user set `GLIBC_TUNABLES`
//! for malloc themselves. The figures a run reaches do not change: only where memory comes from.
//! The trainer's thread settings (`wrl_trainer::threads`) are applied here too, before any
//! thread starts.
// `mallopt` is a C function and `set_var` is unsafe while other threads may read the
// environment; this module is the only caller of either (see the SAFETY notes).
#![allow(unsafe_code)]

/// Largest allocation served from the heap (glibc's ceiling for its own dynamic threshold).
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Free heap kept before memory is returned to the kernel.
const TRIM_THRESHOLD: i32 = i32::MAX;

/// Applies the settings (glibc on Linux; a no-op elsewhere), and the trainer's thread settings
/// (`wrl_trainer::threads`) that the user has not set.
pub fn tune() {
    for (key, value) in wrl_trainer::threads::unset_defaults() {
        // SAFETY: called first thing in `main`, before any other thread exists, so nothing
        // reads the environment while it changes.
        unsafe { std::env::set_var(key, value) };
    }
    malloc();
}

fn malloc() {
    if std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.")) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets two integer parameters of glibc's allocator; it is called on the
    // main thread before any other thread exists, and a refused value leaves the default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
