//! Qwen2.5-VL without Python (#43 item 1), on the tiny one `hf::tiny_vl` writes
//! (`TinyVision::qwen25`): its config read nested or in the Hub's flat layout and refused by name,
//! the model loaded and run with one and with two images (greedy through the cache as full
//! forwards, a batch as its rows, images apart in the tower though they share windows' blocks),
//! window attention that changes the tokens, the trainer's policy path, and the tensors named
//! when they do not fit. (Values against transformers: bench/vision-parity.sh tower25.)

use candle_core::{D, Device, Tensor};

use crate::common::{max_diff, screenshot, with_images};
use wrl_trainer::hf::HfError;
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
use wrl_trainer::models::PretrainedSource;
use wrl_trainer::vision::mrope::MropeLayout;
use wrl_trainer::vision::{ImageProcessor, Pixels, QwenVlModel, VisionTower, VlConfig, VlFamily};

/// Qwen2.5-VL-72B-Instruct's `config.json` as the Hub has it: the text fields flat at the top
/// level, `rope_scaling` of type `mrope`, and the vision config's older `in_chans` and
/// `spatial_patch_size`.
const HUB_72B: &str = r#"{
  "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652,
  "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655,
  "video_token_id": 151656, "hidden_act": "silu", "hidden_size": 8192,
  "initializer_range": 0.02, "intermediate_size": 29568, "max_position_embeddings": 128000,
  "max_window_layers": 80, "model_type": "qwen2_5_vl", "num_attention_heads": 64,
  "num_hidden_layers": 80, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.41.2", "use_cache": true,
  "use_sliding_window": false,
  "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280,
    "intermediate_size": 3456, "num_heads": 16, "in_chans": 3, "out_hidden_size": 8192,
    "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2},
  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
  "vocab_size": 152064
}"#;

