//! What training a model costs in memory before it is built (`wrlc estimate`): its parameter
//! count by part, and the bytes of weights, gradients, optimiser state and activations at a
//! stage's forward batch, per dtype, as this trainer lays them out (`precision.rs`): f32 master
//! weights, plus, in bf16 or f16, the copy of them a forward casts and keeps for its backward;
//! f32 gradients; AdamW's two f32 moments per trained parameter (`optim.rs`); frozen parts
//! have no gradient and no optimiser state; the reference is an f32 copy. Activations are the tensors one
//! forward keeps for its backward, counted per op of the forward as written (`models/*.rs`, no
//! recomputation, attention scores materialised): an estimate of the peak, not a measurement.

use serde::Serialize;

use crate::hf::QwenConfig;
use crate::models::{Positions, TinyConfig};
use crate::tokenizer::byte_specials;

/// The sizes that decide a decoder's memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub vocab: u64,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub intermediate: u64,
    /// Parameters by part; `lm_head` is 0 where it is tied to the embeddings.
    pub params: Params,
    /// Whether `lm_head` is the embedding matrix (freezing one freezes the other).
    pub tied: bool,
    /// Whether the MLP is gated (SwiGLU: three matrices) rather than two with a GELU.
    pub gated: bool,
    /// Whether attention runs on candle's ops (Qwen: scores, mask and softmax materialised
    /// and kept for the backward) rather than the fused kernel (the tiny model's, which keeps
    /// one probability matrix per head).
    pub candle_attention: bool,
}

/// Calibration of a Qwen training step on candle's ops against the resident peak measured by
/// `examples/memory_fit.rs` (docs/trainer.md "A memory plan"), 40 shapes, widths 128–384,
/// 128–1,024 tokens, with and without recomputation: a layer's forward keeps six
/// score-sized tensors (q·kᵀ, scaled, masked; the softmax's shifted scores, exponentials and
/// output), the backward makes about seven more at once, each other intermediate a forward
/// keeps is about three per value the model's code names, and a token costs about 80 KiB
/// besides (index and position tensors, the loss's rows, allocator slack).
const KEPT_SCORES: u64 = 6;
const TRANSIENT_SCORES: u64 = 7;
const VALUES_PER_NAMED: u64 = 3;
const PER_TOKEN_BYTES: u64 = 80 * 1024;

/// Parameter counts by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Token (and learned position) embeddings.
    pub embeddings: u64,
    /// The transformer blocks and the final norm (and the tiny model's copy head).
    pub blocks: u64,
    pub lm_head: u64,
    /// A vision-language model's tower and mergers, frozen wherever this runtime trains it
    /// (absent for a text model).
    #[serde(skip_serializing_if = "is_zero")]
    pub vision: u64,
    pub total: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Bytes one training stage holds, by kind. The peak is the parts held throughout (weights,
/// reference, optimiser state, the decoder's copy) plus the larger of an update's (gradients and
/// activations) and a rollout's (the key/value caches): a rollout runs between updates, and a
/// step's gradients are dropped once the optimiser has applied them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// f32 master weights (and in bf16/f16 the cast copy a forward keeps), LoRA adapters too.
    pub weights: u64,
    /// A frozen copy of the weights for the KL term (RL with `kl > 0`), else 0.
    pub reference: u64,
    pub gradients: u64,
    pub optimizer: u64,
    pub activations: u64,
    /// The batched CPU decoder's own f32 copy of the (merged) weights, kept from the first
    /// rollout after an update to the next update (RL on the CPU in f32), else 0.
    pub decoder: u64,
    /// Keys and values of the episodes a rollout decodes at once and of the prefix cache, else 0.
    pub kv_cache: u64,
    pub total: u64,
}

