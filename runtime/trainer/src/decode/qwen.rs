//! Qwen2 / Qwen2.5 / Qwen3 decoding on the row-stable kernels, for a model computing in f32 on
//! the CPU: the same maths as `models::qwen` (RMSNorm, rotate-half RoPE with transformers'
//! tables, grouped-query attention with sliding windows, Qwen3's q/k norms, SwiGLU, tied
//! embeddings) on plain f32 slices with a growing per-sequence cache, so every episode's turns
//! decode in one shared batch and a sequence's numbers never depend on what shares its steps.
//! Weights are read once per set of weights (an optimiser step), transposed for the kernels.
//! A Qwen-VL model's text decoder decodes here too: its sequences carry their images' features
//! and multimodal positions (`vl.rs`).

use std::sync::Arc;

use super::attention::{Heads, attention};
use super::cache::LayerKv;
use super::dense::Dense;
use super::pass::{by_rows, each_row, in_passes};
use super::softmax::exp;
use super::vl::{ImageFeatures, SeqVision, VlText};
use super::wide::widest;
use super::{Decoder, Sequence};
use crate::error::{Result, config_err};
use crate::models::QwenModel;
use crate::models::qwen::{rope_frequencies, rope_row};

/// One decoder layer's weights: q, k and v as one dense layer, then the output projection,
/// gate and up as one, and down.
#[derive(Debug, Clone)]
struct Layer {
    input_norm: Vec<f32>,
    qkv: Dense,
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    o: Dense,
    post_norm: Vec<f32>,
    gate_up: Dense,
    down: Dense,
}

/// A snapshot of a Qwen model's weights, read once per set of weights.
#[derive(Debug, Clone)]
pub struct QwenWeights {
    d: usize,
    heads: (usize, usize, usize),
    inter: usize,
    eps: f32,
    context: usize,
    windows: Vec<Option<usize>>,
    /// `inv_freq` and the factor on cos/sin, as `models::qwen` computes them.
    rope: (Vec<f32>, f32),
    emb: Vec<f32>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    lm_head: Dense,
    /// A Qwen-VL model's multimodal RoPE and image tokens; `None` for a text model.
    vl: Option<VlText>,
}

