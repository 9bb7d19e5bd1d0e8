//! The registry of every diagnostic code. A code is never reused: a retired code stays here with
//! `retired: true`. Each live code has a page `docs/errors/<code>.md` and a UI test under
//! `tests/ui/`; a test in `tests/` enforces both.

/// Which compiler phase owns a code (its hundreds digit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Syntax,
    Names,
    Types,
    Rules,
    Runtime,
    /// `wrlc lower`: jobs for other engines (E060x).
    Lower,
    /// `wrlc env serve`: the environment as an HTTP service (E061x).
    Service,
    Warning,
}

#[derive(Clone, Copy, Debug)]
pub struct CodeInfo {
    pub code: &'static str,
    pub phase: Phase,
    /// A short title, used in `docs/errors/` and `wrlc explain`.
    pub title: &'static str,
    pub retired: bool,
}

const fn live(code: &'static str, phase: Phase, title: &'static str) -> CodeInfo {
    CodeInfo { code, phase, title, retired: false }
}

/// Every code, sorted.
pub const CODES: &[CodeInfo] = &[
    // E01xx — syntax
    live("E0100", Phase::Syntax, "syntax error"),
    live("E0101", Phase::Syntax, "unterminated string"),
    live("E0102", Phase::Syntax, "invalid escape in a string"),
    live("E0103", Phase::Syntax, "unknown unit"),
    live("E0104", Phase::Syntax, "nesting too deep"),
    live("E0105", Phase::Syntax, "invalid number"),
    live("E0106", Phase::Syntax, "file is not valid UTF-8"),
    live("E0107", Phase::Syntax, "positional argument after a named argument"),
    live("E0108", Phase::Syntax, "comparison operators cannot be chained"),
    // E02xx — names and imports
    live("E0200", Phase::Names, "unknown name"),
    live("E0201", Phase::Names, "duplicate definition"),
    live("E0202", Phase::Names, "unknown module or stdlib item"),
    live("E0203", Phase::Names, "import cycle"),
    live("E0204", Phase::Names, "imported file not found"),
    live("E0205", Phase::Names, "more than one `extends`"),
    live("E0206", Phase::Names, "unknown profile"),
    live("E0207", Phase::Names, "declaration depends on itself"),
    live("E0208", Phase::Names, "unknown variant"),
    live("E0209", Phase::Names, "variant named `base`"),
    // E03xx — types, fields and units
    live("E0300", Phase::Types, "type mismatch"),
    live("E0301", Phase::Types, "unknown field"),
    live("E0302", Phase::Types, "unknown argument"),
    live("E0303", Phase::Types, "missing field or argument"),
    live("E0304", Phase::Types, "field or argument given twice"),
    live("E0305", Phase::Types, "wrong unit"),
    live("E0306", Phase::Types, "value out of range"),
    live("E0307", Phase::Types, "unknown enum value"),
    live("E0308", Phase::Types, "whole number expected"),
    live("E0309", Phase::Types, "declaration of the wrong kind"),
    live("E0310", Phase::Types, "not a constructor, or too many arguments"),
    live("E0311", Phase::Types, "a field renamed or removed since the recipe was written"),
    live("E0312", Phase::Types, "a `qa_match` setting that cannot score an answer"),
    live("E0313", Phase::Types, "a tool-use reward names a tool the agent does not have"),
    live("E0314", Phase::Types, "a reward endpoint's `url` that is not an HTTP URL"),
    live("E0315", Phase::Types, "a reward endpoint's components that cannot be told apart"),
    live("E0316", Phase::Types, "a `tags_ok` rule that no turn could keep"),
    // E04xx — recipe rules
    live("E0401", Phase::Rules, "range upper bound below lower bound"),
    live("E0402", Phase::Rules, "group too small for group-relative advantages"),
    live("E0403", Phase::Rules, "batch sizes do not divide"),
    live("E0404", Phase::Rules, "turn exceeds the model's context"),
    live("E0405", Phase::Rules, "reward reads a signal the environment does not produce"),
    live("E0406", Phase::Rules, "stage fed the wrong kind of dataset"),
    live("E0407", Phase::Rules, "tool set without a terminal tool"),
    live("E0408", Phase::Rules, "edge names an unknown module"),
    live("E0409", Phase::Rules, "module unreachable from start"),
    live("E0410", Phase::Rules, "no path to end"),
    live("E0411", Phase::Rules, "loop without a bound"),
    live("E0412", Phase::Rules, "emitted verdict has no edge"),
    live("E0413", Phase::Rules, "edge guard names a verdict the module does not emit"),
    live("E0414", Phase::Rules, "override changes the type"),
    live("E0415", Phase::Rules, "trainable model is a frozen API model"),
    live("E0416", Phase::Rules, "stage dependency cycle"),
    live("E0417", Phase::Rules, "RL stage without phases"),
    live("E0418", Phase::Rules, "dynamic-sampling metric that no reward emits"),
    live("E0419", Phase::Rules, "dataset `columns` entry with no such field or no column name"),
    live(
        "E0420",
        Phase::Rules,
        "screenshot pixel budget on a model whose screenshots it cannot size",
    ),
    live("E0421", Phase::Rules, "tag-style call of a tool whose arguments are not one string body"),
    live(
        "E0422",
        Phase::Rules,
        "tag-style call tags that name no tool, are no tag name, or mean two things",
    ),
    live("E0423", Phase::Rules, "action window on an agent whose prompt lists no actions"),
    live(
        "E0424",
        Phase::Rules,
        "env-drawn tasks in an env that cannot draw them, or scored against a reference",
    ),
    live("E0440", Phase::Rules, "mini-batch in a unit the stage's level does not train"),
    live("E0441", Phase::Rules, "epochs over a task set whose size the recipe does not say"),
    live("E0442", Phase::Rules, "horizon curriculum that cannot be laid out as phases"),
    live("E0443", Phase::Rules, "GAE advantages without a critic"),
    live("E0444", Phase::Rules, "`critic_score` band with no trained critic to score it"),
    live("E0445", Phase::Rules, "`generator = sandbox` on tasks that are not the sandbox's"),
    live("E0446", Phase::Rules, "`last_batch = drop` over fewer tasks than one batch"),
    live("E0447", Phase::Rules, "advantage estimator the stage cannot run"),
    live("E0448", Phase::Rules, "branching that starts more samples than the stage's `group`"),
    live("E0449", Phase::Rules, "branching rollouts of an agent or env that cannot be forked"),
    // E045x — plan rules (the planner's checks of the stage graph)
    live("E0450", Phase::Rules, "stage input that nothing produces"),
    live("E0451", Phase::Rules, "RL agent with nothing to train"),
    live("E0452", Phase::Rules, "checkpoint of another model than the agent runs"),
    live("E0455", Phase::Rules, "claim on an evaluation after a stage it does not run after"),
    live("E0456", Phase::Rules, "claim over an evaluation that reports no rate"),
    live("E0457", Phase::Rules, "claim stated for a profile the recipe does not declare"),
    live("E0458", Phase::Rules, "claim stated for no profile (`profiles = []`)"),
    // E05xx — runtime (`wrlc run`'s preflight and the run itself)
    live("E0500", Phase::Runtime, "value the runtime needs is `unknown`"),
    live("E0501", Phase::Runtime, "no Chromium, or Chromium cannot start"),
    live("E0502", Phase::Runtime, "not supported by this runtime"),
    live("E0503", Phase::Runtime, "data cannot be read"),
    live("E0504", Phase::Runtime, "run directory cannot be used"),
    live("E0505", Phase::Runtime, "model cannot be built or trained"),
    live("E0506", Phase::Runtime, "plan does not follow this runtime's format"),
    live("E0507", Phase::Runtime, "a service the run needs is not available"),
    live("E0508", Phase::Runtime, "a file the run committed is damaged"),
    live("E0509", Phase::Runtime, "an RL iteration left its fault budget of episodes out"),
    live("E0510", Phase::Runtime, "Hugging Face model not found on this machine"),
    live("E0511", Phase::Runtime, "model architecture or family this runtime does not run"),
    live("E0512", Phase::Runtime, "model `config.json` field this runtime does not implement"),
    live("E0513", Phase::Runtime, "model files do not match its `config.json`"),
    live("E0514", Phase::Runtime, "model chat template missing or cannot render"),
    live("E0515", Phase::Runtime, "`hf` setting does not fit the model"),
    live("E0516", Phase::Runtime, "the device a model asks for is not available"),
    live("E0517", Phase::Runtime, "a declared tool its MCP server does not serve as declared"),
    live("E0520", Phase::Runtime, "a credential written into the recipe"),
    live("E0522", Phase::Runtime, "`--require-claims` with no claim stated for the run's profile"),
    live("E0525", Phase::Runtime, "LoRA adapters that do not fit the model"),
    live("E0526", Phase::Runtime, "a saved adapter of another base model or shape"),
    live("E0527", Phase::Runtime, "a chat conversation of SFT data that is not well formed"),
    live("E0528", Phase::Runtime, "a column an evaluation's `by` splits on that the data lacks"),
    // E053x — `wrlc serve` (ecosystem, #24)
    live("E0530", Phase::Runtime, "`wrlc serve` cannot listen on the address"),
    live("E0531", Phase::Runtime, "the command line cannot be used as given"),
    // E054x — recipes shared: `wrlc diff`, `wrlc lock` and a run's lock of its inputs
    live("E0540", Phase::Runtime, "input `wrlc diff` cannot compare"),
    live("E0541", Phase::Runtime, "a recipe's lock cannot be read"),
    live("E0542", Phase::Runtime, "an input differs from the recipe's lock (`--locked`)"),
    // E055x — claims a run decides (`--require-claims`)
    live("E0550", Phase::Runtime, "a claim that does not hold (`--require-claims`)"),
    // E060x — `wrlc lower` (a plan as another engine's job)
    live("E0600", Phase::Lower, "unknown lowering backend"),
    live("E0601", Phase::Lower, "field the backend cannot express"),
    live("E0602", Phase::Lower, "value the backend needs is `unknown`"),
    live("E0603", Phase::Lower, "job directory cannot be used"),
    // E061x — `wrlc env serve` (a recipe's environment over HTTP)
    live("E0610", Phase::Service, "no environment to serve"),
    live("E0611", Phase::Service, "request without the service's token"),
    live("E0612", Phase::Service, "unknown episode"),
    live("E0613", Phase::Service, "malformed tool call"),
    live("E0614", Phase::Service, "too many episodes at once"),
    live("E0615", Phase::Service, "malformed or unexpected request"),
    live("E0616", Phase::Service, "env service cannot start"),
    // W01xx — warnings of the source text
    live("W0101", Phase::Warning, "bidirectional text control character in the source"),
    // W02xx — warnings
    live("W0201", Phase::Warning, "unused declaration"),
    live("W0202", Phase::Warning, "unused import"),
    live("W0203", Phase::Warning, "profile override of a param does not reach a computed value"),
    live("W0204", Phase::Warning, "a knob the chosen policy loss does not read"),
    live("W0210", Phase::Warning, "a step budget the agent's `max_turns` cuts"),
    live("W0211", Phase::Warning, "a phase `lr` replaces the stage's"),
    live("W0212", Phase::Warning, "a model context in thousands where a power of two is meant"),
    live("W0213", Phase::Warning, "`pass_at_k` or `cons_at_k` with `k = 1`"),
    live("W0214", Phase::Warning, "mini-batch that does not say what it counts"),
    live("W0215", Phase::Warning, "critic that nothing reads (advantages are group-relative)"),
    live("W0216", Phase::Warning, "replay whose fraction of the batch is no task"),
    live("W0217", Phase::Warning, "a per-phase KL reference that changes nothing"),
    live("W0218", Phase::Warning, "pool of generated tasks the batch never draws from"),
    live("W0220", Phase::Warning, "a field left to its stdlib default under `use std::explicit`"),
    live("W0230", Phase::Warning, "evaluations too small to decide a claim at 95 %"),
    live("W0231", Phase::Warning, "a format reward the agent's replies can never pass"),
    live("W0240", Phase::Warning, "an input differs from the recipe's lock"),
];

/// The registry entry for a code.
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|c| c.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_unique_and_well_formed() {
        for pair in CODES.windows(2) {
            assert!(pair[0].code < pair[1].code, "{} before {}", pair[0].code, pair[1].code);
        }
        for c in CODES {
            assert_eq!(c.code.len(), 5, "{}", c.code);
            assert!(c.code.starts_with('E') || c.code.starts_with('W'), "{}", c.code);
            assert!(c.code[1..].chars().all(|d| d.is_ascii_digit()), "{}", c.code);
        }
    }
}
