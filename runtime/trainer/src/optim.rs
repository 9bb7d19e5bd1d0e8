//! AdamW with explicit, checkpointable state; learning-rate schedules (constant / cosine with
//! warm-up); global-norm gradient clipping.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{DType, Tensor, Var};

use crate::ops::fused::with_data;
use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainerError, config_err};
use crate::params::ParamStore;
use crate::precision::{LossScaler, Precision};

/// Shape of the learning-rate curve after warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// Constant after warm-up.
    #[default]
    Constant,
    /// Cosine decay from the peak to `min_lr_ratio · lr` at `total_steps`.
    Cosine,
}

/// Learning-rate schedule. Warm-up is linear from 0 over `warmup_steps` (or
/// `warmup_ratio · total_steps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Schedule {
    /// Curve after warm-up.
    #[serde(default)]
    pub kind: ScheduleKind,
    /// Warm-up steps (takes precedence over the ratio).
    #[serde(default)]
    pub warmup_steps: Option<u64>,
    /// Warm-up as a fraction of `total_steps`.
    #[serde(default)]
    pub warmup_ratio: Option<f64>,
    /// Total optimiser steps (needed by cosine and by `warmup_ratio`).
    #[serde(default)]
    pub total_steps: Option<u64>,
    /// Final LR as a fraction of the peak (cosine).
    #[serde(default)]
    pub min_lr_ratio: f64,
}

impl Schedule {
    /// LR multiplier for optimiser step `step` (0-based).
    pub fn factor(&self, step: u64) -> Result<f64> {
        let warmup = match (self.warmup_steps, self.warmup_ratio, self.total_steps) {
            (Some(w), _, _) => w,
            (None, Some(r), Some(t)) => (r * t as f64).round() as u64,
            (None, Some(_), None) => return Err(config_err("warmup_ratio needs total_steps")),
            (None, None, _) => 0,
        };
        if step < warmup {
            return Ok((step + 1) as f64 / warmup as f64);
        }
        match self.kind {
            ScheduleKind::Constant => Ok(1.0),
            ScheduleKind::Cosine => {
                let total = self
                    .total_steps
                    .ok_or_else(|| config_err("a cosine schedule needs total_steps"))?;
                let span = total.saturating_sub(warmup).max(1) as f64;
                let progress = ((step - warmup) as f64 / span).min(1.0);
                let cos = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
                Ok(self.min_lr_ratio + (1.0 - self.min_lr_ratio) * cos)
            }
        }
    }
}

fn d_lr() -> f64 {
    1e-3
}
fn d_betas() -> (f64, f64) {
    (0.9, 0.999)
}
fn d_eps() -> f64 {
    1e-8
}
fn d_wd() -> f64 {
    0.01
}

/// Optimiser settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimConfig {
    /// Peak learning rate.
    #[serde(default = "d_lr")]
    pub lr: f64,
    /// Adam (β1, β2).
    #[serde(default = "d_betas")]
    pub betas: (f64, f64),
    /// Adam ε.
    #[serde(default = "d_eps")]
    pub eps: f64,
    /// Decoupled weight decay, applied to parameters with ≥ 2 dimensions only (not to biases
    /// and norm gains).
    #[serde(default = "d_wd")]
    pub weight_decay: f64,
    /// Clip the global gradient L2 norm to this value.
    #[serde(default)]
    pub grad_clip: Option<f64>,
    /// LR schedule.
    #[serde(default)]
    pub schedule: Schedule,
}

impl Default for OptimConfig {
    fn default() -> Self {
        OptimConfig {
            lr: d_lr(),
            betas: d_betas(),
            eps: d_eps(),
            weight_decay: d_wd(),
            grad_clip: None,
            schedule: Schedule::default(),
        }
    }
}

/// AdamW whose moments live in a name-keyed map so they can be saved and restored exactly.
#[derive(Debug, Clone)]
pub struct AdamW {
    /// Settings.
    pub config: OptimConfig,
    /// Number of updates applied so far (bias correction uses it).
    pub t: u64,
    /// The dynamic loss scale of an f16 model (`precision.rs`); `None`: gradients are unscaled.
    pub scaler: Option<LossScaler>,
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
}