impl QwenWeights {
    /// Reads the model's current weights (f32 masters).
    pub fn new(model: &QwenModel) -> Result<QwenWeights> {
        let c = &model.config;
        let p = &model.params;
        let get = |name: &str| -> Result<Vec<f32>> {
            // An adapted layer's weight with its adapter merged in (`lora::merged`).
            Ok(model
                .merged_weight(name)?
                .flatten_all()?
                .to_dtype(candle_core::DType::F32)?
                .to_vec1()?)
        };
        let opt = |name: &str| -> Result<Option<Vec<f32>>> {
            if p.contains(name) { Ok(Some(get(name)?)) } else { Ok(None) }
        };
        let (d, hd) = (c.hidden_size, c.head_dim());
        let (nh, nkv) = (c.num_attention_heads, c.num_key_value_heads);
        if nkv == 0 || nh % nkv != 0 || hd == 0 {
            return Err(config_err(format!("decode: {nh} query heads over {nkv} kv heads")));
        }
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let n = |s: &str| format!("model.layers.{i}.{s}");
                let mut w = Vec::new();
                let mut bias = Vec::new();
                let mut any_bias = false;
                for (s, width) in [("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)]
                {
                    w.extend(get(&n(&format!("self_attn.{s}.weight")))?);
                    let b = opt(&n(&format!("self_attn.{s}.bias")))?;
                    any_bias |= b.is_some();
                    bias.extend(b.unwrap_or_else(|| vec![0.0; width]));
                }
                let mut gu = get(&n("mlp.gate_proj.weight"))?;
                gu.extend(get(&n("mlp.up_proj.weight"))?);
                Ok(Layer {
                    input_norm: get(&n("input_layernorm.weight"))?,
                    qkv: Dense::new(&w, d, any_bias.then_some(bias)),
                    q_norm: opt(&n("self_attn.q_norm.weight"))?,
                    k_norm: opt(&n("self_attn.k_norm.weight"))?,
                    o: Dense::new(
                        &get(&n("self_attn.o_proj.weight"))?,
                        nh * hd,
                        opt(&n("self_attn.o_proj.bias"))?,
                    ),
                    post_norm: get(&n("post_attention_layernorm.weight"))?,
                    gate_up: Dense::new(&gu, d, None),
                    down: Dense::new(&get(&n("mlp.down_proj.weight"))?, c.intermediate_size, None),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let emb = get("model.embed_tokens.weight")?;
        let head = if c.tie_word_embeddings { None } else { Some(get("lm_head.weight")?) };
        let lm_head = Dense::new(head.as_deref().unwrap_or(&emb), d, None);
        let rope = rope_frequencies(c);
        let vl = model.vision.as_ref().map(|side| VlText::new(&side.config, rope.0.len()));
        Ok(QwenWeights {
            d,
            heads: (nh, nkv, hd),
            inter: c.intermediate_size,
            eps: c.rms_norm_eps as f32,
            context: model.context,
            windows: c.windows.clone(),
            rope,
            emb,
            layers,
            norm: get("model.norm.weight")?,
            lm_head,
            vl,
        })
    }

    /// Whether these are a vision-language model's weights.
    pub fn is_vl(&self) -> bool {
        self.vl.is_some()
    }

    /// The vocabulary size (rows of the embedding).
    fn vocab(&self) -> usize {
        self.emb.len() / self.d.max(1)
    }
}

/// One sequence's state: its tokens and, per layer, cached keys and values (kv heads side by
/// side); a VL prompt's images and positions.
#[derive(Debug, Clone, Default)]
pub struct QwenSeq {
    ids: Vec<u32>,
    kv: Vec<LayerKv>,
    vision: Option<Arc<SeqVision>>,
}

impl QwenSeq {
    /// Sets the plan of the VL prompt this sequence is to be fed.
    pub fn set_vision(&mut self, plan: SeqVision) {
        self.vision = Some(Arc::new(plan));
    }
}

impl Sequence for QwenSeq {
    fn ids(&self) -> &[u32] {
        &self.ids
    }

    fn truncate(&mut self, len: usize) {
        if len >= self.ids.len() {
            return;
        }
        self.ids.truncate(len);
        for kv in &mut self.kv {
            kv.truncate(len);
        }
    }

    fn agree(&self, n: usize, fresh: &Self) -> usize {
        match (&self.vision, &fresh.vision) {
            (None, None) => n,
            (Some(a), b) => a.agree(n, b.as_deref()),
            (None, Some(b)) => b.agree(n, None),
        }
    }

    fn adopt(&mut self, fresh: Self) {
        self.vision = fresh.vision;
    }
}

impl Decoder for QwenWeights {
    type Seq = QwenSeq;

    fn context(&self) -> usize {
        self.context
    }

    fn new_seq(&self, capacity: usize) -> QwenSeq {
        let (_, nkv, hd) = self.heads;
        QwenSeq {
            ids: Vec::with_capacity(capacity),
            kv: self.layers.iter().map(|_| LayerKv::new(nkv * hd, capacity)).collect(),
            vision: None,
        }
    }

    fn forward(&self, seqs: &mut [&mut QwenSeq], feeds: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let vocab = self.vocab();
        for feed in feeds {
            if let Some(&bad) = feed.iter().find(|&&t| t as usize >= vocab) {
                return Err(config_err(format!(
                    "decode: token {bad} past the vocabulary ({vocab})"
                )));
            }
        }
        in_passes(seqs, feeds, self.context, |seqs, feeds| self.pass(seqs, feeds))
    }
}

impl QwenWeights {
    /// Feeds `feeds[s]` to `seqs[s]` and returns each sequence's logits after its last new row.
    fn pass(&self, seqs: &mut [&mut QwenSeq], feeds: &[&[u32]]) -> Vec<Vec<f32>> {
        let (d, eps) = (self.d, self.eps);
        let (nh, nkv, hd) = self.heads;
        // The rows of this pass: (sequence, absolute position).
        let mut rows: Vec<(usize, usize)> = Vec::new();
        for (s, (seq, feed)) in seqs.iter_mut().zip(feeds).enumerate() {
            for &id in feed.iter() {
                rows.push((s, seq.ids.len()));
                seq.ids.push(id);
            }
        }
        // Each image row of a VL prompt: its image, and its place in the image's tokens.
        let image_token = self.vl.as_ref().map(|v| v.image_token);
        let images: Vec<Option<(Arc<ImageFeatures>, usize)>> = rows
            .iter()
            .map(|&(s, pos)| {
                let seq = &seqs[s];
                seq.vision.as_deref()?.image_at(pos).filter(|_| Some(seq.ids[pos]) == image_token)
            })
            .collect();
        let mut x = vec![0f32; rows.len() * d];
        for ((xr, &(s, pos)), image) in x.chunks_exact_mut(d).zip(&rows).zip(&images) {
            match image {
                Some((f, i)) => xr.copy_from_slice(&f.merged[i * d..(i + 1) * d]),
                None => {
                    let id = seqs[s].ids[pos] as usize;
                    xr.copy_from_slice(&self.emb[id * d..(id + 1) * d]);
                }
            }
        }
        let (cos, sin) = self.rope_rows(seqs, &rows);
        let width = (nh + 2 * nkv) * hd;
        for (l, layer) in self.layers.iter().enumerate() {
            let mut h = x.clone();
            by_rows(&mut h, d, |h| rms_norm(h, d, &layer.input_norm, eps));
            let mut qkv = layer.qkv.apply(&h);
            by_rows(&mut qkv, width, |part| {
                for row in part.chunks_exact_mut(width) {
                    let (q, k) = row.split_at_mut(nh * hd);
                    let k = &mut k[..nkv * hd];
                    if let Some(w) = &layer.q_norm {
                        rms_norm(q, hd, w, eps);
                    }
                    if let Some(w) = &layer.k_norm {
                        rms_norm(k, hd, w, eps);
                    }
                }
            });
            for (r, row) in qkv.chunks_exact_mut(width).enumerate() {
                let (c, s) = (&cos[r * hd..(r + 1) * hd], &sin[r * hd..(r + 1) * hd]);
                rope(&mut row[..(nh + nkv) * hd], hd, c, s);
            }
            each_row(seqs, &rows, |seq, r, pos| {
                let row = &qkv[r * width..(r + 1) * width];
                seq.kv[l].push(pos, &row[nh * hd..(nh + nkv) * hd], &row[(nh + nkv) * hd..]);
            });
            let kvs: Vec<&LayerKv> = seqs.iter().map(|s| &s.kv[l]).collect();
            let heads = Heads {
                nh,
                nkv,
                hd,
                scale: (1.0 / (hd as f64).sqrt()) as f32,
                alibi: false,
                window: self.windows.get(l).copied().flatten(),
            };
            let y = layer.o.apply(&attention(&kvs, &rows, &qkv, width, heads));
            add(&mut x, &y);
            let mut h = x.clone();
            by_rows(&mut h, d, |h| rms_norm(h, d, &layer.post_norm, eps));
            let gu = layer.gate_up.apply(&h);
            let mut act = vec![0f32; rows.len() * self.inter];
            swiglu(&gu, self.inter, &mut act);
            add(&mut x, &layer.down.apply(&act));
            // Qwen3-VL's DeepStack: block l's features added at the image rows after layer l.
            for (xr, image) in x.chunks_exact_mut(d).zip(&images) {
                if let Some((f, i)) = image
                    && let Some(ds) = f.deepstack.get(l)
                {
                    add(xr, &ds[i * d..(i + 1) * d]);
                }
            }
        }
        // Each sequence's last new row.
        let last: Vec<usize> = (0..seqs.len())
            .map(|s| rows.iter().rposition(|&(rs, _)| rs == s).unwrap_or(0))
            .collect();
        let mut hl: Vec<f32> =
            last.iter().flat_map(|&r| x[r * d..(r + 1) * d].iter().copied()).collect();
        rms_norm(&mut hl, d, &self.norm, eps);
        let vocab = self.vocab();
        let mut out: Vec<Vec<f32>> =
            self.lm_head.apply(&hl).chunks_exact(vocab).map(<[f32]>::to_vec).collect();
        // A VL model never draws its image tokens (`vision::vision_tokens`).
        if let Some(vl) = &self.vl {
            for row in &mut out {
                for &t in &vl.banned {
                    if let Some(x) = row.get_mut(t as usize) {
                        *x = f32::NEG_INFINITY;
                    }
                }
            }
        }
        out
    }

    /// Each row's RoPE cos and sin (rows × head_dim): a text row's as `QwenModel::rope_tables`
    /// makes them; a VL prompt's row, or a row after one, on its multimodal positions as
    /// `QwenVlModel`'s tables.
    fn rope_rows(&self, seqs: &[&mut QwenSeq], rows: &[(usize, usize)]) -> (Vec<f32>, Vec<f32>) {
        let (inv, factor) = &self.rope;
        let hd = self.heads.2;
        let mut cos = Vec::with_capacity(rows.len() * hd);
        let mut sin = Vec::with_capacity(rows.len() * hd);
        for &(s, p) in rows {
            match (&self.vl, seqs[s].vision.as_deref()) {
                (Some(vl), Some(v)) => {
                    vl.rope_row(inv, *factor, v.position(p), (&mut cos, &mut sin))
                }
                _ => rope_row(inv, *factor, p, &mut cos, &mut sin),
            }
        }
        (cos, sin)
    }
}

widest! {
    /// RMSNorm of each `d`-long row in place, `x / √(mean(x²) + eps) · w` as candle's slow
    /// path computes it, the sum of squares in order (eight rows' sums side by side).
    fn rms_norm(x: &mut [f32], d: usize, w: &[f32], eps: f32) {
        let mut blocks = x.chunks_exact_mut(8 * d.max(1));
        for block in &mut blocks {
            rms_rows::<8>(block, d, w, eps);
        }
        for row in blocks.into_remainder().chunks_exact_mut(d.max(1)) {
            rms_rows::<1>(row, d, w, eps);
        }
    }
}

/// [`rms_norm`] of the R rows of `x`.
#[inline(always)]
fn rms_rows<const R: usize>(x: &mut [f32], d: usize, w: &[f32], eps: f32) {
    let mut sum = [-0.0f32; R];
    for i in 0..d {
        for (r, s) in sum.iter_mut().enumerate() {
            let v = x[r * d + i];
            *s += v * v;
        }
    }
    for (r, row) in x.chunks_exact_mut(d).enumerate() {
        let denom = (sum[r] / d as f32 + eps).sqrt();
        for (v, &g) in row.iter_mut().zip(w) {
            *v = *v / denom * g;
        }
    }
}

widest! {
    /// Rotate-half RoPE of each `hd`-long head of `x` in place with one row's tables:
    /// `x·cos + rotate_half(x)·sin`, `rotate_half(x) = [−x₂, x₁]`.
    fn rope(x: &mut [f32], hd: usize, cos: &[f32], sin: &[f32]) {
        let half = hd / 2;
        for head in x.chunks_exact_mut(hd) {
            let (x1, x2) = head.split_at_mut(half);
            for i in 0..half {
                let (a, b) = (x1[i], x2[i]);
                x1[i] = a * cos[i] + -b * sin[i];
                x2[i] = b * cos[half + i] + a * sin[half + i];
            }
        }
    }
}

widest! {
    /// `act = silu(gate) · up` for rows of `[gate; up]` (each `inter` wide), SiLU as
    /// `x / (1 + e⁻ˣ)` with the decoder's `exp` (the same bits on every CPU).
    fn swiglu(gu: &[f32], inter: usize, act: &mut [f32]) {
        for (row, out) in gu.chunks_exact(2 * inter).zip(act.chunks_exact_mut(inter)) {
            let (gate, up) = row.split_at(inter);
            for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
                *o = g / (1.0 + exp(-g)) * u;
            }
        }
    }
}

widest! {
    /// `x += y`, element by element.
    fn add(x: &mut [f32], y: &[f32]) {
        for (a, b) in x.iter_mut().zip(y) {
            *a += b;
        }
    }
}
