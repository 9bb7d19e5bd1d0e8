//! `wrlc plan FILE [--profile NAME] [--variant NAME] [--format text|json|dot]`: the execution plan of one
//! recipe. The plan goes to stdout, diagnostics to stderr; a recipe with errors prints no plan.

use std::path::Path;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::compile::compile_paths;
use crate::global::GlobalOpts;
use crate::render::emit;
use crate::{EXIT_OK, EXIT_USAGE, EXIT_USER, Io};

/// Output formats of `wrlc plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
    Dot,
}

#[derive(Debug, Args)]
pub struct PlanCmd {
    /// The recipe file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Apply this profile of the recipe first (e.g. `smoke`)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Apply this variant of the recipe (on top of the profile): its own plan
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// `text` (deterministic, used for golden files), `json` (what the runtime reads) or `dot`
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

pub fn run(cmd: PlanCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let plan =
        match plan_file(&cmd.file, cmd.profile.as_deref(), cmd.variant.as_deref(), global, io) {
            Ok(p) => p,
            Err(code) => return code,
        };
    let text = match cmd.format {
        PlanFormat::Text => wrl_plan::render_text(&plan),
        PlanFormat::Json => wrl_plan::render_json(&plan),
        PlanFormat::Dot => wrl_plan::render_dot(&plan),
    };
    match io.out.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_USAGE,
    }
}

/// Checks one recipe file, applies the profile and the variant and lowers it. On failure the diagnostics have
/// been printed and the exit status is returned.
pub(crate) fn plan_file(
    file: &Path,
    profile: Option<&str>,
    variant: Option<&str>,
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<wrl_plan::Plan, u8> {
    let comp = match compile_paths(&[file.to_path_buf()]) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.err, "error: {}", e.0);
            return Err(EXIT_USAGE);
        }
    };
    emit(&comp.diagnostics, &comp.sources, global.error_format, io);
    if comp.error_count() > 0 {
        return Err(EXIT_USER);
    }
    let [recipe] = comp.recipes.as_slice() else {
        let _ = writeln!(
            io.err,
            "error: `{}` holds {} recipes; give one recipe file",
            file.display(),
            comp.recipes.len()
        );
        return Err(EXIT_USAGE);
    };
    let recipe = match profile {
        Some(name) => match recipe.with_profile(name) {
            Ok(r) => r,
            Err(d) => {
                emit(&[d], &comp.sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        },
        None => recipe.clone(),
    };
    let recipe = match variant.map(|v| recipe.with_variant(v)) {
        Some(Ok(r)) => r,
        Some(Err(d)) => {
            emit(&[d], &comp.sources, global.error_format, io);
            return Err(EXIT_USER);
        }
        None => recipe,
    };
    wrl_plan::lower(&recipe).map_err(|diags| {
        emit(&diags, &comp.sources, global.error_format, io);
        EXIT_USER
    })
}
