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
}

/// Parameter counts by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Token (and learned position) embeddings.
    pub embeddings: u64,
    /// The transformer blocks and the final norm (and the tiny model's copy head).
    pub blocks: u64,
    pub lm_head: u64,
    pub total: u64,
}

/// Bytes one training stage holds, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub weights: u64,
    /// A frozen copy of the weights for the KL term (RL with `kl > 0`), else 0.
    pub reference: u64,
    pub gradients: u64,
    pub optimizer: u64,
    pub activations: u64,
    pub total: u64,
}

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
            params: Params { embeddings, blocks: total - embeddings - lm_head, lm_head, total },
            tied: c.tie_word_embeddings,
            gated: true,
        }
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
            params: Params { embeddings, blocks, lm_head, total: embeddings + blocks + lm_head },
            tied: false,
            gated: false,
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
        let attention = (2 * q + 2 * kv) + 2 * q + 2 * self.heads * len + q + h;
        let mlp = if self.gated { 4 * self.intermediate + h } else { 2 * self.intermediate + h };
        norms + attention + mlp + h
    }

    /// Bytes of a training step over `seqs` sequences of `len` tokens in one forward, in a
    /// dtype of `width` bytes, training `trainable` parameters. The logits are kept in the
    /// dtype and their log-softmax in f32. `reference`: a frozen f32 copy of the weights is kept.
    /// `checkpointing`: only each layer's input is kept, and one layer's intermediates exist at
    /// a time (`models/recompute.rs`).
    pub fn memory(
        &self,
        width: u64,
        trainable: u64,
        seqs: u64,
        len: u64,
        reference: bool,
        checkpointing: bool,
    ) -> Memory {
        let master = self.params.total.saturating_mul(4);
        let cast = if width < 4 { self.params.total.saturating_mul(width) } else { 0 };
        let weights = master.saturating_add(cast);
        let reference = if reference { master } else { 0 };
        let gradients = trainable.saturating_mul(4);
        let optimizer = trainable.saturating_mul(2 * 4);
        let tokens = seqs.saturating_mul(len);
        let layers = if checkpointing {
            self.layers * self.hidden + self.per_token_layer(len)
        } else {
            self.layers * self.per_token_layer(len)
        };
        let per_token = (layers + self.hidden) * width + self.vocab * (width + 4);
        let activations = tokens.saturating_mul(per_token);
        let total = weights
            .saturating_add(reference)
            .saturating_add(gradients)
            .saturating_add(optimizer)
            .saturating_add(activations);
        Memory { weights, reference, gradients, optimizer, activations, total }
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

    #[test]
    fn frozen_parts_have_no_gradient_and_no_optimiser_state() {
        let s = Shape::of_tiny(&TinyConfig::default());
        let all = s.memory(4, s.trainable(false, false), 2, 64, false, false);
        let frozen = s.memory(4, s.trainable(true, true), 2, 64, false, false);
        assert_eq!(all.weights, frozen.weights);
        assert_eq!(all.activations, frozen.activations);
        let fewer = s.params.embeddings + s.params.lm_head;
        assert_eq!(all.gradients - frozen.gradients, fewer * 4);
        assert_eq!(all.optimizer - frozen.optimizer, fewer * 8);
        assert_eq!(all.total, all.weights + all.gradients + all.optimizer + all.activations);
        let kl = s.memory(4, s.trainable(false, false), 2, 64, true, false);
        assert_eq!((kl.reference, kl.total - all.total), (all.weights, all.weights));
        // Half width: f32 masters plus their half-width cast; f32 gradients and moments.
        let half = s.memory(2, s.trainable(false, false), 2, 64, false, false);
        assert_eq!(half.weights * 2, all.weights * 3);
        assert_eq!((half.gradients, half.optimizer), (all.gradients, all.optimizer));
        let half_kl = s.memory(2, s.trainable(false, false), 2, 64, true, false);
        assert_eq!(half_kl.reference, all.weights);
        // Activations grow with tokens, faster than linearly with length (attention scores).
        let long = s.memory(4, 0, 2, 128, false, false);
        assert!(long.activations > 2 * all.activations);
        assert_eq!(s.memory(4, 0, 4, 64, false, false).activations, 2 * all.activations);
        // Checkpointing keeps one layer's intermediates and every layer's input.
        let re = s.memory(4, s.trainable(false, false), 2, 64, false, true);
        assert_eq!((re.weights, re.gradients), (all.weights, all.gradients));
        let (keep, one) = (s.layers * s.per_token_layer(64), s.per_token_layer(64));
        assert_eq!(
            all.activations - re.activations,
            2 * 64 * 4 * (keep - one - s.layers * s.hidden)
        );
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
