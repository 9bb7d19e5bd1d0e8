//! Qwen3-VL and Qwen2.5-VL as one model, computed as transformers'
//! `Qwen3VLForConditionalGeneration` and `Qwen2_5_VLForConditionalGeneration` compute them: the
//! tower's merged tokens take the places of the `<|image_pad|>` runs in the embedded sequence
//! (`masked_scatter`), the text decoder runs under the multimodal RoPE (`mrope.rs`: Qwen3-VL's
//! interleaved, Qwen2.5-VL's in sections), and (Qwen3-VL) each DeepStack feature is added at the
//! image positions after the first decoder layers. The text half is the text families' own
//! trainable decoder (`models/qwen.rs`: Qwen3's, or Qwen2's with q/k/v biases) over the
//! checkpoint's `model.language_model.*` tensors (or `model.*`, the Hub's older Qwen2.5-VL
//! layout); the tower is read apart (`tower.rs`) and takes no gradient.

use std::collections::BTreeMap;

use candle_core::{D, DType, Device, Tensor};

use crate::error::{Result, config_err};
use crate::hf::files::{expected_tensors, ignored_tensor, shards};
use crate::models::qwen::{QwenModel, frozen_names};
use crate::models::{KvCache, PretrainedSource};
use crate::params::ParamStore;

use super::mrope::{RopeIndex, mrope_cos_sin, rope_index};
use super::processor::Pixels;
use super::tower::VisionTower;
use super::vl_config::VlConfig;
use super::weights::files;

/// A Qwen-VL model: the trainable text decoder and the frozen vision tower.
#[derive(Debug, Clone)]
pub struct QwenVlModel {
    pub config: VlConfig,
    /// The language model, its parameters under the text families' names (`model.layers.…`).
    pub text: QwenModel,
    pub tower: VisionTower,
}

/// The text decoder's name for a checkpoint tensor, `None` for the tower's.
fn text_name(name: &str) -> Option<String> {
    if name.starts_with("model.visual.") || name.starts_with("visual.") {
        return None;
    }
    Some(match name.strip_prefix("model.language_model.") {
        Some(rest) => format!("model.{rest}"),
        None => name.to_string(),
    })
}

/// The checkpoint's name for a text decoder parameter (what `save_pretrained` writes).
pub fn checkpoint_name(text_param: &str) -> String {
    match text_param.strip_prefix("model.") {
        Some(rest) => format!("model.language_model.{rest}"),
        None => text_param.to_string(),
    }
}

