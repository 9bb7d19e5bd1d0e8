//! The tiny model's incremental forward for decoding, on the row-stable kernels: any number of
//! sequences, each at its own length, advance by their new tokens in one pass (a prompt's
//! prefill and other sequences' next tokens together), each sequence's numbers independent of
//! the others. The same maths as `models::tiny` and `models::copy`, in plain f32 slices with a
//! growing per-sequence cache instead of candle ops and `Tensor::cat`.

use rayon::prelude::*;

use super::kernels::{dot, layer_norm, linear, scores_t, softmax, weighted_sum};
use crate::error::Result;
use crate::models::{Positions, TinyConfig, TinyModel};
use crate::ops::fused::attention::{alibi_slope, head_forward};
use crate::ops::fused::gelu::fast_tanh;
use crate::ops::fused::matmul::{View, matmul};
use crate::tokenizer::byte_specials;

const LN_EPS: f32 = 1e-5;

/// One decoder layer's weights, each row-major as in the parameter store.
#[derive(Debug, Clone)]
struct Layer {
    ln1: (Vec<f32>, Vec<f32>),
    qkv: (Vec<f32>, Vec<f32>),
    proj: (Vec<f32>, Vec<f32>),
    ln2: (Vec<f32>, Vec<f32>),
    fc: (Vec<f32>, Vec<f32>),
    mlp_proj: (Vec<f32>, Vec<f32>),
}

