//! Qwen3-VL's multimodal RoPE on the text side, as transformers 5.25 computes it: the three
//! position rows (time, height, width) of a token sequence whose images stand as runs of
//! `<|image_pad|>` (`Qwen3VLModel.get_rope_index`: text counts on from where the last image
//! left off, an image's tokens sit on its merged grid, and the text after it resumes at
//! start + max(h, w) / merge), and which row each RoPE frequency reads (interleaved: frequency j
//! takes the height row when j ≡ 1 mod 3 and j < 3·section[1], the width row when j ≡ 2 mod 3 and
//! j < 3·section[2], the time row otherwise; `Qwen3VLTextRotaryEmbedding`). Qwen2.5-VL's index is
//! the same for images (its `second_per_grid_ts` and `tokens_per_second` space only a video's
//! frames); its frequencies read the rows in contiguous sections instead (the first section[0]
//! the time row, the next section[1] the height row, the rest the width row;
//! `apply_multimodal_rotary_pos_emb`).

use std::fmt;

use serde_json::Value as Json;

use crate::hf::HfError;

use super::size::Grid;

/// Why a sequence's positions cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MropeError {
    /// More runs of image tokens than images, or fewer.
    ImageCount { runs: usize, images: usize },
    /// A run of image tokens whose length is not its image's merged token count.
    RunLength { image: usize, run: usize, tokens: usize },
    /// A grid that is not whole merge windows.
    Grid { image: usize, grid: Grid, merge: usize },
    /// A video token: videos (one grid per frame, timestamps between them) are not supported.
    Video { at: usize },
}

impl fmt::Display for MropeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MropeError::ImageCount { runs, images } => write!(
                f,
                "the text holds {runs} runs of image tokens but {images} images were given"
            ),
            MropeError::RunLength { image, run, tokens } => {
                write!(f, "image {image} stands as {run} image tokens but its grid makes {tokens}")
            }
            MropeError::Grid { image, grid, merge } => write!(
                f,
                "image {image}: grid {}×{}×{} is not whole {merge}×{merge} merge windows",
                grid.t, grid.h, grid.w
            ),
            MropeError::Video { at } => {
                write!(f, "token {at} is a video token; video inputs are not supported")
            }
        }
    }
}

impl std::error::Error for MropeError {}

/// A sequence's three position rows and the offset generation continues from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RopeIndex {
    /// Time, height and width position of every token.
    pub positions: [Vec<i64>; 3],
    /// max position + 1 − length: the next token's position is its index plus this.
    pub delta: i64,
}

/// How the RoPE frequencies are shared out among the three position rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MropeLayout {
    /// Qwen3-VL: T H W T H W …, each row up to its section's count, then time.
    Interleaved,
    /// Qwen2.5-VL: section[0] frequencies of time, then section[1] of height, then width.
    Sectioned,
}

/// The settings of a Qwen-VL `config.json` the multimodal RoPE reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MropeConfig {
    /// `image_token_id` (`<|image_pad|>`, 151655 by default).
    pub image_token_id: u32,
    /// `video_token_id` (151656 by default); refused in a sequence.
    pub video_token_id: u32,
    /// `vision_config.spatial_merge_size` (2 by default).
    pub merge: usize,
    /// `text_config.rope_parameters.mrope_section` ([24, 20, 20] by default). Its
    /// `mrope_interleaved` is not read: transformers' Qwen3-VL interleaves whatever it says.
    /// Qwen2.5-VL's is read by `qwen25.rs`.
    pub section: [usize; 3],
    /// Interleaved (Qwen3-VL, what `from_json` gives) or in sections (Qwen2.5-VL).
    pub layout: MropeLayout,
}

impl MropeConfig {
    /// Reads the settings from a whole Qwen3-VL `config.json` text.
    pub fn parse(text: &str) -> Result<MropeConfig, HfError> {
        MropeConfig::from_json(&crate::hf::config::parse_json(text)?)
    }

    /// Reads the settings from a parsed Qwen3-VL `config.json`.
    pub fn from_json(v: &Json) -> Result<MropeConfig, HfError> {
        let bad = |field: &str, why: String| HfError::Field { field: field.into(), why };
        let id = |k: &str, default: u32| -> Result<u32, HfError> {
            match v.get(k).filter(|x| !x.is_null()) {
                None => Ok(default),
                Some(x) => x
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(k, format!("{x} is not a token id"))),
            }
        };
        let merge = match v.pointer("/vision_config/spatial_merge_size").filter(|x| !x.is_null()) {
            None => 2,
            Some(x) => x.as_u64().filter(|&n| n > 0).map(|n| n as usize).ok_or_else(|| {
                bad("vision_config.spatial_merge_size", format!("{x} is not a positive integer"))
            })?,
        };
        let name = "text_config.rope_parameters.mrope_section";
        let section = match v.pointer("/text_config/rope_parameters/mrope_section") {
            None | Some(Json::Null) => [24, 20, 20],
            Some(x) => {
                let n: Option<Vec<usize>> = x
                    .as_array()
                    .map(|a| a.iter().filter_map(Json::as_u64).map(|n| n as usize).collect());
                match n.as_deref() {
                    Some(&[t, h, w]) => [t, h, w],
                    _ => return Err(bad(name, format!("{x} is not three integers (t, h, w)"))),
                }
            }
        };
        Ok(MropeConfig {
            image_token_id: id("image_token_id", 151_655)?,
            video_token_id: id("video_token_id", 151_656)?,
            merge,
            section,
            layout: MropeLayout::Interleaved,
        })
    }
}

