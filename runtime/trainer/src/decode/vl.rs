//! Vision-language prompts in the shared decoding batch: a Qwen-VL policy's turn decodes with
//! every other episode's, on the row-stable kernels, instead of alone through candle. The tower
//! runs once per image content (its merged tokens and DeepStack features kept by
//! [`FeatureCache`], keyed by the pixels: the tower never trains), the text decoder reads each
//! image row's embedding from them and places every row on its multimodal RoPE positions
//! (`vision::mrope`), and the prefix cache reuses a cached prompt only as far as its images are
//! the same images ([`SeqVision::agree`]): two turns whose tokens match but whose screenshots
//! differ share the text before the first differing screenshot, never its rows.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use candle_core::DType;

use crate::error::{Result, config_err};
use crate::vision::mrope::{RopeIndex, mrope_axes, rope_index};
use crate::vision::{Pixels, VisionTower, VlConfig};

/// An image's content as 128 bits: two salted hashes of its grid and every value's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKey([u64; 2]);

impl ImageKey {
    /// The key of `px`.
    pub fn of(px: &Pixels) -> ImageKey {
        let half = |salt: u64| {
            let mut h = std::hash::DefaultHasher::new();
            salt.hash(&mut h);
            (px.grid.t, px.grid.h, px.grid.w, px.rows, px.cols).hash(&mut h);
            for v in &px.values {
                v.to_bits().hash(&mut h);
            }
            h.finish()
        };
        ImageKey([half(0x5eed_0001), half(0x5eed_0002)])
    }
}

/// What the tower makes of one image, as the text decoder reads it: the merged tokens (tokens ×
/// hidden, row-major) and one such block per DeepStack layer (Qwen3-VL; none for Qwen2.5-VL).
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFeatures {
    pub key: ImageKey,
    pub tokens: usize,
    pub merged: Vec<f32>,
    pub deepstack: Vec<Vec<f32>>,
}

impl ImageFeatures {
    /// Runs `px` alone through `tower`.
    pub fn of(tower: &VisionTower, px: &Pixels) -> Result<ImageFeatures> {
        let out = tower.forward_images(std::slice::from_ref(px))?;
        let flat = |t: &candle_core::Tensor| -> Result<Vec<f32>> {
            Ok(t.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?)
        };
        let tokens = out.merged.dims2()?.0;
        let deepstack = out.deepstack.iter().map(flat).collect::<Result<Vec<_>>>()?;
        Ok(ImageFeatures { key: ImageKey::of(px), tokens, merged: flat(&out.merged)?, deepstack })
    }
}

/// Images already through the tower, least recently used first out.
#[derive(Debug, Default)]
pub struct FeatureCache {
    entries: Vec<(u64, Arc<ImageFeatures>)>,
    clock: u64,
    hits: u64,
}

/// Images kept at most: enough for every concurrent episode's last few screenshots. A
/// 1280 × 1000 screenshot under OpenWebRL's budget is 252 tokens of the 4B model's 2,560 values,
/// about 10 MB with its three DeepStack blocks: at most about 330 MB for that model (the tiny
/// models' are a few KB).
const IMAGES: usize = 32;

impl FeatureCache {
    /// The kept features of the image `key`, if any.
    pub fn get(&mut self, key: ImageKey) -> Option<Arc<ImageFeatures>> {
        self.clock += 1;
        let e = self.entries.iter_mut().find(|(_, f)| f.key == key)?;
        e.0 = self.clock;
        self.hits += 1;
        Some(e.1.clone())
    }

    /// Keeps `made` (the oldest out past [`IMAGES`]) and returns it, or the same image's
    /// features another caller kept meanwhile.
    pub fn put(&mut self, made: ImageFeatures) -> Arc<ImageFeatures> {
        self.clock += 1;
        if let Some(e) = self.entries.iter_mut().find(|(_, f)| f.key == made.key) {
            e.0 = self.clock;
            return e.1.clone();
        }
        let made = Arc::new(made);
        self.entries.push((self.clock, made.clone()));
        if self.entries.len() > IMAGES {
            let oldest = self.entries.iter().enumerate().min_by_key(|(_, (t, _))| *t);
            if let Some(i) = oldest.map(|(i, _)| i) {
                self.entries.swap_remove(i);
            }
        }
        made
    }

    /// Images served without the tower so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }
}

/// What a VL model's text decoder needs beyond a text model's: which position row each RoPE
/// frequency reads, the image token, and the tokens never drawn (`vision::vision_tokens`).
#[derive(Debug, Clone)]
pub(crate) struct VlText {
    pub(crate) axes: Vec<usize>,
    pub(crate) image_token: u32,
    pub(crate) banned: [u32; 4],
}

