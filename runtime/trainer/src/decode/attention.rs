//! Decoding attention: each new row's softmax-weighted sum of its sequence's cached values, for
//! any head layout (the tiny model's, Qwen's grouped queries and sliding windows). A decoding
//! step brings one row per sequence; a prompt's prefill brings many consecutive rows of one
//! sequence, which run in blocks of up to four sharing every key and value load
//! (`block::scores_rows`, `block::weighted_sums_rows`), each row's numbers the same chains as
//! alone: a prompt prefilled at once or fed token by token gives the same bits.

use std::ops::Range;

use rayon::prelude::*;

use super::block::{scores_rows, weighted_sums_rows};
use super::cache::{BLOCK, LayerKv};
use super::kernels::weighted_sum_heads;
use super::softmax;
use crate::ops::fused::attention::alibi_slope;

/// Consecutive rows of one sequence per block.
const QUERIES: usize = 4;

/// A layer's attention heads: `nh` query heads of `hd` dimensions over `nkv` key/value heads
/// (query head h reads kv head h / (nh / nkv)), scores scaled by `scale`, ALiBi's slopes or
/// none, and a sliding window (a query sees the last `window` positions) or none.
#[derive(Debug, Clone, Copy)]
pub(super) struct Heads {
    pub nh: usize,
    pub nkv: usize,
    pub hd: usize,
    pub scale: f32,
    pub alibi: bool,
    pub window: Option<usize>,
}

impl Heads {
    fn slope(&self, head: usize) -> f32 {
        if self.alibi { alibi_slope(head, self.nh) } else { 0.0 }
    }

    /// The kv head query head `head` reads.
    fn kv(&self, head: usize) -> usize {
        head / (self.nh / self.nkv.max(1)).max(1)
    }

    /// Scores `row` of the query at `pos` (positions 0..=pos) to probabilities in place: the
    /// positions before its window first set to −∞.
    fn probabilities(&self, row: &mut [f32], head: usize, pos: usize) {
        if let Some(w) = self.window {
            let first = (pos + 1).saturating_sub(w);
            row[..first].fill(f32::NEG_INFINITY);
        }
        softmax::attention(row, self.scale, self.slope(head), pos);
    }
}

/// What every row of one layer's attention reads: the heads, each row's query (at the start of
/// its `stride`-long row of `q`) and each sequence's cache of the layer.
struct Layer<'a> {
    heads: Heads,
    q: &'a [f32],
    stride: usize,
    kvs: &'a [&'a LayerKv],
}

