//! The candle side of bench/vision-parity.sh's `tower` and `tower25` modes: wrl's Qwen3-VL (or
//! Qwen2.5-VL, as the checkpoint's config.json says) vision tower loaded
//! from the tiny random checkpoint `vision_tower.py make` saved, run on the same pixel rows and
//! grids transformers ran, and every output (last hidden state, merged tokens, each DeepStack
//! feature) held to transformers' within 1e-4; then the multimodal RoPE of `rope.json`'s token
//! sequences: the three position rows and the delta equal, cos and sin within 1e-6; then the whole
//! model (`vl.json`'s cases, one and two images and none): logits within 1e-4, greedy tokens
//! equal, one SFT step's loss and gradient norm (tower frozen) within 1e-4 relative. Prints one
//! line per output with its largest absolute difference; exits 1 when one is over. Usage:
//! vision_tower_parity DIR

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use candle_core::{DType, Device, Tensor};
use serde_json::Value;
use wrl_trainer::models::PretrainedSource;
use wrl_trainer::vision::mrope::{mrope_cos_sin, rope_index};
use wrl_trainer::vision::{Grid, Pixels, QwenVlModel, VisionTower, VlConfig};

const TOLERANCE: f32 = 1e-4;

fn main() -> Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [dir] = args.as_slice() else {
        bail!("usage: vision_tower_parity DIR");
    };
    let device = Device::Cpu;
    let tower = VisionTower::load(&dir.join("model"), &device)?;
    let reference = dir.join("reference.safetensors");
    let want = candle_core::safetensors::load(&reference, &device)
        .with_context(|| reference.display().to_string())?;
    let get = |k: &str| want.get(k).with_context(|| format!("reference has no `{k}`"));
    let grid_rows = get("image_grid_thw")?.to_dtype(DType::I64)?.to_vec2::<i64>()?;
    let grids: Vec<Grid> = grid_rows
        .iter()
        .map(|r| Grid { t: r[0] as usize, h: r[1] as usize, w: r[2] as usize })
        .collect();
    let started = std::time::Instant::now();
    let out = tower.forward(get("pixel_values")?, &grids)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let mut outputs = vec![
        ("last_hidden_state".to_string(), out.last_hidden),
        ("pooler_output".into(), out.merged),
    ];
    for (i, d) in out.deepstack.into_iter().enumerate() {
        outputs.push((format!("deepstack_{i}"), d));
    }
    if want.keys().filter(|k| k.starts_with("deepstack_")).count() != outputs.len() - 2 {
        bail!("transformers made a different number of DeepStack features");
    }
    let mut worst = 0f32;
    println!("{} tower, grids {grid_rows:?}, forward {ms:.0} ms", tower.config.family.model_type());
    for (name, got) in &outputs {
        let diff = max_abs_diff(got, get(name)?)?;
        let scale = get(name)?.abs()?.max_all()?.to_scalar::<f32>()?;
        println!("{name:<20} {:?}\tmax |diff| {diff:.3e}\t(max |value| {scale:.2})", got.dims());
        worst = worst.max(diff);
    }
    if worst > TOLERANCE {
        bail!("the vision tower is off by {worst:.3e} > {TOLERANCE:e}");
    }
    println!("ok: every output within {TOLERANCE:e} of transformers");
    rope(dir, tower.config.spatial_merge_size)?;
    whole_model(dir, &get("pixel_values")?.clone(), &grids)
}

/// The whole Qwen3-VL model on `vl.json`'s cases: logits within 1e-4, greedy tokens equal, and
/// one SFT step's loss and gradient norm (tower frozen) within 1e-4 relative.
fn whole_model(dir: &std::path::Path, pixels: &Tensor, grids: &[Grid]) -> Result<()> {
    let device = Device::Cpu;
    let model = QwenVlModel::load(&PretrainedSource::new(dir.join("model")), &device)?;
    let want = candle_core::safetensors::load(dir.join("vl.safetensors"), &device)?;
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("vl.json"))?)?;
    let cols = pixels.dim(1)?;
    let rows = pixels.to_vec2::<f32>()?;
    let mut images = Vec::new();
    let mut at = 0;
    for g in grids {
        let n = g.patches();
        let values: Vec<f32> = rows[at..at + n].iter().flatten().copied().collect();
        images.push(Pixels { values, rows: n, cols, grid: *g });
        at += n;
    }
    let special = [
        model.config.mrope.image_token_id,
        model.config.vision_start_token_id,
        model.config.vision_end_token_id,
    ];
    let mut worst = 0f32;
    for case in v["cases"].as_array().context("cases")? {
        let name = case["name"].as_str().context("name")?;
        let ids: Vec<u32> = case["ids"]
            .as_array()
            .context("ids")?
            .iter()
            .map(|x| x.as_u64().map(|n| n as u32).context("id"))
            .collect::<Result<_>>()?;
        let picked: Vec<Pixels> = case["images"]
            .as_array()
            .context("images")?
            .iter()
            .map(|i| images[i.as_u64().unwrap_or(0) as usize].clone())
            .collect();
        let started = std::time::Instant::now();
        let logits = model.logits(&ids, &picked)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let reference = want.get(&format!("logits_{name}")).context("logits")?;
        let diff = max_abs_diff(&logits.squeeze(0)?, reference)?;
        let greedy = model.greedy(&ids, &picked, 8, &[])?;
        let want_greedy: Vec<u32> = want
            .get(&format!("greedy_{name}"))
            .context("greedy")?
            .to_dtype(DType::I64)?
            .to_vec1::<i64>()?
            .into_iter()
            .map(|x| x as u32)
            .collect();
        // One SFT step: the loss over every next token that is not an image token or its
        // brackets, and the text decoder's gradient norm.
        let t = ids.len();
        let lp = candle_nn::ops::log_softmax(&logits.squeeze(0)?.narrow(0, 0, t - 1)?, 1)?;
        let mut terms = Vec::new();
        for (i, &next) in ids[1..].iter().enumerate() {
            if !special.contains(&next) {
                terms.push(lp.get(i)?.get(next as usize)?);
            }
        }
        let loss = Tensor::stack(&terms, 0)?.mean_all()?.neg()?;
        let grads = loss.backward()?;
        let mut sq = 0f64;
        for (_, var) in model.text.params.iter() {
            if let Some(g) = grads.get(var.as_tensor()) {
                sq += g.sqr()?.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            }
        }
        let (loss, norm) = (loss.to_scalar::<f32>()? as f64, sq.sqrt());
        let (want_loss, want_norm) = (
            case["loss"].as_f64().context("loss")?,
            case["grad_norm"].as_f64().context("grad_norm")?,
        );
        let rel =
            ((loss - want_loss) / want_loss).abs().max(((norm - want_norm) / want_norm).abs());
        println!(
            "model {name:<11} {t:>3} tokens, {} images, forward {ms:.0} ms\tlogits max |diff| \
             {diff:.3e}\tgreedy {}\tloss {loss:.6} ({want_loss:.6})\tgrad norm {norm:.6} \
             ({want_norm:.6})",
            picked.len(),
            if greedy == want_greedy { "equal" } else { "DIFFER" },
        );
        if greedy != want_greedy {
            bail!("greedy tokens {greedy:?}, transformers {want_greedy:?} on `{name}`");
        }
        if rel > 1e-4 {
            bail!("loss or gradient norm off by {rel:.3e} relative on `{name}`");
        }
        worst = worst.max(diff);
    }
    if worst > TOLERANCE {
        bail!("the whole model's logits are off by {worst:.3e} > {TOLERANCE:e}");
    }
    println!(
        "ok: logits within {TOLERANCE:e}, greedy tokens, loss and gradient norm as transformers"
    );
    Ok(())
}

