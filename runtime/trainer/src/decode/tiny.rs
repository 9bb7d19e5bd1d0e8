//! The tiny model's incremental forward for decoding, on the row-stable kernels: any number of
//! sequences, each at its own length, advance by their new tokens in one pass (a prompt's
//! prefill and other sequences' next tokens together), each sequence's numbers independent of
//! the others. The same maths as `models::tiny` and `models::copy`, in plain f32 slices with a
//! growing per-sequence cache instead of candle ops and `Tensor::cat`.

use rayon::prelude::*;

use super::dense::Dense;
use super::kernels::{dot, layer_norm, scores_t, weighted_sum_heads};
use super::softmax::{self, softmax};
use crate::error::Result;
use crate::models::{Positions, TinyConfig, TinyModel};
use crate::ops::fused::attention::alibi_slope;
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

/// Positions per score block: the capacity is a multiple of it, so scores are computed in
/// whole blocks (the kernels' widest registers) and the positions past the last are ignored.
const BLOCK: usize = 16;

impl KeysT {
    fn new(dims: usize, cap: usize) -> KeysT {
        let cap = cap.next_multiple_of(BLOCK);
        KeysT { data: vec![0f32; dims * cap], dims, cap }
    }

    /// Writes `key` (dims) at position `j`, doubling the capacity when it is full.
    fn put(&mut self, j: usize, key: &[f32]) {
        if j >= self.cap {
            let cap = (2 * self.cap).max(j + 1).next_multiple_of(BLOCK);
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

    /// Scores of `q` (dims `from..from + q.len()`) against positions `0..out.len()`, computed
    /// for whole blocks of positions: each score is the same chain whichever kernel runs it,
    /// and a whole block runs on the widest.
    fn scores(&self, q: &[f32], from: usize, out: &mut [f32]) {
        let kt = &self.data[from * self.cap..];
        let whole = out.len().next_multiple_of(BLOCK);
        if whole == out.len() || whole > self.cap {
            return scores_t(q, kt, self.cap, out);
        }
        let mut block = vec![0f32; whole];
        scores_t(q, kt, self.cap, &mut block);
        out.copy_from_slice(&block[..out.len()]);
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

    /// The tokens fed so far.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Forgets every position from `len` on (a cached prefix reused for another prompt).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.ids.len() {
            return;
        }
        let d = self.v.first().map_or(0, |v| v.len() / self.ids.len().max(1));
        self.ids.truncate(len);
        self.segment.truncate(len);
        for v in &mut self.v {
            v.truncate(len * d);
        }
    }

    /// The token `back` places before position `j` (BOS before the start).
    fn id_before(&self, j: usize, back: usize) -> u32 {
        if j >= back { self.ids[j - back] } else { byte_specials::BOS }
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
    let ctx = w.config.context;
    for (seq, feed) in seqs.iter().zip(feeds) {
        if feed.is_empty() || seq.len() + feed.len() > ctx {
            return Err(crate::error::config_err(format!(
                "decode: {} tokens fed to a sequence of {} (context {ctx})",
                feed.len(),
                seq.len()
            )));
        }
    }
    if seqs.len() != feeds.len() {
        return Err(crate::error::config_err("decode: one feed per sequence"));
    }
    let mut out = vec![Vec::new(); seqs.len()];
    // Tokens of each feed given to a pass so far.
    let mut fed = vec![0usize; seqs.len()];
    let mut s = 0;
    while s < seqs.len() {
        // The next pass: (sequence, its feed's range), at most PASS_ROWS rows in all.
        let mut plan: Vec<(usize, usize, usize)> = Vec::new();
        let mut room = PASS_ROWS;
        while s < seqs.len() && room > 0 {
            let take = (feeds[s].len() - fed[s]).min(room);
            plan.push((s, fed[s], fed[s] + take));
            fed[s] += take;
            room -= take;
            if fed[s] == feeds[s].len() {
                s += 1;
            }
        }
        let mut part: Vec<&mut Seq> = seqs
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| plan.iter().any(|p| p.0 == *i))
            .map(|(_, seq)| &mut **seq)
            .collect();
        let part_feeds: Vec<&[u32]> = plan.iter().map(|&(i, a, b)| &feeds[i][a..b]).collect();
        for (&(i, _, end), scores) in plan.iter().zip(pass(w, &mut part, &part_feeds)) {
            if end == feeds[i].len() {
                out[i] = scores;
            }
        }
    }
    Ok(out)
}

/// Rows one pass advances at most: a longer feed (many prompts at once) runs as several passes,
/// one after another, so each pass's activations stay in the cache.
const PASS_ROWS: usize = 256;

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
    for (l, layer) in w.layers.iter().enumerate() {
        let mut h = x.clone();
        norm(&mut h, &layer.ln1);
        let qkv = layer.qkv.apply(&h);
        for (r, &(s, pos)) in rows.iter().enumerate() {
            let q = &qkv[r * 3 * d..(r + 1) * 3 * d];
            seqs[s].k[l].put(pos, &q[d..2 * d]);
            seqs[s].v[l].extend_from_slice(&q[2 * d..]);
        }
        let y = layer.proj.apply(&step_attention(seqs, &rows, l, &qkv, c));
        for (a, b) in x.iter_mut().zip(&y) {
            *a += b;
        }
        let mut h = x.clone();
        norm(&mut h, &layer.ln2);
        let mut f = layer.fc.apply(&h);
        by_rows(&mut f, d * c.mlp_ratio, |f| {
            for v in f.iter_mut() {
                *v = 0.5 * *v * (1.0 + fast_tanh(0.797_884_6 * (*v + 0.044_715 * *v * *v * *v)));
            }
        });
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

/// `f` over `x`'s rows of `width`, blocks of rows shared out among rayon's threads where
/// there are enough rows to be worth the hand-off (each row's numbers are the same either way).
fn by_rows(x: &mut [f32], width: usize, f: impl Fn(&mut [f32]) + Sync + Send) {
    let rows = x.len() / width.max(1);
    let threads = rayon::current_num_threads().max(1);
    if rows < 32 || threads == 1 {
        return f(x);
    }
    x.par_chunks_mut(rows.div_ceil(threads) * width).for_each(f);
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
        // Every head's probabilities, then their weighted sums of values all at once.
        let len = pos + 1;
        let mut p = vec![0f32; nh * len];
        for (head, ph) in p.chunks_exact_mut(len).enumerate() {
            let o = head * hd;
            let slope = if alibi { alibi_slope(head, nh) } else { 0.0 };
            keys.scores(&q[o..o + hd], o, ph);
            softmax::attention(ph, scale, slope, pos);
        }
        weighted_sum_heads(&p, len, vals, d, hd, yr);
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
