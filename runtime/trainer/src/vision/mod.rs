//! Vision-language inputs: what a Qwen-VL checkpoint's image processor makes of a screenshot
//! (`processor.rs`, transformers' `Qwen2VLImageProcessor`; `bicubic.rs` PIL's bicubic resize), the
//! sizes it implies (`size.rs`: `smart_resize` and the image's token count), Qwen3-VL's vision
//! tower (`vision_config.rs` its config, `position.rs` where each patch sits, `weights.rs` its
//! tensors read from the shards alone, `tower.rs` the blocks, `merger.rs` the patch and DeepStack
//! mergers), and the text side's multimodal RoPE (`mrope.rs`: the position rows of a sequence
//! with image placeholders), and the whole model (`vl_config.rs` a Qwen3-VL `config.json`,
//! `vl_model.rs` the tower's tokens spliced into the text decoder with DeepStack), and the model
//! as an agent's policy (`policy.rs`: screenshots read, image pads expanded, turns sampled).

mod bicubic;
mod merger;
pub mod mrope;
pub mod policy;
pub mod position;
pub mod processor;
pub mod size;
mod tower;
pub mod vision_config;
pub mod vl_config;
pub mod vl_model;
mod weights;

pub use bicubic::resize as resize_bicubic;
pub use merger::Merger;
pub use policy::{IMAGE_PLACEHOLDER, VisionSide, sample_vl, sample_vl_observed, vision_tokens};
pub use processor::{ImageProcessor, Pixels, ProcessorError};
pub use size::{Grid, SizeError, smart_resize};
pub use tower::{VisionOutput, VisionTower};
pub use vision_config::{VisionAct, VisionConfig};
pub use vl_config::VlConfig;
pub use vl_model::QwenVlModel;
