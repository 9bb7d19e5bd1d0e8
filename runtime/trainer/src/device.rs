//! Device selection: CUDA when built with the `cuda` feature and a GPU is present, CPU otherwise.

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
    /// CUDA device with this ordinal; falls back to CPU when CUDA is not available.
    Cuda(usize),
}

impl DeviceChoice {
    /// Resolve the choice to a candle device.
    pub fn device(self) -> Result<Device> {
        match self {
            DeviceChoice::Cpu => Ok(Device::Cpu),
            DeviceChoice::Auto => Ok(Device::cuda_if_available(0)?),
            DeviceChoice::Cuda(ordinal) => Ok(Device::cuda_if_available(ordinal)?),
        }
    }
}
