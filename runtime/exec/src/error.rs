//! Why a run cannot start or cannot go on: one [`Fault`] per kind of failure, each with its own
//! code (`E05xx`, documented under `docs/errors/`), what to do about it, and where in the recipe
//! it lies when a declaration is to blame. The runtime never renders: the CLI places the subject
//! in the recipe and prints the diagnostic.

use std::fmt;

use wrl_plan::Node;

/// The help of E0501, here and when the pool cannot start.
pub const INSTALL_CHROMIUM: &str = "install it with `apt-get install \
    chromium-headless-shell` (or `chromium`), or point WRL_CHROMIUM or `--chromium` at a \
    Chromium binary";

/// A kind of runtime failure; each has its own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A value the runtime needs is `unknown` in the recipe.
    Unknown,
    /// No Chromium, or it cannot start.
    NoChromium,
    /// A setting this runtime cannot honour.
    Unsupported,
    /// A data file is missing, unreadable or malformed.
    Data,
    /// The run directory cannot be used (a file, another run, other files, an I/O failure).
    RunDir,
    /// The policy cannot be built, trained, saved or loaded.
    Model,
    /// The plan does not follow the format this runtime reads.
    PlanFormat,
    /// A local service the run needs (the sandbox web, an HTTP client) cannot start.
    Service,
    /// A file the run committed (its state, a cached input) is damaged.
    Damaged,
    /// An RL iteration left at least its `stop_excluded` share of episodes out of the loss.
    FaultBudget,
    /// An `hf(…)` model is not a directory and not in the offline Hugging Face cache.
    HfNotFound,
    /// An `hf(…)` model of an architecture or family this runtime does not run.
    HfArchitecture,
    /// An `hf(…)` model's `config.json` sets a field this runtime does not implement.
    HfConfig,
    /// An `hf(…)` model's files do not match its `config.json`.
    HfFiles,
    /// An `hf(…)` model's chat template is missing or cannot render.
    HfTemplate,
    /// A setting of `hf(…)` that does not fit the model (`frozen`, `context`).
    HfSetting,
    /// The device a model asks for is not there (CUDA without a CUDA build, or no such GPU).
    Device,
    /// A tool the recipe declares that its tool set's MCP servers do not serve as declared (no
    /// server lists it, or an argument's type differs).
    McpTool,
    /// A stage's LoRA adapters do not fit its model (a target it lacks, a rank above a layer).
    LoraFit,
    /// A saved adapter a stage starts from is not one of its model and `lora` settings.
    AdapterMismatch,
    /// A credential written into the recipe (it would be written to `plan.json`).
    Secret,
    /// A claim of the recipe that does not hold, under `--require-claims`.
    Claim,
    /// `--require-claims` where no claim of the recipe is stated for the run's profile.
    NoClaims,
    /// A chat conversation of SFT data (`kind = chat`) that is not well formed: an unknown
    /// role, no assistant turn, a tool call that is not JSON, a tool result without its call.
    ChatData,
    /// A column an evaluation splits its result by (`by`) that a row of its data lacks.
    SubsetColumn,
}

impl Fault {
    /// The diagnostic code.
    pub fn code(self) -> &'static str {
        match self {
            Fault::Unknown => "E0500",
            Fault::NoChromium => "E0501",
            Fault::Unsupported => "E0502",
            Fault::Data => "E0503",
            Fault::RunDir => "E0504",
            Fault::Model => "E0505",
            Fault::PlanFormat => "E0506",
            Fault::Service => "E0507",
            Fault::Damaged => "E0508",
            Fault::FaultBudget => "E0509",
            Fault::HfNotFound => "E0510",
            Fault::HfArchitecture => "E0511",
            Fault::HfConfig => "E0512",
            Fault::HfFiles => "E0513",
            Fault::HfTemplate => "E0514",
            Fault::HfSetting => "E0515",
            Fault::Device => "E0516",
            Fault::McpTool => "E0517",
            Fault::LoraFit => "E0525",
            Fault::AdapterMismatch => "E0526",
            Fault::Secret => "E0520",
            Fault::Claim => "E0550",
            Fault::NoClaims => "E0522",
            Fault::ChatData => "E0527",
            Fault::SubsetColumn => "E0528",
        }
    }
}

/// A runtime failure: its kind, what happened, what to do, and the declaration to blame.
#[derive(Debug, Clone, PartialEq)]
pub struct RunError {
    pub fault: Fault,
    pub message: String,
    pub help: Option<String>,
    /// Boxed: most errors have none, and `RunError` travels in every `Result`.
    pub subject: Option<Box<Subject>>,
}

/// The declaration (and parameter) a runtime problem is about. The runtime never sees syntax:
/// the CLI maps this to a span of the recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The plan node (`stage:online/phase:1`).
    pub node: String,
    /// The declaration it lowers (`online`).
    pub decl: String,
    /// The parameter to blame, when one is (`lr`).
    pub param: Option<String>,
    /// What to say at that place: why it is blamed.
    pub label: String,
}

impl RunError {
    pub fn new(fault: Fault, message: impl Into<String>) -> RunError {
        RunError { fault, message: message.into(), help: None, subject: None }
    }

    /// The diagnostic code of its kind.
    pub fn code(&self) -> &'static str {
        self.fault.code()
    }

    pub fn help(mut self, h: impl Into<String>) -> RunError {
        self.help = Some(h.into());
        self
    }

    /// Blames `node`'s declaration, or one of its parameters.
    pub fn at(mut self, node: &Node, param: Option<&str>, label: impl Into<String>) -> RunError {
        self.subject = Some(Box::new(Subject {
            node: node.id.clone(),
            decl: node.decl.clone(),
            param: param.map(str::to_string),
            label: label.into(),
        }));
        self
    }

    /// A failure of the trainer (`what` it was doing).
    pub fn model(what: &str, e: impl fmt::Display) -> RunError {
        RunError::new(Fault::Model, format!("{what}: {e}"))
    }

    /// A trainer lock poisoned by a panic on another thread.
    pub fn poisoned() -> RunError {
        RunError::new(Fault::Model, "the policy's lock was poisoned by a failure on another thread")
    }

    /// A failure to write or read the run directory.
    pub fn run_dir(e: impl fmt::Display) -> RunError {
        RunError::new(Fault::RunDir, e.to_string())
    }

    /// A plan whose nodes do not fit together (an input nothing produced).
    pub fn plan(message: impl Into<String>) -> RunError {
        RunError::new(Fault::PlanFormat, message).help(
            "the plan was not written by this wrlc's `wrlc plan`; re-run the recipe with this wrlc",
        )
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RunError {}
