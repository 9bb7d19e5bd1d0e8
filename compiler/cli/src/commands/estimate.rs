//! `wrlc estimate FILE [--profile NAME] [--variant NAME] [--set PATH=VALUE]… [--format text|json] [--prices FILE]`: what a recipe
//! will cost, computed from its plan alone (see `wrl_plan::estimate`), and what each trained
//! model holds in memory (`footprint.rs`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::commands::plan::plan_file;
use crate::commands::planned::{plan_for, variant_plan};
use crate::global::GlobalOpts;
use crate::{EXIT_OK, EXIT_USAGE, Io};

/// Output formats of `wrlc estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EstimateFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct EstimateCmd {
    /// The recipe file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Apply this profile of the recipe first (e.g. `smoke`)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Apply this variant of the recipe (on top of the profile)
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    #[arg(long, value_enum, default_value_t = EstimateFormat::Text)]
    pub format: EstimateFormat,
    /// A JSON file of prices (per judge call, per 1M tokens, per GPU-hour) to add money
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Override a value as `wrlc run --set` does: `--set 'policy=hf("Qwen/Qwen3-8B")'`
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Say which stages fit this device's memory and what would make the others fit: a GPU
    /// (`h100-80g`, `h200-141g`, `a100-80g`, `a100-40g`, `l40s-48g`, `rtx4090-24g`, `l4-24g`,
    /// `a10-24g`), `cpu` (this machine) or a size (`24GiB`, `80GB`)
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
}

pub fn run(cmd: EstimateCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let prices = match &cmd.prices {
        Some(path) => match read_prices(path) {
            Ok(p) => Some(p),
            Err(msg) => {
                let _ = writeln!(io.err, "error: {msg}");
                return EXIT_USAGE;
            }
        },
        None => None,
    };
    let device = match cmd.device.as_deref().map(super::footprint::parse_device) {
        Some(Ok(d)) => Some(d),
        Some(Err(msg)) => {
            let _ = writeln!(io.err, "error: {msg}");
            return EXIT_USAGE;
        }
        None => None,
    };
    let variant = cmd.variant.as_deref();
    let planned = if cmd.set.is_empty() {
        plan_file(&cmd.file, cmd.profile.as_deref(), variant, global, io)
    } else {
        plan_for(&cmd.file, cmd.profile.as_deref(), &cmd.set, global, io).and_then(
            |p| match variant {
                Some(v) => variant_plan(&p, v, global, io),
                None => Ok(p.plan),
            },
        )
    };
    let plan = match planned {
        Ok(p) => p,
        Err(code) => return code,
    };
    let est = wrl_plan::estimate(&plan, prices.as_ref());
    let models = super::footprint::models(&plan);
    let fit = device.as_ref().map(|d| (super::footprint::fit(&models, d), d));
    let text = match cmd.format {
        EstimateFormat::Text => {
            let mut t =
                wrl_plan::estimate::render_text(&est) + &super::footprint::render_text(&models);
            if let Some((fits, d)) = &fit {
                t += &super::footprint::render_fit(fits, d);
            }
            t
        }
        EstimateFormat::Json => json(&est, &models, fit.as_ref()),
    };
    match io.out.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_USAGE,
    }
}

/// The plan's estimate with a `models` key (each model's parameters and training memory) and,
/// with `--device`, a `fit` key (the device and each stage against it).
fn json(
    est: &wrl_plan::Estimate,
    models: &[super::footprint::ModelFootprint],
    fit: Option<&(Vec<super::footprint::Fit>, &super::footprint::Device)>,
) -> String {
    let mut v = serde_json::to_value(est).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("models".into(), serde_json::to_value(models).unwrap_or_default());
        if let Some((fits, device)) = fit {
            let f = serde_json::json!({ "device": device, "stages": fits });
            o.insert("fit".into(), f);
        }
    }
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

fn read_prices(path: &std::path::Path) -> Result<wrl_plan::Prices, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read prices `{}`: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "`{}` is not a prices file: {e}; expected JSON like {{\"judge_call\": 0.01, \
             \"per_million_tokens\": 0.5, \"gpu_hour\": 3.0}} (docs/plan-format.md)",
            path.display()
        )
    })
}