fn write(dir: &std::path::Path) {
    let corpus = vec!["click the blue button then type the answer".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    write_vl(dir, &TinySpec::narrow(), &TinyVision::qwen25(), &tok).unwrap();
}

fn load(dir: &std::path::Path) -> QwenVlModel {
    QwenVlModel::load(&PretrainedSource::new(dir), &Device::Cpu).unwrap()
}

/// The largest difference relative to `a`'s largest value: the tiny model's tokens are small
/// (its weights are drawn at 0.02).
fn rel(a: &Tensor, b: &Tensor) -> f32 {
    max_diff(a, b) / a.abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap()
}

fn refused(v: &serde_json::Value) -> String {
    match VlConfig::parse(&v.to_string()) {
        Err(HfError::Field { field, .. }) => field,
        other => panic!("expected a refused field, got {other:?}"),
    }
}

#[test]
fn hub_flat_config_reads_as_transformers_reads_it() {
    let c = VlConfig::parse(HUB_72B).unwrap();
    assert_eq!(c.family, VlFamily::Qwen25Vl);
    assert_eq!((c.text.hidden_size, c.text.num_hidden_layers, c.text.head_dim()), (8192, 80, 128));
    assert!(!c.text.is_qwen3() && c.text.qkv_bias(), "a Qwen2 decoder with q/k/v biases");
    assert_eq!(c.text.rope_theta, 1_000_000.0);
    assert_eq!((c.mrope.section, c.mrope.layout), ([16, 24, 24], MropeLayout::Sectioned));
    assert_eq!(c.mrope.image_token_id, 151_655);
    let v = &c.vision;
    assert_eq!((v.depth, v.hidden_size, v.patch_size, v.window_size), (32, 1280, 14, 112));
    assert_eq!(v.fullatt_block_indexes, vec![7, 15, 23, 31]);
    assert!(v.deepstack_visual_indexes.is_empty() && v.num_position_embeddings == 0);
    // About 0.67 B parameters in the tower (Qwen2.5-VL's ViT with its merger).
    let p = v.parameters();
    assert!((600_000_000..750_000_000).contains(&p), "{p}");

    let hub: serde_json::Value = serde_json::from_str(HUB_72B).unwrap();
    let mut w = hub.clone();
    w["rope_scaling"]["mrope_section"] = serde_json::json!([16, 24, 16]);
    assert_eq!(refused(&w), "rope_scaling.mrope_section");
    let mut w = hub.clone();
    w["rope_scaling"].as_object_mut().unwrap().remove("mrope_section");
    assert_eq!(refused(&w), "rope_scaling.mrope_section");
    let mut w = hub.clone();
    w["hidden_act"] = "gelu".into();
    assert_eq!(refused(&w), "hidden_act");
    let mut w = hub.clone();
    w["frobnicate"] = true.into();
    assert_eq!(refused(&w), "frobnicate");
    let mut w = hub.clone();
    w["head_dim"] = 64.into();
    assert_eq!(refused(&w), "head_dim");
    for (key, value, field) in [
        ("window_size", serde_json::json!(14), "vision_config.window_size"),
        (
            "fullatt_block_indexes",
            serde_json::json!([7, 32]),
            "vision_config.fullatt_block_indexes",
        ),
        ("fullatt_block_indexes", serde_json::json!([7, 7]), "vision_config.fullatt_block_indexes"),
        ("in_chans", serde_json::json!(4), "vision_config.in_chans"),
        ("spatial_patch_size", serde_json::json!(16), "vision_config.spatial_patch_size"),
        ("hidden_act", serde_json::json!("relu"), "vision_config.hidden_act"),
        (
            "deepstack_visual_indexes",
            serde_json::json!([1]),
            "vision_config.deepstack_visual_indexes",
        ),
        ("num_heads", serde_json::json!(7), "vision_config.num_heads"),
        ("out_hidden_size", serde_json::json!(4096), "vision_config.out_hidden_size"),
    ] {
        let mut w = hub.clone();
        w["vision_config"][key] = value;
        assert_eq!(refused(&w), field, "{key}");
    }
    let mut w = hub.clone();
    w["architectures"] = serde_json::json!(["Qwen2_5_VLModel"]);
    assert!(matches!(VlConfig::parse(&w.to_string()), Err(HfError::Architecture { .. })));
}

#[test]
fn nested_config_refuses_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let good = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let c = VlConfig::parse(&good).unwrap();
    assert_eq!((c.family, c.mrope.layout), (VlFamily::Qwen25Vl, MropeLayout::Sectioned));
    assert_eq!(c.mrope.section.iter().sum::<usize>(), c.text.head_dim() / 2);
    let v: serde_json::Value = serde_json::from_str(&good).unwrap();
    let mut w = v.clone();
    w["text_config"]["model_type"] = "qwen3_vl_text".into();
    assert_eq!(refused(&w), "text_config.model_type");
    let mut w = v.clone();
    w["text_config"]["rope_parameters"]["mrope_section"] = serde_json::json!([1, 1]);
    assert_eq!(refused(&w), "text_config.rope_parameters.mrope_section");
    let mut w = v.clone();
    w["text_config"]["rope_parameters"]["rope_type"] = "dynamic".into();
    assert_eq!(refused(&w), "text_config.rope_parameters.rope_type");
    let mut w = v.clone();
    w["vision_config"]["rope_parameters"] = serde_json::json!({"rope_theta": 5.0});
    assert_eq!(refused(&w), "vision_config.rope_parameters");
    let mut w = v.clone();
    w["image_token_id"] = 1_000_000.into();
    assert_eq!(refused(&w), "image_token_id");
    let mut w = v.clone();
    w["hidden_size"] = 64.into();
    assert_eq!(refused(&w), "hidden_size", "a text field beside `text_config` is refused");
    // θ defaults to Qwen2.5-VL's 1 000 000, not the text families' 10 000.
    let mut w = v.clone();
    w["text_config"]["rope_parameters"].as_object_mut().unwrap().remove("rope_theta");
    assert_eq!(VlConfig::parse(&w.to_string()).unwrap().text.rope_theta, 1_000_000.0);
}

