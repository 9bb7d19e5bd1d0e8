//! A Qwen-VL checkpoint (Qwen3-VL or Qwen2.5-VL) as the agent's policy: the tower, the processor
//! and the whole config a text decoder carries when it is a VL model's (`QwenModel::vision`), a
//! screenshot (PNG) read as the processor reads an image, a rendered prompt's `<|image_pad|>`s
//! expanded to each image's token count (grid / merge², as transformers' `Qwen3VLProcessor` and
//! `Qwen2_5_VLProcessor` do), and a turn sampled
//! through the whole model with the seeded draw every decoder shares (`draw::Group`). The tower
//! and the merger hold no variables: nothing of them trains.

use candle_core::DType;
use rand_chacha::ChaCha8Rng;

use crate::decode::{FeatureCache, ImageFeatures, SeqVision};
use crate::draw::{Completion, Group, SampleParams, TokenEvent};
use crate::error::{Result, config_err};
use crate::example::Example;
use crate::models::KvCache;
use crate::models::qwen::QwenModel;
use crate::tokenizer::Tokenizer;

use super::processor::{ImageProcessor, Pixels};
use super::tower::VisionTower;
use super::vl_config::VlConfig;
use super::vl_model::QwenVlModel;

/// The vision side of a Qwen-VL policy.
#[derive(Debug, Clone)]
pub struct VisionSide {
    pub config: VlConfig,
    pub tower: VisionTower,
    pub processor: ImageProcessor,
    /// Images already through the tower, by content (the tower never trains: they stay true
    /// across updates), shared by every clone of this side.
    features: std::sync::Arc<std::sync::Mutex<FeatureCache>>,
}

/// `<|vision_start|><|image_pad|><|vision_end|>`: one image in a message's text, as Qwen3-VL's
/// chat template writes an `{"type": "image"}` part; its pad is expanded after tokenising.
pub const IMAGE_PLACEHOLDER: &str = "<|vision_start|><|image_pad|><|vision_end|>";

impl VisionSide {
    /// `tower` (of the directory `dir` whose config is `config`) with the directory's processor;
    /// `max_pixels` (the recipe's `image_max_pixels`) replaces the processor's pixel budget.
    pub fn new(
        dir: &std::path::Path,
        config: VlConfig,
        tower: VisionTower,
        max_pixels: Option<usize>,
    ) -> Result<VisionSide> {
        let mut processor = ImageProcessor::from_dir(dir)
            .map_err(|e| config_err(format!("{}: {e}", dir.display())))?;
        if let Some(max) = max_pixels {
            processor.max_pixels = max;
        }
        tower.config.check_processor(&processor)?;
        Ok(VisionSide { config, tower, processor, features: Default::default() })
    }

    /// The whole model over the text decoder `text`.
    pub fn model(&self, text: &QwenModel) -> QwenVlModel {
        QwenVlModel { config: self.config.clone(), text: text.clone(), tower: self.tower.clone() }
    }

    /// A PNG (or JPEG) screenshot as the tower reads it.
    pub fn read_image(&self, bytes: &[u8]) -> Result<Pixels> {
        let img = image::load_from_memory(bytes)
            .map_err(|e| config_err(format!("a screenshot is not an image: {e}")))?
            .to_rgb8();
        let (w, h) = (img.width() as usize, img.height() as usize);
        self.processor
            .process(img.as_raw(), w, h, 3)
            .map_err(|e| config_err(format!("a screenshot of {w} × {h}: {e}")))
    }

    /// What the tower makes of `px`, from the cache when this image went through it before.
    pub fn features(&self, px: &Pixels) -> Result<std::sync::Arc<ImageFeatures>> {
        let key = crate::decode::ImageKey::of(px);
        let lock = || self.features.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = lock().get(key) {
            return Ok(f);
        }
        // The tower runs outside the lock: other episodes' images go on meanwhile.
        let made = ImageFeatures::of(&self.tower, px)?;
        Ok(lock().put(made))
    }

    /// Images served by the tower's cache so far (tests and benchmarks).
    pub fn features_reused(&self) -> u64 {
        self.features.lock().unwrap_or_else(std::sync::PoisonError::into_inner).hits()
    }

    /// The plan of `prompt` (pads expanded) holding `images` for the shared decoding batch.
    pub fn plan(&self, prompt: &[u32], images: &[Pixels]) -> Result<SeqVision> {
        let features = images.iter().map(|px| self.features(px)).collect::<Result<Vec<_>>>()?;
        SeqVision::new(prompt, images, features, &self.config)
    }

    /// The `<|image_pad|>` tokens image `px` takes in a prompt.
    pub fn pads(&self, px: &Pixels) -> usize {
        px.grid.tokens(self.config.mrope.merge)
    }

