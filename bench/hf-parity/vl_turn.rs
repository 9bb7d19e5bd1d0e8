//! The wrl side of bench/vl-turn.sh: one vision-language rollout turn (a prompt holding one
//! real Chromium screenshot, 32 new tokens) on a random Qwen3-VL in Hugging Face layout, through
//! the row-stable decoder's shared batch (what rollouts now use) and through candle's whole
//! model (what they used before), each on a freshly loaded trainer (no image or prefix cached).
//!
//! `vl_turn make DIR SCREENSHOT`: writes the model (`hf::tiny_vl`, the bench shape below) to
//! DIR/model and the turn's inputs to DIR/inputs.safetensors (`input_ids`, `pixel_values`,
//! `image_grid_thw`) for transformers to run the same turn.
//! `vl_turn time DIR`: a warm-up, then the median of RUNS (default 3) of each path and group
//! size, and of the tower alone; one tab-separated line each: path, n, median ms, new tokens of
//! the first row.
//! `vl_turn tower DIR`: the tower alone on the turn's screenshot, five times (for a profiler).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use candle_core::{DType, Device, Tensor};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
use wrl_trainer::models::{Model, PretrainedSource};
use wrl_trainer::vision::{Grid, Pixels};
use wrl_trainer::{DeviceChoice, OptimConfig, PolicyConfig, SampleParams, Trainer, TrainerConfig};

/// The text model: 8 layers of width 512 (8 query heads of 64 over 4 key/value heads).
fn spec() -> TinySpec {
    TinySpec {
        hidden: 512,
        intermediate: 1536,
        layers: 8,
        heads: 8,
        kv_heads: 4,
        head_dim: 64,
        ..TinySpec::default()
    }
}

/// The tower: 8 blocks of width 512, 16-pixel patches, DeepStack from blocks 1, 3 and 5, and
/// OpenWebRL's pixel budget (512², about 256 merged tokens a screenshot).
fn vision() -> TinyVision {
    TinyVision {
        depth: 8,
        hidden: 512,
        intermediate: 2048,
        heads: 8,
        positions: 2304,
        deepstack: vec![1, 3, 5],
        max_pixels: 512 * 512,
        ..TinyVision::default()
    }
}

const NEW_TOKENS: usize = 32;

fn make(dir: &Path, screenshot: &Path) -> Result<()> {
    let model = dir.join("model");
    let corpus = vec!["click the blue button then type the answer in the search box".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 200 };
    write_vl(&model, &spec(), &vision(), &tok)?;
    let t = trainer(&model)?;
    let side = t.model().vision().context("a VL policy")?;
    let png = std::fs::read(screenshot).with_context(|| screenshot.display().to_string())?;
    let px = side.read_image(&png)?;
    let c = &side.config;
    let mut ids: Vec<u32> = (0..40).map(|i| 3 + (i * 7) % 150).collect();
    ids.push(c.vision_start_token_id);
    ids.extend(std::iter::repeat_n(c.mrope.image_token_id, side.pads(&px)));
    ids.push(c.vision_end_token_id);
    ids.extend((0..8).map(|i| 5 + i * 11));
    let cpu = Device::Cpu;
    let tensors = [
        (
            "input_ids",
            Tensor::new(ids.iter().map(|&x| x as i64).collect::<Vec<_>>(), &cpu)?.unsqueeze(0)?,
        ),
        ("pixel_values", Tensor::from_vec(px.values.clone(), (px.rows, px.cols), &cpu)?),
        (
            "image_grid_thw",
            Tensor::new(&[[px.grid.t as i64, px.grid.h as i64, px.grid.w as i64]], &cpu)?,
        ),
    ];
    candle_core::safetensors::save(&tensors.into_iter().collect(), dir.join("inputs.safetensors"))?;
    eprintln!(
        "vl_turn: prompt of {} tokens, {} of them the screenshot's",
        ids.len(),
        side.pads(&px)
    );
    Ok(())
}

fn trainer(model: &Path) -> Result<Trainer> {
    let policy = PolicyConfig::Qwen3Vl(PretrainedSource::new(model));
    Ok(Trainer::new(TrainerConfig {
        policy,
        optim: OptimConfig::default(),
        seed: 0,
        device: DeviceChoice::Cpu,
    })?)
}

