//! The command line: global options and one struct per subcommand (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "wrlc",
    version,
    about = "The wrl compiler: check, plan and run recipes for training web agents",
    long_about = "wrlc checks a whole .wrl recipe before anything runs, lowers it to an \
                  execution plan, and runs that plan on real Chromium with a candle trainer.",
    after_help = "Examples:\n  wrlc check recipes/\n  wrlc explain E0103"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct GlobalOpts {
    /// How to print diagnostics: `human` (rendered with source) or `json` (one object per line).
    #[arg(long, global = true, value_enum, default_value_t = ErrorFormat::Human)]
    pub error_format: ErrorFormat,
    /// When to colour output: `auto` colours only a terminal and never with NO_COLOR set.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ErrorFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour standard error.
    pub fn enabled(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stderr().is_terminal()
            }
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check recipes: every error at once, with codes, places and fixes
    #[command(
        after_help = "Examples:\n  wrlc check recipes/quickstart.wrl\n  wrlc check recipes/ \
                            --error-format json\n\nExit status: 0 clean (warnings allowed), 1 errors \
                            in the input, 2 usage or internal error."
    )]
    Check(CheckCmd),
    /// Explain a diagnostic code: what it means, an example and the fix
    #[command(after_help = "Example:\n  wrlc explain E0103")]
    Explain(ExplainCmd),
}

#[derive(Debug, Args)]
pub struct CheckCmd {
    /// Files or directories; directories are searched recursively for `*.wrl`
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainCmd {
    /// A code such as E0103
    #[arg(value_name = "CODE")]
    pub code: String,
}