/// The multimodal RoPE of each case in `rope.json` against transformers'.
fn rope(dir: &std::path::Path, merge: usize) -> Result<()> {
    let path = dir.join("rope.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let num = |v: &Value| v.as_u64().context("not an integer");
    let list = |v: &Value| -> Result<Vec<u64>> {
        v.as_array().context("not a list")?.iter().map(num).collect()
    };
    let floats = |v: &Value| -> Result<Vec<f32>> {
        let rows = v.as_array().context("not a list")?;
        let mut out = Vec::new();
        for r in rows {
            out.extend(
                r.as_array()
                    .context("not a list")?
                    .iter()
                    .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32),
            );
        }
        Ok(out)
    };
    // The settings as wrl reads them from config.json, against what transformers used.
    let text = std::fs::read_to_string(dir.join("model").join("config.json"))?;
    let config = VlConfig::parse(&text)?.mrope;
    let want_section: Vec<usize> =
        list(&v["mrope_section"])?.into_iter().map(|x| x as usize).collect();
    if config.section.as_slice() != want_section
        || u64::from(config.image_token_id) != num(&v["image_token_id"])?
        || config.merge != merge
    {
        bail!("config.json read as {config:?}; transformers used {}", v["mrope_section"]);
    }
    let (section, image, video) = (config.section, config.image_token_id, config.video_token_id);
    let inv_freq: Vec<f32> = v["inv_freq"]
        .as_array()
        .context("inv_freq")?
        .iter()
        .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
        .collect();
    for case in v["cases"].as_array().context("cases")? {
        let ids: Vec<u32> = list(&case["ids"])?.into_iter().map(|x| x as u32).collect();
        let grids: Vec<Grid> = case["grids"]
            .as_array()
            .context("grids")?
            .iter()
            .map(|g| list(g).map(|g| Grid { t: g[0] as usize, h: g[1] as usize, w: g[2] as usize }))
            .collect::<Result<_>>()?;
        let index = rope_index(&ids, image, video, &grids, merge)?;
        let want: Vec<Vec<i64>> = case["positions"]
            .as_array()
            .context("positions")?
            .iter()
            .map(|r| list(r).map(|r| r.into_iter().map(|x| x as i64).collect()))
            .collect::<Result<_>>()?;
        let delta = case["delta"].as_i64().context("delta")?;
        let same = index.positions.iter().zip(&want).all(|(a, b)| a == b) && index.delta == delta;
        let (cos, sin) = mrope_cos_sin(&index, &inv_freq, section, config.layout);
        let diff = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(if a.len() == b.len() { 0.0 } else { f32::INFINITY }, f32::max)
        };
        let worst = diff(&cos, &floats(&case["cos"])?).max(diff(&sin, &floats(&case["sin"])?));
        println!(
            "mrope {:<12} {} tokens\tpositions {}\tdelta {}\tcos/sin max |diff| {worst:.3e}",
            case["name"].as_str().unwrap_or("?"),
            ids.len(),
            if same { "equal" } else { "DIFFER" },
            index.delta
        );
        if !same || worst > 1e-6 {
            bail!("multimodal RoPE differs from transformers on `{}`", case["name"]);
        }
    }
    println!("ok: multimodal RoPE as transformers computes it");
    Ok(())
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    if a.dims() != b.dims() {
        bail!("shape {:?}, transformers {:?}", a.dims(), b.dims());
    }
    Ok((a - b)?.abs()?.max_all()?.to_scalar::<f32>()?)
}