/// What one optimiser step did.
#[derive(Debug, Clone, Copy)]
pub struct StepInfo {
    /// Global L2 norm of the gradient before clipping.
    pub grad_norm: f64,
    /// Learning rate used.
    pub lr: f64,
    /// Whether the step was skipped because f16 gradients overflowed (the loss scale halved).
    pub skipped: bool,
}

/// Gradients keyed by parameter name.
pub type Grads = BTreeMap<String, Tensor>;

/// Adds `g` to the gradient accumulated for `name`, or starts it.
pub(crate) fn add_grad(acc: &mut Grads, name: &str, g: &Tensor) -> Result<()> {
    let g = match acc.remove(name) {
        Some(prev) => (prev + g)?,
        None => g.clone(),
    };
    acc.insert(name.to_string(), g);
    Ok(())
}

/// Global L2 norm of a set of gradients.
pub fn grad_norm(grads: &Grads) -> Result<f64> {
    let mut total = 0f64;
    for g in grads.values() {
        total += g.sqr()?.sum_all()?.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?;
    }
    Ok(total.sqrt())
}

impl AdamW {
    /// A fresh optimiser.
    pub fn new(config: OptimConfig) -> Self {
        AdamW { config, t: 0, scaler: None, m: BTreeMap::new(), v: BTreeMap::new() }
    }

    /// A fresh optimiser for a model computing in `precision` (f16 gets a loss scale).
    pub fn for_precision(config: OptimConfig, precision: Precision) -> Self {
        AdamW { scaler: precision.scaler(), ..AdamW::new(config) }
    }

    /// What to multiply the loss by before its backward pass (1 without a loss scale).
    pub fn loss_scale(&self) -> f64 {
        self.scaler.map_or(1.0, |s| s.scale)
    }

    /// Drops the moments of `names` (parameters that were just frozen keep no state).
    pub fn forget(&mut self, names: &[String]) {
        for n in names {
            self.m.remove(n);
            self.v.remove(n);
        }
    }

    /// Apply one update to `params` from `grads` (clipped first). `step` picks the scheduled LR.
    /// Gradients computed from a loss multiplied by [`AdamW::loss_scale`] are divided by it
    /// here; an f16 step whose gradients overflowed is skipped (`StepInfo::skipped`).
    pub fn step(&mut self, params: &ParamStore, grads: &Grads, step: u64) -> Result<StepInfo> {
        let scale = self.loss_scale();
        let norm = grad_norm(grads)? / scale;
        let lr = self.config.lr * self.config.schedule.factor(step)?;
        if let Some(s) = self.scaler.as_mut()
            && !s.update(norm.is_finite())
        {
            if s.exhausted() {
                return Err(TrainerError::Config(
                    "f16 gradients overflow at every loss scale down to 2^-16: the model has \
                     diverged; train in bf16 or f32, or lower the learning rate"
                        .into(),
                ));
            }
            return Ok(StepInfo { grad_norm: 0.0, lr, skipped: true });
        }
        if !norm.is_finite() {
            return Err(TrainerError::Config(format!("gradient norm is {norm}; refusing to step")));
        }
        let clip = match self.config.grad_clip {
            Some(max) if norm > max => max / (norm + 1e-6),
            Some(_) | None => 1.0,
        } / scale;
        let (b1, b2) = self.config.betas;
        self.t += 1;
        let bc1 = 1.0 - b1.powi(self.t as i32);
        let bc2 = 1.0 - b2.powi(self.t as i32);
        let hp = Hyper {
            lr,
            b1,
            b2,
            bc1,
            bc2,
            eps: self.config.eps,
            wd: self.config.weight_decay,
            clip,
        };
        for (name, var) in params.iter() {
            let Some(g) = grads.get(name) else { continue };
            let decay = var.rank() >= 2 && self.config.weight_decay != 0.0;
            let (new, m, v) = if var.device().is_cpu() && var.dtype() == DType::F32 {
                adamw_cpu(var.as_tensor(), g, self.m.get(name), self.v.get(name), &hp, decay)?
            } else {
                adamw_tensor(var.as_tensor(), g, self.m.get(name), self.v.get(name), &hp, decay)?
            };
            set_var(var, &new)?;
            self.m.insert(name.clone(), m);
            self.v.insert(name.clone(), v);
        }
        Ok(StepInfo { grad_norm: norm, lr, skipped: false })
    }

