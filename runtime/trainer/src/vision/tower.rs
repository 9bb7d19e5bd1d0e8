//! Qwen-VL's vision towers in candle, computed as transformers' `Qwen3VLVisionModel` and
//! `Qwen2_5_VisionTransformerPretrainedModel` compute them (f32): the patch embedding (a Conv3d
//! whose kernel is its stride, so one matmul over the processor's patch rows; Qwen2.5-VL's has no
//! bias), Qwen3-VL's learned position table resampled to each image's grid, the axial 2-D RoPE,
//! the pre-norm blocks with attention kept inside each image (frame) — Qwen2.5-VL's inside each
//! window but on the `fullatt_block_indexes` blocks, its patches regrouped window by window first
//! and its merged tokens put back in image order last —, and the patch merger plus Qwen3-VL's
//! DeepStack mergers fed by the blocks `deepstack_visual_indexes` names. Qwen3-VL's blocks use
//! LayerNorm and a two-layer MLP; Qwen2.5-VL's RMSNorm and a gated MLP (with biases).

use std::path::Path;

use candle_core::{D, DType, Device, Tensor};

use crate::error::Result;
use crate::ops::reference;

use super::merger::{Merger, Norm};
use super::position;
use super::processor::Pixels;
use super::size::Grid;
use super::vision_config::{VisionAct, VisionConfig, VlFamily};
use super::weights::{Weights, files};

/// A block's MLP: Qwen3-VL's `linear_fc2(act(linear_fc1(x)))`, or Qwen2.5-VL's
/// `down_proj(act(gate_proj(x)) · up_proj(x))`; every layer with its bias.
#[derive(Debug, Clone)]
enum Mlp {
    Plain { fc1: (Tensor, Tensor), fc2: (Tensor, Tensor) },
    Gated { gate: (Tensor, Tensor), up: (Tensor, Tensor), down: (Tensor, Tensor) },
}

/// One pre-norm block: attention then MLP, each added to the stream.
#[derive(Debug, Clone)]
struct Block {
    norm1: Norm,
    norm2: Norm,
    qkv: (Tensor, Tensor),
    proj: (Tensor, Tensor),
    mlp: Mlp,
}

/// What the tower makes of a batch of images.
#[derive(Debug, Clone)]
pub struct VisionOutput {
    /// The image tokens (Σ patches / merge², out_hidden_size), image after image.
    pub merged: Tensor,
    /// One (tokens, out_hidden_size) tensor per `deepstack_visual_indexes` entry, in its order.
    pub deepstack: Vec<Tensor>,
    /// The last block's output (Σ patches, hidden_size), before the merger; Qwen2.5-VL's in
    /// window order, as transformers returns it.
    pub last_hidden: Tensor,
}

/// A Qwen3-VL or Qwen2.5-VL vision tower.
#[derive(Debug, Clone)]
pub struct VisionTower {
    pub config: VisionConfig,
    patch: (Tensor, Option<Tensor>),
    /// Qwen3-VL's learned position table (Qwen2.5-VL has none).
    pos_embed: Option<Tensor>,
    blocks: Vec<Block>,
    merger: Merger,
    deepstack: Vec<Merger>,
    device: Device,
    /// The linear layers packed for the CPU's product (`fast.rs`).
    linears: super::fast::Linears,
}