/// What one stage's training step holds, beside the model's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Sequences one forward holds, and their length in tokens.
    pub sequences: u64,
    pub length: u64,
    /// Full-weight parameters that train (0 under LoRA: only the adapters do).
    pub trainable: u64,
    /// A frozen f32 copy of the weights for the KL term.
    pub reference: bool,
    /// Each layer recomputed in the backward pass (`models/recompute.rs`).
    pub checkpointing: bool,
    /// LoRA adapters: their rank and PEFT target names, where the stage trains adapters.
    pub lora: Option<(u64, Vec<String>)>,
    /// The stage's rollouts, where it samples episodes (RL).
    pub rollout: Option<Rollout>,
}

/// How an RL stage decodes its episodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rollout {
    /// Episodes decoded at once (the envs' `concurrency`).
    pub sequences: u64,
    /// An episode's longest sequence in tokens.
    pub length: u64,
    /// Whether the model is on the CPU: computing in f32 there, the batched CPU decoder runs
    /// the rollouts, with its own f32 copy of the weights and f32 caches; otherwise candle's
    /// path does, with caches in the compute dtype.
    pub on_cpu: bool,
}

/// Tokens the decoder's prefix cache keeps at most (`decode/prefix.rs`).
const PREFIX_TOKENS: u64 = 16_384;

/// The dtypes a model trains in, with their width in bytes.
pub const DTYPES: [(&str, u64); 3] = [("f32", 4), ("bf16", 2), ("f16", 2)];

impl Shape {
    /// A Qwen2/Qwen3 decoder as its `config.json` says.
    pub fn of_qwen(c: &QwenConfig) -> Shape {
        let (v, h) = (c.vocab_size as u64, c.hidden_size as u64);
        let embeddings = v * h;
        let lm_head = if c.tie_word_embeddings { 0 } else { v * h };
        let total = c.parameters();
        Shape {
            vocab: v,
            hidden: h,
            layers: c.num_hidden_layers as u64,
            heads: c.num_attention_heads as u64,
            kv_heads: c.num_key_value_heads as u64,
            head_dim: c.head_dim() as u64,
            intermediate: c.intermediate_size as u64,
            params: Params {
                embeddings,
                blocks: total - embeddings - lm_head,
                lm_head,
                vision: 0,
                total,
            },
            tied: c.tie_word_embeddings,
            gated: true,
            candle_attention: true,
        }
    }

    /// A Qwen3-VL checkpoint: its text model, and the tower's parameters as weights that never
    /// train (this runtime refuses a stage that does not freeze the tower and the merger).
    pub fn of_qwen_vl(c: &crate::vision::vl_config::VlConfig) -> Shape {
        let mut s = Shape::of_qwen(&c.text);
        s.params.vision = c.vision.parameters();
        s.params.total += s.params.vision;
        s
    }

    /// The embedded byte-level model (`models/tiny.rs`; `copy.rs` for the copy head).
    pub fn of_tiny(c: &TinyConfig) -> Shape {
        let (v, d) = (byte_specials::VOCAB as u64, c.d_model as u64);
        let m = d * c.mlp_ratio as u64;
        let positions = if c.positions == Positions::Learned { c.context as u64 * d } else { 0 };
        let embeddings = v * d + positions;
        // ln1, qkv, proj, ln2, fc, proj: weights and biases.
        let layer = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (m * d + m) + (d * m + d);
        let copy = if c.copy { 2 * d * d + 3 * v * d + d + 1 + v } else { 0 };
        let blocks = c.layers as u64 * layer + 2 * d + copy;
        let lm_head = v * d;
        let heads = c.heads.max(1) as u64;
        Shape {
            vocab: v,
            hidden: d,
            layers: c.layers as u64,
            heads,
            kv_heads: heads,
            head_dim: d / heads,
            intermediate: m,
            params: Params {
                embeddings,
                blocks,
                lm_head,
                vision: 0,
                total: embeddings + blocks + lm_head,
            },
            tied: false,
            gated: false,
            candle_attention: false,
        }
    }

