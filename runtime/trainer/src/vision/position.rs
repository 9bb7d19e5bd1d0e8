//! Where each patch row of the vision tower sits, as transformers' `vision_utils` works it out
//! from `grid_thw`: its (row, column) in the image with rows in merge-window order (the order the
//! processor writes them), the four taps and weights that bilinearly resample the learned square
//! position table to the image's grid (`get_vision_interpolation_indices_and_weights`, bilinear,
//! `align_corners = True`, in f32 as torch computes it), the axial RoPE angles, and the
//! attention segments (`cu_seqlens`: one per frame); and Qwen2.5-VL's attention windows
//! (`get_vision_window_index`: merged tokens regrouped window by window, and each window's
//! segment).

use super::size::Grid;

/// (row, column) of every patch of `grid`, frame after frame, in merge-window order: window
/// (block row, block column) in raster order, then the `merge × merge` patches inside it.
pub fn patch_coords(grid: &Grid, merge: usize) -> Vec<(usize, usize)> {
    let merge = merge.max(1);
    let blocks_w = grid.w / merge;
    let frame: Vec<(usize, usize)> = (0..grid.h * grid.w)
        .map(|within| {
            let in_col = within % merge;
            let in_row = (within / merge) % merge;
            let block_col = (within / (merge * merge)) % blocks_w.max(1);
            let block_row = within / (merge * merge * blocks_w.max(1));
            (block_row * merge + in_row, block_col * merge + in_col)
        })
        .collect();
    (0..grid.t).flat_map(|_| frame.iter().copied()).collect()
}

/// The two taps along one axis of length `size` into a table side of `side`, and their weights
/// (`_interpolation_axis_taps_weights`, bilinear, aligned corners): f32 throughout.
fn axis_taps(index: usize, size: usize, side: usize) -> ([usize; 2], [f32; 2]) {
    let src = (index as f32 * (side - 1) as f32) / (size.max(2) - 1) as f32;
    let floor = src.floor();
    let mut taps = [0usize; 2];
    let mut weights = [0f32; 2];
    for (o, (tap, weight)) in taps.iter_mut().zip(weights.iter_mut()).enumerate() {
        let raw = floor as i64 + o as i64;
        *tap = raw.clamp(0, side as i64 - 1) as usize;
        let distance = (src - floor - o as f32).abs();
        *weight = (1.0 - distance).max(0.0);
    }
    (taps, weights)
}

/// The rows of the learned `side × side` position table each patch of `grids` mixes and with
/// which weights: taps (h0,w0), (h0,w1), (h1,w0), (h1,w1), weights the products of the axes'.
pub fn interpolation(grids: &[Grid], side: usize, merge: usize) -> (Vec<[u32; 4]>, Vec<[f32; 4]>) {
    let side = side.max(1);
    let mut indices = Vec::new();
    let mut weights = Vec::new();
    for grid in grids {
        for (row, col) in patch_coords(grid, merge) {
            let (ht, hw) = axis_taps(row, grid.h, side);
            let (wt, ww) = axis_taps(col, grid.w, side);
            let mut idx = [0u32; 4];
            let mut wgt = [0f32; 4];
            for a in 0..2 {
                for b in 0..2 {
                    idx[a * 2 + b] = (ht[a] * side + wt[b]) as u32;
                    wgt[a * 2 + b] = hw[a] * ww[b];
                }
            }
            indices.push(idx);
            weights.push(wgt);
        }
    }
    (indices, weights)
}