impl VisionTower {
    /// Loads the tower of a Qwen-VL directory (`config.json`'s `vision_config`, the shards).
    pub fn load(dir: &Path, device: &Device) -> Result<VisionTower> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| files(format!("cannot read {}: {e}", path.display())))?;
        let config = VisionConfig::parse(&text)?;
        let mut w = Weights::read(&crate::hf::files::shards(dir)?, device)?;
        VisionTower::from_weights(config, &mut w, device)
    }

    fn from_weights(config: VisionConfig, w: &mut Weights, device: &Device) -> Result<VisionTower> {
        let (h, i, m) = (config.hidden_size, config.intermediate_size, config.spatial_merge_size);
        let (tp, p) = (config.temporal_patch_size, config.patch_size);
        let patch_weight = w
            .take("patch_embed.proj.weight", &[h, 3, tp, p, p])?
            .reshape((h, config.patch_values()))?;
        let out = config.out_hidden_size;
        let (patch, pos_embed, merger, deepstack) = match config.family {
            VlFamily::Qwen3Vl => {
                let bias = w.take("patch_embed.proj.bias", &[h])?;
                let pos = w.take("pos_embed.weight", &[config.num_position_embeddings, h])?;
                let merger = Merger::take(w, "merger.", h, m, out, false)?;
                let deepstack = (0..config.deepstack_visual_indexes.len())
                    .map(|d| {
                        Merger::take(w, &format!("deepstack_merger_list.{d}."), h, m, out, true)
                    })
                    .collect::<Result<Vec<_>>>()?;
                ((patch_weight, Some(bias)), Some(pos), merger, deepstack)
            }
            VlFamily::Qwen25Vl => {
                ((patch_weight, None), None, Merger::take_qwen25(w, h, m, out)?, Vec::new())
            }
        };
        let mut blocks = Vec::with_capacity(config.depth);
        for b in 0..config.depth {
            let at = |s: &str| format!("blocks.{b}.{s}");
            let (norm1, norm2, mlp) = match config.family {
                VlFamily::Qwen3Vl => {
                    let (w1, b1) = w.pair(&at("norm1"), &[h])?;
                    let (w2, b2) = w.pair(&at("norm2"), &[h])?;
                    let mlp = Mlp::Plain {
                        fc1: w.linear(&at("mlp.linear_fc1"), h, i)?,
                        fc2: w.linear(&at("mlp.linear_fc2"), i, h)?,
                    };
                    (Norm::Layer(w1, b1), Norm::Layer(w2, b2), mlp)
                }
                VlFamily::Qwen25Vl => {
                    let n1 = Norm::Rms(w.take(&at("norm1.weight"), &[h])?);
                    let n2 = Norm::Rms(w.take(&at("norm2.weight"), &[h])?);
                    let mlp = Mlp::Gated {
                        gate: w.linear(&at("mlp.gate_proj"), h, i)?,
                        up: w.linear(&at("mlp.up_proj"), h, i)?,
                        down: w.linear(&at("mlp.down_proj"), i, h)?,
                    };
                    (n1, n2, mlp)
                }
            };
            blocks.push(Block {
                norm1,
                norm2,
                qkv: w.linear(&at("attn.qkv"), h, 3 * h)?,
                proj: w.linear(&at("attn.proj"), h, h)?,
                mlp,
            });
        }
        w.all_taken(config.family)?;
        Ok(VisionTower {
            config,
            patch,
            pos_embed,
            blocks,
            merger,
            deepstack,
            device: device.clone(),
            linears: Default::default(),
        })
    }

    /// Runs processed images (each one's rows, in order) through the tower.
    pub fn forward_images(&self, images: &[Pixels]) -> Result<VisionOutput> {
        let cols = self.config.patch_values();
        let mut values = Vec::new();
        for (n, px) in images.iter().enumerate() {
            if px.cols != cols || px.values.len() != px.rows * px.cols {
                return Err(files(format!(
                    "image {n}: {} values in rows of {}; the vision tower takes rows of {cols}",
                    px.values.len(),
                    px.cols
                )));
            }
            values.extend_from_slice(&px.values);
        }
        let rows = values.len() / cols;
        let pixels = Tensor::from_vec(values, (rows, cols), &self.device)?;
        let grids: Vec<Grid> = images.iter().map(|p| p.grid).collect();
        self.forward(&pixels, &grids)
    }

    /// Patch rows (Σ patches, 3·temporal·patch²) of the images `grids` describe → the merged
    /// tokens and the DeepStack features.
    pub fn forward(&self, pixels: &Tensor, grids: &[Grid]) -> Result<VisionOutput> {
        let c = &self.config;
        let m = c.spatial_merge_size;
        let patches: usize = grids.iter().map(Grid::patches).sum();
        for (n, g) in grids.iter().enumerate() {
            if g.t == 0 || g.h == 0 || g.w == 0 || g.h % m != 0 || g.w % m != 0 {
                return Err(files(format!(
                    "image {n}: grid {}×{}×{} is not whole {m}×{m} merge windows",
                    g.t, g.h, g.w
                )));
            }
        }
        if pixels.dims() != [patches, c.patch_values()] {
            return Err(files(format!(
                "pixel rows of shape {:?}; the grids imply [{patches}, {}]",
                pixels.dims(),
                c.patch_values()
            )));
        }
        let pixels = pixels.to_dtype(DType::F32)?;
        let mut x = self.linears.apply(&pixels, &self.patch.0, self.patch.1.as_ref())?;
        if self.pos_embed.is_some() {
            x = (x + self.positions(grids)?)?;
        }
        let (cos, sin) = position::rotary(grids, m, c.head_dim(), c.rope_theta);
        let mut cos = Tensor::from_vec(cos, (patches, 1, c.head_dim()), &self.device)?;
        let mut sin = Tensor::from_vec(sin, (patches, 1, c.head_dim()), &self.device)?;
        let segments = position::cu_seqlens(grids);
        // Qwen2.5-VL: patches regrouped window by window (a merged token's patches together),
        // with their RoPE rows; the windows are the other blocks' segments.
        let (windows, back) = match c.family {
            VlFamily::Qwen3Vl => (segments.clone(), None),
            VlFamily::Qwen25Vl => {
                let (order, bounds) = position::window_index(grids, m, c.window_size, c.patch_size);
                let unit = m * m;
                let rows: Vec<u32> = order
                    .iter()
                    .flat_map(|&u| (u * unit..(u + 1) * unit).map(|r| r as u32))
                    .collect();
                let rows = Tensor::from_vec(rows, patches, &self.device)?;
                x = x.index_select(&rows, 0)?;
                cos = cos.index_select(&rows, 0)?;
                sin = sin.index_select(&rows, 0)?;
                let mut inverse = vec![0u32; order.len()];
                for (at, &u) in order.iter().enumerate() {
                    inverse[u] = at as u32;
                }
                let n = inverse.len();
                (bounds, Some(Tensor::from_vec(inverse, n, &self.device)?))
            }
        };
        let mut deepstack = Vec::with_capacity(self.deepstack.len());
        for (layer, block) in self.blocks.iter().enumerate() {
            let full = match c.family {
                VlFamily::Qwen3Vl => true,
                VlFamily::Qwen25Vl => c.fullatt_block_indexes.contains(&layer),
            };
            let seg = if full { &segments } else { &windows };
            x = self.block(block, &x, &cos, &sin, seg)?;
            if let Some(d) = c.deepstack_visual_indexes.iter().position(|&l| l == layer)
                && let Some(merger) = self.deepstack.get(d)
            {
                deepstack.push(merger.forward_on(&x, &self.linears)?);
            }
        }
        let mut merged = self.merger.forward_on(&x, &self.linears)?;
        if let Some(back) = back {
            merged = merged.index_select(&back, 0)?;
        }
        Ok(VisionOutput { merged, deepstack, last_hidden: x })
    }

    /// The learned position table resampled to each grid: Σ over four taps of row × weight.
    fn positions(&self, grids: &[Grid]) -> Result<Tensor> {
        let (idx, wgt) = position::interpolation(
            grids,
            self.config.position_side(),
            self.config.spatial_merge_size,
        );
        let n = idx.len();
        let idx = Tensor::from_vec(idx.concat(), n * 4, &self.device)?;
        let wgt = Tensor::from_vec(wgt.concat(), (n, 4, 1), &self.device)?;
        let table = self.pos_embed.as_ref().ok_or_else(|| files("no position table".into()))?;
        let rows = table.index_select(&idx, 0)?.reshape((n, 4, self.config.hidden_size))?;
        Ok(rows.broadcast_mul(&wgt)?.sum(1)?)
    }

    fn block(
        &self,
        b: &Block,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        seg: &[usize],
    ) -> Result<Tensor> {
        let h = b.norm1.forward(x)?;
        let x = (x + self.attention(b, &h, cos, sin, seg)?)?;
        let h = b.norm2.forward(&x)?;
        let lin = |h: &Tensor, l: &(Tensor, Tensor)| self.linears.apply(h, &l.0, Some(&l.1));
        let out = match &b.mlp {
            Mlp::Plain { fc1, fc2 } => lin(&self.act(&lin(&h, fc1)?)?, fc2)?,
            Mlp::Gated { gate, up, down } => {
                lin(&(self.act(&lin(&h, gate)?)? * lin(&h, up)?)?, down)?
            }
        };
        Ok((x + out)?)
    }

    /// The blocks' activation (`hidden_act`).
    fn act(&self, h: &Tensor) -> Result<Tensor> {
        if super::fast::applies(h) {
            match self.config.hidden_act {
                VisionAct::GeluTanh => return super::fast::activate(h, super::fast::Act::GeluTanh),
                VisionAct::Silu => return super::fast::activate(h, super::fast::Act::Silu),
                VisionAct::GeluErf | VisionAct::QuickGelu => {}
            }
        }
        Ok(match self.config.hidden_act {
            VisionAct::GeluTanh => h.gelu()?,
            VisionAct::GeluErf => h.gelu_erf()?,
            VisionAct::Silu => h.silu()?,
            VisionAct::QuickGelu => (h * candle_nn::ops::sigmoid(&(h * 1.702)?)?)?,
        })
    }

    /// Multi-head attention with the axial RoPE, each segment of `seg` attending to itself only.
    fn attention(
        &self,
        b: &Block,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        seg: &[usize],
    ) -> Result<Tensor> {
        let (n, heads, hd) = (x.dim(0)?, self.config.num_heads, self.config.head_dim());
        let qkv = self.linears.apply(x, &b.qkv.0, Some(&b.qkv.1))?.reshape((n, 3, heads, hd))?;
        let rope = |t: Tensor| -> Result<Tensor> {
            let half = hd / 2;
            let rotated = Tensor::cat(
                &[&t.narrow(D::Minus1, half, half)?.neg()?, &t.narrow(D::Minus1, 0, half)?],
                D::Minus1,
            )?;
            Ok((t.broadcast_mul(cos)? + rotated.broadcast_mul(sin)?)?)
        };
        let q = rope(qkv.narrow(1, 0, 1)?.squeeze(1)?)?;
        let k = rope(qkv.narrow(1, 1, 1)?.squeeze(1)?)?;
        let v = qkv.narrow(1, 2, 1)?.squeeze(1)?;
        let scale = (hd as f64).powf(-0.5);
        if super::fast::applies(&q) {
            let out = super::fast::attend(&q, &k, &v, seg, scale as f32)?;
            return self.linears.apply(&out, &b.proj.0, Some(&b.proj.1));
        }
        let mut outs = Vec::with_capacity(seg.len());
        for w in seg.windows(2) {
            let (start, len) = (w[0], w[1] - w[0]);
            let part = |t: &Tensor| -> Result<Tensor> {
                Ok(t.narrow(0, start, len)?.transpose(0, 1)?.contiguous()?)
            };
            let (qs, ks, vs) = (part(&q)?, part(&k)?, part(&v)?);
            let scores = (qs.matmul(&ks.t()?)? * scale)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            outs.push(probs.matmul(&vs)?.transpose(0, 1)?);
        }
        let out = Tensor::cat(&outs, 0)?.reshape((n, heads * hd))?;
        reference::linear(&out, &b.proj.0, Some(&b.proj.1))
    }
}
