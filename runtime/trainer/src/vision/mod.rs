//! Vision-language inputs: what a Qwen-VL checkpoint's image processor makes of a screenshot
//! (`processor.rs`, transformers' `Qwen2VLImageProcessor`; `bicubic.rs` PIL's bicubic resize), the
//! sizes it implies (`size.rs`: `smart_resize` and the image's token count), the vision towers of
//! Qwen3-VL and Qwen2.5-VL (`vision_config.rs` the config, `qwen25.rs` what Qwen2.5-VL's config
//! says differently, `vision_read.rs` which of the two reads a file, `position.rs` where each patch
//! sits and Qwen2.5-VL's attention windows, `weights.rs` the tensors read from the shards alone,
//! `tower.rs` the blocks, `merger.rs` the patch and DeepStack mergers), and the text side's
//! multimodal RoPE (`mrope.rs`: the position rows of a sequence with image placeholders,
//! interleaved or in sections), and the whole model (`vl_config.rs` a Qwen-VL `config.json`,
//! `vl_model.rs` the tower's tokens spliced into the text decoder, with Qwen3-VL's DeepStack), and
//! the model as an agent's policy (`policy.rs`: screenshots read, image pads expanded, turns
//! sampled).

mod bicubic;
mod fast;
mod merger;
pub mod mrope;
pub mod policy;
pub mod position;
pub mod processor;
mod qwen25;
pub mod size;
mod tower;
pub mod vision_config;
mod vision_read;
pub mod vl_config;
pub mod vl_model;
mod weights;

pub use bicubic::resize as resize_bicubic;
pub use merger::Merger;
pub use policy::{IMAGE_PLACEHOLDER, VisionSide, sample_vl, sample_vl_observed, vision_tokens};
pub use processor::{ImageProcessor, Pixels, ProcessorError};
pub use size::{Grid, SizeError, smart_resize};
pub use tower::{VisionOutput, VisionTower};
pub use vision_config::{VisionAct, VisionConfig, VlFamily};
pub use vl_config::VlConfig;
pub use vl_model::QwenVlModel;
