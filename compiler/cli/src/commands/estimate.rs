//! `wrlc estimate FILE [--profile NAME] [--format text|json] [--prices FILE]`: what a recipe
//! will cost, computed from its plan alone (see `wrl_plan::estimate`).

use crate::args::{EstimateCmd, EstimateFormat, GlobalOpts};
use crate::commands::plan::plan_file;
use crate::{EXIT_OK, EXIT_USAGE, Io};

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
    let plan = match plan_file(&cmd.file, cmd.profile.as_deref(), global, io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let est = wrl_plan::estimate(&plan, prices.as_ref());
    let text = match cmd.format {
        EstimateFormat::Text => wrl_plan::estimate::render_text(&est),
        EstimateFormat::Json => wrl_plan::estimate::render_json(&est),
    };
    match io.out.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_USAGE,
    }
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