impl Layer<'_> {
    /// Row `r` at `pos` of the sequence cached in `kv`, alone, into `y` (nh·hd): every head's
    /// probabilities, then their weighted sums of values.
    fn one(&self, kv: &LayerKv, r: usize, pos: usize, p: &mut Vec<f32>, y: &mut [f32]) {
        let Heads { nh, nkv, hd, .. } = self.heads;
        let q = &self.q[r * self.stride..r * self.stride + nh * hd];
        let len = pos + 1;
        p.resize(nh * len, 0.0);
        for (head, ph) in p.chunks_exact_mut(len).enumerate() {
            let o = head * hd;
            kv.k.scores(&q[o..o + hd], self.heads.kv(head) * hd, ph);
            self.heads.probabilities(ph, head, pos);
        }
        if nkv == nh {
            // Every head at once: eight registers of chains in flight.
            return weighted_sum_heads(p, len, &kv.v, nkv * hd, hd, y);
        }
        for (head, (ph, yh)) in p.chunks_exact(len).zip(y.chunks_exact_mut(hd)).enumerate() {
            let vals = &kv.v[self.heads.kv(head) * hd..];
            weighted_sum_heads(ph, len, vals, nkv * hd, hd, yh);
        }
    }

    /// Rows `rows` (consecutive positions from `pos` of the sequence cached in `kv`) into `y`
    /// (rows × nh·hd): per head, the block's scores in one panel and each row's softmax; then
    /// the weighted sums.
    fn block(&self, kv: &LayerKv, rows: Range<usize>, pos: usize, s: &mut Scratch, y: &mut [f32]) {
        let Heads { nh, nkv, hd, .. } = self.heads;
        let n = rows.len();
        let cap = kv.k.cap;
        // Whole blocks of positions, as `KeysT::scores`; the capacity is a multiple of BLOCK.
        let width = (pos + n).next_multiple_of(BLOCK).min(cap);
        s.p.resize(nh * n * cap, 0.0);
        s.q.resize(n * hd, 0.0);
        for (head, ph) in s.p.chunks_exact_mut(n * cap).enumerate() {
            let o = head * hd;
            for (qh, r) in s.q.chunks_exact_mut(hd).zip(rows.clone()) {
                qh.copy_from_slice(&self.q[r * self.stride + o..][..hd]);
            }
            let kt = &kv.k.data[self.heads.kv(head) * hd * cap..];
            scores_rows(&s.q, n, kt, cap, width, ph);
            for (i, row) in ph.chunks_exact_mut(cap).enumerate() {
                self.heads.probabilities(&mut row[..pos + i + 1], head, pos + i);
            }
        }
        if nkv == nh {
            return weighted_sums_rows((&s.p, cap), n, pos + 1, (&kv.v, nkv * hd), hd, y);
        }
        // Grouped queries: head by head, each over its kv head's values.
        s.y.resize(n * hd, 0.0);
        for (head, ph) in s.p.chunks_exact(n * cap).enumerate() {
            let vals = &kv.v[self.heads.kv(head) * hd..];
            weighted_sums_rows((ph, cap), n, pos + 1, (vals, nkv * hd), hd, &mut s.y);
            for (yr, sr) in y.chunks_exact_mut(nh * hd).zip(s.y.chunks_exact(hd)) {
                yr[head * hd..(head + 1) * hd].copy_from_slice(sr);
            }
        }
    }
}

/// Each rayon task's buffers, reused from block to block (every value read is written first).
#[derive(Default)]
struct Scratch {
    p: Vec<f32>,
    q: Vec<f32>,
    y: Vec<f32>,
}

/// One layer's attention for a pass's new rows ((sequence, position) each, their keys and
/// values already in `kvs[sequence]`), row r's query at `q[r·stride..]`; blocks in parallel:
/// (rows, nh·hd).
pub(super) fn attention(
    kvs: &[&LayerKv],
    rows: &[(usize, usize)],
    q: &[f32],
    stride: usize,
    heads: Heads,
) -> Vec<f32> {
    let width = heads.nh * heads.hd;
    let layer = Layer { heads, q, stride, kvs };
    let mut y = vec![0f32; rows.len() * width];
    let run = |s: &mut Scratch, (range, yb): (Range<usize>, &mut [f32])| {
        let (seq, pos) = rows[range.start];
        let kv = layer.kvs[seq];
        if range.len() == 1 {
            layer.one(kv, range.start, pos, &mut s.p, yb);
        } else {
            layer.block(kv, range, pos, s, yb);
        }
    };
    let mut parts = Vec::new();
    let mut rest = y.as_mut_slice();
    for range in blocks(rows) {
        let (yb, tail) = rest.split_at_mut(range.len() * width);
        parts.push((range, yb));
        rest = tail;
    }
    if parts.len() < 2 {
        // One block: no hand-off to rayon's threads, which costs more than the block.
        let mut s = Scratch::default();
        parts.into_iter().for_each(|part| run(&mut s, part));
    } else {
        parts.into_par_iter().for_each_init(Scratch::default, run);
    }
    y
}

/// The pass's rows in blocks: runs of up to [`QUERIES`] consecutive positions of one sequence.
fn blocks(rows: &[(usize, usize)]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for r in 1..=rows.len() {
        let joins = rows.get(r).is_some_and(|&(s, pos)| {
            r - start < QUERIES && s == rows[r - 1].0 && pos == rows[r - 1].1 + 1
        });
        if !joins {
            out.push(start..r);
            start = r;
        }
    }
    out
}