/// The copy head's weights (`models::copy`).
#[derive(Debug, Clone)]
struct Copy {
    query: Vec<f32>,
    key: Vec<f32>,
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
    lm_head: Vec<f32>,
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
        let layers = (0..c.layers)
            .map(|i| {
                let n = |s: &str| format!("layers.{i}.{s}");
                Ok(Layer {
                    ln1: pair(&n("ln1"))?,
                    qkv: pair(&n("attn.qkv"))?,
                    proj: pair(&n("attn.proj"))?,
                    ln2: pair(&n("ln2"))?,
                    fc: pair(&n("mlp.fc"))?,
                    mlp_proj: pair(&n("mlp.proj"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let copy = if c.copy {
            Some(Copy {
                query: get("copy.query.weight")?,
                key: get("copy.key.weight")?,
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
            lm_head: get("lm_head.weight")?,
            copy,
        })
    }

    /// The model's context length.
    pub fn context(&self) -> usize {
        self.config.context
    }
}

/// Keys stored transposed, (dims, capacity): dimension `i` of position `j` at `i·cap + j`, so
/// a query's scores against every position are one pass of contiguous loads per dimension.
#[derive(Debug, Clone, Default)]
struct KeysT {
    data: Vec<f32>,
    dims: usize,
    cap: usize,
}

impl KeysT {
    fn new(dims: usize, cap: usize) -> KeysT {
        KeysT { data: vec![0f32; dims * cap], dims, cap }
    }

    /// Writes `key` (dims) at position `j`, doubling the capacity when it is full.
    fn put(&mut self, j: usize, key: &[f32]) {
        if j >= self.cap {
            let cap = (2 * self.cap).max(j + 1).max(16);
            let mut data = vec![0f32; self.dims * cap];
            for i in 0..self.dims {
                data[i * cap..i * cap + self.cap]
                    .copy_from_slice(&self.data[i * self.cap..(i + 1) * self.cap]);
            }
            (self.data, self.cap) = (data, cap);
        }
        for (i, &x) in key.iter().enumerate() {
            self.data[i * self.cap + j] = x;
        }
    }

    /// Scores of `q` (dims `from..from + q.len()`) against positions `0..out.len()`.
    fn scores(&self, q: &[f32], from: usize, out: &mut [f32]) {
        scores_t(q, &self.data[from * self.cap..], self.cap, out);
    }
}

/// One sequence's state: its tokens and cached keys and values.
#[derive(Debug, Clone, Default)]
pub struct Seq {
    /// Every token fed so far.
    ids: Vec<u32>,
    /// Per layer, keys (heads' dimensions side by side) and values (T, d) row-major.
    k: Vec<KeysT>,
    v: Vec<Vec<f32>>,
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
            k: (0..layers).map(|_| KeysT::new(d, capacity)).collect(),
            v: (0..layers).map(|_| Vec::with_capacity(capacity * d)).collect(),
            copy_keys: KeysT::new(if weights.copy.is_some() { d } else { 0 }, capacity),
            segment: Vec::with_capacity(capacity),
        }
    }

    /// Number of tokens fed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing has been fed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
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

/// A prompt's prefill into the empty `seq`: its next-token scores after the prompt's last
/// token, logits or log-probabilities with the copy head (as `TinyModel::forward_last`). The
/// products run on gemm, shaped by this prompt alone, so they are the same whatever else
/// decodes meanwhile.
pub fn prefill(w: &TinyWeights, seq: &mut Seq, prompt: &[u32]) -> Result<Vec<f32>> {
    if !seq.is_empty() || prompt.is_empty() || prompt.len() > w.config.context {
        return Err(crate::error::config_err(format!(
            "decode: a prefill of {} tokens into a sequence of {} (context {})",
            prompt.len(),
            seq.len(),
            w.config.context
        )));
    }
    Ok(pass(w, &mut [seq], &[prompt], Pass::Prefill)?.remove(0))
}

/// One decoding step: `tokens[s]` fed to `seqs[s]` (each within the context), all in one pass
/// on the row-stable kernels; returns each sequence's next-token scores.
pub fn advance(w: &TinyWeights, seqs: &mut [&mut Seq], tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
    if let Some(s) = seqs.iter().find(|s| s.len() >= w.config.context) {
        return Err(crate::error::config_err(format!(
            "decode: a sequence of {} tokens is at the context ({})",
            s.len(),
            w.config.context
        )));
    }
    let feeds: Vec<&[u32]> = tokens.iter().map(std::slice::from_ref).collect();
    pass(w, seqs, &feeds, Pass::Step)
}

/// How a pass computes its products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// One sequence's prompt: gemm, attention per head as whole matrices.
    Prefill,
    /// One new token per sequence: the row-stable kernels, attention row by row.
    Step,
}

/// `x · wᵀ + b` for `pass`.
fn lin(pass: Pass, x: &[f32], k: usize, w: &[f32], b: Option<&[f32]>) -> Result<Vec<f32>> {
    match pass {
        Pass::Step => Ok(linear(x, k, w, b)),
        Pass::Prefill => {
            let rows = x.len() / k.max(1);
            let n = w.len() / k.max(1);
            let mut out = match b {
                Some(b) => b.repeat(rows),
                None => vec![0f32; rows * n],
            };
            matmul(
                &mut out,
                View { data: x, rows, cols: k, rs: k, cs: 1 },
                View { data: w, rows: k, cols: n, rs: 1, cs: k },
                b.is_some(),
                true,
            )?;
            Ok(out)
        }
    }
}

/// Causal attention of a whole prompt `qkv` (T, 3d), head by head on gemm: (T, d).
fn prefill_attention(qkv: &[f32], d: usize, nh: usize, alibi: bool) -> Result<Vec<f32>> {
    let hd = d / nh;
    let t = qkv.len() / (3 * d);
    let scale = 1.0 / (hd as f32).sqrt();
    let heads: Vec<Vec<f32>> = (0..nh)
        .into_par_iter()
        .map(|h| {
            let part = |j: usize| -> Vec<f32> {
                let o = j * d + h * hd;
                qkv.chunks_exact(3 * d).flat_map(|r| r[o..o + hd].iter().copied()).collect()
            };
            let slope = if alibi { alibi_slope(h, nh) } else { 0.0 };
            let mut out = vec![0f32; t * hd];
            head_forward(&part(0), &part(1), &part(2), t, hd, (scale, slope), &mut out)?;
            Ok(out)
        })
        .collect::<Result<_>>()?;
    let mut y = vec![0f32; t * d];
    for (h, out) in heads.iter().enumerate() {
        for (row, o) in y.chunks_exact_mut(d).zip(out.chunks_exact(hd)) {
            row[h * hd..(h + 1) * hd].copy_from_slice(o);
        }
    }
    Ok(y)
}

/// Feeds `feeds[s]` to `seqs[s]` and returns each sequence's scores after its last new token.
fn pass(
    w: &TinyWeights,
    seqs: &mut [&mut Seq],
    feeds: &[&[u32]],
    pass: Pass,
) -> Result<Vec<Vec<f32>>> {
    let c = &w.config;
    let (d, nh) = (c.d_model, c.heads);
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
    let alibi = c.positions == Positions::Alibi;
    for (l, layer) in w.layers.iter().enumerate() {
        let mut h = x.clone();
        layer_norm(&mut h, d, &layer.ln1.0, &layer.ln1.1, LN_EPS);
        let qkv = lin(pass, &h, d, &layer.qkv.0, Some(&layer.qkv.1))?;
        for (r, &(s, pos)) in rows.iter().enumerate() {
            let q = &qkv[r * 3 * d..(r + 1) * 3 * d];
            seqs[s].k[l].put(pos, &q[d..2 * d]);
            seqs[s].v[l].extend_from_slice(&q[2 * d..]);
        }
        let y = match pass {
            Pass::Prefill => prefill_attention(&qkv, d, nh, alibi)?,
            Pass::Step => step_attention(seqs, &rows, l, &qkv, c),
        };
        let y = lin(pass, &y, d, &layer.proj.0, Some(&layer.proj.1))?;
        for (a, b) in x.iter_mut().zip(&y) {
            *a += b;
        }
        let mut h = x.clone();
        layer_norm(&mut h, d, &layer.ln2.0, &layer.ln2.1, LN_EPS);
        let mut f = lin(pass, &h, d, &layer.fc.0, Some(&layer.fc.1))?;
        for v in f.iter_mut() {
            *v = 0.5 * *v * (1.0 + fast_tanh(0.797_884_6 * (*v + 0.044_715 * *v * *v * *v)));
        }
        let f = lin(pass, &f, d * c.mlp_ratio, &layer.mlp_proj.0, Some(&layer.mlp_proj.1))?;
        for (a, b) in x.iter_mut().zip(&f) {
            *a += b;
        }
    }
    layer_norm(&mut x, d, &w.ln_f.0, &w.ln_f.1, LN_EPS);
    // Each sequence's last new row.
    let last: Vec<usize> =
        (0..seqs.len()).map(|s| rows.iter().rposition(|&(rs, _)| rs == s).unwrap_or(0)).collect();
    let hl: Vec<f32> = last.iter().flat_map(|&r| x[r * d..(r + 1) * d].iter().copied()).collect();
    let logits = linear(&hl, d, &w.lm_head, None);
    let vocab = byte_specials::VOCAB;
    let Some(cp) = &w.copy else {
        return Ok(logits.chunks_exact(vocab).map(<[f32]>::to_vec).collect());
    };
    let keys = lin(pass, &x, d, &cp.key, None)?;
    for (r, &(s, pos)) in rows.iter().enumerate() {
        let mut key = keys[r * d..(r + 1) * d].to_vec();
        for (back, table) in cp.matches.iter().enumerate() {
            let id = seqs[s].id_before(pos, back + 1) as usize;
            for (a, b) in key.iter_mut().zip(&table[id * d..(id + 1) * d]) {
                *a += b;
            }
        }
        seqs[s].copy_keys.put(pos, &key);
    }
    let queries = linear(&hl, d, &cp.query, None);
    let seqs_ro: &[&mut Seq] = seqs;
    let mix = |s: usize| {
        let (r, pos) = (last[s], rows[last[s]].1);
        let (h, q) = (&x[r * d..(r + 1) * d], &queries[s * d..(s + 1) * d]);
        copy_mix(cp, seqs_ro[s], pos, h, q, &logits[s * vocab..(s + 1) * vocab])
    };
    Ok(if seqs_ro.len() < 2 {
        (0..seqs_ro.len()).map(mix).collect()
    } else {
        (0..seqs_ro.len()).into_par_iter().map(mix).collect()
    })
}

/// Attention of one new row per sequence over its cache, rows in parallel: (rows, d).
fn step_attention(
    seqs: &[&mut Seq],
    rows: &[(usize, usize)],
    l: usize,
    qkv: &[f32],
    c: &TinyConfig,
) -> Vec<f32> {
    let (d, nh) = (c.d_model, c.heads);
    let hd = d / nh;
    let scale = 1.0 / (hd as f32).sqrt();
    let alibi = c.positions == Positions::Alibi;
    let one = |r: usize, yr: &mut [f32], (s, pos): (usize, usize)| {
        let (keys, vals) = (&seqs[s].k[l], &seqs[s].v[l]);
        let q = &qkv[r * 3 * d..r * 3 * d + d];
        let mut p = vec![0f32; pos + 1];
        for head in 0..nh {
            let o = head * hd;
            let slope = if alibi { alibi_slope(head, nh) } else { 0.0 };
            keys.scores(&q[o..o + hd], o, &mut p);
            for (j, pj) in p.iter_mut().enumerate() {
                *pj = *pj * scale - slope * (pos - j) as f32;
            }
            softmax(&mut p);
            weighted_sum(&p, &vals[o..], d, &mut yr[o..o + hd]);
        }
    };
    let mut y = vec![0f32; rows.len() * d];
    if rows.len() < 2 {
        // One row: no hand-off to rayon's threads, which costs more than the row.
        for (r, (yr, &row)) in y.chunks_mut(d).zip(rows).enumerate() {
            one(r, yr, row);
        }
    } else {
        y.par_chunks_mut(d)
            .zip(rows.par_iter())
            .enumerate()
            .for_each(|(r, (yr, &row))| one(r, yr, row));
    }
    y
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