impl VlText {
    pub(crate) fn new(c: &VlConfig, frequencies: usize) -> VlText {
        VlText {
            axes: mrope_axes(c.mrope.section, frequencies, c.mrope.layout),
            image_token: c.mrope.image_token_id,
            banned: crate::vision::vision_tokens(c),
        }
    }

    /// One row's cos and sin at `pos` (time, height, width), as `mrope_cos_sin` and
    /// `QwenVlModel`'s tables compute them (f32 angles, times the attention factor).
    pub(crate) fn rope_row(
        &self,
        inv: &[f32],
        factor: f32,
        pos: [i64; 3],
        out: (&mut Vec<f32>, &mut Vec<f32>),
    ) {
        let angles: Vec<f32> =
            inv.iter().zip(&self.axes).map(|(f, &a)| pos[a] as f32 * f).collect();
        for _ in 0..2 {
            out.0.extend(angles.iter().map(|a| a.cos() * factor));
            out.1.extend(angles.iter().map(|a| a.sin() * factor));
        }
    }
}

/// A VL prompt's plan: where its images stand (first row of each run, its features) and its
/// rows' position rows; a row past the prompt sits at its index + delta on all three.
#[derive(Debug, Clone)]
pub struct SeqVision {
    images: Vec<(usize, Arc<ImageFeatures>)>,
    index: RopeIndex,
}

impl SeqVision {
    /// The plan of `prompt` (pads expanded) whose images, in order, are `images` (through the
    /// tower as `features`), for a model of `config`.
    pub fn new(
        prompt: &[u32],
        images: &[Pixels],
        features: Vec<Arc<ImageFeatures>>,
        config: &VlConfig,
    ) -> Result<SeqVision> {
        let m = &config.mrope;
        let grids: Vec<_> = images.iter().map(|p| p.grid).collect();
        let index = rope_index(prompt, m.image_token_id, m.video_token_id, &grids, m.merge)
            .map_err(|e| config_err(e.to_string()))?;
        let starts = (0..prompt.len()).filter(|&i| {
            prompt[i] == m.image_token_id && (i == 0 || prompt[i - 1] != m.image_token_id)
        });
        let placed: Vec<(usize, Arc<ImageFeatures>)> = starts.zip(features).collect();
        for (k, (at, f)) in placed.iter().enumerate() {
            let run = prompt[*at..].iter().take_while(|&&t| t == m.image_token_id).count();
            if run != f.tokens {
                return Err(config_err(format!(
                    "image {k} stands as {run} image tokens and the tower made {}",
                    f.tokens
                )));
            }
        }
        if placed.len() != images.len() {
            return Err(config_err(format!(
                "{} images for {} runs of image tokens",
                images.len(),
                placed.len()
            )));
        }
        Ok(SeqVision { images: placed, index })
    }

    /// Row `pos`'s position rows.
    pub(crate) fn position(&self, pos: usize) -> [i64; 3] {
        let [t, h, w] = &self.index.positions;
        match (t.get(pos), h.get(pos), w.get(pos)) {
            (Some(&t), Some(&h), Some(&w)) => [t, h, w],
            _ => [pos as i64 + self.index.delta; 3],
        }
    }

    /// The image whose run holds row `pos`, and the row's place in it.
    pub(crate) fn image_at(&self, pos: usize) -> Option<(Arc<ImageFeatures>, usize)> {
        let k = self.images.partition_point(|(at, _)| *at <= pos).checked_sub(1)?;
        let (at, f) = &self.images[k];
        (pos < at + f.tokens).then(|| (f.clone(), pos - at))
    }

    /// How many of the first `n` rows (tokens already known equal) also hold the same images
    /// as `other`'s: up to the first image, standing before `n`, that is not the same image at
    /// the same row.
    pub(crate) fn agree(&self, n: usize, other: Option<&SeqVision>) -> usize {
        let theirs = other.map_or(&[][..], |o| &o.images[..]);
        for (k, (at, f)) in self.images.iter().enumerate() {
            if *at >= n {
                break;
            }
            match theirs.get(k) {
                Some((b, g)) if b == at && g.key == f.key => {}
                _ => return *at,
            }
        }
        // Images of `other`'s standing where this sequence has none.
        theirs
            .iter()
            .skip(self.images.len())
            .map(|(at, _)| *at)
            .filter(|&at| at < n)
            .min()
            .unwrap_or(n)
    }
}
