//! The fast path for the common case, a file without syntax errors: `wrl.pest` (the grammar of
//! record) transcribed rule by rule into a backtracking recursive descent over bytes, with the
//! Pratt table of `expr.rs`, building the same AST without pest's pairs. It gives up (`None`)
//! at the first doubt — text that does not parse, a value that would get a diagnostic, a
//! byte-order mark after the start, recursion deeper than real files need — and `parse` then
//! runs the pest path, which alone reports diagnostics. `tests/mutate.rs` checks that both
//! paths build identical ASTs on the corpus and on thousands of mutants.
//!
//! Conventions: every rule is entered with trivia already skipped, and on failure the caller
//! restores the position (`attempt`); `last` is the end of the last token consumed, so a span
//! `start..last` ends at the last token, as `Ctx::span` does for pest's pairs.

use wrl_diagnostics::{FileId, Span};

use super::expr::MAX_DEPTH;
use super::literal::{number, unescape, unit_word};
use crate::ast::{
    Arg, BinaryOp, Block, BlockItem, Builtin, Decl, DeclKind, Edge, Expr, ExprKind, Extends, Field,
    FieldPath, Ident, Item, ItemKind, Module, Param, PathSegment, Profile, StrLit, Tool, UnaryOp,
    Use,
};

/// `tokens::is_keyword` as one `match` (it runs before every name).
fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "and"
            | "else"
            | "false"
            | "if"
            | "not"
            | "or"
            | "then"
            | "true"
            | "unknown"
            | "use"
            | "when"
    )
}

/// Recursion deeper than this gives up; the lexical pre-pass keeps real files far below it.
const MAX_RECURSION: u32 = 512;

/// An expression with the depth of its tree (as `expr.rs` counts it).
type Sized = (Expr, u32);

/// Parses the items of `text` from byte `start` (after leading trivia) to its end, or `None`.
pub(crate) fn parse_items(file: FileId, text: &str, start: usize) -> Option<Vec<Item>> {
    let mut p =
        P { text, b: text.as_bytes(), pos: start, last: start, file, calls: 0, bail: false };
    let mut items = Vec::new();
    p.ws();
    while p.pos < p.b.len() {
        items.push(p.item()?);
        p.ws();
    }
    (!p.bail).then_some(items)
}

/// The flat sequence of an expression (`prefix* primary postfix* (infix prefix* primary
/// postfix*)*`), as pest hands it to the Pratt parser, with the postfixes already applied.
enum El {
    Prefix(UnaryOp, Span),
    Primary(Sized),
    Infix(Infix, Span),
}

#[derive(Clone, Copy)]
enum Infix {
    Range,
    Bin(BinaryOp),
}

enum Post {
    Call(Vec<(Arg, u32)>),
    Member(Ident),
    Index(Sized),
    Block((Block, u32)),
}

/// Binding powers of pest's `PrattParser` for the table in `expr.rs` (ten per level).
const PREC_NOT: u32 = 40;
const PREC_NEG: u32 = 80;
// Postfixes bind at 90, tighter than everything: `operand` applies them directly.

fn infix_prec(op: Infix) -> u32 {
    match op {
        Infix::Range => 10,
        Infix::Bin(BinaryOp::Or) => 20,
        Infix::Bin(BinaryOp::And) => 30,
        Infix::Bin(
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge,
        ) => 50,
        Infix::Bin(BinaryOp::Add | BinaryOp::Sub) => 60,
        Infix::Bin(BinaryOp::Mul | BinaryOp::Div) => 70,
    }
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

struct P<'t> {
    text: &'t str,
    b: &'t [u8],
    pos: usize,
    /// The end of the last token consumed.
    last: usize,
    file: FileId,
    /// The current recursion depth.
    calls: u32,
    /// Set where the pest path would report a diagnostic (a value out of range, an unknown
    /// unit, a bad escape, a tree too deep…) or where this parser is unsure. It is sticky: a
    /// failure of that kind must not let a PEG alternative succeed in its place.
    bail: bool,
}

type Mark = (usize, usize);

