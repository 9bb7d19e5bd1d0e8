//! What every model's decoding pass shares: a forward cut into passes of at most
//! [`PASS_ROWS`] rows, and the ways a pass shares its rows out among rayon's threads (a row's
//! numbers are the same whichever thread runs it).

use rayon::prelude::*;

use super::Sequence;
use crate::error::Result;

/// Rows one pass advances at most: a longer feed (many prompts at once) runs as several passes,
/// one after another, so each pass's activations stay in the cache.
const PASS_ROWS: usize = 256;

/// Feeds `feeds[s]` (at least one token, within the `ctx`) to `seqs[s]` in passes of at most
/// [`PASS_ROWS`] rows, each run by `pass` (which returns each of its sequences' scores after
/// its last new row), and returns each sequence's scores after its last new token.
pub(super) fn in_passes<S: Sequence>(
    seqs: &mut [&mut S],
    feeds: &[&[u32]],
    ctx: usize,
    mut pass: impl FnMut(&mut [&mut S], &[&[u32]]) -> Vec<Vec<f32>>,
) -> Result<Vec<Vec<f32>>> {
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
        let mut part: Vec<&mut S> = seqs
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| plan.iter().any(|p| p.0 == *i))
            .map(|(_, seq)| &mut **seq)
            .collect();
        let part_feeds: Vec<&[u32]> = plan.iter().map(|&(i, a, b)| &feeds[i][a..b]).collect();
        for (&(i, _, end), scores) in plan.iter().zip(pass(&mut part, &part_feeds)) {
            if end == feeds[i].len() {
                out[i] = scores;
            }
        }
    }
    Ok(out)
}

/// `f(seq, r, pos)` for every row `r` of the pass (at `pos` of `seq`), each sequence's rows in
/// order, sequences in parallel where there are several: a row writes to its own sequence only.
pub(super) fn each_row<S: Send>(
    seqs: &mut [&mut S],
    rows: &[(usize, usize)],
    f: impl Fn(&mut S, usize, usize) + Sync,
) {
    // The pass lists each sequence's rows together, in order: sequence s has rows
    // `start[s]..start[s + 1]`.
    let mut start = vec![0usize; seqs.len() + 1];
    for &(s, _) in rows {
        start[s + 1] += 1;
    }
    for s in 0..seqs.len() {
        start[s + 1] += start[s];
    }
    let one = |(s, seq): (usize, &mut &mut S)| {
        for (r, &(_, pos)) in rows.iter().enumerate().take(start[s + 1]).skip(start[s]) {
            f(seq, r, pos);
        }
    };
    if seqs.len() < 2 {
        seqs.iter_mut().enumerate().for_each(one);
    } else {
        seqs.par_iter_mut().enumerate().for_each(one);
    }
}

/// `f` over `x`'s rows of `width`, blocks of rows shared out among rayon's threads where
/// there are enough rows to be worth the hand-off (each row's numbers are the same either way).
pub(super) fn by_rows(x: &mut [f32], width: usize, f: impl Fn(&mut [f32]) + Sync + Send) {
    let rows = x.len() / width.max(1);
    let threads = rayon::current_num_threads().max(1);
    if rows < 32 || threads == 1 {
        return f(x);
    }
    x.par_chunks_mut(rows.div_ceil(threads) * width).for_each(f);
}
