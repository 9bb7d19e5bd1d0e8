//! The tiny model's incremental forward for decoding, on the row-stable kernels: any number of
//! sequences, each at its own length, advance by their new tokens in one pass (a prompt's
//! prefill and other sequences' next tokens together), each sequence's numbers independent of
//! the others. The same maths as `models::tiny` and `models::copy`, in plain f32 slices with a
//! growing per-sequence cache instead of candle ops and `Tensor::cat`.

use rayon::prelude::*;

use super::attention::{Heads, attention};
use super::cache::{KeysT, LayerKv};
use super::dense::Dense;
use super::kernels::{dot, layer_norm};
use super::pass::{by_rows, each_row, in_passes};
use super::softmax::softmax;
use super::wide::widest;
use super::{Decoder, Sequence};
use crate::error::Result;
use crate::models::{Positions, TinyConfig, TinyModel};
use crate::ops::fused::gelu::fast_tanh;
use crate::tokenizer::byte_specials;

const LN_EPS: f32 = 1e-5;

/// One decoder layer's weights: LayerNorms (weight, bias) and dense layers.
#[derive(Debug, Clone)]
struct Layer {
    ln1: (Vec<f32>, Vec<f32>),
    qkv: Dense,
    proj: Dense,
    ln2: (Vec<f32>, Vec<f32>),
    fc: Dense,
    mlp_proj: Dense,
}

/// The copy head's weights (`models::copy`).
#[derive(Debug, Clone)]
struct Copy {
    query: Dense,
    key: Dense,
    matches: [Vec<f32>; 3],
    gate_w: Vec<f32>,
    gate_b: f32,
    gate_token: Vec<f32>,
}

/// A snapshot of a tiny model's weights, read once per set of weights.
#[derive(Debug, Clone)]
pub struct TinyWeights {
    config: TinyConfig,
    tok_emb: Vec<f32>,
    pos_emb: Option<Vec<f32>>,
    layers: Vec<Layer>,
    ln_f: (Vec<f32>, Vec<f32>),
    lm_head: Dense,
    copy: Option<Copy>,
}

