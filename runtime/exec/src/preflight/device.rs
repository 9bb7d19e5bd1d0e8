//! A model's `device` against this build and this machine: `cuda(N)` where this `wrlc` has no
//! CUDA, or where GPU N cannot be opened, is refused at the field (E0516) before anything runs,
//! never run on the CPU instead.

use wrl_plan::Node;
use wrl_plan::params::Device;
use wrl_trainer::{CUDA_BUILT, DeviceChoice};

use crate::error::{Fault, RunError};

/// The trainer's device for a model's `device`.
pub fn device_choice(d: Device) -> DeviceChoice {
    match d {
        Device::Auto => DeviceChoice::Auto,
        Device::Cpu => DeviceChoice::Cpu,
        Device::Cuda(c) => DeviceChoice::Cuda(c.ordinal as usize),
    }
}

/// Refuses a `device` this run cannot have.
pub(super) fn device(n: &Node, d: Device) -> Result<(), RunError> {
    let Device::Cuda(c) = d else { return Ok(()) };
    if !CUDA_BUILT {
        return Err(RunError::new(
            Fault::Device,
            format!(
                "model `{}`: `device = cuda({})`, but this wrlc was built without CUDA",
                n.decl, c.ordinal
            ),
        )
        .help(
            "build wrlc with CUDA (`bench/cuda-build.sh`, or `cargo build --release -p wrl-cli \
             --features cuda` where nvcc is installed), or set `device = auto` (a profile can) \
             to train where this build can",
        )
        .at(n, Some("device"), "no CUDA in this build"));
    }
    match device_choice(d).device() {
        Ok(_) => Ok(()),
        Err(e) => Err(RunError::new(
            Fault::Device,
            format!("model `{}`: CUDA GPU {} cannot be opened: {e}", n.decl, c.ordinal),
        )
        .help("name a GPU this machine has (`nvidia-smi -L` lists them), or set `device = auto`")
        .at(n, Some("device"), "no such GPU here")),
    }
}
