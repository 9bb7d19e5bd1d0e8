//! Qwen3-VL's vision tower without Python: the vision config's refusals by name, the position
//! table's interpolation taps and the RoPE angles worked out by hand, and a tiny tower written
//! here (deterministic weights) run on two images: output shapes, each image attending only to
//! itself, and the checkpoint errors that name the tensor. (Values against transformers:
//! bench/vision-parity.sh tower.)

use std::path::Path;

use candle_core::{Device, Tensor};
use wrl_trainer::hf::HfError;
use wrl_trainer::vision::position::{interpolation, patch_coords, rotary};
use wrl_trainer::vision::{Grid, ImageProcessor, VisionConfig, VisionTower};

const VISION: &str = r#"{"depth": 2, "hidden_size": 16, "intermediate_size": 24, "num_heads": 2,
    "patch_size": 2, "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 12,
    "num_position_embeddings": 9, "deepstack_visual_indexes": [1],
    "hidden_act": "gelu_pytorch_tanh", "in_channels": 3, "initializer_range": 0.02,
    "model_type": "qwen3_vl_vision", "rope_parameters": {"rope_theta": 10000.0, "rope_type": "axial"}}"#;

fn config_json(vision: &str) -> String {
    format!(r#"{{"model_type": "qwen3_vl", "vision_config": {vision}}}"#)
}

fn with(key_value: &str) -> String {
    config_json(&VISION.replacen('{', &format!("{{{key_value}, "), 1))
}

fn refused_field(text: &str) -> String {
    match VisionConfig::parse(text) {
        Err(HfError::Field { field, .. }) => field,
        other => panic!("expected a refused field, got {other:?}"),
    }
}

#[test]
fn vision_config_honours_or_refuses_by_name() {
    let c = VisionConfig::parse(&config_json(VISION)).unwrap();
    assert_eq!((c.depth, c.head_dim(), c.position_side(), c.patch_values()), (2, 8, 3, 24));
    assert_eq!(c.deepstack_visual_indexes, vec![1]);
    // transformers' aliases.
    let aliased = VisionConfig::parse(&config_json(
        r#"{"num_hidden_layers": 3, "num_attention_heads": 2, "hidden_size": 16,
            "deepstack_visual_indexes": []}"#,
    ))
    .unwrap();
    assert_eq!((aliased.depth, aliased.num_heads), (3, 2));

    assert_eq!(refused_field(&with(r#""window_size": 112"#)), "vision_config.window_size");
    assert_eq!(
        refused_field(&with(r#""fullatt_block_indexes": [3]"#)),
        "vision_config.fullatt_block_indexes"
    );
    let act = with(r#""hidden_act": "relu""#).replace(r#""hidden_act": "gelu_pytorch_tanh","#, "");
    assert_eq!(refused_field(&act), "vision_config.hidden_act");
    let deep =
        VISION.replace(r#""deepstack_visual_indexes": [1]"#, r#""deepstack_visual_indexes": [2]"#);
    assert_eq!(refused_field(&config_json(&deep)), "vision_config.deepstack_visual_indexes");
    let square =
        VISION.replace(r#""num_position_embeddings": 9"#, r#""num_position_embeddings": 10"#);
    assert_eq!(refused_field(&config_json(&square)), "vision_config.num_position_embeddings");
    let rope = VISION.replace(r#""rope_type": "axial""#, r#""rope_type": "yarn""#);
    assert_eq!(refused_field(&config_json(&rope)), "vision_config.rope_parameters.rope_type");
    assert_eq!(
        refused_field(&with(r#""patch_size": [2, 2]"#).replacen(r#""patch_size": 2,"#, "", 1)),
        "vision_config.patch_size"
    );
    assert_eq!(refused_field(&with(r#""head_dim": 4"#)), "vision_config.head_dim");
    assert!(matches!(
        VisionConfig::parse(r#"{"model_type": "qwen2_vl", "vision_config": {}}"#),
        Err(HfError::Architecture { .. })
    ));
}

/// A 2 × 4 grid on a 3 × 3 table, merge 2: rows map to 0 and 2, columns to 0, ⅔, 1⅓, 2.
#[test]
fn position_taps_worked_by_hand() {
    let g = Grid { t: 1, h: 2, w: 4 };
    let (idx, w) = interpolation(&[g], 3, 2);
    // Merge-window order: (0,0) (0,1) (1,0) (1,1) (0,2) (0,3) (1,2) (1,3).
    assert_eq!(idx[0], [0, 1, 3, 4]);
    assert_eq!(w[0], [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(idx[1], [0, 1, 3, 4]);
    let third = 2.0f32 / 3.0;
    assert!((w[1][0] - (1.0 - third)).abs() < 1e-6 && (w[1][1] - third).abs() < 1e-6);
    assert_eq!(idx[2], [6, 7, 6, 7]);
    assert_eq!(w[2], [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(idx[5], [2, 2, 5, 5]);
    assert_eq!(w[5], [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(idx[7], [8, 8, 8, 8]);
    // A one-patch-high axis reads the table's first row only.
    let (idx1, _) = interpolation(&[Grid { t: 1, h: 1, w: 1 }], 3, 1);
    assert_eq!(idx1[0], [0, 1, 3, 4]);

    // RoPE, head width 8: frequencies 1 and 1/100 per axis; patch 2 is (row 1, column 0).
    let (cos, sin) = rotary(&[g], 2, 8, 10_000.0);
    assert_eq!(patch_coords(&g, 2)[2], (1, 0));
    let want = [1f32.cos(), 0.01f32.cos(), 1.0, 1.0];
    assert_eq!(&cos[16..20], &want);
    assert_eq!(&cos[20..24], &want);
    assert_eq!(sin[16], 1f32.sin());
}

/// Deterministic weights for every tensor of the tiny tower.
fn tensors(names: &[(&str, Vec<usize>)]) -> Vec<(String, Tensor)> {
    names
        .iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            let n: usize = shape.iter().product();
            let fan = *shape.last().unwrap_or(&1) as f32;
            let v: Vec<f32> =
                (0..n).map(|i| ((i * 7 + k * 13) as f32 * 0.37).sin() / fan.sqrt()).collect();
            (name.to_string(), Tensor::from_vec(v, shape.clone(), &Device::Cpu).unwrap())
        })
        .collect()
}

fn write_tower(dir: &Path, skip: Option<&str>, extra: bool) {
    std::fs::write(dir.join("config.json"), config_json(VISION)).unwrap();
    let mut names: Vec<(String, Vec<usize>)> = vec![
        ("patch_embed.proj.weight".into(), vec![16, 3, 2, 2, 2]),
        ("patch_embed.proj.bias".into(), vec![16]),
        ("pos_embed.weight".into(), vec![9, 16]),
    ];
    for b in 0..2 {
        for (s, shape) in [
            ("norm1.weight", vec![16]),
            ("norm1.bias", vec![16]),
            ("norm2.weight", vec![16]),
            ("norm2.bias", vec![16]),
            ("attn.qkv.weight", vec![48, 16]),
            ("attn.qkv.bias", vec![48]),
            ("attn.proj.weight", vec![16, 16]),
            ("attn.proj.bias", vec![16]),
            ("mlp.linear_fc1.weight", vec![24, 16]),
            ("mlp.linear_fc1.bias", vec![24]),
            ("mlp.linear_fc2.weight", vec![16, 24]),
            ("mlp.linear_fc2.bias", vec![16]),
        ] {
            names.push((format!("blocks.{b}.{s}"), shape));
        }
    }
    for (prefix, norm) in [("merger.", 16), ("deepstack_merger_list.0.", 64)] {
        names.push((format!("{prefix}norm.weight"), vec![norm]));
        names.push((format!("{prefix}norm.bias"), vec![norm]));
        names.push((format!("{prefix}linear_fc1.weight"), vec![64, 64]));
        names.push((format!("{prefix}linear_fc1.bias"), vec![64]));
        names.push((format!("{prefix}linear_fc2.weight"), vec![12, 64]));
        names.push((format!("{prefix}linear_fc2.bias"), vec![12]));
    }
    if extra {
        names.push(("blocks.2.norm1.weight".into(), vec![16]));
    }
    names.retain(|(n, _)| Some(n.as_str()) != skip);
    let refs: Vec<(&str, Vec<usize>)> =
        names.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
    let map: std::collections::HashMap<String, Tensor> = tensors(&refs)
        .into_iter()
        .map(|(n, t)| (format!("model.visual.{n}"), t))
        .chain(std::iter::once((
            "lm_head.weight".to_string(),
            Tensor::zeros((2, 2), candle_core::DType::F32, &Device::Cpu).unwrap(),
        )))
        .collect();
    candle_core::safetensors::save(&map, dir.join("model.safetensors")).unwrap();
}

fn image(w: usize, h: usize, seed: usize) -> Vec<u8> {
    (0..w * h * 3).map(|i| ((i * 31 + seed * 17) % 251) as u8).collect()
}

#[test]
fn tiny_tower_shapes_and_images_apart() {
    let dir = tempfile::tempdir().unwrap();
    write_tower(dir.path(), None, false);
    let tower = VisionTower::load(dir.path(), &Device::Cpu).unwrap();
    let p = ImageProcessor::from_json(
        r#"{"patch_size": 2, "merge_size": 2, "temporal_patch_size": 2, "do_resize": false}"#,
    )
    .unwrap();
    tower.config.check_processor(&p).unwrap();
    let a = p.process(&image(8, 4, 1), 8, 4, 3).unwrap();
    let b = p.process(&image(4, 12, 2), 4, 12, 3).unwrap();
    let both = tower.forward_images(&[a.clone(), b.clone()]).unwrap();
    // 2 × 4 and 6 × 2 patches: 2 and 3 merged tokens.
    assert_eq!(both.merged.dims(), &[5, 12]);
    assert_eq!(both.last_hidden.dims(), &[20, 16]);
    assert_eq!(both.deepstack.len(), 1);
    assert_eq!(both.deepstack[0].dims(), &[5, 12]);
    // Each image attends to itself only: alone, it gives the same tokens.
    let alone = tower.forward_images(std::slice::from_ref(&b)).unwrap();
    let tail = both.merged.narrow(0, 2, 3).unwrap();
    let diff = (tail - &alone.merged)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert!(diff < 1e-5, "image b changes with image a beside it: {diff}");

    let other = ImageProcessor::from_json(
        r#"{"patch_size": 4, "merge_size": 2, "temporal_patch_size": 2}"#,
    )
    .unwrap();
    assert!(
        tower.config.check_processor(&other).unwrap_err().to_string().contains("`patch_size` is 4")
    );
    let odd = Grid { t: 1, h: 3, w: 2 };
    let rows = Tensor::zeros((6, 24), candle_core::DType::F32, &Device::Cpu).unwrap();
    assert!(tower.forward(&rows, &[odd]).unwrap_err().to_string().contains("merge windows"));
}

#[test]
fn tower_checkpoint_errors_name_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    write_tower(dir.path(), Some("blocks.1.attn.qkv.bias"), false);
    let err = VisionTower::load(dir.path(), &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("`model.visual.blocks.1.attn.qkv.bias`"), "{err}");
    write_tower(dir.path(), None, true);
    let err = VisionTower::load(dir.path(), &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("`model.visual.blocks.2.norm1.weight` is not a tensor"), "{err}");
}
