//! The whole Qwen3-VL model without Python, on the tiny one `hf::tiny_vl` writes: images read by
//! the checkpoint's own processor take their `<|image_pad|>` runs, greedy decoding through the
//! cache gives what full forwards give, a batch of rows gives what each row gives alone, the text
//! decoder gets gradients and the tower none, and the config's and the inputs' mistakes are
//! refused by name. (Values against transformers: bench/vision-parity.sh tower.)

use candle_core::{D, Device, Tensor};

use crate::common::{max_diff, screenshot, with_images};
use wrl_trainer::hf::HfError;
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
use wrl_trainer::models::PretrainedSource;
use wrl_trainer::vision::{ImageProcessor, Pixels, QwenVlModel, VlConfig};

fn tiny_vl(dir: &std::path::Path) -> QwenVlModel {
    let corpus = vec!["click the blue button then type the answer".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    write_vl(dir, &TinySpec::narrow(), &TinyVision::default(), &tok).unwrap();
    QwenVlModel::load(&PretrainedSource::new(dir), &Device::Cpu).unwrap()
}

#[test]
fn tiny_vl_model_reads_screens_and_decodes_through_its_cache() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny_vl(dir.path());
    let p = ImageProcessor::from_dir(dir.path()).unwrap();
    m.tower.config.check_processor(&p).unwrap();
    let a = p.process(&screenshot(200, 120, 1), 200, 120, 3).unwrap();
    let b = p.process(&screenshot(90, 260, 2), 90, 260, 3).unwrap();
    assert!(a.grid.patches() / 4 <= 64 && b.grid.patches() / 4 <= 64, "the pixel budget");
    let ids = with_images(&m, &[5, 6], &[a.clone(), b.clone()], &[7, 8, 9]);

    // Greedy through the cache = the argmax of a full forward over everything so far.
    let greedy = m.greedy(&ids, &[a.clone(), b.clone()], 5, &[]).unwrap();
    let mut seq = ids.clone();
    for &tok in &greedy {
        let logits = m.logits(&seq, &[a.clone(), b.clone()]).unwrap();
        let last = logits.squeeze(0).unwrap().get(seq.len() - 1).unwrap();
        assert_eq!(last.argmax(D::Minus1).unwrap().to_scalar::<u32>().unwrap(), tok);
        seq.push(tok);
    }

    // A batch of two rows (different images, different positions) = each row alone.
    let other = with_images(&m, &[9], std::slice::from_ref(&b), &[4]);
    let pad = ids.len() - other.len();
    let other: Vec<u32> = other.into_iter().chain(std::iter::repeat_n(3, pad)).collect();
    let rows: [(&[u32], &[Pixels]); 2] =
        [(&ids, &[a.clone(), b.clone()]), (&other, std::slice::from_ref(&b))];
    let (both, _) = m.hidden(&rows, None).unwrap();
    let (first, _) = m.hidden(&rows[..1], None).unwrap();
    let (second, _) = m.hidden(&rows[1..], None).unwrap();
    assert!(max_diff(&both.get(0).unwrap(), &first.squeeze(0).unwrap()) < 1e-5);
    assert!(max_diff(&both.get(1).unwrap(), &second.squeeze(0).unwrap()) < 1e-5);

    // The image changes the text's logits (its tokens and DeepStack reach the decoder).
    let c = screenshot(200, 120, 9);
    let c = p.process(&c, 200, 120, 3).unwrap();
    let one =
        m.logits(&with_images(&m, &[5], std::slice::from_ref(&a), &[7]), std::slice::from_ref(&a));
    let two = m.logits(&with_images(&m, &[5], std::slice::from_ref(&c), &[7]), &[c]);
    let last = |t: Tensor| t.squeeze(0).unwrap().narrow(0, t.dim(1).unwrap() - 1, 1).unwrap();
    assert!(max_diff(&last(one.unwrap()), &last(two.unwrap())) > 0.0);

    // Gradients reach the text decoder's parameters; the tower holds no variables.
    let logits = m.logits(&ids, &[a.clone(), b.clone()]).unwrap();
    let loss = logits.sqr().unwrap().mean_all().unwrap();
    let grads = loss.backward().unwrap();
    let trained = m.text.params.iter().filter(|(_, v)| grads.get(v.as_tensor()).is_some()).count();
    assert_eq!(trained, m.text.params.len());

    // Too few image tokens for the images.
    let pad = m.config.mrope.image_token_id;
    let first = ids.iter().position(|&t| t == pad).unwrap();
    let short: Vec<u32> = [&ids[..first], &ids[first + 3..]].concat();
    let err = m.logits(&short, &[a, b]).unwrap_err().to_string();
    assert!(err.contains("image"), "{err}");
}

#[test]
fn vl_config_refuses_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = vec!["a b c".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 5 };
    write_vl(dir.path(), &TinySpec::narrow(), &TinyVision::default(), &tok).unwrap();
    let good = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let c = VlConfig::parse(&good).unwrap();
    assert_eq!(c.mrope.section.iter().sum::<usize>(), c.text.head_dim() / 2);
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    let refused = |v: &serde_json::Value| match VlConfig::parse(&v.to_string()) {
        Err(HfError::Field { field, .. }) => field,
        other => panic!("expected a refused field, got {other:?}"),
    };
    let mut w = v.clone();
    w["text_config"]["hidden_act"] = "gelu".into();
    assert_eq!(refused(&w), "text_config.hidden_act");
    let mut w = v.clone();
    w["text_config"]["rope_parameters"]["mrope_section"] = serde_json::json!([4, 4, 4]);
    assert_eq!(refused(&w), "text_config.rope_parameters.mrope_section");
    let mut w = v.clone();
    w["vision_config"]["out_hidden_size"] = 7.into();
    assert_eq!(refused(&w), "vision_config.out_hidden_size");
    let mut w = v.clone();
    w["image_token_id"] = 1_000_000.into();
    assert_eq!(refused(&w), "image_token_id");
    v["frobnicate"] = true.into();
    assert_eq!(refused(&v), "frobnicate");
    let qwen2 = good.replace("\"qwen3_vl\"", "\"qwen2_vl\"");
    assert!(matches!(VlConfig::parse(&qwen2), Err(HfError::Architecture { .. })));
    // A Qwen3-VL checkpoint that says `qwen2_5_vl` names the wrong class.
    let qwen25 = good.replace("\"qwen3_vl\"", "\"qwen2_5_vl\"");
    assert!(matches!(VlConfig::parse(&qwen25), Err(HfError::Architecture { .. })));
    assert!(VlConfig::is_vl(&good) && !VlConfig::is_vl(r#"{"model_type": "qwen3"}"#));
}

#[test]
fn vl_checkpoint_tensors_checked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = vec!["a b c".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 5 };
    write_vl(dir.path(), &TinySpec::narrow(), &TinyVision::default(), &tok).unwrap();
    let path = dir.path().join("model.safetensors");
    let mut all = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    all.remove("model.language_model.layers.1.mlp.up_proj.weight");
    candle_core::safetensors::save(&all, &path).unwrap();
    let err = QwenVlModel::load(&PretrainedSource::new(dir.path()), &Device::Cpu).unwrap_err();
    assert!(err.to_string().contains("model.language_model.layers.1.mlp.up_proj.weight"), "{err}");
}
