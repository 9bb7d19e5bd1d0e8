//! One SFT step of a random Qwen3 on the CPU, its measured resident peak beside what
//! `footprint.rs` estimates for it (`wrl_trainer::memory_probe`): how the memory plan was
//! calibrated (docs/trainer.md "A memory plan"). Run it with wrlc's allocator settings:
//!
//! `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647 \
//!  cargo run -p wrl-trainer --example memory_fit -- HIDDEN LAYERS SEQS LEN [RECOMPUTE 0|1] [f32|bf16]`
//!
//! Prints one JSON line with `measured`, `baseline` and `estimate` in bytes.

use wrl_trainer::memory_probe::{Probe, measure};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let probe = Probe {
        hidden: num(0, 128),
        layers: num(1, 2),
        sequences: num(2, 1),
        length: num(3, 512),
        recompute: num(4, 1) == 1,
        bf16: args.get(5).is_some_and(|a| a == "bf16"),
    };
    let dir = std::env::temp_dir().join(format!("wrl-memory-fit-{}", std::process::id()));
    let result = measure(probe, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    match result.map(|m| serde_json::to_string(&m)) {
        Ok(Ok(line)) => println!("{line}"),
        Ok(Err(e)) => eprintln!("memory_fit: {e}"),
        Err(e) => {
            eprintln!("memory_fit: {e}");
            std::process::exit(1);
        }
    }
}
