//! The tiny model's copy head (a pointer-generator, See et al. 2017): the next-token
//! distribution is a gated mix of the vocabulary softmax and an attention over the tokens seen so
//! far, so "the byte after the one I just wrote, in the task" is one learned lookup instead of
//! an induction circuit. A byte-level policy must copy names and numbers from the task and the
//! page into its actions; without this head a 2-layer model does not learn to in a CPU budget.
//!
//! The head returns log-probabilities where other heads return logits: softmax and log-softmax
//! of a normalised log-distribution give it back unchanged, so every loss and sampler works on
//! either.

use candle_core::{D, DType, Device, Tensor};

use crate::error::Result;
use crate::models::KvCache;
use crate::params::{Init, ParamStore};
use crate::tokenizer::byte_specials;

/// Parameter names of the copy head.
const QUERY: &str = "copy.query.weight";
const KEY: &str = "copy.key.weight";
const GATE_W: &str = "copy.gate.weight";
const GATE_B: &str = "copy.gate.bias";
/// Per-token gate term, weighted by how much of the copy attention points at that token: the
/// gate sees what it would copy (a space or a `?` after a name: stop copying, end the action).
/// Scaled by √d: one active input per row instead of the hidden state's d, and Adam moves every
/// weight by about the learning rate, so unscaled it would learn √d times slower.
const GATE_TOKEN: &str = "copy.gate_token.weight";
/// Token embeddings shared by queries and keys: the query at `i` adds `M₁[xᵢ]`, `M₂[xᵢ₋₁]` and
/// `M₃[xᵢ₋₂]`, the key at `j` adds `M₁[xⱼ₋₁]`, `M₂[xⱼ₋₂]` and `M₃[xⱼ₋₃]`. Initialised at scale 0.5, equal tokens give a dot product near d/4 and
/// different ones near 0, so from the first step the head prefers "the position after the three
/// tokens I just wrote" (an induction head by construction; three, because two leave `orANge`
/// and `cANdle` tied); training learns where to start copying and when to stop.
const MATCH: [&str; 3] = ["copy.match1.weight", "copy.match2.weight", "copy.match3.weight"];

/// Creates the copy head's parameters for residual width `d`.
pub fn create(
    p: &mut ParamStore,
    d: usize,
    vocab: usize,
    std: f32,
    rng: &mut rand_chacha::ChaCha8Rng,
    device: &Device,
) -> Result<()> {
    p.create(QUERY, &[d, d], Init::Normal(std), rng, device)?;
    p.create(KEY, &[d, d], Init::Normal(std), rng, device)?;
    for name in MATCH {
        p.create(name, &[vocab, d], Init::Normal(0.5), rng, device)?;
    }
    p.create(GATE_W, &[1, d], Init::Normal(std), rng, device)?;
    p.create(GATE_B, &[1], Init::Zeros, rng, device)?;
    p.create(GATE_TOKEN, &[vocab, 1], Init::Zeros, rng, device)?;
    Ok(())
}

/// One-hot rows (B, T, V) of `ids` (B, T), on the CPU.
fn one_hot(ids: &[Vec<u32>], vocab: usize) -> Result<Tensor> {
    let (b, t) = (ids.len(), ids.first().map_or(0, Vec::len));
    let mut data = vec![0f32; b * t * vocab];
    for (i, &id) in ids.iter().flatten().enumerate() {
        if let Some(x) = data.get_mut(i * vocab + id as usize) {
            *x = 1.0;
        }
    }
    Ok(Tensor::from_vec(data, (b, t, vocab), &Device::Cpu)?)
}

/// `ids` (B, T) shifted right by `k` positions, the first `k` filled with BOS.
fn shifted(ids: &[Vec<u32>], k: usize) -> Vec<Vec<u32>> {
    ids.iter()
        .map(|row| {
            let keep = row.len().saturating_sub(k);
            std::iter::repeat_n(byte_specials::BOS, row.len() - keep)
                .chain(row[..keep].iter().copied())
                .collect()
        })
        .collect()
}

/// Rows `from..` of each of `ids` looked up in `table` (V, d): (B, n, d).
fn embed(
    params: &ParamStore,
    table: &str,
    ids: &[Vec<u32>],
    from: usize,
    device: &Device,
) -> Result<Tensor> {
    let b = ids.len();
    let flat: Vec<u32> = ids.iter().flat_map(|r| r[from..].iter().copied()).collect();
    let n = flat.len() / b.max(1);
    let idx = Tensor::from_vec(flat, b * n, device)?;
    let d = params.get(table)?.dim(1)?;
    Ok(params.get(table)?.index_select(&idx, 0)?.reshape((b, n, d))?)
}

/// Whether a token starts a segment (a role marker of the byte vocabulary).
fn is_marker(id: u32) -> bool {
    (byte_specials::SYSTEM..=byte_specials::OBSERVATION).contains(&id)
}