    /// Save the moments (`m.NAME`, `v.NAME`) to a safetensors file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut map: HashMap<String, Tensor> = HashMap::new();
        for (k, t) in &self.m {
            map.insert(format!("m.{k}"), t.clone());
        }
        for (k, t) in &self.v {
            map.insert(format!("v.{k}"), t.clone());
        }
        if map.is_empty() {
            // safetensors cannot hold zero tensors portably; store a marker.
            map.insert(
                "empty".into(),
                Tensor::zeros(1, candle_core::DType::F32, &candle_core::Device::Cpu)?,
            );
        }
        candle_core::safetensors::save(&map, path)?;
        Ok(())
    }

    /// Restore moments saved by [`AdamW::save`] with update count `t`.
    pub fn load(
        config: OptimConfig,
        t: u64,
        path: &Path,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let mut opt = AdamW::new(config);
        opt.t = t;
        for (k, v) in candle_core::safetensors::load(path, device)? {
            if let Some(n) = k.strip_prefix("m.") {
                opt.m.insert(n.to_string(), v);
            } else if let Some(n) = k.strip_prefix("v.") {
                opt.v.insert(n.to_string(), v);
            } else if k != "empty" {
                return Err(TrainerError::Checkpoint(format!("unexpected optimiser tensor `{k}`")));
            }
        }
        Ok(opt)
    }
}

/// Hyper-parameters of one AdamW update.
struct Hyper {
    lr: f64,
    b1: f64,
    b2: f64,
    bc1: f64,
    bc2: f64,
    eps: f64,
    wd: f64,
    clip: f64,
}

/// AdamW for one parameter with tensor ops (any device). Returns (new value, m, v).
fn adamw_tensor(
    cur: &Tensor,
    g: &Tensor,
    m: Option<&Tensor>,
    v: Option<&Tensor>,
    h: &Hyper,
    decay: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let g = if h.clip != 1.0 { (g * h.clip)? } else { g.clone() };
    let m = match m {
        Some(m) => ((m * h.b1)? + (&g * (1.0 - h.b1))?)?,
        None => (&g * (1.0 - h.b1))?,
    };
    let v = match v {
        Some(v) => ((v * h.b2)? + (g.sqr()? * (1.0 - h.b2))?)?,
        None => (g.sqr()? * (1.0 - h.b2))?,
    };
    let update = ((&m / h.bc1)? / ((&v / h.bc2)?.sqrt()? + h.eps)?)?;
    let decayed = if decay { (cur * (1.0 - h.lr * h.wd))? } else { cur.clone() };
    Ok(((decayed - (update * h.lr)?)?, m, v))
}

/// AdamW for one f32 CPU parameter in a single fused pass (same formulas, in f32).
fn adamw_cpu(
    cur: &Tensor,
    g: &Tensor,
    m: Option<&Tensor>,
    v: Option<&Tensor>,
    h: &Hyper,
    decay: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    use rayon::prelude::*;
    const CHUNK: usize = 8192;
    let n = cur.elem_count();
    let zeros = Tensor::zeros(cur.shape(), DType::F32, cur.device())?;
    let m_t = m.unwrap_or(&zeros);
    let v_t = v.unwrap_or(&zeros);
    let (b1, b2) = (h.b1 as f32, h.b2 as f32);
    let (ib1, ib2) = (1.0 / h.bc1 as f32, 1.0 / h.bc2 as f32);
    let (lr, eps, clip) = (h.lr as f32, h.eps as f32, h.clip as f32);
    let keep = if decay { 1.0 - (h.lr * h.wd) as f32 } else { 1.0 };
    let mut new_p = vec![0f32; n];
    let mut new_m = vec![0f32; n];
    let mut new_v = vec![0f32; n];
    with_data(cur, |p| {
        with_data(g, |g| {
            with_data(m_t, |m| {
                with_data(v_t, |v| {
                    new_p
                        .par_chunks_mut(CHUNK)
                        .zip(new_m.par_chunks_mut(CHUNK).zip(new_v.par_chunks_mut(CHUNK)))
                        .enumerate()
                        .for_each(|(c, (np, (nm, nv)))| {
                            let o = c * CHUNK;
                            for i in 0..np.len() {
                                let gi = g[o + i] * clip;
                                let mi = b1 * m[o + i] + (1.0 - b1) * gi;
                                let vi = b2 * v[o + i] + (1.0 - b2) * gi * gi;
                                let upd = (mi * ib1) / ((vi * ib2).sqrt() + eps);
                                np[i] = p[o + i] * keep - lr * upd;
                                nm[i] = mi;
                                nv[i] = vi;
                            }
                        });
                    Ok(())
                })
            })
        })
    })?;
    let dev = cur.device();
    Ok((
        Tensor::from_vec(new_p, cur.shape(), dev)?,
        Tensor::from_vec(new_m, cur.shape(), dev)?,
        Tensor::from_vec(new_v, cur.shape(), dev)?,
    ))
}

