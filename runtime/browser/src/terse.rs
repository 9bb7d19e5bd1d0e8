//! The terse action syntax of the element-id tool set, for tiny text policies.
//!
//! One action per line: `click 7`, `type 3 blue mug`, `type! 3 blue mug` (then Enter),
//! `select 4 Green`, `hover 2`, `scroll down`, `press Enter`, `goto http://…`, `back`,
//! `forward`, `answer 12.50`, `done`. [`parse`] gives a typed action or an agent error;
//! [`render`] is its inverse. An action of a coordinate tool set (an instruction-tuned policy's
//! checked call) travels as one line of its JSON form (`{"toolset":"openwebrl_norm","tool":
//! "click","point_2d":[500,120]}`, [`Action`]'s serde form), so every turn reaches the env and
//! the trajectory as lines.

use crate::action::{Action, Direction, Elem};
use crate::failure::AgentError;

fn id_of(word: Option<&str>, verb: &str) -> Result<u32, AgentError> {
    let w = word.ok_or_else(|| {
        AgentError::BadArguments(format!("{verb} needs an element id, e.g. `{verb} 3`"))
    })?;
    w.parse::<u32>()
        .map_err(|_| AgentError::BadArguments(format!("{verb}: {w:?} is not an element id")))
}

fn rest_required(rest: &str, verb: &str) -> Result<String, AgentError> {
    if rest.is_empty() {
        Err(AgentError::BadArguments(format!("{verb} needs text after the id")))
    } else {
        Ok(rest.to_string())
    }
}

/// Parses one line of terse syntax.
pub fn parse(line: &str) -> Result<Action, AgentError> {
    let line = line.trim();
    if line.starts_with('{') {
        return serde_json::from_str(line)
            .map_err(|e| AgentError::BadArguments(format!("the action {line:?}: {e}")));
    }
    let (verb, args) = line.split_once(' ').map_or((line, ""), |(v, a)| (v, a.trim_start()));
    let (first, rest) = args.split_once(' ').map_or((args, ""), |(f, r)| (f, r.trim()));
    let first_opt = (!first.is_empty()).then_some(first);
    let elem = match verb {
        "click" => Elem::Click { id: id_of(first_opt, verb)? },
        "hover" => Elem::Hover { id: id_of(first_opt, verb)? },
        "type" | "type!" => Elem::Type {
            id: id_of(first_opt, "type")?,
            text: rest_required(rest, verb)?,
            submit: verb == "type!",
        },
        "select" => {
            Elem::Select { id: id_of(first_opt, verb)?, option: rest_required(rest, verb)? }
        }
        "scroll" => Elem::Scroll {
            direction: match args {
                "up" => Direction::Up,
                "down" | "" => Direction::Down,
                "left" => Direction::Left,
                "right" => Direction::Right,
                other => {
                    return Err(AgentError::BadArguments(format!(
                        "scroll: {other:?} is not up/down/left/right"
                    )));
                }
            },
        },
        "press" if !args.is_empty() => Elem::Press { key: args.to_string() },
        "press" => {
            return Err(AgentError::BadArguments("press needs a key, e.g. `press Enter`".into()));
        }
        "goto" if !args.is_empty() => Elem::Goto { url: args.to_string() },
        "goto" => return Err(AgentError::BadArguments("goto needs a URL".into())),
        "back" => Elem::Back,
        "forward" => Elem::Forward,
        "answer" => Elem::Answer { text: args.to_string() },
        "done" => Elem::Done,
        "" => return Err(AgentError::Parse("empty action".into())),
        other => return Err(AgentError::UnknownTool(other.chars().take(30).collect())),
    };
    Ok(Action::Elem(elem))
}

/// Parses a turn: one action per non-empty line, all or nothing.
pub fn parse_turn(text: &str) -> Result<Vec<Action>, AgentError> {
    let actions: Vec<Action> =
        text.lines().filter(|l| !l.trim().is_empty()).map(parse).collect::<Result<_, _>>()?;
    if actions.is_empty() {
        return Err(AgentError::Parse("no action in the turn".into()));
    }
    Ok(actions)
}

/// Renders an element-id action in terse syntax, another tool set's as its JSON line; `None`
/// only where the JSON cannot be written (a non-finite point).
pub fn render(action: &Action) -> Option<String> {
    let e = match action {
        Action::Elem(e) => e,
        Action::Openwebrl(_) | Action::OpenwebrlNorm(_) | Action::Opagent(_) => {
            return serde_json::to_string(action).ok();
        }
    };
    Some(match e {
        Elem::Click { id } => format!("click {id}"),
        Elem::Hover { id } => format!("hover {id}"),
        Elem::Type { id, text, submit } => {
            format!("type{} {id} {text}", if *submit { "!" } else { "" })
        }
        Elem::Select { id, option } => format!("select {id} {option}"),
        Elem::Scroll { direction } => format!(
            "scroll {}",
            match direction {
                Direction::Up => "up",
                Direction::Down => "down",
                Direction::Left => "left",
                Direction::Right => "right",
            }
        ),
        Elem::Press { key } => format!("press {key}"),
        Elem::Goto { url } => format!("goto {url}"),
        Elem::Back => "back".into(),
        Elem::Forward => "forward".into(),
        Elem::Answer { text } => format!("answer {text}"),
        Elem::Done => "done".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_render_round_trip() {
        for line in [
            "click 7",
            "type 3 blue mug",
            "type! 3 blue mug",
            "select 4 Green",
            "hover 2",
            "scroll up",
            "press Enter",
            "goto http://127.0.0.1:1/x",
            "back",
            "forward",
            "answer 12.50",
            "done",
        ] {
            let a = parse(line).unwrap();
            assert_eq!(render(&a).unwrap(), line);
        }
        assert_eq!(parse("  click   7 ").unwrap(), Action::Elem(Elem::Click { id: 7 }));
        let json = r#"{"toolset":"openwebrl_norm","tool":"click","point_2d":[500.0,120.0],"clicks":1,"button":"left"}"#;
        let a = parse(json).unwrap();
        assert!(matches!(a, Action::OpenwebrlNorm(crate::OpenWebRl::Click { .. })), "{a:?}");
        assert_eq!(render(&a).unwrap(), json);
        assert!(matches!(parse("{\"toolset\":\"x\"}"), Err(AgentError::BadArguments(_))));
    }

    #[test]
    fn bad_lines_are_agent_errors() {
        assert!(matches!(parse("fly 3"), Err(AgentError::UnknownTool(_))));
        assert!(matches!(parse("click x"), Err(AgentError::BadArguments(_))));
        assert!(matches!(parse("click"), Err(AgentError::BadArguments(_))));
        assert!(matches!(parse("type 3"), Err(AgentError::BadArguments(_))));
        assert!(matches!(parse("scroll sideways"), Err(AgentError::BadArguments(_))));
        assert!(matches!(parse(""), Err(AgentError::Parse(_))));
        assert!(parse_turn("click 1\n\ntype 2 a").unwrap().len() == 2);
        assert!(parse_turn("click 1\nfly").is_err());
        assert!(parse_turn("  ").is_err());
    }
}