    /// Parameters that train when the embeddings and/or `lm_head` are frozen (tied: freezing
    /// either freezes the shared matrix).
    pub fn trainable(&self, frozen_embeddings: bool, frozen_head: bool) -> u64 {
        let p = &self.params;
        let emb_frozen = frozen_embeddings || (self.tied && frozen_head);
        let mut n = p.blocks;
        if !emb_frozen {
            n += p.embeddings;
        }
        if !frozen_head {
            n += p.lm_head;
        }
        n
    }

    /// Values one forward keeps per token of one layer, for a sequence of `len` tokens: the
    /// residual and norm inputs and outputs, q/k/v (and the rotated q/k, and k/v repeated to
    /// every query head), the attention scores and their softmax (one row of `len` per head),
    /// the attention output, and the MLP's inputs, activations and product.
    fn per_token_layer(&self, len: u64) -> u64 {
        let (h, q, kv) = (self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim);
        let norms = 2 * 2 * h;
        // Candle's attention is counted apart, per score matrix (`scores`).
        let scores = if self.candle_attention { 0 } else { 2 * self.heads * len };
        let attention = (2 * q + 2 * kv) + 2 * q + scores + q + h;
        let mlp = if self.gated { 4 * self.intermediate + h } else { 2 * self.intermediate + h };
        norms + attention + mlp + h
    }

    /// The (out, in) sizes of a decoder layer's linear layer by its PEFT name, as
    /// `lora::target_shape` reads them from a config; `None` for a name no layer has.
    pub fn linear(&self, target: &str) -> Option<(u64, u64)> {
        let (d, q, kv, i) = (
            self.hidden,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
            self.intermediate,
        );
        Some(match target {
            "q_proj" => (q, d),
            "k_proj" | "v_proj" => (kv, d),
            "o_proj" => (d, q),
            "gate_proj" | "up_proj" if self.gated => (i, d),
            "down_proj" if self.gated => (d, i),
            _ => return None,
        })
    }

    /// Parameters of rank-`rank` adapters on `targets` in every layer: r·(in + out) each.
    pub fn lora_params(&self, rank: u64, targets: &[String]) -> u64 {
        let per_layer: u64 = targets
            .iter()
            .filter_map(|t| self.linear(t))
            .map(|(o, i)| rank.saturating_mul(o + i))
            .sum();
        per_layer.saturating_mul(self.layers)
    }

    /// Bytes of a training step of `step`, in a dtype of `width` bytes. The logits are kept in
    /// the dtype and their log-softmax in f32. Under `checkpointing` only each layer's input is
    /// kept, and one layer's intermediates exist at a time (`models/recompute.rs`). LoRA adds
    /// its adapters (trained: f32 masters, cast copy, gradients and moments) and, per token and
    /// adapted layer, the low-rank path's two products.
    pub fn memory(&self, width: u64, step: &Step) -> Memory {
        let (rank, targets) = step.lora.clone().unwrap_or((0, Vec::new()));
        let adapters = self.lora_params(rank, &targets);
        let params = self.params.total.saturating_add(adapters);
        let master = params.saturating_mul(4);
        let cast = if width < 4 { params.saturating_mul(width) } else { 0 };
        let weights = master.saturating_add(cast);
        let reference = if step.reference { self.params.total.saturating_mul(4) } else { 0 };
        let trained = step.trainable.saturating_add(adapters);
        let gradients = trained.saturating_mul(4);
        let optimizer = trained.saturating_mul(2 * 4);
        let tokens = step.sequences.saturating_mul(step.length);
        let low_rank: u64 =
            targets.iter().filter_map(|t| self.linear(t)).map(|(o, _)| rank + o).sum();
        let one = self.per_token_layer(step.length) + low_rank;
        let kept = if step.checkpointing { 1 } else { self.layers };
        let (one, overhead) = if self.candle_attention {
            (VALUES_PER_NAMED * one, PER_TOKEN_BYTES)
        } else {
            (one, 0)
        };
        let layers = if step.checkpointing { self.layers * self.hidden + one } else { kept * one };
        let per_token = (layers + self.hidden) * width + self.vocab * (width + 4) + overhead;
        let activations =
            tokens.saturating_mul(per_token).saturating_add(self.scores(width, step, kept));
        let (decoder, kv_cache) = match &step.rollout {
            Some(r) => self.rollout(width, r),
            None => (0, 0),
        };
        let total = weights
            .saturating_add(reference)
            .saturating_add(optimizer)
            .saturating_add(decoder)
            .saturating_add(gradients.saturating_add(activations).max(kv_cache));
        Memory { weights, reference, gradients, optimizer, activations, decoder, kv_cache, total }
    }

