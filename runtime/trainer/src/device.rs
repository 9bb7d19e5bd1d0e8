//! Device selection: `auto` is CUDA when built with the `cuda` feature and a GPU is present, the
//! CPU otherwise; an explicit GPU is that GPU or an error, never the CPU instead. A GPU is
//! opened once per process: every model on it (policy, reference, critic, each role of a graph
//! agent) and the preflight that checked it share one candle device, whose tensors mix.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use candle_core::Device;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Which device the trainer should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    /// CUDA device 0 if available (needs the `cuda` feature), otherwise CPU.
    #[default]
    Auto,
    /// Always the CPU.
    Cpu,
    /// CUDA device with this ordinal; an error where this build has no CUDA or the GPU is absent.
    Cuda(usize),
}

impl DeviceChoice {
    /// Resolve the choice to a candle device.
    pub fn device(self) -> Result<Device> {
        match self {
            DeviceChoice::Cpu => Ok(Device::Cpu),
            DeviceChoice::Auto if candle_core::utils::cuda_is_available() => cuda(0),
            DeviceChoice::Auto => Ok(Device::Cpu),
            DeviceChoice::Cuda(ordinal) => cuda(ordinal),
        }
    }
}

impl DeviceChoice {
    /// Whether the choice resolves to the CPU (without opening anything).
    pub fn is_cpu(self) -> bool {
        match self {
            DeviceChoice::Cpu => true,
            DeviceChoice::Auto => !candle_core::utils::cuda_is_available(),
            DeviceChoice::Cuda(_) => false,
        }
    }
}

/// GPU `ordinal`, opened on first use (candle gives each opening its own id, and refuses to mix
/// tensors of two).
fn cuda(ordinal: usize) -> Result<Device> {
    static OPEN: Mutex<BTreeMap<usize, Device>> = Mutex::new(BTreeMap::new());
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(d) = open.get(&ordinal) {
        return Ok(d.clone());
    }
    let d = Device::new_cuda(ordinal)?;
    open.insert(ordinal, d.clone());
    Ok(d)
}

/// Whether this build can run on CUDA GPUs (the `cuda` feature).
pub const CUDA_BUILT: bool = cfg!(feature = "cuda");

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU named in a build without CUDA is an error, never the CPU; `auto` is the CPU.
    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_named_gpu_without_cuda_is_an_error() {
        assert!(DeviceChoice::Cuda(0).device().is_err());
        assert!(matches!(DeviceChoice::Auto.device(), Ok(Device::Cpu)));
        const { assert!(!CUDA_BUILT) };
    }
}