/// cos and sin of the axial RoPE for every patch of `grids`, `head_dim` each: the row's angles
/// over `head_dim / 4` frequencies, then the column's, the pair repeated (rotate-half layout).
/// `inv_freq` in f32 as transformers computes it: 1 / θ^(2i / (head_dim / 2)).
pub fn rotary(grids: &[Grid], merge: usize, head_dim: usize, theta: f64) -> (Vec<f32>, Vec<f32>) {
    let spatial = head_dim / 2;
    let inv_freq: Vec<f32> = (0..spatial / 2)
        .map(|i| 1.0 / (theta as f32).powf((2 * i) as f32 / spatial as f32))
        .collect();
    let mut cos = Vec::new();
    let mut sin = Vec::new();
    for grid in grids {
        for (row, col) in patch_coords(grid, merge) {
            let angles: Vec<f32> = [row, col]
                .iter()
                .flat_map(|&p| inv_freq.iter().map(move |f| p as f32 * f))
                .collect();
            for _ in 0..2 {
                cos.extend(angles.iter().map(|a| a.cos()));
                sin.extend(angles.iter().map(|a| a.sin()));
            }
        }
    }
    (cos, sin)
}

/// Boundaries of the attention segments: each frame of each grid attends only to itself.
pub fn cu_seqlens(grids: &[Grid]) -> Vec<usize> {
    let mut out = vec![0];
    let mut at = 0;
    for grid in grids {
        for _ in 0..grid.t {
            at += grid.h * grid.w;
            out.push(at);
        }
    }
    out
}

/// Qwen2.5-VL's windows: the order merged tokens (`merge × merge` patches each) take, window
/// after window, and the windows' boundaries in patches. A window is `window_size / merge /
/// patch` merged tokens a side; each frame of each grid is cut from its top-left corner, the last
/// row and column of windows holding what is left; tokens inside a window stay in raster order.
pub fn window_index(
    grids: &[Grid],
    merge: usize,
    window_size: usize,
    patch: usize,
) -> (Vec<usize>, Vec<usize>) {
    let merge = merge.max(1);
    let side = (window_size / merge / patch.max(1)).max(1);
    let unit = merge * merge;
    let mut order = Vec::new();
    let mut bounds = vec![0];
    let mut base = 0;
    for grid in grids {
        let (h, w) = (grid.h / merge, grid.w / merge);
        for t in 0..grid.t {
            for wr in 0..h.div_ceil(side) {
                for wc in 0..w.div_ceil(side) {
                    for r in wr * side..((wr + 1) * side).min(h) {
                        for c in wc * side..((wc + 1) * side).min(w) {
                            order.push(base + t * h * w + r * w + c);
                        }
                    }
                    bounds.push(order.len() * unit);
                }
            }
        }
        base += grid.t * h * w;
    }
    (order, bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2 × 4 grid, merge 2: window (0, 0) holds (0,0) (0,1) (1,0) (1,1), window (0, 1) the
    /// next two columns.
    #[test]
    fn coords_follow_merge_windows() {
        let g = Grid { t: 1, h: 2, w: 4 };
        assert_eq!(
            patch_coords(&g, 2),
            vec![(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
        );
        let g2 = Grid { t: 2, h: 2, w: 2 };
        assert_eq!(patch_coords(&g2, 2).len(), 8);
        assert_eq!(cu_seqlens(&[g, g2]), vec![0, 8, 12, 16]);
    }

    /// A 6 × 10 grid of patches (3 × 5 merged tokens) in windows of 2 × 2 merged tokens: rows
    /// {0,1} and {2}, columns {0,1}, {2,3}, {4}; then a second image after it.
    #[test]
    fn windows_cut_from_the_corner() {
        let g = Grid { t: 1, h: 6, w: 10 };
        let (order, bounds) = window_index(&[g, Grid { t: 1, h: 2, w: 2 }], 2, 56, 14);
        assert_eq!(&order[..4], &[0, 1, 5, 6]);
        assert_eq!(&order[4..8], &[2, 3, 7, 8]);
        assert_eq!(&order[8..15], &[4, 9, 10, 11, 12, 13, 14]);
        assert_eq!(order[15], 15);
        assert_eq!(bounds, vec![0, 16, 32, 40, 48, 56, 60, 64]);
    }
}
