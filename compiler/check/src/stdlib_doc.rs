//! Generates `docs/stdlib.md`, the contract between the stdlib and the runtime, from the
//! embedded `stdlib/*.wrl` themselves: every builtin with its slots, types, defaults and ranges,
//! every tool set with its tools and terminal tool, every reward block with its level, range
//! and what it reads. A test fails when the committed page is stale.

use std::fmt::Write as _;

use wrl_diagnostics::{SourceMap, Span};
use wrl_syntax::ast::{self, BlockItem, ExprKind, ItemKind};

use crate::stdlib::MODULES;

const INTRO: &str = r#"# The standard library

<!-- Generated from `stdlib/*.wrl` by `wrl_check::stdlib_doc()`; do not edit by hand.
     Regenerate with `WRL_BLESS=1 cargo test -p wrl-check --test all stdlib_doc`. -->

The stdlib is written in `.wrl` under `stdlib/` and embedded in `wrlc`. Its declarations are
the **contract between the checker and the runtime**: the checker accepts exactly the
constructors, fields, types, defaults and ranges listed here, and the runtime implements every
one of them with the meaning written here. A change to either side starts with this page.

How to read the signatures:

- `builtin name(param: type = default, …) -> kind { field: type = default … }`: positional or
  named parameters in parentheses, configuration fields in the block. A slot without a default
  is required (E0303).
- Types: `int`, `float`, `prob` (a float in [0, 1]), `bool`, `string`, `path`, `any`, `dims`
  (`W x H`); unit types `tokens steps turns iters epochs samples calls images pixels duration
  bytes ratio` (a count accepts a bare number in its own unit, a duration or size needs a unit;
  `ratio` takes `10%` or `0.1`); `enum(a, b)`, `list(T)`, `record(name: T, …)`, `range(T)`
  (`lo .. hi`, or one value for both), `one_of(T, …)`, and kinds (`model`, `dataset`, `env`,
  `site`, `observation`, `tools`, `agent`, `module`, `reward`, `signal`, `schedule`, `stage`,
  `eval`, `checkpoint` = a model or a stage's `.model`). `(min: …, max: …)` bounds are
  inclusive (E0306).
- Magnitudes: `32k` = 32,000; `32Ki` = 32,768 (see `docs/language.md`).
- `unknown` is accepted by the checker and refused by `wrlc run`.

## Estimates the checker uses

Some slots exist only so that the checker can catch a run that would fail mid-training. They
are estimates, not limits, and the runtime ignores them:

- **Context budget (E0404).** Turn *t* of an episode needs
  `t × env.step_text + (t − 1) × kept + min(K, t) × model.image_tokens + agent.max_response`
  tokens, where `kept` is the agent's `step_response` with `history = full_text`, half of it
  with `hide_thinking`, 32 tokens with `action_only`, and where `history = none` counts only the
  current turn; K is the largest `screenshot(last: K)` in the env's `observe`. A model with an
  `image_max_pixels` budget counts a screenshot as its processor will make it: the env's
  `viewport` resized by `smart_resize` to its family's grid, one token per 32 × 32 pixels
  (`qwen3_vl`; 28 × 28 for `qwen2_5_vl`), in place of `image_tokens`. This must fit the
  policy model's `context` up to the longest `horizon` of the stage's phases (the agent's
  `max_turns` without phases), and up to each evaluation's `max_steps` (cut at `max_turns`; its
  own `max_response` and `trajectory_tokens` where it sets them). For a graph agent each module is checked with its own model and
  `max_response`; `screenshot` and `history` count only when the module's `inputs` list them.
- **Batches (E0403).** At `level = trajectory` an RL batch is `prompts × group` trajectories,
  split into mini-batches of `mini_batch` (one optimiser step each), so `mini_batch` must divide
  it, whatever the level when it counts prompts or trajectories (at `level = turn` these take
  all their turns along). At `level = turn` a mini-batch of turns or samples splits turns,
  whose number is known only at run time, and the last mini-batch may be short. An SFT `batch` is split into `micro_batch`es (gradient
  accumulation), so `micro_batch` must divide `batch`.

## What an episode records (E0405)

Each reward block declares what it `reads`; the checker requires the stage's agent,
environment, tool set and dataset to produce it:

| signal | produced when |
|---|---|
| `response`, `end_reason`, `actions`, `task` | always |
| `url`, `elements`, `feedback` | a `browser` environment (`feedback` also from `search_api` and `env_server`) |
| `env_reward` | an `env_server` environment (the server's step rewards) |
| `screenshots` | a `browser` whose `observe` has `screenshot(…)`: only observed screenshots are recorded |
| `page_state` | a `browser` whose target is the sandbox web (`std::sandbox::…`) or `webarena(…)` |
| `answer` | a tool set (the env's, or a graph module's) with a terminal tool that takes arguments, or an `answer_tag` |
| `reference` | a dataset of `tasks` or `qa` |
"#;

/// A stdlib file's header comment as one paragraph, without its `// std::x — ` lead.
fn header(text: &str) -> String {
    let lines: Vec<&str> =
        text.lines().map_while(|l| l.strip_prefix("//")).map(str::trim).collect();
    let joined = lines.join(" ");
    match joined.split_once(" — ") {
        Some((_, rest)) => rest.to_string(),
        None => joined,
    }
}

/// The whole page.
pub fn stdlib_doc() -> String {
    let mut out = String::from(INTRO);
    let mut sources = SourceMap::new();
    for (path, name, text) in MODULES {
        let id = sources.add(*name, *text);
        let parsed = wrl_syntax::parse(id, text);
        let _ = writeln!(out, "\n## `{path}`\n");
        if *path == crate::stdlib::PRELUDE {
            out.push_str("In scope in every file without `use`.\n");
        } else if parsed.file.items.is_empty() {
            // A marker module (`std::explicit`): its header comment says what `use` of it does.
            let _ = writeln!(out, "`use {path}`: {}", header(text));
        } else {
            let _ =
                writeln!(out, "Import with `use {path}::{{…}}` or name items as `{path}::item`.");
        }
        for item in &parsed.file.items {
            match &item.kind {
                ItemKind::Builtin(b) => {
                    builtin(&mut out, &sources, &parsed.comments, path, b, item.doc.as_deref())
                }
                ItemKind::Decl(d) => decl(&mut out, &sources, path, d, item.doc.as_deref()),
                ItemKind::Use(_) | ItemKind::Extends(_) | ItemKind::Profile(_) => {}
            }
        }
    }
    out
}

fn text(sources: &SourceMap, span: Span) -> String {
    let raw = sources.get(span.file).map(|f| f.slice(span)).unwrap_or("");
    crate::checker::type_text(raw)
}

/// A default value on one line, a record the formatter spread over lines with its commas back
/// (`{ step = 30 s, task = 600 s }`: valid `.wrl` to copy).
fn value_text(sources: &SourceMap, span: Span) -> String {
    let raw = sources.get(span.file).map(|f| f.slice(span)).unwrap_or("");
    crate::explicit::one_line(raw)
}

fn doc_lines(out: &mut String, doc: Option<&str>) {
    if let Some(d) = doc {
        let joined: Vec<&str> = d.lines().map(str::trim).collect();
        let _ = writeln!(out, "\n{}", joined.join(" ").trim());
    }
}

fn qualified(path: &str, name: &str) -> String {
    if path == crate::stdlib::PRELUDE { name.to_string() } else { format!("{path}::{name}") }
}

fn builtin(
    out: &mut String,
    s: &SourceMap,
    comments: &[wrl_syntax::Comment],
    path: &str,
    b: &ast::Builtin,
    doc: Option<&str>,
) {
    let params: Vec<String> = b.params.iter().map(|p| param_text(s, p)).collect();
    let _ = writeln!(
        out,
        "\n### `{}({}) -> {}`",
        qualified(path, &b.name.name),
        params.join(", "),
        text(s, b.returns.span)
    );
    doc_lines(out, doc);
    if b.fields.is_empty() {
        return;
    }
    out.push_str("\n| field | type | default | notes |\n|---|---|---|---|\n");
    let mut prev_start = b.returns.span.start;
    for f in &b.fields {
        // `///` lines between the previous field and this one document it.
        let notes: Vec<String> = comments
            .iter()
            .filter(|c| c.doc && c.span.start > prev_start && c.span.end <= f.span.start)
            .map(|c| c.text.trim_start_matches('/').trim().to_string())
            .collect();
        prev_start = f.span.start;
        let default = f
            .default
            .as_ref()
            .map(|d| format!("`{}`", value_text(s, d.span)))
            .unwrap_or_else(|| "required".into());
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} |",
            f.name.name,
            text(s, f.ty.span),
            default.replace('|', "\\|"),
            notes.join(" ").replace('|', "\\|")
        );
    }
}

fn param_text(s: &SourceMap, p: &ast::Param) -> String {
    match &p.default {
        Some(d) => format!("{}: {} = {}", p.name.name, text(s, p.ty.span), value_text(s, d.span)),
        None => format!("{}: {}", p.name.name, text(s, p.ty.span)),
    }
}

fn decl(out: &mut String, s: &SourceMap, path: &str, d: &ast::Decl, doc: Option<&str>) {
    let name = qualified(path, &d.name.name);
    let (ctor, block) = match &d.value.kind {
        ExprKind::Configure { base, block } => (text(s, base.span), Some(block)),
        _ => (text(s, d.value.span), None),
    };
    let _ = writeln!(out, "\n### `{}` ({} = `{}`)", name, d.kind.word(), ctor);
    doc_lines(out, doc);
    let Some(block) = block else { return };
    let mut settings = Vec::new();
    let mut tools = Vec::new();
    for item in &block.items {
        match item {
            BlockItem::Field(f) => {
                settings.push(format!("`{} = {}`", text(s, f.path.span), text(s, f.value.span)))
            }
            BlockItem::Tool(t) => tools.push(t),
            BlockItem::Flag(f) => settings.push(format!("`{}`", f.name)),
            BlockItem::Module(_) | BlockItem::Edge(_) => {}
        }
    }
    if !settings.is_empty() {
        let _ = writeln!(out, "\nSettings: {}.", settings.join(", "));
    }
    if tools.is_empty() {
        return;
    }
    out.push_str("\n| tool | parameters | ends the episode |\n|---|---|---|\n");
    for t in tools {
        let ps: Vec<String> = t.params.iter().map(|p| param_text(s, p)).collect();
        let terminal = t.body.as_ref().is_some_and(|b| {
            b.items.iter().any(|i| matches!(i, BlockItem::Flag(f) if f.name == "terminal"))
        });
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} |",
            t.name.name,
            ps.join(", ").replace('|', "\\|"),
            if terminal { "**terminal**" } else { "" }
        );
    }
}