    /// Candle's attention scores (Qwen): per kept layer the six score-sized tensors of its
    /// forward (three in the dtype, the softmax's three in f32) and its f32 causal mask, and the
    /// backward's transient ones (f32 gradients); the fused kernel's are in the per-token count.
    fn scores(&self, width: u64, step: &Step, kept: u64) -> u64 {
        if !self.candle_attention {
            return 0;
        }
        let (len, seqs) = (step.length, step.sequences);
        let matrix = seqs.saturating_mul(self.heads).saturating_mul(len).saturating_mul(len);
        let half = KEPT_SCORES / 2;
        let per_layer =
            matrix.saturating_mul(half * width + half * 4).saturating_add(len * len * 4);
        per_layer.saturating_mul(kept).saturating_add(matrix.saturating_mul(TRANSIENT_SCORES * 4))
    }

    /// A rollout's decoder copy of the weights and its caches: per token and layer a key and a
    /// value of `kv_heads × head_dim`, for every episode decoded at once and the prefix cache.
    fn rollout(&self, width: u64, r: &Rollout) -> (u64, u64) {
        let cpu_decoder = r.on_cpu && width == 4;
        let (decoder, kv_width) =
            if cpu_decoder { (self.params.total.saturating_mul(4), 4) } else { (0, width) };
        let tokens = r
            .sequences
            .saturating_mul(r.length)
            .saturating_add(PREFIX_TOKENS.min(r.length.saturating_mul(32)));
        let per_token = self.layers * 2 * self.kv_heads * self.head_dim * kv_width;
        (decoder, tokens.saturating_mul(per_token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use rand::SeedableRng;

    fn built(c: &TinyConfig) -> u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let m = crate::models::tiny::TinyModel::new(c, &Device::Cpu, &mut rng).unwrap();
        m.params.iter().map(|(_, v)| v.elem_count() as u64).sum()
    }

    #[test]
    fn the_tiny_count_is_the_built_models() {
        for (positions, copy) in
            [(Positions::Learned, false), (Positions::Alibi, false), (Positions::Alibi, true)]
        {
            let c = TinyConfig {
                layers: 3,
                d_model: 48,
                heads: 4,
                context: 96,
                positions,
                copy,
                ..TinyConfig::default()
            };
            assert_eq!(Shape::of_tiny(&c).params.total, built(&c), "{positions:?} copy {copy}");
        }
    }

    #[test]
    fn the_qwen_count_is_the_written_models() {
        for (arch, tie) in [(crate::hf::Arch::Qwen2, false), (crate::hf::Arch::Qwen3, true)] {
            let dir = tempfile::tempdir().unwrap();
            let spec =
                crate::hf::tiny::TinySpec { arch, tie, ..crate::hf::tiny::TinySpec::narrow() };
            let source = crate::hf::tiny::TokenizerSource::Generated {
                corpus: vec!["click the button".into()],
                merges: 8,
            };
            crate::hf::tiny::write(dir.path(), &spec, &source).unwrap();
            let text = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
            let shape = Shape::of_qwen(&QwenConfig::parse(&text).unwrap());
            let bytes = std::fs::read(dir.path().join("model.safetensors")).unwrap();
            let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
            let written: u64 =
                st.tensors().iter().map(|(_, t)| t.shape().iter().product::<usize>() as u64).sum();
            assert_eq!(shape.params.total, written, "{arch:?}");
            assert_eq!(shape.tied, tie);
            let p = shape.params;
            assert_eq!(p.embeddings + p.blocks + p.lm_head, p.total);
        }
    }

    /// A Qwen3-VL's or Qwen2.5-VL's count is the text model's and the tower's, each equal to
    /// what the tiny writer puts in the checkpoint under `model.language_model.*` and
    /// `model.visual.*`.
    #[test]
    fn a_vl_shape_counts_the_written_tower_and_text_model() {
        let qwen3 = crate::hf::tiny_vl::TinyVision {
            deepstack: vec![0, 1],
            ..crate::hf::tiny_vl::TinyVision::default()
        };
        for vision in [qwen3, crate::hf::tiny_vl::TinyVision::qwen25()] {
            let dir = tempfile::tempdir().unwrap();
            let spec = crate::hf::tiny::TinySpec::narrow();
            let source = crate::hf::tiny::TokenizerSource::Generated {
                corpus: vec!["click the button".into()],
                merges: 8,
            };
            crate::hf::tiny_vl::write_vl(dir.path(), &spec, &vision, &source).unwrap();
            let text = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
            let c = crate::vision::vl_config::VlConfig::parse(&text).unwrap();
            assert_eq!(c.family, vision.family);
            let shape = Shape::of_qwen_vl(&c);
            let bytes = std::fs::read(dir.path().join("model.safetensors")).unwrap();
            let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
            let count = |prefix: &str| -> u64 {
                st.tensors()
                    .iter()
                    .filter(|(n, _)| n.starts_with(prefix))
                    .map(|(_, t)| t.shape().iter().product::<usize>() as u64)
                    .sum()
            };
            assert_eq!(shape.params.vision, count("model.visual."), "{:?}", vision.family);
            assert_eq!(shape.params.total, count(""), "{:?}", vision.family);
            let p = shape.params;
            assert_eq!(p.embeddings + p.blocks + p.lm_head + p.vision, p.total);
            // The tower never trains: what a stage trains is the text model's.
            assert_eq!(shape.trainable(false, false), p.total - p.vision);
        }
    }

    fn step(trainable: u64, sequences: u64, length: u64, reference: bool, re: bool) -> Step {
        Step {
            sequences,
            length,
            trainable,
            reference,
            checkpointing: re,
            lora: None,
            rollout: None,
        }
    }

    #[test]
    fn frozen_parts_have_no_gradient_and_no_optimiser_state() {
        let s = Shape::of_tiny(&TinyConfig::default());
        let all = s.memory(4, &step(s.trainable(false, false), 2, 64, false, false));
        let frozen = s.memory(4, &step(s.trainable(true, true), 2, 64, false, false));
        assert_eq!(all.weights, frozen.weights);
        assert_eq!(all.activations, frozen.activations);
        let fewer = s.params.embeddings + s.params.lm_head;
        assert_eq!(all.gradients - frozen.gradients, fewer * 4);
        assert_eq!(all.optimizer - frozen.optimizer, fewer * 8);
        assert_eq!(all.total, all.weights + all.gradients + all.optimizer + all.activations);
        let kl = s.memory(4, &step(s.trainable(false, false), 2, 64, true, false));
        assert_eq!((kl.reference, kl.total - all.total), (all.weights, all.weights));
        // Half width: f32 masters plus their half-width cast; f32 gradients and moments.
        let half = s.memory(2, &step(s.trainable(false, false), 2, 64, false, false));
        assert_eq!(half.weights * 2, all.weights * 3);
        assert_eq!((half.gradients, half.optimizer), (all.gradients, all.optimizer));
        let half_kl = s.memory(2, &step(s.trainable(false, false), 2, 64, true, false));
        assert_eq!(half_kl.reference, all.weights);
        // Activations grow with tokens, faster than linearly with length (attention scores).
        let long = s.memory(4, &step(0, 2, 128, false, false));
        assert!(long.activations > 2 * all.activations);
        assert_eq!(s.memory(4, &step(0, 4, 64, false, false)).activations, 2 * all.activations);
        // Checkpointing keeps one layer's intermediates and every layer's input.
        let re = s.memory(4, &step(s.trainable(false, false), 2, 64, false, true));
        assert_eq!((re.weights, re.gradients), (all.weights, all.gradients));
        let (keep, one) = (s.layers * s.per_token_layer(64), s.per_token_layer(64));
        assert_eq!(
            all.activations - re.activations,
            2 * 64 * 4 * (keep - one - s.layers * s.hidden)
        );
    }

    /// The adapters counted are the ones `lora.rs` attaches: r·(in + out) per adapted layer.
    #[test]
    fn lora_and_rollouts_are_counted() {
        let c = QwenConfig::parse(
            r#"{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300,
                "tie_word_embeddings": true}"#,
        )
        .unwrap();
        let s = Shape::of_qwen(&c);
        let all: Vec<String> =
            ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
                .map(String::from)
                .to_vec();
        let mut want = 0;
        for t in &all {
            let (o, i) = crate::lora::target_shape(&c, t).unwrap();
            assert_eq!(s.linear(t), Some((o as u64, i as u64)), "{t}");
            want += 4 * (o + i) as u64 * 3;
        }
        assert_eq!(s.lora_params(4, &all), want);
        assert_eq!(s.linear("c_attn"), None);
        // Under LoRA only the adapters have gradients and moments; the base stays in memory.
        let full = s.memory(4, &step(s.params.total, 1, 64, false, true));
        let mut lora = step(0, 1, 64, false, true);
        lora.lora = Some((4, all.clone()));
        let m = s.memory(4, &lora);
        assert_eq!(m.weights, full.weights + want * 4);
        assert_eq!((m.gradients, m.optimizer), (want * 4, want * 8));
        assert!(m.activations > full.activations);
        // A rollout on the CPU decoder: an f32 copy of the weights, f32 caches for every
        // episode at once and the prefix cache; the caches and an update's gradients and
        // activations are never held together.
        let mut rl = step(s.params.total, 1, 64, false, true);
        rl.rollout = Some(Rollout { sequences: 8, length: 64, on_cpu: true });
        let r = s.memory(4, &rl);
        let per_token = 3 * 2 * 2 * 16 * 4;
        assert_eq!(r.decoder, s.params.total * 4);
        assert_eq!(r.kv_cache, (8 * 64 + 32 * 64) * per_token);
        let update = r.gradients + r.activations;
        assert_eq!(r.total, r.weights + r.optimizer + r.decoder + update.max(r.kv_cache));
        rl.rollout = Some(Rollout { sequences: 8, length: 64, on_cpu: false });
        let r = s.memory(2, &rl);
        let cpu_half = s.memory(
            2,
            &Step { rollout: Some(Rollout { on_cpu: true, ..rl.rollout.unwrap() }), ..rl.clone() },
        );
        assert_eq!(cpu_half, r, "bf16 on the CPU decodes on candle's path");
        assert_eq!((r.decoder, r.kv_cache), (0, (8 * 64 + 32 * 64) * per_token / 2));
    }

    #[test]
    fn a_tied_head_freezes_with_the_embeddings() {
        let c = QwenConfig::parse(
            r#"{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300,
                "tie_word_embeddings": true}"#,
        )
        .unwrap();
        let s = Shape::of_qwen(&c);
        assert_eq!(s.params.lm_head, 0);
        assert_eq!(s.trainable(false, true), s.params.blocks);
        assert_eq!(s.trainable(true, false), s.params.blocks);
    }
}
