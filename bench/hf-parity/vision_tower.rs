//! The candle side of bench/vision-parity.sh's `tower` mode: wrl's Qwen3-VL vision tower loaded
//! from the tiny random checkpoint `vision_tower.py make` saved, run on the same pixel rows and
//! grids transformers ran, and every output (last hidden state, merged tokens, each DeepStack
//! feature) held to transformers' within 1e-4. Prints one line per output with its largest
//! absolute difference; exits 1 when one is over. Usage: vision_tower_parity DIR

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use candle_core::{DType, Device, Tensor};
use wrl_trainer::vision::{Grid, VisionTower};

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
    let mut outputs = vec![("last_hidden_state", out.last_hidden), ("pooler_output", out.merged)];
    for (i, d) in out.deepstack.into_iter().enumerate() {
        outputs.push((Box::leak(format!("deepstack_{i}").into_boxed_str()), d));
    }
    if want.keys().filter(|k| k.starts_with("deepstack_")).count() != outputs.len() - 2 {
        bail!("transformers made a different number of DeepStack features");
    }
    let mut worst = 0f32;
    println!("grids {grid_rows:?}, forward {ms:.0} ms");
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
    Ok(())
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    if a.dims() != b.dims() {
        bail!("shape {:?}, transformers {:?}", a.dims(), b.dims());
    }
    Ok((a - b)?.abs()?.max_all()?.to_scalar::<f32>()?)
}
