//! Which family's reader reads a Qwen-VL `config.json`'s `vision_config`: Qwen3-VL's
//! (`vision_config.rs`) or Qwen2.5-VL's (`qwen25.rs`), by the file's `model_type` — in a file of
//! its own so that the two readers import nothing of each other's dispatch.

use serde_json::{Map, Value as Json};

use super::vision_config::{VisionConfig, VlFamily, field};
use crate::hf::HfError;

impl VisionConfig {
    /// Reads the `vision_config` of a whole Qwen3-VL `config.json` text.
    pub fn parse(text: &str) -> Result<VisionConfig, HfError> {
        VisionConfig::of_config(crate::hf::config::as_object(&crate::hf::config::parse_json(
            text,
        )?)?)
    }

    /// Reads the `vision_config` of a whole Qwen-VL `config.json`'s top-level object (Qwen3-VL
    /// or Qwen2.5-VL, by its `model_type`).
    pub fn of_config(obj: &Map<String, Json>) -> Result<VisionConfig, HfError> {
        let model_type = obj.get("model_type").and_then(Json::as_str);
        let Some(family) = model_type.and_then(VlFamily::of_model_type) else {
            return Err(HfError::Architecture {
                message: format!(
                    "`model_type` is {}, not `qwen3_vl` or `qwen2_5_vl`: the vision towers here \
                     are Qwen3-VL's and Qwen2.5-VL's",
                    model_type.map_or("missing".to_string(), |m| format!("`{m}`"))
                ),
                backend: None,
            });
        };
        match obj.get("vision_config") {
            Some(Json::Object(m)) => match family {
                VlFamily::Qwen3Vl => VisionConfig::from_map(m),
                VlFamily::Qwen25Vl => super::qwen25::vision_config(m),
            },
            Some(x) => Err(field("", format!("{x} is not an object"))),
            None => Err(HfError::Field {
                field: "vision_config".into(),
                why: "missing: a Qwen-VL config.json describes its vision tower there".into(),
            }),
        }
    }
}