impl TinyWeights {
    /// Reads the model's current weights.
    pub fn new(model: &TinyModel) -> Result<TinyWeights> {
        let p = &model.params;
        let get = |name: &str| -> Result<Vec<f32>> {
            Ok(p.get(name)?.flatten_all()?.to_dtype(candle_core::DType::F32)?.to_vec1()?)
        };
        let pair = |a: &str| -> Result<(Vec<f32>, Vec<f32>)> {
            Ok((get(&format!("{a}.weight"))?, get(&format!("{a}.bias"))?))
        };
        let c = &model.config;
        let (d, hidden) = (c.d_model, c.d_model * c.mlp_ratio);
        let dense = |a: &str, k: usize| -> Result<Dense> {
            let (w, b) = pair(a)?;
            Ok(Dense::new(&w, k, Some(b)))
        };
        let plain = |a: &str| -> Result<Dense> { Ok(Dense::new(&get(a)?, d, None)) };
        let layers = (0..c.layers)
            .map(|i| {
                let n = |s: &str| format!("layers.{i}.{s}");
                Ok(Layer {
                    ln1: pair(&n("ln1"))?,
                    qkv: dense(&n("attn.qkv"), d)?,
                    proj: dense(&n("attn.proj"), d)?,
                    ln2: pair(&n("ln2"))?,
                    fc: dense(&n("mlp.fc"), d)?,
                    mlp_proj: dense(&n("mlp.proj"), hidden)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let copy = if c.copy {
            Some(Copy {
                query: plain("copy.query.weight")?,
                key: plain("copy.key.weight")?,
                matches: [
                    get("copy.match1.weight")?,
                    get("copy.match2.weight")?,
                    get("copy.match3.weight")?,
                ],
                gate_w: get("copy.gate.weight")?,
                gate_b: get("copy.gate.bias")?.first().copied().unwrap_or(0.0),
                gate_token: get("copy.gate_token.weight")?,
            })
        } else {
            None
        };
        Ok(TinyWeights {
            config: c.clone(),
            tok_emb: get("tok_emb.weight")?,
            pos_emb: match c.positions {
                Positions::Learned => Some(get("pos_emb.weight")?),
                Positions::Alibi => None,
            },
            layers,
            ln_f: pair("ln_f")?,
            lm_head: plain("lm_head.weight")?,
            copy,
        })
    }
}

/// One sequence's state: its tokens and cached keys and values.
#[derive(Debug, Clone, Default)]
pub struct Seq {
    /// Every token fed so far.
    ids: Vec<u32>,
    /// Per layer, keys (heads' dimensions side by side) and values (T, d) row-major.
    pub(super) kv: Vec<LayerKv>,
    /// The copy head's keys.
    copy_keys: KeysT,
    /// Per position, where the segment it is in starts (its role marker), if anywhere.
    segment: Vec<Option<usize>>,
}

impl Seq {
    /// An empty sequence with room for `capacity` tokens (it grows past them if it must).
    pub fn new(weights: &TinyWeights, capacity: usize) -> Seq {
        let d = weights.config.d_model;
        let layers = weights.config.layers;
        Seq {
            ids: Vec::with_capacity(capacity),
            kv: (0..layers).map(|_| LayerKv::new(d, capacity)).collect(),
            copy_keys: KeysT::new(if weights.copy.is_some() { d } else { 0 }, capacity),
            segment: Vec::with_capacity(capacity),
        }
    }

    fn push_id(&mut self, id: u32) {
        let start = if (byte_specials::SYSTEM..=byte_specials::OBSERVATION).contains(&id) {
            Some(self.ids.len())
        } else {
            self.segment.last().copied().flatten()
        };
        self.ids.push(id);
        self.segment.push(start);
    }

    /// The token `back` places before position `j` (BOS before the start).
    fn id_before(&self, j: usize, back: usize) -> u32 {
        if j >= back { self.ids[j - back] } else { byte_specials::BOS }
    }
}

impl Sequence for Seq {
    fn ids(&self) -> &[u32] {
        &self.ids
    }

    fn truncate(&mut self, len: usize) {
        if len >= self.ids.len() {
            return;
        }
        self.ids.truncate(len);
        self.segment.truncate(len);
        for kv in &mut self.kv {
            kv.truncate(len);
        }
    }
}

impl Decoder for TinyWeights {
    type Seq = Seq;

    fn context(&self) -> usize {
        self.config.context
    }

    fn new_seq(&self, capacity: usize) -> Seq {
        Seq::new(self, capacity)
    }

    fn forward(&self, seqs: &mut [&mut Seq], feeds: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        forward(self, seqs, feeds)
    }
}

/// A prompt's prefill into the empty `seq`: its next-token scores after the prompt's last
/// token, logits or log-probabilities with the copy head (as `TinyModel::forward_last`).
pub fn prefill(w: &TinyWeights, seq: &mut Seq, prompt: &[u32]) -> Result<Vec<f32>> {
    if !seq.is_empty() {
        return Err(crate::error::config_err("decode: a prefill into a sequence already fed"));
    }
    Ok(forward(w, &mut [seq], &[prompt])?.remove(0))
}

/// One decoding step: `tokens[s]` fed to `seqs[s]`; returns each sequence's next-token scores.
pub fn advance(w: &TinyWeights, seqs: &mut [&mut Seq], tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
    let feeds: Vec<&[u32]> = tokens.iter().map(std::slice::from_ref).collect();
    forward(w, seqs, &feeds)
}

/// Feeds `feeds[s]` (at least one token, within the context) to `seqs[s]`, all in one pass,
/// and returns each sequence's next-token scores after its last new token. Every position's
/// numbers depend on its sequence's tokens up to it only: not on the other sequences, nor on
/// how the sequence's tokens were split between passes (a prompt at once, a cached prefix
/// and the rest, or one token at a time).
pub fn forward(w: &TinyWeights, seqs: &mut [&mut Seq], feeds: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
    in_passes(seqs, feeds, w.config.context, |seqs, feeds| pass(w, seqs, feeds))
}

/// Feeds `feeds[s]` to `seqs[s]` and returns each sequence's scores after its last new token.
fn pass(w: &TinyWeights, seqs: &mut [&mut Seq], feeds: &[&[u32]]) -> Vec<Vec<f32>> {
    let c = &w.config;
    let d = c.d_model;
    // The rows of this pass: (sequence, absolute position).
    let mut rows: Vec<(usize, usize)> = Vec::new();
    for (s, (seq, feed)) in seqs.iter_mut().zip(feeds).enumerate() {
        for &id in feed.iter() {
            rows.push((s, seq.len()));
            seq.push_id(id);
        }
    }
    let mut x = vec![0f32; rows.len() * d];
    for (r, &(s, pos)) in rows.iter().enumerate() {
        let id = seqs[s].ids[pos] as usize;
        let xr = &mut x[r * d..(r + 1) * d];
        xr.copy_from_slice(&w.tok_emb[id * d..(id + 1) * d]);
        if let Some(pe) = &w.pos_emb {
            for (a, b) in xr.iter_mut().zip(&pe[pos * d..(pos + 1) * d]) {
                *a += b;
            }
        }
    }
    let norm = |x: &mut [f32], (g, b): &(Vec<f32>, Vec<f32>)| {
        by_rows(x, d, |rows| layer_norm(rows, d, g, b, LN_EPS));
    };
    let heads = Heads {
        nh: c.heads,
        nkv: c.heads,
        hd: d / c.heads,
        scale: 1.0 / ((d / c.heads) as f32).sqrt(),
        alibi: c.positions == Positions::Alibi,
        window: None,
    };
    for (l, layer) in w.layers.iter().enumerate() {
        let mut h = x.clone();
        norm(&mut h, &layer.ln1);
        let qkv = layer.qkv.apply(&h);
        each_row(seqs, &rows, |seq, r, pos| {
            let q = &qkv[r * 3 * d..(r + 1) * 3 * d];
            seq.kv[l].push(pos, &q[d..2 * d], &q[2 * d..]);
        });
        let kvs: Vec<&LayerKv> = seqs.iter().map(|s| &s.kv[l]).collect();
        let y = layer.proj.apply(&attention(&kvs, &rows, &qkv, 3 * d, heads));
        for (a, b) in x.iter_mut().zip(&y) {
            *a += b;
        }
        let mut h = x.clone();
        norm(&mut h, &layer.ln2);
        let mut f = layer.fc.apply(&h);
        by_rows(&mut f, d * c.mlp_ratio, gelu);
        let f = layer.mlp_proj.apply(&f);
        for (a, b) in x.iter_mut().zip(&f) {
            *a += b;
        }
    }
    norm(&mut x, &w.ln_f);
    // Each sequence's last new row.
    let last: Vec<usize> =
        (0..seqs.len()).map(|s| rows.iter().rposition(|&(rs, _)| rs == s).unwrap_or(0)).collect();
    let hl: Vec<f32> = last.iter().flat_map(|&r| x[r * d..(r + 1) * d].iter().copied()).collect();
    let logits = w.lm_head.apply(&hl);
    let vocab = byte_specials::VOCAB;
    let Some(cp) = &w.copy else {
        return logits.chunks_exact(vocab).map(<[f32]>::to_vec).collect();
    };
    let keys = cp.key.apply(&x);
    each_row(seqs, &rows, |seq, r, pos| {
        let mut key = keys[r * d..(r + 1) * d].to_vec();
        for (back, table) in cp.matches.iter().enumerate() {
            let id = seq.id_before(pos, back + 1) as usize;
            for (a, b) in key.iter_mut().zip(&table[id * d..(id + 1) * d]) {
                *a += b;
            }
        }
        seq.copy_keys.put(pos, &key);
    });
    let queries = cp.query.apply(&hl);
    let seqs_ro: &[&mut Seq] = seqs;
    let mix = |s: usize| {
        let (r, pos) = (last[s], rows[last[s]].1);
        let (h, q) = (&x[r * d..(r + 1) * d], &queries[s * d..(s + 1) * d]);
        copy_mix(cp, seqs_ro[s], pos, h, q, &logits[s * vocab..(s + 1) * vocab])
    };
    if seqs_ro.len() < 2 {
        (0..seqs_ro.len()).map(mix).collect()
    } else {
        (0..seqs_ro.len()).into_par_iter().map(mix).collect()
    }
}

widest! {
    /// GELU (tanh form, as `models::tiny`'s) of every element in place.
    fn gelu(f: &mut [f32]) {
        for v in f.iter_mut() {
            *v = 0.5 * *v * (1.0 + fast_tanh(0.797_884_6 * (*v + 0.044_715 * *v * *v * *v)));
        }
    }
}

/// The copy head at the sequence's position `pos` (its last): the gated mix of the vocabulary
/// softmax of `logits` and the attention over the tokens seen, as log-probabilities.
fn copy_mix(
    cp: &Copy,
    seq: &Seq,
    pos: usize,
    h: &[f32],
    query: &[f32],
    logits: &[f32],
) -> Vec<f32> {
    let d = h.len();
    let mut q = query.to_vec();
    for (back, table) in cp.matches.iter().enumerate() {
        let id = seq.id_before(pos, back) as usize;
        for (a, b) in q.iter_mut().zip(&table[id * d..(id + 1) * d]) {
            *a += b;
        }
    }
    // Inside an assistant segment, the segment itself is hidden (`copy::mask`).
    let own = seq.segment[pos].filter(|&s| seq.ids[s] == byte_specials::ASSISTANT);
    let inv = 1.0 / (d as f32).sqrt();
    let mut attn = vec![0f32; pos + 1];
    seq.copy_keys.scores(&q, 0, &mut attn);
    for (j, a) in attn.iter_mut().enumerate() {
        *a *= inv;
        if own.is_some_and(|s| j >= s) {
            *a -= 1e9;
        }
    }
    softmax(&mut attn);
    let vocab = logits.len();
    let mut copied = vec![0f32; vocab];
    for (j, &a) in attn.iter().enumerate() {
        if let Some(c) = copied.get_mut(seq.ids[j] as usize) {
            *c += a;
        }
    }
    let pre = dot(h, &cp.gate_w) + cp.gate_b + dot(&copied, &cp.gate_token) * (d as f32).sqrt();
    let gate = 1.0 / (1.0 + (-pre).exp());
    let mut generated = logits.to_vec();
    softmax(&mut generated);
    generated
        .iter()
        .zip(&copied)
        .map(|(&g, &c)| (g * (1.0 - gate) + c * gate + 1e-12).ln())
        .collect()
}
