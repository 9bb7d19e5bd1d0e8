//! `config.json` read as transformers reads it: defaults, RoPE and windows, refusals by name.

use super::*;
use serde_json::json;

fn base() -> Json {
    json!({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "rope_theta": 1e6,
           "rope_scaling": null, "torch_dtype": "bfloat16", "sliding_window": null})
}

#[test]
fn a_transformers_4_config_reads() {
    let c = QwenConfig::from_json(&base()).unwrap();
    assert_eq!((c.arch, c.head_dim, c.rope_theta), (Arch::Qwen3, 16, 1e6));
    assert_eq!(c.rope, RopeKind::Default);
    assert_eq!(c.windows, vec![None, None]);
    assert_eq!(
        c.parameters(),
        300 * 32 * 2 + 32 + 2 * (32 * 64 + 2 * 32 * 32 + 64 * 32 + 3 * 32 * 48 + 64 + 32)
    );
}

#[test]
fn rope_and_windows_follow_transformers() {
    let mut v = base();
    v["rope_parameters"] = json!({"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e4});
    v["rope_scaling"] = Json::Null;
    v["use_sliding_window"] = json!(true);
    v["sliding_window"] = json!(8);
    v["max_window_layers"] = json!(1);
    v["max_position_embeddings"] = json!(128);
    let c = QwenConfig::from_json(&v).unwrap();
    assert_eq!(c.rope_theta, 1e4);
    assert!(matches!(c.rope, RopeKind::Yarn { original_max: 128, .. }));
    assert_eq!(c.windows, vec![None, Some(8)]);
    v["layer_types"] = json!(["sliding_attention", "full_attention"]);
    assert_eq!(QwenConfig::from_json(&v).unwrap().windows, vec![Some(8), None]);
}

#[test]
fn what_changes_the_maths_is_refused_by_name() {
    let refused = |k: &str, x: Json| {
        let mut v = base();
        v[k] = x;
        match QwenConfig::from_json(&v).unwrap_err() {
            HfError::Field { field, .. } => field,
            HfError::Architecture { message, .. } => message,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(refused("hidden_act", json!("gelu")), "hidden_act");
    assert_eq!(refused("attention_dropout", json!(0.1)), "attention_dropout");
    assert_eq!(
        refused("rope_scaling", json!({"type": "dynamic", "factor": 2.0})),
        "rope_scaling.rope_type"
    );
    assert_eq!(refused("quantization_config", json!({})), "quantization_config");
    assert!(refused("model_type", json!("qwen2_5_vl")).contains("vision-language"));
    assert!(refused("architectures", json!(["Qwen3ForSequenceClassification"])).contains("causal"));
}
