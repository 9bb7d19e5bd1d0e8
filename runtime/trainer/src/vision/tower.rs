//! Qwen3-VL's vision tower in candle, computed as transformers' `Qwen3VLVisionModel` computes it
//! (f32): the patch embedding (a Conv3d whose kernel is its stride, so one matmul over the
//! processor's patch rows), the learned position table resampled to each image's grid, the axial
//! 2-D RoPE, the pre-norm blocks with attention kept inside each image (frame), and the patch
//! merger plus the DeepStack mergers fed by the blocks `deepstack_visual_indexes` names.

use std::path::Path;

use candle_core::{D, DType, Device, Tensor};

use crate::error::Result;
use crate::ops::reference;

use super::merger::Merger;
use super::position;
use super::processor::Pixels;
use super::size::Grid;
use super::vision_config::{VisionAct, VisionConfig};
use super::weights::{Weights, files};

/// One pre-norm block: attention then MLP, each added to the stream.
#[derive(Debug, Clone)]
struct Block {
    norm1: (Tensor, Tensor),
    norm2: (Tensor, Tensor),
    qkv: (Tensor, Tensor),
    proj: (Tensor, Tensor),
    fc1: (Tensor, Tensor),
    fc2: (Tensor, Tensor),
}

/// What the tower makes of a batch of images.
#[derive(Debug, Clone)]
pub struct VisionOutput {
    /// The image tokens (Σ patches / merge², out_hidden_size), image after image.
    pub merged: Tensor,
    /// One (tokens, out_hidden_size) tensor per `deepstack_visual_indexes` entry, in its order.
    pub deepstack: Vec<Tensor>,
    /// The last block's output (Σ patches, hidden_size), before the merger.
    pub last_hidden: Tensor,
}

/// A Qwen3-VL vision tower.
#[derive(Debug, Clone)]
pub struct VisionTower {
    pub config: VisionConfig,
    patch: (Tensor, Tensor),
    pos_embed: Tensor,
    blocks: Vec<Block>,
    merger: Merger,
    deepstack: Vec<Merger>,
    device: Device,
}

impl VisionTower {
    /// Loads the tower of a Qwen3-VL directory (`config.json`'s `vision_config`, the shards).
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
        let patch = (
            w.take("patch_embed.proj.weight", &[h, 3, tp, p, p])?
                .reshape((h, config.patch_values()))?,
            w.take("patch_embed.proj.bias", &[h])?,
        );
        let pos_embed = w.take("pos_embed.weight", &[config.num_position_embeddings, h])?;
        let mut blocks = Vec::with_capacity(config.depth);
        for b in 0..config.depth {
            let at = |s: &str| format!("blocks.{b}.{s}");
            blocks.push(Block {
                norm1: w.pair(&at("norm1"), &[h])?,
                norm2: w.pair(&at("norm2"), &[h])?,
                qkv: w.linear(&at("attn.qkv"), h, 3 * h)?,
                proj: w.linear(&at("attn.proj"), h, h)?,
                fc1: w.linear(&at("mlp.linear_fc1"), h, i)?,
                fc2: w.linear(&at("mlp.linear_fc2"), i, h)?,
            });
        }
        let out = config.out_hidden_size;
        let merger = Merger::take(w, "merger.", h, m, out, false)?;
        let deepstack = (0..config.deepstack_visual_indexes.len())
            .map(|d| Merger::take(w, &format!("deepstack_merger_list.{d}."), h, m, out, true))
            .collect::<Result<Vec<_>>>()?;
        w.all_taken()?;
        Ok(VisionTower {
            config,
            patch,
            pos_embed,
            blocks,
            merger,
            deepstack,
            device: device.clone(),
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
        let mut x = reference::linear(&pixels, &self.patch.0, Some(&self.patch.1))?;
        x = (x + self.positions(grids)?)?;
        let (cos, sin) = position::rotary(grids, m, c.head_dim(), c.rope_theta);
        let cos = Tensor::from_vec(cos, (patches, 1, c.head_dim()), &self.device)?;
        let sin = Tensor::from_vec(sin, (patches, 1, c.head_dim()), &self.device)?;
        let segments = position::cu_seqlens(grids);
        let mut deepstack = Vec::with_capacity(self.deepstack.len());
        for (layer, block) in self.blocks.iter().enumerate() {
            x = self.block(block, &x, &cos, &sin, &segments)?;
            if let Some(d) = c.deepstack_visual_indexes.iter().position(|&l| l == layer)
                && let Some(merger) = self.deepstack.get(d)
            {
                deepstack.push(merger.forward(&x)?);
            }
        }
        Ok(VisionOutput { merged: self.merger.forward(&x)?, deepstack, last_hidden: x })
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
        let rows =
            self.pos_embed.index_select(&idx, 0)?.reshape((n, 4, self.config.hidden_size))?;
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
        let h = reference::layer_norm(x, &b.norm1.0, &b.norm1.1, 1e-6)?;
        let x = (x + self.attention(b, &h, cos, sin, seg)?)?;
        let h = reference::layer_norm(&x, &b.norm2.0, &b.norm2.1, 1e-6)?;
        let h = reference::linear(&h, &b.fc1.0, Some(&b.fc1.1))?;
        let h = match self.config.hidden_act {
            VisionAct::GeluTanh => h.gelu()?,
            VisionAct::GeluErf => h.gelu_erf()?,
            VisionAct::Silu => h.silu()?,
            VisionAct::QuickGelu => (&h * candle_nn::ops::sigmoid(&(&h * 1.702)?)?)?,
        };
        Ok((x + reference::linear(&h, &b.fc2.0, Some(&b.fc2.1))?)?)
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
        let qkv = reference::linear(x, &b.qkv.0, Some(&b.qkv.1))?.reshape((n, 3, heads, hd))?;
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
