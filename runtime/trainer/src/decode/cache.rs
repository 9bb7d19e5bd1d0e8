//! A sequence's cache for decoding: per layer, its keys stored transposed (one row per
//! dimension, one column per position, so a query scores every position in one pass of
//! contiguous loads per dimension) and its values row by row, growing in place as tokens come.

use super::kernels::scores_t;

/// Keys stored transposed, (dims, capacity): dimension `i` of position `j` at `i·cap + j`, so
/// a query's scores against every position are one pass of contiguous loads per dimension.
#[derive(Debug, Clone, Default)]
pub(super) struct KeysT {
    pub(super) data: Vec<f32>,
    dims: usize,
    pub(super) cap: usize,
}

/// Positions per score block: the capacity is a multiple of it, so scores are computed in
/// whole blocks (the kernels' widest registers) and the positions past the last are ignored.
pub(super) const BLOCK: usize = 16;

impl KeysT {
    pub(super) fn new(dims: usize, cap: usize) -> KeysT {
        let cap = cap.next_multiple_of(BLOCK);
        KeysT { data: vec![0f32; dims * cap], dims, cap }
    }

    /// Writes `key` (dims) at position `j`, doubling the capacity when it is full.
    pub(super) fn put(&mut self, j: usize, key: &[f32]) {
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
    pub(super) fn scores(&self, q: &[f32], from: usize, out: &mut [f32]) {
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

/// One layer's cached keys and values of one sequence.
#[derive(Debug, Clone, Default)]
pub(super) struct LayerKv {
    pub(super) k: KeysT,
    /// Values, (positions, width) row-major.
    pub(super) v: Vec<f32>,
    width: usize,
}

impl LayerKv {
    /// Empty, for keys and values `width` wide, with room for `cap` positions.
    pub(super) fn new(width: usize, cap: usize) -> LayerKv {
        LayerKv { k: KeysT::new(width, cap), v: Vec::with_capacity(cap * width), width }
    }

    /// Position `pos`'s key and value (the next position: `pos` is the count so far).
    pub(super) fn push(&mut self, pos: usize, key: &[f32], value: &[f32]) {
        self.k.put(pos, key);
        debug_assert_eq!(self.v.len(), pos * self.width, "values cached out of order");
        self.v.extend_from_slice(value);
    }

    /// Forgets every position from `len` on.
    pub(super) fn truncate(&mut self, len: usize) {
        self.v.truncate(len * self.width);
    }
}
