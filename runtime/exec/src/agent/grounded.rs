//! An expert's terse step as the calls of a coordinate tool set (OpenWebRL's or OpAgent's), so
//! a policy that clicks points learns from demonstrations in its own calls: each element action
//! grounded at the element's box in the step's screenshot (`wrl_browser::ground`; a step
//! already in the set's own actions, a policy's recorded turn, kept), each action written as
//! the recipe's tool call with the arguments its schema leaves to their defaults
//! left out (the calls a model writes, no longer than they need be).

use serde_json::{Map, Value as Json};
use wrl_browser::{Action, ToolSet, ground, terse};
use wrl_plan::params::Toolset;
use wrl_sandbox::StepBoxes;
use wrl_trainer::chat::CallText;

use super::actions::{browser_name, tool_set};

/// The calls of coordinate tool set `tools` for an expert's step (its terse `lines`, at the
/// element boxes it recorded), and the answer-tag text when the set answers with a tag. `Err`
/// names the step and what to do: an element action without boxes (demonstrations recorded
/// before grounding, or not by the sandbox's expert), an element off the screenshot, an action
/// the set has no tool for.
pub fn step_calls(
    lines: &[String],
    boxes: Option<&StepBoxes>,
    tools: &Toolset,
) -> Result<(Vec<CallText>, Option<String>), String> {
    let set = tool_set(tools);
    let step = lines.join("; ");
    let no_boxes = || {
        format!(
            "the step `{step}` records no element boxes, and the agent's tool set clicks points \
             ({}): a demonstration is grounded at the boxes recorded beside each screenshot \
             (docs/sandbox.md, `boxes`), which `std::sandbox::demos` records; remove a run \
             directory's cache written before them, `data/<dataset>.jsonl`, to record the \
             demonstrations again, or give the agent `std::tools::elements`",
            coordinates(set)
        )
    };
    let mut calls = Vec::new();
    let mut answer = None;
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        let actions = match terse::parse(line).map_err(|e| format!("`{line}`: {e}"))? {
            Action::Elem(e) => ground::ground(&e, boxes.ok_or_else(no_boxes)?, set)
                .map_err(|why| format!("the step `{step}` cannot be grounded: {why}"))?,
            // A step already in the set's own calls (a policy's recorded turn) stays as it is.
            a if same_set(&a, set) => vec![a],
            a => {
                return Err(format!(
                    "`{line}` is an action of another tool set than {set:?}: {a:?}"
                ));
            }
        };
        for a in &actions {
            match a {
                Action::Opagent(wrl_browser::OpAgent::Answer { text })
                    if !tools.answer_tag.is_empty() =>
                {
                    answer = Some(text.clone());
                }
                _ => calls.push(action_call(a, tools)?),
            }
        }
    }
    Ok((calls, answer))
}

/// Whether `a` is an action of `set`.
fn same_set(a: &Action, set: ToolSet) -> bool {
    match a {
        Action::Openwebrl(_) => set == ToolSet::Openwebrl,
        Action::OpenwebrlNorm(_) => set == ToolSet::OpenwebrlNorm,
        Action::Opagent(_) => set == ToolSet::Opagent,
        Action::Elem(_) => set == ToolSet::Elem,
    }
}

/// Which space a tool set's points are in, for a message.
fn coordinates(set: ToolSet) -> &'static str {
    match set {
        ToolSet::Openwebrl => "CSS pixels",
        ToolSet::OpenwebrlNorm | ToolSet::Opagent => "0–1000 of the screenshot",
        ToolSet::Elem => "element ids",
    }
}

/// A browser action as the recipe tool's call: its fields as arguments, less those equal to
/// the schema's default and those left empty; whole numbers written as integers.
pub fn action_call(action: &Action, tools: &Toolset) -> Result<CallText, String> {
    let set = tool_set(tools);
    let Ok(Json::Object(mut fields)) = serde_json::to_value(action) else {
        return Err(format!("{action:?} has no arguments object"));
    };
    fields.remove("toolset");
    let name = match fields.remove("tool") {
        Some(Json::String(n)) => n,
        _ => return Err(format!("{action:?} names no tool")),
    };
    let tool = tools
        .tools
        .iter()
        .find(|t| browser_name(set, &t.name) == name)
        .ok_or_else(|| format!("the tool set has no tool `{name}` for {action:?}"))?;
    let mut args = Map::new();
    for (k, v) in fields {
        let v = whole(v);
        let default = tool.params.iter().find(|p| p.name == k).and_then(|p| p.default.as_ref());
        if v.is_null() || default.is_some_and(|d| whole(d.to_json()) == v) {
            continue;
        }
        args.insert(k, v);
    }
    Ok(CallText { name: tool.name.clone(), arguments: Json::Object(args).to_string() })
}

/// `v` with every whole number written as an integer (`500.0` as `500`).
fn whole(v: Json) -> Json {
    match v {
        Json::Number(n) => match n.as_f64() {
            Some(x) if n.is_f64() && x.fract() == 0.0 && x.abs() < 1e15 => Json::from(x as i64),
            _ => Json::Number(n),
        },
        Json::Array(items) => Json::Array(items.into_iter().map(whole).collect()),
        Json::Object(m) => Json::Object(m.into_iter().map(|(k, v)| (k, whole(v))).collect()),
        other => other,
    }
}
