//! Memory per training step, measured rather than estimated (`footprint.rs` estimates): the
//! peak resident memory of the process while the step ran (Linux: the high-water mark, reset
//! when the step starts) and, on a CUDA device, the device memory in use when it ended.

use candle_core::Device;
use serde::{Deserialize, Serialize};

/// What one step held: in the trainer's `Metrics` and, as it is, in `metrics.jsonl`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepMemory {
    /// Peak resident bytes of the process during the step; `None` where the high-water mark
    /// cannot be reset (not Linux, or `/proc` read-only), since a peak since start-up would
    /// not be this step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_peak_bytes: Option<u64>,
    /// Bytes in use on the model's GPU after the step (all of the device's users); `None` on
    /// the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_bytes: Option<u64>,
}

impl StepMemory {
    /// Nothing measured.
    pub fn is_empty(&self) -> bool {
        self.host_peak_bytes.is_none() && self.device_bytes.is_none()
    }

    /// The larger of two steps' figures, each where measured (one update per graph role).
    pub fn max(self, other: StepMemory) -> StepMemory {
        StepMemory {
            host_peak_bytes: self.host_peak_bytes.max(other.host_peak_bytes),
            device_bytes: self.device_bytes.max(other.device_bytes),
        }
    }
}

/// A step being measured: [`Meter::start`] before it, [`Meter::finish`] after.
#[derive(Debug)]
pub struct Meter {
    reset: bool,
}

impl Meter {
    /// Resets the process's resident-memory high-water mark (`/proc/self/clear_refs`, 5).
    pub fn start() -> Meter {
        Meter { reset: std::fs::write("/proc/self/clear_refs", "5").is_ok() }
    }

    /// The step's memory on `device`.
    pub fn finish(self, device: &Device) -> StepMemory {
        let host_peak_bytes = if self.reset { status_bytes("VmHWM:") } else { None };
        StepMemory { host_peak_bytes, device_bytes: device_used(device) }
    }
}

/// A `kB` line of `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Device memory in use (total − free, as the driver reports it) on a CUDA device.
#[cfg(feature = "cuda")]
fn device_used(device: &Device) -> Option<u64> {
    match device {
        Device::Cuda(d) => {
            // cudarc binds the device's context to this thread before it asks the driver.
            let (free, total) = d.cuda_stream().context().mem_get_info().ok()?;
            Some(total.saturating_sub(free) as u64)
        }
        Device::Cpu | Device::Metal(_) => None,
    }
}

/// Device memory in use: none without CUDA.
#[cfg(not(feature = "cuda"))]
fn device_used(_device: &Device) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peak covers what the step allocated and touched, and the CPU has no device figure.
    #[test]
    fn a_step_that_touches_memory_raises_its_peak() {
        let m = Meter::start();
        let big = vec![1u8; 64 << 20];
        let sum: u64 = big.iter().step_by(4096).map(|&b| u64::from(b)).sum();
        let got = m.finish(&Device::Cpu);
        assert!(sum > 0 && got.device_bytes.is_none());
        if cfg!(target_os = "linux") {
            let peak = got.host_peak_bytes.expect("Linux resets the high-water mark");
            assert!(peak >= 64 << 20, "peak {peak} below the 64 MiB touched");
        }
        drop(big);
    }
}
