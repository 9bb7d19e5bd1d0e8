//! Mixed precision: the dtype a pretrained policy computes in (f32, bf16 or f16) over f32 master
//! weights and f32 optimiser state, and the dynamic loss scale that keeps f16's small gradients
//! from flushing to zero (torch.amp's `GradScaler` rule, with its defaults).
//!
//! The weights stay f32 `Var`s. A forward casts each weight it reads to the compute dtype
//! (`to_dtype` is differentiable: the cast's backward widens the gradient back to f32), so the
//! activations, the attention products and the KV cache are in the compute dtype while every
//! gradient and every AdamW update is f32. Norms, softmaxes and log-probabilities are computed
//! in f32, as transformers computes them.

use candle_core::DType;
use serde::{Deserialize, Serialize};

/// The dtype a model's forward computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Everything in f32 (the default of a plan that names none).
    #[default]
    F32,
    /// bfloat16 activations over f32 master weights; f32's range, so no loss scale.
    Bf16,
    /// float16 activations over f32 master weights, with a dynamic loss scale.
    F16,
}

impl Precision {
    /// The candle dtype of the activations.
    pub fn dtype(self) -> DType {
        match self {
            Precision::F32 => DType::F32,
            Precision::Bf16 => DType::BF16,
            Precision::F16 => DType::F16,
        }
    }

    /// The recipe's spelling (`f32`, `bf16`, `f16`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// A fresh loss scaler where this precision needs one (f16), else `None`.
    pub fn scaler(self) -> Option<LossScaler> {
        match self {
            Precision::F16 => Some(LossScaler::default()),
            Precision::F32 | Precision::Bf16 => None,
        }
    }
}

/// A dynamic loss scale: the loss is multiplied by `scale` before the backward pass and the
/// gradients divided by it before the update. A step whose gradients overflow is skipped and
/// the scale halved; after `growth_interval` clean steps in a row it doubles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScaler {
    /// The current scale.
    pub scale: f64,
    /// Clean steps since the last change.
    pub clean: u64,
    /// Clean steps before the scale doubles.
    pub growth_interval: u64,
}

impl Default for LossScaler {
    /// torch.amp's defaults: 2¹⁶, doubled after 2,000 clean steps, halved on overflow.
    fn default() -> Self {
        LossScaler { scale: 65536.0, clean: 0, growth_interval: 2000 }
    }
}

/// The smallest scale: below it an overflow is not the scale's fault but the model's.
const MIN_SCALE: f64 = 1.0 / 65536.0;

impl LossScaler {
    /// Records a step whose gradients were `finite` (or not); returns whether to apply it.
    pub fn update(&mut self, finite: bool) -> bool {
        if finite {
            self.clean += 1;
            if self.clean >= self.growth_interval {
                self.scale *= 2.0;
                self.clean = 0;
            }
        } else {
            self.scale = (self.scale / 2.0).max(MIN_SCALE);
            self.clean = 0;
        }
        finite
    }

    /// Whether the scale has fallen as far as it goes (every step overflows: a diverged model).
    pub fn exhausted(&self) -> bool {
        self.scale <= MIN_SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overflow halves and skips; `growth_interval` clean steps double.
    #[test]
    fn the_scale_backs_off_and_grows() {
        let mut s = LossScaler { growth_interval: 3, ..LossScaler::default() };
        assert!(!s.update(false));
        assert_eq!(s.scale, 32768.0);
        assert!(s.update(true) && s.update(true));
        assert_eq!(s.scale, 32768.0);
        assert!(s.update(true));
        assert_eq!((s.scale, s.clean), (65536.0, 0));
        for _ in 0..40 {
            s.update(false);
        }
        assert!(s.exhausted());
        assert_eq!(Precision::Bf16.scaler(), None);
        assert!(Precision::F16.scaler().is_some());
    }
}
