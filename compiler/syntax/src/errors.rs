//! Turns pest's parse failures into `E0100` diagnostics in user words: what was expected (never a
//! rule name) and what was found, with a label at the place.

use pest::error::{Error, ErrorVariant, InputLocation};
use wrl_diagnostics::{Diagnostic, FileId, Span};

use crate::grammar::Rule;

/// How a rule reads in "expected …" lists. `None` means the rule never shows up there (it is
/// covered by a broader description, or is an entry point).
fn describe(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "end of file",
        Rule::raw_ident | Rule::ident | Rule::path | Rule::flag => "a name",
        Rule::number
        | Rule::numeric
        | Rule::string
        | Rule::text_block
        | Rule::kw_true
        | Rule::kw_false
        | Rule::kw_unknown
        | Rule::paren
        | Rule::list
        | Rule::record
        | Rule::if_expr
        | Rule::op_neg
        | Rule::expr
        | Rule::expr_only => "a value",
        Rule::unit => "a unit",
        Rule::string_inner | Rule::text_inner => "text",
        Rule::kw_if => "`if`",
        Rule::kw_then => "`then`",
        Rule::kw_else => "`else`",
        Rule::op_not => "`not`",
        Rule::kw_when | Rule::guard => "`when`",
        Rule::kw_use | Rule::use_item => "`use`",
        Rule::kw_extends | Rule::extends_item => "`extends`",
        Rule::kw_profile | Rule::profile_item => "`profile`",
        Rule::kw_variant => "`variant`",
        Rule::kw_builtin | Rule::builtin_item => "`builtin`",
        Rule::kw_module | Rule::module_item => "`module`",
        Rule::kw_tool | Rule::tool_item => "`tool`",
        Rule::kw_limit | Rule::edge_limit => "`limit`",
        Rule::kw_as => "`as`",
        Rule::keyword => "a keyword",
        Rule::decl_kind | Rule::decl => "a declaration (`model`, `dataset`, `env`, `stage`, …)",
        Rule::arrow => "`->`",
        Rule::call_args | Rule::params => "`(`",
        Rule::arg => "an argument",
        Rule::param => "a typed field (`name: type`)",
        Rule::member => "`.`",
        Rule::index => "`[`",
        Rule::block | Rule::spec_block => "`{`",
        Rule::field | Rule::field_path => "a field (`name = value`)",
        Rule::index_number => "an index",
        Rule::edge => "an edge (`a -> b`)",
        Rule::use_path | Rule::use_group => "a module path",
        Rule::ret_type => "a kind",
        Rule::infix => "an operator",
        Rule::comma => "`,`",
        Rule::colon => "`:`",
        Rule::assign => "`=`",
        Rule::lparen => "`(`",
        Rule::rparen => "`)`",
        Rule::lbracket => "`[`",
        Rule::rbracket => "`]`",
        Rule::lbrace => "`{`",
        Rule::rbrace => "`}`",
        Rule::primary => "a value",
        Rule::block_item => "a field (`name = value`)",
        Rule::item => "a declaration (`model`, `dataset`, `env`, `stage`, …)",
        Rule::WHITESPACE
        | Rule::ident_start
        | Rule::ident_char
        | Rule::inline_ws
        | Rule::prefix
        | Rule::item_head
        | Rule::postfix
        | Rule::file
        | Rule::items
        | Rule::one_item => return None,
    })
}

/// The order descriptions are listed in: punctuation first, then words, then broad classes.
fn rank(desc: &str) -> u8 {
    if desc.starts_with('`') {
        0
    } else if desc == "end of file" || desc == "an operator" {
        3
    } else if desc.starts_with("a value") || desc.starts_with("a name") {
        1
    } else {
        2
    }
}

/// Sorts and dedups descriptions; where a value could have continued ("an operator"), the
/// postfix forms and `:` are left out so that the list shows what really matters.
fn summarise(mut d: Vec<&'static str>) -> Vec<&'static str> {
    if d.contains(&"an operator") {
        d.retain(|x| !["`(`", "`.`", "`[`", "`{`", "`:`"].contains(x));
    }
    d.sort_by_key(|s| (rank(s), *s));
    d.dedup();
    d
}

/// Converts a pest error for text that starts at byte `offset` of file `file`. `cut` says that
/// `text` is one item cut off where the next item starts: its end is an end of line.
pub(crate) fn from_pest(
    err: &Error<Rule>,
    file: FileId,
    text: &str,
    offset: usize,
    cut: bool,
) -> Diagnostic {
    let pos = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let expected: Vec<&'static str> = match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let d: Vec<&str> = positives.iter().filter_map(|r| describe(*r)).collect();
            summarise(d)
        }
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    let (found, len) = match found_at(text, pos) {
        (f, len) if cut && f == "end of file" => ("end of line".to_string(), len),
        other => other,
    };
    let abs = offset + pos;
    let span = Span::new(file, abs, abs + len);
    // pest gives up with a custom error when its own stack guard trips (very deep input).
    if let ErrorVariant::CustomError { message } = &err.variant
        && message.ends_with("limit reached")
    {
        return Diagnostic::new("E0104", "input nests too deep to parse")
            .label(span, "the parser ran out of stack here")
            .help("flatten the value, or name inner parts with `param` declarations");
    }
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}, found {found}", join_or(&expected))
    };
    let diag = Diagnostic::new("E0100", message).label(span, format!("unexpected {found}"));
    diag.maybe_help(help_for(&expected, text, pos))
}

/// A hint for common mistakes, where one is known.
fn help_for(expected: &[&str], text: &str, pos: usize) -> Option<String> {
    let rest = &text[pos..];
    if rest.starts_with(':') && expected.contains(&"`=`") {
        return Some(
            "fields are written `name = value`; `name: value` is for named call arguments".into(),
        );
    }
    if rest.starts_with('=') && expected.contains(&"`:`") {
        return Some("named call arguments are written `name: value`".into());
    }
    if rest.starts_with('\'') {
        return Some("strings use double quotes: \"like this\"".into());
    }
    if rest.starts_with("&&") || rest.starts_with("||") || rest.starts_with('!') {
        return Some("boolean operators are the words `and`, `or` and `not`".into());
    }
    None
}

/// Describes the token at `pos` and returns its length in bytes.
fn found_at(text: &str, pos: usize) -> (String, usize) {
    let rest = text.get(pos..).unwrap_or("");
    let Some(c) = rest.chars().next() else {
        return ("end of file".to_string(), 0);
    };
    if c == '\n' || c == '\r' {
        return ("end of line".to_string(), 0);
    }
    if c.is_ascii_alphanumeric() || c == '_' {
        let len =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        return (format!("`{}`", &rest[..len]), len);
    }
    if c.is_control() || c == '\u{feff}' {
        return (format!("character U+{:04X}", c as u32), c.len_utf8());
    }
    (format!("`{c}`"), c.len_utf8())
}

fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
