//! The candle side of bench/vision-speed.sh: wrl's Qwen3-VL vision tower, loaded from the
//! checkpoint `vision_speed.py make` saved (Qwen3-VL-4B's tower shape), on the pixel rows
//! transformers ran for each budget: a warm-up forward, then the median of RUNS (default 3); the
//! merged tokens are held to transformers' within 1e-3 so both did the same work. Prints one
//! tab-separated line per budget: name, grid, merged tokens, median ms, max |diff|.
//! Usage: vision_speed DIR BUDGET...

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use candle_core::{DType, Device};
use wrl_trainer::vision::{Grid, VisionTower};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((dir, budgets)) = args.split_first() else {
        bail!("usage: vision_speed DIR BUDGET...");
    };
    let dir = PathBuf::from(dir);
    let runs: usize = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let device = Device::Cpu;
    let tower = VisionTower::load(&dir.join("model"), &device)?;
    for name in budgets {
        let path = dir.join(format!("{name}.safetensors"));
        let t = candle_core::safetensors::load(&path, &device)
            .with_context(|| path.display().to_string())?;
        let get = |k: &str| t.get(k).with_context(|| format!("{} has no `{k}`", path.display()));
        let g = get("image_grid_thw")?.to_dtype(DType::I64)?.to_vec2::<i64>()?;
        let grids: Vec<Grid> = g
            .iter()
            .map(|r| Grid { t: r[0] as usize, h: r[1] as usize, w: r[2] as usize })
            .collect();
        let pixels = get("pixel_values")?;
        let out = tower.forward(pixels, &grids)?;
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = std::time::Instant::now();
            let again = tower.forward(pixels, &grids)?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
            drop(again);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let diff = (&out.merged - get("pooler_output")?)?.abs()?.max_all()?.to_scalar::<f32>()?;
        println!("{name}\t{:?}\t{}\t{median:.0}\t{diff:.2e}", g[0], out.merged.dim(0)?);
        if diff > 1e-3 {
            bail!("{name}: the merged tokens differ from transformers' by {diff:.2e}");
        }
    }
    Ok(())
}
