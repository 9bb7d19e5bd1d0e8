//! The memory plan held to the trainer: for random Qwen3s of several shapes, with and without
//! recomputation, in f32 and bf16, `footprint.rs`'s peak for an SFT step is within 20 % of the
//! resident peak the step reaches. Each shape is measured in a process of its own (this test
//! binary run again for `probe_in_this_process` alone), with wrlc's allocator settings.

use std::process::Command;

use wrl_trainer::memory_probe::{Probe, measure};

const PROBE: &str = "WRL_MEMORY_PROBE";
/// wrlc's `mallopt` settings (compiler/cli/src/malloc.rs), which keep freed memory resident,
/// and one arena: the harness runs the probe on a thread of its own, whose arena would otherwise
/// add its own slack (up to +30 % measured under a loaded test run).
const MALLOC: &str = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647:\
                      glibc.malloc.arena_max=1";

/// Not a test of its own: the child process's entry, which measures the probe in `PROBE`.
#[test]
fn probe_in_this_process() {
    let Ok(spec) = std::env::var(PROBE) else { return };
    let probe: Probe = serde_json::from_str(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = measure(probe, dir.path()).unwrap();
    println!("measured: {}", serde_json::to_string(&m).unwrap());
}

#[derive(serde::Deserialize)]
struct Line {
    measured: u64,
    estimate: u64,
}

#[test]
fn the_estimate_is_within_a_fifth_of_the_measured_peak() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let probes = [
        Probe { hidden: 512, layers: 2, sequences: 1, length: 256, recompute: true, bf16: false },
        Probe { hidden: 256, layers: 3, sequences: 2, length: 512, recompute: true, bf16: false },
        Probe { hidden: 256, layers: 2, sequences: 1, length: 512, recompute: false, bf16: false },
        Probe { hidden: 192, layers: 2, sequences: 2, length: 384, recompute: false, bf16: true },
    ];
    let mut table = Vec::new();
    for p in probes {
        let out = Command::new(&exe)
            .args(["--exact", "memory_plan::probe_in_this_process", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(PROBE, serde_json::to_string(&p).unwrap())
            .env("GLIBC_TUNABLES", MALLOC)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find_map(|l| l.split_once("measured: ").map(|(_, m)| m));
        let Some(line) = line else {
            panic!("{p:?}: no measurement\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr))
        };
        let m: Line = serde_json::from_str(line).unwrap();
        assert!(m.measured > 0, "{p:?}: nothing measured (no /proc/self/clear_refs?)");
        let off = m.estimate as f64 / m.measured as f64 - 1.0;
        table.push(format!(
            "{p:?}: measured {} estimate {} ({:+.0} %)",
            m.measured,
            m.estimate,
            off * 100.0
        ));
        assert!(off.abs() <= 0.2, "{}", table.join("\n"));
    }
    eprintln!("{}", table.join("\n"));
}