fn inputs(dir: &Path) -> Result<(Vec<u32>, Pixels)> {
    let t = candle_core::safetensors::load(dir.join("inputs.safetensors"), &Device::Cpu)?;
    let get = |k: &str| t.get(k).with_context(|| format!("inputs.safetensors has no `{k}`"));
    let ids: Vec<u32> =
        get("input_ids")?.flatten_all()?.to_vec1::<i64>()?.into_iter().map(|x| x as u32).collect();
    let pv = get("pixel_values")?.to_dtype(DType::F32)?;
    let (rows, cols) = pv.dims2()?;
    let g = get("image_grid_thw")?.to_vec2::<i64>()?;
    let grid = Grid { t: g[0][0] as usize, h: g[0][1] as usize, w: g[0][2] as usize };
    Ok((ids, Pixels { values: pv.flatten_all()?.to_vec1()?, rows, cols, grid }))
}

/// One turn on a fresh trainer: (ms, new tokens of the first row).
fn turn(model: &Path, ids: &[u32], px: &Pixels, n: usize, batched: bool) -> Result<(f64, usize)> {
    let mut t = trainer(model)?;
    let params = SampleParams {
        n,
        max_tokens: NEW_TOKENS,
        temperature: if n == 1 { 0.0 } else { 1.0 },
        ..SampleParams::default()
    };
    let images = std::slice::from_ref(px);
    // The decoder's copy of the weights is read once per optimiser step, for every turn of the
    // rollout: not part of a turn.
    let mut sampler = t.sampler();
    let started = std::time::Instant::now();
    let out = if batched {
        sampler.sample_images(ids, images, &params)?
    } else {
        let Model::Qwen(m) = t.model() else { bail!("not a Qwen-VL model") };
        let vl = t.model().vision().context("a VL policy")?.model(m);
        let mut rng = wrl_trainer::rng::rng_from_seed(0);
        wrl_trainer::vision::sample_vl(&vl, t.tokenizer(), ids, images, &params, &mut rng)?
    };
    let ms = started.elapsed().as_secs_f64() * 1e3;
    Ok((ms, out.first().map_or(0, |c| c.tokens.len())))
}

/// `runs` forwards of the tower alone on the turn's screenshot, in ms.
fn tower_times(dir: &Path, runs: usize) -> Result<Vec<f64>> {
    let (_, px) = inputs(dir)?;
    let t = trainer(&dir.join("model"))?;
    let side = t.model().vision().context("a VL policy")?;
    (0..runs)
        .map(|_| {
            let started = std::time::Instant::now();
            wrl_trainer::decode::ImageFeatures::of(&side.tower, &px)?;
            Ok(started.elapsed().as_secs_f64() * 1e3)
        })
        .collect()
}

fn time(dir: &Path) -> Result<()> {
    let runs: usize = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let model = dir.join("model");
    let (ids, px) = inputs(dir)?;
    // The tower alone, which both paths run once per screenshot (a warm-up first).
    let mut times = tower_times(dir, runs + 1)?;
    times.remove(0);
    times.sort_by(f64::total_cmp);
    println!("tower\t1\t{:.0}\t0", times[times.len() / 2]);
    for (path, batched) in [("batch", true), ("candle", false)] {
        for n in [1, 4] {
            turn(&model, &ids, &px, n, batched)?;
            let mut times = Vec::new();
            let mut tokens = 0;
            for _ in 0..runs {
                let (ms, k) = turn(&model, &ids, &px, n, batched)?;
                times.push(ms);
                tokens = k;
            }
            times.sort_by(f64::total_cmp);
            println!("{path}\t{n}\t{:.0}\t{tokens}", times[times.len() / 2]);
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["make", dir, shot] => make(&PathBuf::from(dir), Path::new(shot)),
        ["time", dir] => time(&PathBuf::from(dir)),
        ["tower", dir] => {
            for ms in tower_times(Path::new(dir), 5)? {
                println!("tower {ms:.0} ms");
            }
            Ok(())
        }
        _ => bail!("usage: vl_turn make DIR SCREENSHOT | vl_turn time DIR | vl_turn tower DIR"),
    }
}