/// Additive mask (B, Tq, Tk) over `rows` (B, Tk): query `i` (absolute position `offset + i`)
/// sees keys at absolute positions ≤ its own, except, inside an assistant segment, the segment
/// itself: the head copies from the task, the page and earlier turns, never from what it is
/// writing (which would let "blue " match its own "blue " and type "blue blue blue …").
fn mask(rows: &[Vec<u32>], tq: usize, offset: usize, device: &Device) -> Result<Tensor> {
    let tk = rows.first().map_or(0, Vec::len);
    let mut data = Vec::with_capacity(rows.len() * tq * tk);
    for row in rows {
        // The start of the segment each position is in (the position of its marker), if any.
        let mut start = vec![None; tk];
        let mut current = None;
        for (j, &id) in row.iter().enumerate() {
            if is_marker(id) {
                current = Some(j);
            }
            start[j] = current;
        }
        for i in offset..offset + tq {
            let own =
                start.get(i).copied().flatten().filter(|&s| row[s] == byte_specials::ASSISTANT);
            data.extend((0..tk).map(|j| {
                let visible = j <= i && own.is_none_or(|s| j < s);
                if visible { 0.0f32 } else { -1e9 }
            }));
        }
    }
    Ok(Tensor::from_vec(data, (rows.len(), tq, tk), device)?)
}

/// Log-probabilities (B, Tq, V) at the last `tq` positions of `h` (B, T, d), given the
/// vocabulary logits `logits` (B, Tq, V) at those positions. `ids` (B, T) are the input tokens
/// of `h`; with a cache, the keys and tokens of earlier positions come from it and this call's
/// are appended.
pub fn forward(
    params: &ParamStore,
    h: &Tensor,
    ids: &Tensor,
    logits: &Tensor,
    mut cache: Option<&mut KvCache>,
) -> Result<Tensor> {
    let (_, t, d) = h.dims3()?;
    let (_, tq, vocab) = logits.dims3()?;
    let device = h.device().clone();
    let earlier = cache.as_mut().and_then(|c| c.copy.take());
    let all_ids = match &earlier {
        None => ids.clone(),
        Some((_, pi)) => Tensor::cat(&[pi, ids], 1)?,
    };
    let rows: Vec<Vec<u32>> = all_ids.to_device(&Device::Cpu)?.to_vec2()?;
    let tk = all_ids.dim(1)?;
    let offset = tk - t;
    let hq = h.narrow(1, t - tq, tq)?;
    // Table k matches the query's token k − 1 back with the key's token k back.
    let back: Vec<Vec<Vec<u32>>> = (0..=MATCH.len()).map(|k| shifted(&rows, k)).collect();
    let mut keys = h.broadcast_matmul(&params.get(KEY)?.t()?)?;
    let mut q = hq.broadcast_matmul(&params.get(QUERY)?.t()?)?;
    for (k, table) in MATCH.iter().enumerate() {
        keys = (keys + embed(params, table, &back[k + 1], offset, &device)?)?;
        q = (q + embed(params, table, &back[k], tk - tq, &device)?)?;
    }
    let keys = match earlier {
        None => keys,
        Some((pk, _)) => Tensor::cat(&[&pk, &keys], 1)?,
    };
    if let Some(c) = cache {
        c.copy = Some((keys.detach(), all_ids.clone()));
    }
    let scores = (q.matmul(&keys.t()?)? / (d as f64).sqrt())?;
    let scores = (scores + mask(&rows, tq, offset + t - tq, &device)?)?;
    let attn = candle_nn::ops::softmax(&scores, D::Minus1)?;
    let copied = attn.matmul(&one_hot(&rows, vocab)?.to_device(&device)?)?;
    let gate =
        (hq.broadcast_matmul(&params.get(GATE_W)?.t()?)?.broadcast_add(&params.get(GATE_B)?)?
            + (copied.broadcast_matmul(&params.get(GATE_TOKEN)?)? * (d as f64).sqrt())?)?;
    // The sigmoid, from primitives whose backward candle has on every device.
    let gate = (gate.neg()?.exp()? + 1.0)?.recip()?;
    let generated = candle_nn::ops::softmax(&logits.to_dtype(DType::F32)?, D::Minus1)?;
    let mixed =
        (generated.broadcast_mul(&gate.affine(-1.0, 1.0)?)? + copied.broadcast_mul(&gate)?)?;
    Ok((mixed + 1e-12)?.log()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside an assistant segment the head sees the prompt, not its own output; elsewhere the
    /// mask is causal.
    #[test]
    fn the_head_never_copies_from_the_turn_it_is_writing() {
        let (u, a) = (byte_specials::USER, byte_specials::ASSISTANT);
        // user: "b l" ; assistant: "b l b"
        let row = vec![u, b'b' as u32, b'l' as u32, a, b'b' as u32, b'l' as u32, b'b' as u32];
        let m: Vec<Vec<f32>> =
            mask(&[row], 7, 0, &Device::Cpu).unwrap().squeeze(0).unwrap().to_vec2().unwrap();
        let seen = |i: usize| -> Vec<usize> { (0..7).filter(|&j| m[i][j] == 0.0).collect() };
        assert_eq!(seen(1), [0, 1], "causal in the user segment");
        assert_eq!(seen(3), [0, 1, 2], "the marker's query sees the prompt only");
        assert_eq!(seen(6), [0, 1, 2], "the assistant's own tokens stay hidden");
        // With a cache: the last query alone, at absolute position 6.
        let row = vec![u, b'b' as u32, b'l' as u32, a, b'b' as u32, b'l' as u32, b'b' as u32];
        let last: Vec<f32> =
            mask(&[row], 1, 6, &Device::Cpu).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(last.iter().filter(|&&x| x == 0.0).count(), 3);
    }
}