    /// `ids` with each `<|image_pad|>` (one per image, in order) repeated as many times as its
    /// image's tokens; `Err` when the pads and the images do not pair up.
    pub fn expand(&self, ids: &[u32], images: &[Pixels]) -> Result<Vec<u32>> {
        let pad = self.config.mrope.image_token_id;
        let found = ids.iter().filter(|&&t| t == pad).count();
        if found != images.len() {
            return Err(config_err(format!(
                "the prompt holds {found} image placeholder(s) for {} image(s)",
                images.len()
            )));
        }
        let mut next = images.iter();
        let mut out = Vec::with_capacity(ids.len());
        for &t in ids {
            match (t == pad).then(|| next.next()).flatten() {
                Some(px) => out.extend(std::iter::repeat_n(pad, self.pads(px))),
                None => out.push(t),
            }
        }
        Ok(out)
    }

    /// An SFT `example` rendered with one `<|image_pad|>` per image of `images` (in order): each
    /// pad expanded to its image's tokens (no loss on them) and the images attached, cut to
    /// `max_len` tokens as a text example is (its start kept). A cut never splits an image: it
    /// falls before an image whose tokens would not all fit, which leaves the example with the
    /// images after it.
    pub fn expand_example(
        &self,
        example: &Example,
        images: &[Pixels],
        max_len: usize,
    ) -> Result<Example> {
        let pad = self.config.mrope.image_token_id;
        let found = example.tokens.iter().filter(|&&t| t == pad).count();
        if found != images.len() {
            return Err(config_err(format!(
                "the example holds {found} image placeholder(s) for {} image(s)",
                images.len()
            )));
        }
        let mut next = images.iter();
        let (mut tokens, mut weights, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        for (&t, &w) in example.tokens.iter().zip(&example.weights) {
            if t != pad {
                if tokens.len() == max_len {
                    break;
                }
                tokens.push(t);
                weights.push(w);
                continue;
            }
            let Some(px) = next.next() else { break };
            let n = self.pads(px);
            if tokens.len() + n > max_len {
                break;
            }
            tokens.extend(std::iter::repeat_n(pad, n));
            weights.extend(std::iter::repeat_n(0.0, n));
            kept.push(std::sync::Arc::new(px.clone()));
        }
        Ok(Example { tokens, weights, images: kept })
    }
}

/// The tokens that stand for an image in a sequence (`<|vision_start|>`, `<|image_pad|>`,
/// `<|vision_end|>`, `<|video_pad|>`): never drawn in a completion, where they would be read as
/// an image that is not there by the turn's update and the episode's next prompt (a random
/// policy draws them; a trained one gives them no mass). An RL update's log-probs of its samples
/// leave them out too (`TokenBatch::sampled`), so rollout and update read one distribution.
pub fn vision_tokens(c: &VlConfig) -> [u32; 4] {
    [c.vision_start_token_id, c.mrope.image_token_id, c.vision_end_token_id, c.mrope.video_token_id]
}

/// `params.n` completions of `prompt` (pads expanded) with its `images`, drawn as every decoder
/// draws (`draw::Group`: temperature, top-k, top-p, stops, log-probs) from `rng`: the prompt
/// prefilled once through the whole model, each row then continued through its own cache.
pub fn sample_vl(
    vl: &QwenVlModel,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    images: &[Pixels],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<Completion>> {
    sample_vl_observed(vl, tokenizer, prompt, images, params, rng, &mut |_| {})
}

/// As [`sample_vl`], calling `on_token` for every token as soon as it is drawn, in order (what
/// `wrlc serve` streams).
pub fn sample_vl_observed(
    vl: &QwenVlModel,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    images: &[Pixels],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    let mut group = Group::new(0, prompt, params, vl.text.context)?;
    let mut cache = KvCache::new(vl.text.config.num_hidden_layers);
    let (last, delta) = vl.prefill(prompt, images, &mut cache)?;
    let banned = vision_tokens(&vl.config);
    let logits_of = |h: &candle_core::Tensor| -> Result<Vec<f32>> {
        let mut l: Vec<f32> = vl.text.head(h)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
        for &t in &banned {
            if let Some(x) = l.get_mut(t as usize) {
                *x = f32::NEG_INFINITY;
            }
        }
        Ok(l)
    };
    let first = logits_of(&last)?;
    let mut caches = vec![cache; params.n];
    let mut logits = vec![first; params.n];
    while !group.finished() {
        let next = group.draw(&mut logits, params, tokenizer, rng, on_token)?;
        if group.finished() {
            break;
        }
        for (r, tok) in next.iter().enumerate() {
            let Some(tok) = *tok else { continue };
            if group.is_done(r) {
                continue;
            }
            let h = vl.next(tok, delta, &mut caches[r])?;
            logits[r] = logits_of(&h)?;
        }
    }
    group.complete(tokenizer)
}