#[test]
fn tiny_qwen25_vl_reads_one_and_two_images() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let m = load(dir.path());
    assert_eq!(m.tower.config.family, VlFamily::Qwen25Vl);
    let p = ImageProcessor::from_dir(dir.path()).unwrap();
    m.tower.config.check_processor(&p).unwrap();
    // 224 × 140: a 10 × 16 grid of patches, 5 × 8 merged tokens, windows of 4 × 4 (2 × 2 of them,
    // all partial but one); 90 × 260: 18 × 6 patches.
    let a = p.process(&screenshot(224, 140, 1), 224, 140, 3).unwrap();
    let b = p.process(&screenshot(90, 260, 2), 90, 260, 3).unwrap();
    assert_eq!((a.grid.h, a.grid.w), (10, 16));
    assert!(a.grid.patches() / 4 <= 64 && b.grid.patches() / 4 <= 64, "the pixel budget");

    // One image: greedy through the cache = the argmax of full forwards.
    let one = with_images(&m, &[5, 6], std::slice::from_ref(&a), &[7, 8]);
    let greedy = m.greedy(&one, std::slice::from_ref(&a), 4, &[]).unwrap();
    let mut seq = one.clone();
    for &tok in &greedy {
        let logits = m.logits(&seq, std::slice::from_ref(&a)).unwrap();
        let last = logits.squeeze(0).unwrap().get(seq.len() - 1).unwrap();
        assert_eq!(last.argmax(D::Minus1).unwrap().to_scalar::<u32>().unwrap(), tok);
        seq.push(tok);
    }

    // Two images: each attends to itself only (its windows and its full-attention blocks), so
    // the tower's tokens for b are the same beside a as alone.
    let both = m.tower.forward_images(&[a.clone(), b.clone()]).unwrap();
    let alone = m.tower.forward_images(std::slice::from_ref(&b)).unwrap();
    let na = a.grid.patches() / 4;
    assert_eq!(both.merged.dims(), &[na + b.grid.patches() / 4, m.text.config.hidden_size]);
    let tail = both.merged.narrow(0, na, alone.merged.dim(0).unwrap()).unwrap();
    assert!(rel(&alone.merged, &tail) < 1e-5, "{}", rel(&alone.merged, &tail));
    let two = with_images(&m, &[5], &[a.clone(), b.clone()], &[9]);
    let logits = m.logits(&two, &[a.clone(), b.clone()]).unwrap();
    assert_eq!(logits.dims()[1], two.len());

    // A batch of two rows = each row alone.
    let other = with_images(&m, &[9], std::slice::from_ref(&b), &[4]);
    let other: Vec<u32> =
        other.iter().copied().chain(std::iter::repeat_n(3, two.len() - other.len())).collect();
    let rows: [(&[u32], &[Pixels]); 2] =
        [(&two, &[a.clone(), b.clone()]), (&other, std::slice::from_ref(&b))];
    let (batch, _) = m.hidden(&rows, None).unwrap();
    let (first, _) = m.hidden(&rows[..1], None).unwrap();
    let (second, _) = m.hidden(&rows[1..], None).unwrap();
    assert!(max_diff(&batch.get(0).unwrap(), &first.squeeze(0).unwrap()) < 1e-5);
    assert!(max_diff(&batch.get(1).unwrap(), &second.squeeze(0).unwrap()) < 1e-5);

    // Gradients reach every text parameter.
    let loss = logits.sqr().unwrap().mean_all().unwrap();
    let grads = loss.backward().unwrap();
    let trained = m.text.params.iter().filter(|(_, v)| grads.get(v.as_tensor()).is_some()).count();
    assert_eq!(trained, m.text.params.len());
}

/// Block 0 attends inside its windows: made a full-attention block, the tokens change.
#[test]
fn window_attention_changes_the_tokens() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let p = ImageProcessor::from_dir(dir.path()).unwrap();
    let a = p.process(&screenshot(224, 140, 1), 224, 140, 3).unwrap();
    let windowed = VisionTower::load(dir.path(), &Device::Cpu).unwrap();
    let path = dir.path().join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["vision_config"]["fullatt_block_indexes"] = serde_json::json!([0, 1]);
    std::fs::write(&path, v.to_string()).unwrap();
    let full = VisionTower::load(dir.path(), &Device::Cpu).unwrap();
    let x = windowed.forward_images(std::slice::from_ref(&a)).unwrap().merged;
    let y = full.forward_images(std::slice::from_ref(&a)).unwrap().merged;
    assert!(rel(&x, &y) > 1e-3, "windows made no difference: {}", rel(&x, &y));
    // One window that holds the whole image: windowed = full.
    let small = p.process(&screenshot(100, 60, 3), 100, 60, 3).unwrap();
    assert!(small.grid.h / 2 <= 4 && small.grid.w / 2 <= 4, "{:?}", small.grid);
    let x = windowed.forward_images(std::slice::from_ref(&small)).unwrap().merged;
    let y = full.forward_images(std::slice::from_ref(&small)).unwrap().merged;
    assert!(rel(&x, &y) < 1e-5, "{}", rel(&x, &y));
}

#[test]
fn trainer_loads_a_qwen25_vl_policy() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let t = crate::common::vl_trainer(dir.path(), 3);
    let side = t.model().vision().expect("a VL policy");
    assert_eq!(side.config.family, VlFamily::Qwen25Vl);
    let a = crate::common::screen(dir.path(), 1, (160, 96));
    assert_eq!(side.pads(&a), a.grid.patches() / 4);
}

#[test]
fn tower_tensors_named_when_they_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let path = dir.path().join("model.safetensors");
    let mut all = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    let ln_q = all.remove("model.visual.merger.ln_q.weight").unwrap();
    candle_core::safetensors::save(&all, &path).unwrap();
    let err = VisionTower::load(dir.path(), &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("`model.visual.merger.ln_q.weight`"), "{err}");
    all.insert("model.visual.merger.ln_q.weight".into(), ln_q);
    // A Qwen3-VL tensor in a Qwen2.5-VL tower is not explained by its config.
    all.insert(
        "model.visual.patch_embed.proj.bias".into(),
        Tensor::zeros(32, candle_core::DType::F32, &Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&all, &path).unwrap();
    let err = VisionTower::load(dir.path(), &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("patch_embed.proj.bias` is not a tensor of the Qwen2.5-VL"), "{err}");
}