/// `get_rope_index` for one unpadded sequence of `ids` whose images (`grids`, in order) stand as
/// runs of `image_token`; `video_token` is refused.
pub fn rope_index(
    ids: &[u32],
    image_token: u32,
    video_token: u32,
    grids: &[Grid],
    merge: usize,
) -> Result<RopeIndex, MropeError> {
    if let Some(at) = ids.iter().position(|&t| t == video_token) {
        return Err(MropeError::Video { at });
    }
    let merge = merge.max(1);
    let mut positions: [Vec<i64>; 3] = Default::default();
    let mut current = 0i64;
    let mut image = 0usize;
    let mut i = 0usize;
    while i < ids.len() {
        let is_image = ids[i] == image_token;
        let run = ids[i..].iter().take_while(|&&t| (t == image_token) == is_image).count();
        if !is_image {
            for row in positions.iter_mut() {
                row.extend((0..run as i64).map(|p| current + p));
            }
            current += run as i64;
        } else {
            let grid = *grids
                .get(image)
                .ok_or(MropeError::ImageCount { runs: image + 1, images: grids.len() })?;
            if grid.h % merge != 0 || grid.w % merge != 0 {
                return Err(MropeError::Grid { image, grid, merge });
            }
            let (t, h, w) = (grid.t, grid.h / merge, grid.w / merge);
            if run != t * h * w {
                return Err(MropeError::RunLength { image, run, tokens: t * h * w });
            }
            for ti in 0..t {
                for hi in 0..h {
                    for wi in 0..w {
                        positions[0].push(current + ti as i64);
                        positions[1].push(current + hi as i64);
                        positions[2].push(current + wi as i64);
                    }
                }
            }
            current += h.max(w) as i64;
            image += 1;
        }
        i += run;
    }
    if image != grids.len() {
        return Err(MropeError::ImageCount { runs: image, images: grids.len() });
    }
    let max = positions.iter().flatten().copied().max().unwrap_or(-1);
    Ok(RopeIndex { delta: max + 1 - ids.len() as i64, positions })
}

/// Which position row (0 time, 1 height, 2 width) each of the `half` = head_dim / 2 frequencies
/// reads under `layout` of `mrope_section`.
pub fn mrope_axes(section: [usize; 3], half: usize, layout: MropeLayout) -> Vec<usize> {
    (0..half)
        .map(|j| match layout {
            MropeLayout::Interleaved => match j % 3 {
                1 if j < 3 * section[1] => 1,
                2 if j < 3 * section[2] => 2,
                _ => 0,
            },
            MropeLayout::Sectioned if j < section[0] => 0,
            MropeLayout::Sectioned if j < section[0] + section[1] => 1,
            MropeLayout::Sectioned => 2,
        })
        .collect()
}

/// cos and sin (tokens × head_dim, rotate-half layout) of `index`'s positions, in f32 as
/// transformers computes them: each frequency's angle from the row `mrope_axes` gives it.
pub fn mrope_cos_sin(
    index: &RopeIndex,
    inv_freq: &[f32],
    section: [usize; 3],
    layout: MropeLayout,
) -> (Vec<f32>, Vec<f32>) {
    let axes = mrope_axes(section, inv_freq.len(), layout);
    let n = index.positions[0].len();
    let mut cos = Vec::with_capacity(n * 2 * inv_freq.len());
    let mut sin = Vec::with_capacity(n * 2 * inv_freq.len());
    for tok in 0..n {
        let angles: Vec<f32> =
            inv_freq.iter().zip(&axes).map(|(f, &a)| index.positions[a][tok] as f32 * f).collect();
        for _ in 0..2 {
            cos.extend(angles.iter().map(|a| a.cos()));
            sin.extend(angles.iter().map(|a| a.sin()));
        }
    }
    (cos, sin)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen3-VL's `mrope_section` [24, 20, 20] over 64 frequencies: T H W T H W … up to 60, then
    /// time for the last four.
    #[test]
    fn interleaved_axes() {
        let axes = mrope_axes([24, 20, 20], 64, MropeLayout::Interleaved);
        assert_eq!(&axes[..7], &[0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(&axes[57..], &[0, 1, 2, 0, 0, 0, 0]);
        assert_eq!(axes.iter().filter(|&&a| a == 1).count(), 20);
    }

    /// Qwen2.5-VL's [16, 24, 24] over 64 frequencies: 16 of time, 24 of height, 24 of width, in
    /// that order (transformers splits cos by `mrope_section * 2` and takes chunk i from row i % 3).
    #[test]
    fn sectioned_axes() {
        let axes = mrope_axes([16, 24, 24], 64, MropeLayout::Sectioned);
        assert_eq!(axes.iter().position(|&a| a == 1), Some(16));
        assert_eq!(axes.iter().position(|&a| a == 2), Some(40));
        assert_eq!(axes.iter().filter(|&&a| a == 0).count(), 16);
        assert_eq!(axes[63], 2);
    }

    #[test]
    fn config_defaults_and_refusal() {
        let c = MropeConfig::parse(r#"{"model_type": "qwen3_vl"}"#).unwrap();
        assert_eq!((c.image_token_id, c.merge, c.section), (151_655, 2, [24, 20, 20]));
        let bad = r#"{"text_config": {"rope_parameters": {"mrope_section": [24, 40]}}}"#;
        assert!(matches!(
            MropeConfig::parse(bad),
            Err(HfError::Field { field, .. }) if field == "text_config.rope_parameters.mrope_section"
        ));
    }
}