impl<'t> P<'t> {
    /// Gives up on the whole file.
    fn give_up<T>(&mut self) -> Option<T> {
        self.bail = true;
        None
    }

    /// `grow` of `expr.rs`, giving up where it would report `E0104`.
    fn grow(&mut self, kind: ExprKind, span: Span, depth: u32) -> Option<Sized> {
        if depth >= MAX_DEPTH {
            return self.give_up();
        }
        Some((Expr::new(kind, span), depth + 1))
    }

    fn mark(&self) -> Mark {
        (self.pos, self.last)
    }

    fn reset(&mut self, m: Mark) {
        (self.pos, self.last) = m;
    }

    /// Runs `f`, restoring the position when it fails (a PEG alternative or option).
    fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let m = self.mark();
        let r = f(self);
        if r.is_none() {
            self.reset(m);
        }
        r
    }

    /// Runs `f` after trivia; restores the position, trivia included, when it fails.
    fn then<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.attempt(|p| {
            p.ws();
            f(p)
        })
    }

    /// `item ("," item)* ","?` between brackets the caller matches: the items, possibly none.
    fn comma_list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Vec<T> {
        let mut out = Vec::new();
        if let Some(first) = self.then(&mut item) {
            out.push(first);
            while let Some(next) = self.then(|p| {
                p.lit(b",")?;
                p.ws();
                item(p)
            }) {
                out.push(next);
            }
            self.then(|p| p.lit(b","));
        }
        out
    }

    fn span(&self, start: usize) -> Span {
        Span::new(self.file, start, self.last)
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.b.get(self.pos + i).copied()
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.last = self.pos;
    }

    /// The implicit `WHITESPACE` and `COMMENT` of the grammar, without the byte-order mark
    /// (where pest's spans around one are irregular, the pest path decides).
    fn ws(&mut self) {
        while let Some(c) = self.at(0) {
            match c {
                b' ' | b'\n' | b'\t' | b'\r' => self.pos += 1,
                b'/' if self.at(1) == Some(b'/') => {
                    self.pos =
                        self.text[self.pos..].find('\n').map_or(self.b.len(), |e| self.pos + e);
                }
                _ => return,
            }
        }
    }

    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.b[self.pos..].starts_with(s).then(|| self.advance(s.len()))
    }

    /// The end of the word (`raw_ident`) at byte `at`, or `at` when none starts there.
    fn word_end(&self, at: usize) -> usize {
        match self.b.get(at) {
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                let mut e = at + 1;
                while self.b.get(e).is_some_and(|c| is_ident_char(*c)) {
                    e += 1;
                }
                e
            }
            _ => at,
        }
    }

    /// The word at the position, without consuming it.
    fn word(&self) -> &'t str {
        &self.text[self.pos..self.word_end(self.pos)]
    }

    /// `"word" ~ !ident_char`.
    fn kw(&mut self, w: &str) -> Option<()> {
        (self.word() == w).then(|| self.advance(w.len()))
    }

    fn raw_ident(&mut self) -> Option<Ident> {
        let w = self.word();
        if w.is_empty() {
            return None;
        }
        let start = self.pos;
        self.advance(w.len());
        Some(Ident { name: w.to_string(), span: self.span(start) })
    }

    /// `!keyword ~ raw_ident`.
    fn ident(&mut self) -> Option<Ident> {
        let w = self.word();
        if w.is_empty() || is_keyword(w) {
            return None;
        }
        let start = self.pos;
        self.advance(w.len());
        Some(Ident { name: w.to_string(), span: self.span(start) })
    }

    /// `"=" ~ !"="` (not atomic: trivia may separate the two).
    fn assign(&mut self) -> Option<()> {
        self.lit(b"=")?;
        self.attempt(|p| {
            p.ws();
            (p.at(0) != Some(b'=')).then_some(())
        })
    }

    /// `":" ~ !":"` (not atomic).
    fn colon(&mut self) -> Option<()> {
        self.lit(b":")?;
        self.attempt(|p| {
            p.ws();
            (p.at(0) != Some(b':')).then_some(())
        })
    }

    fn enter(&mut self) -> Option<()> {
        self.calls += 1;
        if self.calls > MAX_RECURSION {
            return self.give_up();
        }
        Some(())
    }

    fn leave(&mut self) {
        self.calls -= 1;
    }

    // ───────────────────────────── items ─────────────────────────────

    fn item(&mut self) -> Option<Item> {
        let start = self.pos;
        let kind = match self.word() {
            "use" => ItemKind::Use(self.use_item()?),
            "extends" => {
                self.kw("extends")?;
                self.ws();
                let path = self.str_lit()?;
                let overrides = self.then(|p| p.block()).map(|b| b.0);
                ItemKind::Extends(Extends { path, overrides })
            }
            "profile" => {
                self.kw("profile")?;
                self.ws();
                let name = self.ident()?;
                self.ws();
                let overrides = self.block()?.0;
                ItemKind::Profile(Profile { name, overrides })
            }
            "builtin" => ItemKind::Builtin(self.builtin()?),
            w => {
                let kind = DeclKind::from_word(w)?;
                self.advance(w.len());
                let kind_span = self.span(start);
                self.ws();
                let name = self.ident()?;
                self.ws();
                self.assign()?;
                self.ws();
                let value = self.expr()?.0;
                ItemKind::Decl(Decl { kind, kind_span, name, value })
            }
        };
        Some(Item { kind, doc: None, span: self.span(start) })
    }

    fn use_item(&mut self) -> Option<Use> {
        self.kw("use")?;
        self.ws();
        if let Some(path) = self.attempt(|p| p.str_lit()) {
            let alias = self.then(|p| {
                p.kw("as")?;
                p.ws();
                p.ident()
            });
            return Some(Use::File { path, alias });
        }
        let mut segments = vec![self.ident()?];
        while let Some(id) = self.then(|p| {
            p.lit(b"::")?;
            p.ws();
            p.ident()
        }) {
            segments.push(id);
        }
        let group = self.then(|p| {
            p.lit(b"::")?;
            p.ws();
            p.lit(b"{")?;
            p.ws();
            let names = p.comma_list(|p| p.ident());
            if names.is_empty() {
                return None;
            }
            p.ws();
            p.lit(b"}")?;
            Some(names)
        });
        Some(Use::Path { segments, group })
    }

    fn builtin(&mut self) -> Option<Builtin> {
        self.kw("builtin")?;
        self.ws();
        let name = self.ident()?;
        self.ws();
        let params = self.params()?;
        self.ws();
        self.lit(b"->")?;
        self.ws();
        // `ret_type = { path ~ call_args? }`, converted as a call on a path of depth 1.
        let start = self.pos;
        let segments = self.path()?;
        let base = Expr::new(ExprKind::Path(segments), self.span(start));
        let returns = match self.then(|p| p.call_args()) {
            Some((args, args_span)) => self.postfix(base, 1, Post::Call(args), args_span)?.0,
            None => base,
        };
        let fields = self
            .then(|p| {
                p.lit(b"{")?;
                let mut fields = Vec::new();
                while let Some(f) = p.then(|p| {
                    let f = p.param()?;
                    p.then(|p| p.lit(b","));
                    Some(f)
                }) {
                    fields.push(f);
                }
                p.ws();
                p.lit(b"}")?;
                Some(fields)
            })
            .unwrap_or_default();
        Some(Builtin { name, params, returns, fields })
    }

    /// `( name: type = default, … )`.
    fn params(&mut self) -> Option<Vec<Param>> {
        self.lit(b"(")?;
        let out = self.comma_list(|p| p.param());
        self.ws();
        self.lit(b")")?;
        Some(out)
    }

    fn param(&mut self) -> Option<Param> {
        let start = self.pos;
        let name = self.raw_ident()?;
        self.ws();
        self.colon()?;
        self.ws();
        let ty = self.expr()?.0;
        let default = self.then(|p| {
            p.assign()?;
            p.ws();
            p.expr()
        });
        Some(Param { name, ty, default: default.map(|d| d.0), span: self.span(start) })
    }

    fn str_lit(&mut self) -> Option<StrLit> {
        let start = self.pos;
        let value = self.string()?;
        Some(StrLit { value, span: self.span(start) })
    }

    // ───────────────────────────── blocks ─────────────────────────────

    /// `{ (block_item ~ comma?)* }`, a block or a record, with its depth.
    fn block(&mut self) -> Option<(Block, u32)> {
        let start = self.pos;
        self.lit(b"{")?;
        let mut items = Vec::new();
        let mut depth = 0;
        while let Some((item, d)) = self.then(|p| p.block_item()) {
            items.push(item);
            depth = depth.max(d);
            self.then(|p| p.lit(b","));
        }
        self.ws();
        self.lit(b"}")?;
        Some((Block { items, span: self.span(start) }, depth + 1))
    }

    /// `module_item | tool_item | edge | field | flag`, with the depth the item adds.
    fn block_item(&mut self) -> Option<(BlockItem, u32)> {
        let start = self.pos;
        let word = self.word();
        if word == "module"
            && let Some(m) = self.attempt(|p| {
                p.kw("module")?;
                p.ws();
                let name = p.ident()?;
                p.ws();
                p.assign()?;
                p.ws();
                let (value, d) = p.expr()?;
                Some((BlockItem::Module(Module { name, value, span: p.span(start) }), d))
            })
        {
            return Some(m);
        }
        if word == "tool"
            && let Some(t) = self.attempt(|p| {
                p.kw("tool")?;
                p.ws();
                let name = p.ident()?;
                p.ws();
                let params = p.params()?;
                let body = p.then(|p| p.block());
                let d = body.as_ref().map_or(0, |b| b.1);
                let tool = Tool { name, params, body: body.map(|b| b.0), span: p.span(start) };
                Some((BlockItem::Tool(tool), d))
            })
        {
            return Some(t);
        }
        if let Some(e) = self.attempt(|p| p.edge(start)) {
            return Some((BlockItem::Edge(e), 0));
        }
        if let Some(f) = self.attempt(|p| {
            let path = p.field_path()?;
            p.ws();
            p.assign()?;
            p.ws();
            let (value, d) = p.expr()?;
            Some((BlockItem::Field(Field { path, value, span: p.span(start) }), d))
        }) {
            return Some(f);
        }
        Some((BlockItem::Flag(self.ident()?), 0))
    }

    /// `a -> b -> c when v1 | v2 limit 3`.
    fn edge(&mut self, start: usize) -> Option<Edge> {
        let mut nodes = vec![self.ident()?];
        let arrow_ident = |p: &mut Self| {
            p.lit(b"->")?;
            p.ws();
            p.ident()
        };
        nodes.push(self.then(arrow_ident)?);
        while let Some(n) = self.then(arrow_ident) {
            nodes.push(n);
        }
        let guard = self
            .then(|p| {
                p.kw("when")?;
                p.ws();
                let mut verdicts = vec![p.ident()?];
                while let Some(v) = p.then(|p| {
                    p.lit(b"|")?;
                    p.ws();
                    p.ident()
                }) {
                    verdicts.push(v);
                }
                Some(verdicts)
            })
            .unwrap_or_default();
        let limit = self.then(|p| {
            p.kw("limit")?;
            p.ws();
            p.expr()
        });
        Some(Edge { nodes, guard, limit: limit.map(|l| l.0), span: self.span(start) })
    }

    /// `web.target`, `online.phases[1].lr`.
    fn field_path(&mut self) -> Option<FieldPath> {
        let start = self.pos;
        let mut segments = vec![PathSegment::Name(self.raw_ident()?)];
        while let Some(seg) = self.then(|p| {
            if p.lit(b".").is_some() {
                p.ws();
                return p.raw_ident().map(PathSegment::Name);
            }
            p.lit(b"[")?;
            p.ws();
            let s = p.pos;
            let n = p.b[s..].iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            p.advance(n);
            let span = p.span(s);
            p.ws();
            p.lit(b"]")?;
            Some(PathSegment::Index { index: p.text[s..s + n].parse().unwrap_or(u32::MAX), span })
        }) {
            segments.push(seg);
        }
        Some(FieldPath { segments, span: self.span(start) })
    }

    // ───────────────────────────── expressions ─────────────────────────────

    fn expr(&mut self) -> Option<Sized> {
        self.enter()?;
        let r = self.expr_inner();
        self.leave();
        r
    }

    fn expr_inner(&mut self) -> Option<Sized> {
        // The flat sequence holds only prefixes, operands (postfixes already applied: they bind
        // tighter than anything) and infixes; most values are one operand and need no vector.
        let mut els = Vec::new();
        let mut pending = Some(self.operand(&mut els)?);
        loop {
            let m = self.mark();
            self.ws();
            let start = self.pos;
            let Some(op) = self.infix() else {
                self.reset(m);
                break;
            };
            let op_span = self.span(start);
            self.ws();
            if let Some(first) = pending.take() {
                els.push(El::Primary(first));
            }
            let n = els.len();
            els.push(El::Infix(op, op_span));
            match self.operand(&mut els) {
                Some(o) => els.push(El::Primary(o)),
                None => {
                    self.reset(m);
                    els.truncate(n);
                    break;
                }
            }
        }
        if let Some(only) = pending {
            if els.is_empty() {
                return Some(only);
            }
            els.push(El::Primary(only));
        }
        let mut it = els.into_iter().peekable();
        match self.pratt(&mut it, 0) {
            Some(r) if it.next().is_none() => Some(r),
            _ => self.give_up(),
        }
    }

    /// `prefix* ~ primary ~ postfix*`: pushes the prefixes, returns the primary with its
    /// postfixes applied (as the Pratt parser applies them, left to right).
    fn operand(&mut self, els: &mut Vec<El>) -> Option<Sized> {
        loop {
            let start = self.pos;
            if self.at(0) == Some(b'-') && self.at(1) != Some(b'>') {
                self.advance(1);
                els.push(El::Prefix(UnaryOp::Neg, self.span(start)));
            } else if self.kw("not").is_some() {
                els.push(El::Prefix(UnaryOp::Not, self.span(start)));
            } else {
                break;
            }
            self.ws();
        }
        let (mut e, mut d) = self.primary()?;
        while let Some((post, span)) = self.then(|p| {
            let start = p.pos;
            let post = match p.at(0)? {
                b'(' => Post::Call(p.call_args()?.0),
                b'.' => {
                    p.advance(1);
                    p.ws();
                    if p.at(0) == Some(b'.') {
                        return None;
                    }
                    Post::Member(p.raw_ident()?)
                }
                b'[' => {
                    p.advance(1);
                    p.ws();
                    let e = p.expr()?;
                    p.ws();
                    p.lit(b"]")?;
                    Post::Index(e)
                }
                b'{' => Post::Block(p.block()?),
                _ => return None,
            };
            Some((post, p.span(start)))
        }) {
            (e, d) = self.postfix(e, d, post, span)?;
        }
        Some((e, d))
    }

    fn infix(&mut self) -> Option<Infix> {
        let c1 = self.at(1);
        let (op, len) = match self.at(0)? {
            b'.' if c1 == Some(b'.') => (Infix::Range, 2),
            b'o' if self.word() == "or" => (Infix::Bin(BinaryOp::Or), 2),
            b'a' if self.word() == "and" => (Infix::Bin(BinaryOp::And), 3),
            b'=' if c1 == Some(b'=') => (Infix::Bin(BinaryOp::Eq), 2),
            b'!' if c1 == Some(b'=') => (Infix::Bin(BinaryOp::Ne), 2),
            b'<' if c1 == Some(b'=') => (Infix::Bin(BinaryOp::Le), 2),
            b'>' if c1 == Some(b'=') => (Infix::Bin(BinaryOp::Ge), 2),
            b'<' => (Infix::Bin(BinaryOp::Lt), 1),
            b'>' => (Infix::Bin(BinaryOp::Gt), 1),
            b'+' => (Infix::Bin(BinaryOp::Add), 1),
            b'-' if c1 != Some(b'>') => (Infix::Bin(BinaryOp::Sub), 1),
            b'*' => (Infix::Bin(BinaryOp::Mul), 1),
            b'/' => (Infix::Bin(BinaryOp::Div), 1),
            _ => return None,
        };
        self.advance(len);
        Some(op)
    }

    /// `( args )`, each argument with its depth, and the span of the parentheses.
    fn call_args(&mut self) -> Option<(Vec<(Arg, u32)>, Span)> {
        let start = self.pos;
        self.lit(b"(")?;
        let args = self.comma_list(|p| p.arg());
        self.ws();
        self.lit(b")")?;
        Some((args, self.span(start)))
    }

    fn arg(&mut self) -> Option<(Arg, u32)> {
        let start = self.pos;
        let name = self.attempt(|p| {
            let name = p.ident()?;
            p.ws();
            p.colon()?;
            p.ws();
            Some(name)
        });
        let (value, d) = self.expr()?;
        Some((Arg { name, value, span: self.span(start) }, d))
    }

    fn primary(&mut self) -> Option<Sized> {
        let start = self.pos;
        match self.at(0)? {
            b'(' => {
                self.enter()?;
                let r = self.attempt(|p| {
                    p.advance(1);
                    p.ws();
                    let (e, d) = p.expr()?;
                    p.ws();
                    p.lit(b")")?;
                    p.grow(ExprKind::Paren(Box::new(e)), p.span(start), d)
                });
                self.leave();
                r
            }
            b'[' => {
                self.advance(1);
                let (items, depths): (Vec<_>, Vec<u32>) =
                    self.comma_list(|p| p.expr()).into_iter().unzip();
                let d = depths.into_iter().max().unwrap_or(0);
                self.ws();
                self.lit(b"]")?;
                self.grow(ExprKind::List(items), self.span(start), d)
            }
            b'{' => {
                let (b, d) = self.block()?;
                self.grow(ExprKind::Record(b), self.span(start), d)
            }
            b'"' => {
                if self.b[start..].starts_with(b"\"\"\"")
                    && let Some(e) = self.text[start + 3..].find("\"\"\"")
                {
                    self.advance(3 + e + 3);
                    let body = self.text[start + 3..start + 3 + e].to_string();
                    return Some((Expr::new(ExprKind::Text(body), self.span(start)), 1));
                }
                let s = self.string()?;
                Some((Expr::new(ExprKind::Str(s), self.span(start)), 1))
            }
            b'0'..=b'9' => self.numeric(),
            _ => {
                let kind = match self.word() {
                    "if" => return self.if_expr(),
                    "true" => ExprKind::Bool(true),
                    "false" => ExprKind::Bool(false),
                    "unknown" => ExprKind::Unknown,
                    _ => ExprKind::Path(self.path()?),
                };
                if !matches!(kind, ExprKind::Path(_)) {
                    let w = self.word().len();
                    self.advance(w);
                }
                Some((Expr::new(kind, self.span(start)), 1))
            }
        }
    }

    fn if_expr(&mut self) -> Option<Sized> {
        let start = self.pos;
        self.enter()?;
        let r = self.attempt(|p| {
            p.kw("if")?;
            p.ws();
            let (cond, dc) = p.expr()?;
            p.ws();
            p.kw("then")?;
            p.ws();
            let (then, dt) = p.expr()?;
            p.ws();
            p.kw("else")?;
            p.ws();
            let (otherwise, de) = p.expr()?;
            let kind = ExprKind::If {
                cond: Box::new(cond),
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            };
            p.grow(kind, p.span(start), dc.max(dt).max(de))
        });
        self.leave();
        r
    }

    /// `ident ~ ("::" ~ ident)*`.
    fn path(&mut self) -> Option<Vec<Ident>> {
        let mut segments = vec![self.ident()?];
        while let Some(id) = self.then(|p| {
            p.lit(b"::")?;
            p.ws();
            p.ident()
        }) {
            segments.push(id);
        }
        Some(segments)
    }

    /// A string literal, with its escapes resolved.
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        self.lit(b"\"")?;
        let mut i = self.pos;
        loop {
            match *self.b.get(i)? {
                b'"' => break,
                b'\n' => return None,
                b'\\' => {
                    let c = self.text.get(i + 1..)?.chars().next()?;
                    if c == '\n' {
                        return None;
                    }
                    i += 1 + c.len_utf8();
                }
                _ => i += 1,
            }
        }
        let inner = &self.text[start + 1..i];
        self.pos = i;
        self.advance(1);
        match unescape(inner, self.file, start + 1) {
            Ok(s) => Some(s),
            Err(_) => self.give_up(),
        }
    }

    /// The end of the `number` at byte `at`, if one starts there.
    fn number_end(&self, at: usize) -> Option<usize> {
        let b = self.b;
        let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
        if !digit(at) {
            return None;
        }
        let mut i = at + 1;
        loop {
            if digit(i) {
                i += 1;
            } else if b.get(i) == Some(&b'_') && digit(i + 1) {
                i += 2;
            } else {
                break;
            }
        }
        if b.get(i) == Some(&b'.') && digit(i + 1) {
            i += 2;
            while digit(i) {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if digit(j) {
                while digit(j) {
                    j += 1;
                }
                i = j;
            }
        }
        for m in ["Ki", "Mi", "Gi", "k", "M", "G"] {
            if b[i..].starts_with(m.as_bytes()) {
                if !b.get(i + m.len()).is_some_and(|c| is_ident_char(*c)) {
                    i += m.len();
                }
                break;
            }
        }
        Some(i)
    }

    fn inline_ws(&self, mut i: usize) -> usize {
        while matches!(self.b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    }

    /// `dims | quantity | number`.
    fn numeric(&mut self) -> Option<Sized> {
        let start = self.pos;
        let n_end = self.number_end(start)?;
        let num = |p: &mut Self, s: usize, e: usize| match number(&p.text[s..e], Span::default()) {
            Ok(n) => Some(n),
            Err(_) => p.give_up(),
        };
        // dims: `number ~ inline_ws* ~ "x" ~ !ident_char ~ inline_ws* ~ number`
        let x = self.inline_ws(n_end);
        if self.b.get(x) == Some(&b'x') && !self.b.get(x + 1).is_some_and(|c| is_ident_char(*c)) {
            let h = self.inline_ws(x + 1);
            if let Some(h_end) = self.number_end(h) {
                let (w, h) = (num(self, start, n_end)?, num(self, h, h_end)?);
                self.pos = h_end;
                self.last = h_end;
                return Some((Expr::new(ExprKind::Dims(w, h), self.span(start)), 1));
            }
        }
        // quantity: `number ~ inline_ws* ~ unit`, unit = `"%" | !keyword ~ raw_ident`
        let u = x;
        let u_end = if self.b.get(u) == Some(&b'%') {
            u + 1
        } else {
            let e = self.word_end(u);
            if is_keyword(&self.text[u..e]) { u } else { e }
        };
        let value = num(self, start, n_end)?;
        if u_end > u {
            let unit_span = Span::new(self.file, u, u_end);
            let Ok(unit) = unit_word(&self.text[u..u_end], unit_span) else {
                return self.give_up();
            };
            self.pos = u_end;
            self.last = u_end;
            let kind = ExprKind::Quantity { value, unit, unit_span };
            return Some((Expr::new(kind, self.span(start)), 1));
        }
        self.pos = n_end;
        self.last = n_end;
        Some((Expr::new(ExprKind::Number(value), self.span(start)), 1))
    }

    // ───────────────────────────── Pratt ─────────────────────────────

    /// pest's `PrattParserMap::expr` over the flat sequence, with the closures of `expr.rs`.
    fn pratt(
        &mut self,
        it: &mut std::iter::Peekable<std::vec::IntoIter<El>>,
        rbp: u32,
    ) -> Option<Sized> {
        self.enter()?;
        let r = self.pratt_inner(it, rbp);
        self.leave();
        r
    }

    fn pratt_inner(
        &mut self,
        it: &mut std::iter::Peekable<std::vec::IntoIter<El>>,
        rbp: u32,
    ) -> Option<Sized> {
        let (mut lhs, mut d) = match it.next()? {
            El::Primary(p) => p,
            El::Prefix(op, op_span) => {
                let prec = if op == UnaryOp::Neg { PREC_NEG } else { PREC_NOT };
                let (operand, od) = self.pratt(it, prec - 1)?;
                let span = op_span.to(operand.span);
                let kind = ExprKind::Unary { op, op_span, operand: Box::new(operand) };
                self.grow(kind, span, od)?
            }
            El::Infix(..) => return None,
        };
        loop {
            let lbp = match it.peek() {
                None => 0,
                Some(El::Infix(op, _)) => infix_prec(*op),
                Some(El::Primary(_) | El::Prefix(..)) => return None,
            };
            if rbp >= lbp {
                return Some((lhs, d));
            }
            (lhs, d) = match it.next()? {
                El::Infix(op, op_span) => {
                    let (rhs, rd) = self.pratt(it, infix_prec(op))?;
                    self.binary(lhs, d, op, op_span, rhs, rd)?
                }
                El::Primary(_) | El::Prefix(..) => return None,
            };
        }
    }

    /// The `postfix` of `expr.rs`.
    fn postfix(&mut self, base: Expr, depth: u32, post: Post, op_span: Span) -> Option<Sized> {
        let span = base.span.to(op_span);
        match post {
            Post::Call(args) => {
                let mut d = depth;
                let mut seen_named = false;
                let mut out = Vec::with_capacity(args.len());
                for (arg, ad) in args {
                    d = d.max(ad);
                    match (&arg.name, seen_named) {
                        (Some(_), _) => seen_named = true,
                        (None, true) => return self.give_up(),
                        (None, false) => {}
                    }
                    out.push(arg);
                }
                let kind = ExprKind::Call { callee: Box::new(base), args: out, args_span: op_span };
                self.grow(kind, span, d)
            }
            Post::Member(name) => {
                self.grow(ExprKind::Member { base: Box::new(base), name }, span, depth)
            }
            Post::Index((index, d)) => {
                let kind = ExprKind::Index { base: Box::new(base), index: Box::new(index) };
                self.grow(kind, span, depth.max(d))
            }
            Post::Block((block, d)) => {
                self.grow(ExprKind::Configure { base: Box::new(base), block }, span, depth.max(d))
            }
        }
    }

    /// The infix closure of `expr.rs`, giving up where it reports `E0108`.
    fn binary(
        &mut self,
        lhs: Expr,
        dl: u32,
        op: Infix,
        op_span: Span,
        rhs: Expr,
        dr: u32,
    ) -> Option<Sized> {
        let span = lhs.span.to(rhs.span);
        let depth = dl.max(dr);
        match op {
            Infix::Range => {
                if let ExprKind::Range { .. } = lhs.kind {
                    return self.give_up();
                }
                self.grow(ExprKind::Range { lo: Box::new(lhs), hi: Box::new(rhs) }, span, depth)
            }
            Infix::Bin(op) => {
                if let ExprKind::Binary { op: prev, .. } = &lhs.kind
                    && op.is_comparison()
                    && prev.is_comparison()
                {
                    return self.give_up();
                }
                let kind = ExprKind::Binary { op, op_span, lhs: Box::new(lhs), rhs: Box::new(rhs) };
                self.grow(kind, span, depth)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_keyword_match_is_the_keyword_list() {
        for w in crate::tokens::KEYWORDS {
            assert!(super::is_keyword(w), "{w}");
        }
        for w in ["", "i", "iff", "model", "x", "As", "Use", "limit"] {
            assert_eq!(super::is_keyword(w), crate::tokens::is_keyword(w), "{w}");
        }
    }
}