impl QwenVlModel {
    /// Loads the Qwen-VL directory `src.path`: the config, the text decoder's tensors (each
    /// checked against the shapes the config implies; none missing, none left over), the tower.
    /// `src.frozen` and `src.lora` apply to the text decoder.
    pub fn load(src: &PretrainedSource, device: &Device) -> Result<QwenVlModel> {
        let dir = &src.path;
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| files(format!("cannot read {}: {e}", path.display())))?;
        let config = VlConfig::parse(&text)?;
        let want: BTreeMap<String, Vec<usize>> =
            expected_tensors(&config.text).into_iter().collect();
        let mut params = ParamStore::new();
        for shard in shards(dir)? {
            for (name, t) in candle_core::safetensors::load(&shard, device)? {
                let Some(param) = text_name(&name) else { continue };
                if ignored_tensor(&config.text, &param) {
                    continue;
                }
                let Some(shape) = want.get(&param) else {
                    return Err(files(format!(
                        "`{}` holds `{name}`, which a {} model of this `config.json` does not \
                         have",
                        shard.display(),
                        config.family.class()
                    )));
                };
                if t.dims() != shape.as_slice() {
                    return Err(files(format!(
                        "`{name}` has shape {:?} in `{}`; `config.json` implies {shape:?}",
                        t.dims(),
                        shard.display()
                    )));
                }
                params.insert(&param, &t.to_dtype(DType::F32)?)?;
            }
        }
        if let Some(missing) = want.keys().find(|k| !params.contains(k)) {
            return Err(files(format!(
                "missing tensor `{}`: `config.json` implies it and the weights lack it",
                checkpoint_name(missing)
            )));
        }
        params.freeze(&frozen_names(&config.text, &src.frozen)?)?;
        if let Some(spec) = &src.lora {
            let mut rng = crate::rng::rng_from_seed(0);
            crate::lora::attach(&mut params, &config.text, spec, &mut rng)?;
        }
        let text = QwenModel::from_params(src, config.text.clone(), params, dir, device);
        let tower = VisionTower::load(dir, device)?;
        Ok(QwenVlModel { config, text, tower })
    }

    /// `get_rope_index` of one sequence whose images are `images`, in order.
    pub fn rope_index(&self, ids: &[u32], images: &[Pixels]) -> Result<RopeIndex> {
        let m = &self.config.mrope;
        let grids: Vec<_> = images.iter().map(|p| p.grid).collect();
        rope_index(ids, m.image_token_id, m.video_token_id, &grids, m.merge)
            .map_err(|e| config_err(e.to_string()))
    }

    /// The multimodal RoPE's cos and sin (T, head_dim) for `index`, in the compute dtype.
    fn rope_tables(&self, index: &RopeIndex, device: &Device) -> Result<(Tensor, Tensor)> {
        let (inv, factor) = self.text.rope_frequencies();
        let (cos, sin) =
            mrope_cos_sin(index, inv, self.config.mrope.section, self.config.mrope.layout);
        let t = index.positions[0].len();
        let hd = self.text.config.head_dim();
        let dtype = self.text.compute_dtype();
        let table = |v: Vec<f32>| -> Result<Tensor> {
            let v: Vec<f32> = v.into_iter().map(|x| x * factor).collect();
            Ok(Tensor::from_vec(v, (t, hd), device)?.to_dtype(dtype)?)
        };
        Ok((table(cos)?, table(sin)?))
    }

    /// Equal-length rows of token ids, each with its images (in the order their `<|image_pad|>`
    /// runs stand) → final hidden states (B, T, hidden), optionally filling `cache` (one row).
    pub fn hidden(
        &self,
        rows: &[(&[u32], &[Pixels])],
        cache: Option<&mut KvCache>,
    ) -> Result<(Tensor, Vec<RopeIndex>)> {
        let device = self.device();
        let b = rows.len();
        let t = rows.first().map_or(0, |(ids, _)| ids.len());
        if b == 0 || t == 0 || rows.iter().any(|(ids, _)| ids.len() != t) {
            return Err(config_err("a vision-language batch needs rows of one non-zero length"));
        }
        let hidden = self.text.config.hidden_size;
        let flat: Vec<u32> = rows.iter().flat_map(|(ids, _)| ids.iter().copied()).collect();
        let ids = Tensor::from_vec(flat.clone(), (b * t,), &device)?;
        let mut x = self.text.embed(&ids)?;
        let images: Vec<Pixels> = rows.iter().flat_map(|(_, px)| px.iter().cloned()).collect();
        let indexes: Vec<RopeIndex> =
            rows.iter().map(|(ids, px)| self.rope_index(ids, px)).collect::<Result<_>>()?;
        let mut inject = Vec::new();
        if !images.is_empty() {
            let out = self.tower.forward_images(&images)?;
            let image_token = self.config.mrope.image_token_id;
            let at: Vec<u32> =
                (0..flat.len() as u32).filter(|&i| flat[i as usize] == image_token).collect();
            let merged = out.merged.dims2()?.0;
            if at.len() != merged {
                return Err(config_err(format!(
                    "the rows hold {} image tokens and their images make {merged}",
                    at.len()
                )));
            }
            let keep: Vec<f32> =
                flat.iter().map(|&id| if id == image_token { 0.0 } else { 1.0 }).collect();
            let keep = Tensor::from_vec(keep, (b * t, 1), &device)?.to_dtype(x.dtype())?;
            let at = Tensor::from_vec(at, (merged,), &device)?;
            let merged = out.merged.to_dtype(x.dtype())?;
            x = x.broadcast_mul(&keep)?.index_add(&at, &merged, 0)?;
            inject = out.deepstack.into_iter().map(|f| (at.clone(), f)).collect();
        }
        let tables: Vec<(Tensor, Tensor)> =
            indexes.iter().map(|i| self.rope_tables(i, &device)).collect::<Result<_>>()?;
        // One row: (T, head_dim) tables; several: (B, 1, T, head_dim), each row its own.
        let rope = if b == 1 {
            tables.into_iter().next().ok_or_else(|| config_err("no rows"))?
        } else {
            let (cos, sin): (Vec<Tensor>, Vec<Tensor>) = tables.into_iter().unzip();
            (Tensor::stack(&cos, 0)?.unsqueeze(1)?, Tensor::stack(&sin, 0)?.unsqueeze(1)?)
        };
        let x = x.reshape((b, t, hidden))?;
        Ok((self.text.hidden_from(x, cache, &rope, &inject)?, indexes))
    }

    /// Logits (1, T, V) of one sequence with its images.
    pub fn logits(&self, ids: &[u32], images: &[Pixels]) -> Result<Tensor> {
        let (h, _) = self.hidden(&[(ids, images)], None)?;
        self.text.head(&h)
    }

    /// Greedy decoding of up to `max_new` tokens after `ids` with its images (stopping after a
    /// token of `stops`): the prompt in one pass through the cache, then one token at a time at
    /// position index + delta on all three RoPE rows, as transformers' `generate` does.
    pub fn greedy(
        &self,
        ids: &[u32],
        images: &[Pixels],
        max_new: usize,
        stops: &[u32],
    ) -> Result<Vec<u32>> {
        let mut cache = KvCache::new(self.text.config.num_hidden_layers);
        let (mut last, delta) = self.prefill(ids, images, &mut cache)?;
        let mut out = Vec::new();
        while out.len() < max_new {
            let logits = self.text.head(&last)?.to_dtype(DType::F32)?;
            let next = logits.flatten_all()?.argmax(D::Minus1)?.to_scalar::<u32>()?;
            out.push(next);
            if stops.contains(&next) || out.len() == max_new {
                break;
            }
            last = self.next(next, delta, &mut cache)?;
        }
        Ok(out)
    }

    /// The prompt `ids` with its images through an empty `cache`: the last position's hidden
    /// state (1, 1, hidden) and the RoPE delta later tokens are placed at.
    pub fn prefill(
        &self,
        ids: &[u32],
        images: &[Pixels],
        cache: &mut KvCache,
    ) -> Result<(Tensor, i64)> {
        let (h, indexes) = self.hidden(&[(ids, images)], Some(cache))?;
        let delta = indexes.first().map_or(0, |i| i.delta);
        Ok((h.narrow(1, ids.len() - 1, 1)?, delta))
    }

    /// One more token through `cache`, at position index + `delta` on all three RoPE rows: its
    /// hidden state (1, 1, hidden).
    pub fn next(&self, token: u32, delta: i64, cache: &mut KvCache) -> Result<Tensor> {
        let device = self.device();
        let p = cache.pos as i64 + delta;
        let index = RopeIndex { positions: [vec![p], vec![p], vec![p]], delta };
        let rope = self.rope_tables(&index, &device)?;
        let x = self.text.embed(&Tensor::new(&[token], &device)?)?.reshape((1, 1, ()))?;
        self.text.hidden_from(x, Some(cache), &rope, &[])
    }

    /// Where the model's parameters are.
    fn device(&self) -> Device {
        self.text.params.device()
    }
}