/// Overwrite a variable's value in place (its tensor id, and so gradient bookkeeping, stays).
fn set_var(var: &Var, value: &Tensor) -> Result<()> {
    var.set(value)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn fused_adamw_matches_tensor_adamw() {
        let dev = Device::Cpu;
        let mk = |s: u32| {
            let v: Vec<f32> =
                (0..300u32).map(|i| ((i * 37 + s * 11) % 101) as f32 / 50.0 - 1.0).collect();
            Tensor::from_vec(v, (20, 15), &dev).unwrap()
        };
        let (p, g, m, v) = (mk(1), mk(2), mk(3), (mk(4).sqr().unwrap() * 0.1).unwrap());
        let h = Hyper {
            lr: 1e-2,
            b1: 0.9,
            b2: 0.98,
            bc1: 0.19,
            bc2: 0.0396,
            eps: 1e-8,
            wd: 0.1,
            clip: 0.5,
        };
        for (mm, vv) in [(Some(&m), Some(&v)), (None, None)] {
            let a = adamw_cpu(&p, &g, mm, vv, &h, true).unwrap();
            let b = adamw_tensor(&p, &g, mm, vv, &h, true).unwrap();
            for (x, y) in [(&a.0, &b.0), (&a.1, &b.1), (&a.2, &b.2)] {
                let d: f32 =
                    (x - y).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
                assert!(d < 1e-5, "fused AdamW differs by {d}");
            }
        }
    }

    #[test]
    fn clipping_scales_the_gradient_to_the_max_norm() {
        let dev = Device::Cpu;
        let mut params = ParamStore::new();
        params.insert("w", &Tensor::new(&[[1f32, 2.0], [3.0, 4.0]], &dev).unwrap()).unwrap();
        let mut grads = Grads::new();
        grads.insert("w".into(), Tensor::new(&[[3f32, 0.0], [0.0, 4.0]], &dev).unwrap());
        let cfg = OptimConfig { grad_clip: Some(1.0), weight_decay: 0.0, ..OptimConfig::default() };
        let mut opt = AdamW::new(cfg);
        let info = opt.step(&params, &grads, 0).unwrap();
        assert!((info.grad_norm - 5.0).abs() < 1e-9, "norm is reported before clipping");
        // m = (1 − β1)·g·(1/5): the clipped gradient has norm 1.
        let m: Vec<Vec<f32>> = opt.m["w"].to_vec2().unwrap();
        assert!(
            (m[0][0] - 0.1 * 3.0 / 5.0).abs() < 1e-6 && (m[1][1] - 0.1 * 4.0 / 5.0).abs() < 1e-6
        );
        let mut no_clip = AdamW::new(OptimConfig { weight_decay: 0.0, ..OptimConfig::default() });
        no_clip.step(&params, &grads, 0).unwrap();
        let m: Vec<Vec<f32>> = no_clip.m["w"].to_vec2().unwrap();
        assert!((m[1][1] - 0.4).abs() < 1e-6);
    }
}
