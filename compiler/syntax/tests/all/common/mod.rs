//! Shared helpers for the syntax crate's integration tests: parse-or-fail shortcuts, an
//! S-expression printer that ignores spans and parentheses (for tree equivalence), and a walk
//! over every span in a file that checks each one against the source text.
#![allow(dead_code)]

use std::fmt::Write as _;

use wrl_diagnostics::{Diagnostic, FileId, Span};
use wrl_syntax::ast::*;

pub const F: FileId = FileId(0);

/// Parses a file that must have no diagnostics.
pub fn parse_ok(src: &str) -> File {
    let p = wrl_syntax::parse(F, src);
    assert!(
        p.diagnostics.is_empty(),
        "unexpected diagnostics for {src:?}:\n{}",
        show(&p.diagnostics, src)
    );
    p.file
}

/// Parses a lone expression that must have no diagnostics.
pub fn expr(src: &str) -> Expr {
    wrl_syntax::parse_expr(F, src)
        .unwrap_or_else(|d| panic!("{src:?} does not parse:\n{}", show(&d, src)))
}

/// The S-expression of a lone expression.
pub fn sx(src: &str) -> String {
    sexpr(&expr(src))
}

/// The codes of the diagnostics of a lone expression (empty when it parses).
pub fn expr_codes(src: &str) -> Vec<&'static str> {
    match wrl_syntax::parse_expr(F, src) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(|d| d.code).collect(),
    }
}

/// The diagnostics of a file, one per line: code, message, the text of the primary label.
pub fn show(diags: &[Diagnostic], src: &str) -> String {
    let mut s = String::new();
    for d in diags {
        let at = d.primary_span().map(|sp| sp.range()).unwrap_or(0..0);
        let _ = writeln!(s, "{} {} @ {:?} {:?}", d.code, d.message, at, src.get(at.clone()));
    }
    s
}

/// `(op a b)` form of an expression. Spans are left out and parentheses are transparent, so
/// two sources parse to the same tree exactly when their S-expressions are equal.
pub fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Number(n) => fmt_num(n),
        ExprKind::Quantity { value, unit, .. } => format!("{}{}", fmt_num(value), unit.word),
        ExprKind::Dims(w, h) => format!("{}x{}", fmt_num(w), fmt_num(h)),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Text(t) => format!("text{t:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Unknown => "unknown".into(),
        ExprKind::Path(p) => p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::"),
        ExprKind::List(items) => {
            format!("[{}]", items.iter().map(sexpr).collect::<Vec<_>>().join(" "))
        }
        ExprKind::Record(b) => block(b),
        ExprKind::Paren(inner) => sexpr(inner),
        ExprKind::Unary { op, operand, .. } => {
            let op = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Not => "not",
            };
            format!("({op} {})", sexpr(operand))
        }
        ExprKind::Binary { op, lhs, rhs, .. } => {
            format!("({} {} {})", op.symbol(), sexpr(lhs), sexpr(rhs))
        }
        ExprKind::Range { lo, hi } => format!("(.. {} {})", sexpr(lo), sexpr(hi)),
        ExprKind::If { cond, then, otherwise } => {
            format!("(if {} {} {})", sexpr(cond), sexpr(then), sexpr(otherwise))
        }
        ExprKind::Call { callee, args, .. } => {
            let mut s = format!("(call {}", sexpr(callee));
            for a in args {
                match &a.name {
                    Some(n) => {
                        let _ = write!(s, " {}:{}", n.name, sexpr(&a.value));
                    }
                    None => {
                        let _ = write!(s, " {}", sexpr(&a.value));
                    }
                }
            }
            s + ")"
        }
        ExprKind::Member { base, name } => format!("(. {} {})", sexpr(base), name.name),
        ExprKind::Index { base, index } => format!("([] {} {})", sexpr(base), sexpr(index)),
        ExprKind::Configure { base, block: b } => format!("(cfg {} {})", sexpr(base), block(b)),
        ExprKind::Error => "ERROR".into(),
    }
}

fn fmt_num(n: &Number) -> String {
    format!("{}", n.value)
}

/// `{a=1 flag module m=v a->b|v1,v2 tool t(p:int)}`.
pub fn block(b: &Block) -> String {
    let items: Vec<String> = b.items.iter().map(block_item).collect();
    format!("{{{}}}", items.join(" "))
}

fn block_item(item: &BlockItem) -> String {
    match item {
        BlockItem::Field(f) => format!("{}={}", field_path(&f.path), sexpr(&f.value)),
        BlockItem::Flag(i) => i.name.clone(),
        BlockItem::Module(m) => format!("module {}={}", m.name.name, sexpr(&m.value)),
        BlockItem::Edge(e) => {
            let mut s = e.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join("->");
            if !e.guard.is_empty() {
                s += "|";
                s += &e.guard.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(",");
            }
            if let Some(l) = &e.limit {
                s += &format!("#{}", sexpr(l));
            }
            s
        }
        BlockItem::Tool(t) => format!(
            "tool {}({}){}",
            t.name.name,
            params(&t.params),
            t.body.as_ref().map(block).unwrap_or_default()
        ),
    }
}

pub fn field_path(p: &FieldPath) -> String {
    let mut s = String::new();
    for seg in &p.segments {
        match seg {
            PathSegment::Name(n) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s += &n.name;
            }
            PathSegment::Index { index, .. } => {
                let _ = write!(s, "[{index}]");
            }
        }
    }
    s
}

pub fn params(ps: &[Param]) -> String {
    ps.iter()
        .map(|p| match &p.default {
            Some(d) => format!("{}:{}={}", p.name.name, sexpr(&p.ty), sexpr(d)),
            None => format!("{}:{}", p.name.name, sexpr(&p.ty)),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Visits every span of a file with what it belongs to and its parent's span, and checks:
/// the span lies inside the source and on character boundaries, inside its parent, and where
/// the node is a name, the source text under it is that name.
pub struct SpanCheck<'a> {
    pub src: &'a str,
    pub seen: usize,
    pub problems: Vec<String>,
    /// Spans that start or end on whitespace or a comment (`a + b ` instead of `a + b`). Kept
    /// apart because the parser has this bug today: see `spans.rs`.
    pub padding: Vec<String>,
}

impl<'a> SpanCheck<'a> {
    pub fn run(src: &'a str, file: &File) -> SpanCheck<'a> {
        let mut c = SpanCheck { src, seen: 0, problems: Vec::new(), padding: Vec::new() };
        let whole = Span::new(F, 0, src.len());
        for item in &file.items {
            c.item(item, whole);
        }
        c
    }

    pub fn assert_ok(&self) {
        assert!(self.problems.is_empty(), "span problems:\n{}", self.problems.join("\n"));
    }

    fn span(&mut self, what: &str, s: Span, parent: Span) {
        self.seen += 1;
        let r = s.range();
        if r.end > self.src.len() || self.src.get(r.clone()).is_none() {
            self.problems.push(format!("{what}: span {r:?} is outside the text or splits a char"));
            return;
        }
        if s.start < parent.start || s.end > parent.end {
            self.problems.push(format!(
                "{what}: {r:?} {:?} is outside its parent {:?} {:?}",
                &self.src[r.clone()],
                parent.range(),
                self.src.get(parent.range())
            ));
        }
    }

    fn ident(&mut self, what: &str, i: &Ident, parent: Span) {
        self.span(what, i.span, parent);
        if self.src.get(i.span.range()) != Some(i.name.as_str()) {
            self.problems.push(format!(
                "{what} `{}`: text under span is {:?}",
                i.name,
                self.src.get(i.span.range())
            ));
        }
    }

    fn str_lit(&mut self, s: &StrLit, parent: Span) {
        self.span("string", s.span, parent);
        let text = self.src.get(s.span.range()).unwrap_or("");
        if !(text.starts_with('"') && text.ends_with('"') && text.len() >= 2) {
            self.problems.push(format!("string span covers {text:?}, not a quoted string"));
        }
    }

    fn item(&mut self, item: &Item, parent: Span) {
        self.span("item", item.span, parent);
        let p = item.span;
        let text = self.src.get(p.range()).unwrap_or("");
        let head = match &item.kind {
            ItemKind::Use(u) => {
                match u {
                    Use::Path { segments, group } => {
                        for s in segments.iter().chain(group.iter().flatten()) {
                            self.ident("use segment", s, p);
                        }
                    }
                    Use::File { path, alias } => {
                        self.str_lit(path, p);
                        if let Some(a) = alias {
                            self.ident("use alias", a, p);
                        }
                    }
                }
                "use"
            }
            ItemKind::Extends(e) => {
                self.str_lit(&e.path, p);
                if let Some(b) = &e.overrides {
                    self.block(b, p);
                }
                "extends"
            }
            ItemKind::Profile(pr) => {
                self.ident("profile name", &pr.name, p);
                self.block(&pr.overrides, p);
                pr.kind.word()
            }
            ItemKind::Builtin(b) => {
                self.ident("builtin name", &b.name, p);
                for prm in b.params.iter().chain(&b.fields) {
                    self.param(prm, p);
                }
                self.expr(&b.returns, p);
                "builtin"
            }
            ItemKind::Decl(d) => {
                self.span("decl kind", d.kind_span, p);
                if self.src.get(d.kind_span.range()) != Some(d.kind.word()) {
                    self.problems.push(format!("decl kind span is not `{}`", d.kind.word()));
                }
                self.ident("decl name", &d.name, p);
                self.expr(&d.value, p);
                d.kind.word()
            }
        };
        if !text.starts_with(head) {
            self.problems.push(format!("item span does not start with `{head}`: {text:?}"));
        }
        if text != text.trim() {
            self.padding.push(format!("item span has surrounding whitespace: {text:?}"));
        }
    }

    fn param(&mut self, prm: &Param, parent: Span) {
        self.span("param", prm.span, parent);
        self.ident("param name", &prm.name, prm.span);
        self.expr(&prm.ty, prm.span);
        if let Some(d) = &prm.default {
            self.expr(d, prm.span);
        }
    }

    fn block(&mut self, b: &Block, parent: Span) {
        self.span("block", b.span, parent);
        let text = self.src.get(b.span.range()).unwrap_or("");
        if !(text.starts_with('{') && text.ends_with('}')) {
            self.problems.push(format!("block span is not `{{…}}`: {text:?}"));
        }
        let p = b.span;
        for it in &b.items {
            match it {
                BlockItem::Field(f) => {
                    self.span("field", f.span, p);
                    self.span("field path", f.path.span, f.span);
                    for seg in &f.path.segments {
                        match seg {
                            PathSegment::Name(n) => self.ident("field name", n, f.path.span),
                            PathSegment::Index { index, span } => {
                                self.span("field index", *span, f.path.span);
                                if self.src.get(span.range()) != Some(index.to_string().as_str()) {
                                    self.problems.push(format!("index span is not `{index}`"));
                                }
                            }
                        }
                    }
                    self.expr(&f.value, f.span);
                }
                BlockItem::Flag(i) => self.ident("flag", i, p),
                BlockItem::Module(m) => {
                    self.span("module", m.span, p);
                    self.ident("module name", &m.name, m.span);
                    self.expr(&m.value, m.span);
                }
                BlockItem::Edge(e) => {
                    self.span("edge", e.span, p);
                    for n in e.nodes.iter().chain(&e.guard) {
                        self.ident("edge node", n, e.span);
                    }
                    if let Some(l) = &e.limit {
                        self.expr(l, e.span);
                    }
                }
                BlockItem::Tool(t) => {
                    self.span("tool", t.span, p);
                    self.ident("tool name", &t.name, t.span);
                    for prm in &t.params {
                        self.param(prm, t.span);
                    }
                    if let Some(b) = &t.body {
                        self.block(b, t.span);
                    }
                }
            }
        }
    }

    fn op(&mut self, what: &str, s: Span, expect: &[&str], parent: Span) {
        self.span(what, s, parent);
        let text = self.src.get(s.range()).unwrap_or("");
        if !expect.contains(&text) && expect.contains(&text.trim_end()) {
            self.padding.push(format!("{what} span covers {text:?}"));
        } else if !expect.contains(&text) {
            self.problems.push(format!("{what} span covers {text:?}, expected one of {expect:?}"));
        }
    }

    /// Whether `child` ends where `parent` does, up to whitespace and comments (see `padding`).
    fn ends_together(&self, child: Span, parent: Span) -> bool {
        child.end <= parent.end
            && self.src.get(child.end as usize..parent.end as usize).is_some_and(is_trivia)
    }

    pub fn expr(&mut self, e: &Expr, parent: Span) {
        self.span("expr", e.span, parent);
        let p = e.span;
        let text = self.src.get(p.range()).unwrap_or("").to_string();
        if text.is_empty() {
            self.problems.push(format!("expr span {:?} is empty", p.range()));
        } else if text != text.trim() {
            self.padding.push(format!("expr span {:?} is padded: {text:?}", p.range()));
        }
        match &e.kind {
            ExprKind::Number(n) => {
                if text != n.text {
                    self.problems.push(format!("number `{}` spans {text:?}", n.text));
                }
            }
            ExprKind::Quantity { unit, unit_span, .. } => {
                self.op("unit", *unit_span, &[unit.word], p);
            }
            ExprKind::Dims(..) | ExprKind::Bool(_) | ExprKind::Unknown | ExprKind::Error => {}
            ExprKind::Str(_) => {
                if !(text.starts_with('"') && text.ends_with('"')) {
                    self.problems.push(format!("string spans {text:?}"));
                }
            }
            ExprKind::Text(_) => {
                if !(text.starts_with("\"\"\"") && text.ends_with("\"\"\"")) {
                    self.problems.push(format!("text block spans {text:?}"));
                }
            }
            ExprKind::Path(segs) => {
                for s in segs {
                    self.ident("path segment", s, p);
                }
            }
            ExprKind::List(items) => {
                for i in items {
                    self.expr(i, p);
                }
            }
            ExprKind::Record(b) => {
                self.block(b, p);
                if b.span != p {
                    self.problems.push(format!("record span differs from its block: {text:?}"));
                }
            }
            ExprKind::Paren(inner) => {
                if !(text.starts_with('(') && text.ends_with(')')) {
                    self.problems.push(format!("paren spans {text:?}"));
                }
                self.expr(inner, p);
            }
            ExprKind::Unary { op, op_span, operand } => {
                let sym: &[&str] = match op {
                    UnaryOp::Neg => &["-"],
                    UnaryOp::Not => &["not"],
                };
                self.op("prefix operator", *op_span, sym, p);
                if op_span.start != p.start {
                    self.problems
                        .push(format!("unary expression does not start at its operator: {text:?}"));
                }
                self.expr(operand, p);
            }
            ExprKind::Binary { op, op_span, lhs, rhs } => {
                self.op("binary operator", *op_span, &[op.symbol()], p);
                self.expr(lhs, p);
                self.expr(rhs, p);
                if !(lhs.span.end <= op_span.start && op_span.end <= rhs.span.start) {
                    self.problems.push(format!("operator is not between its operands: {text:?}"));
                }
            }
            ExprKind::Range { lo, hi } => {
                self.expr(lo, p);
                self.expr(hi, p);
            }
            ExprKind::If { cond, then, otherwise } => {
                if !text.starts_with("if") {
                    self.problems.push(format!("if spans {text:?}"));
                }
                self.expr(cond, p);
                self.expr(then, p);
                self.expr(otherwise, p);
                if !self.ends_together(otherwise.span, p) {
                    self.problems.push(format!("else branch does not end the if: {text:?}"));
                }
            }
            ExprKind::Call { callee, args, args_span } => {
                self.expr(callee, p);
                self.span("call arguments", *args_span, p);
                let a = self.src.get(args_span.range()).unwrap_or("");
                if !(a.starts_with('(') && a.ends_with(')')) {
                    self.problems.push(format!("call arguments span {a:?}"));
                }
                for arg in args {
                    self.span("argument", arg.span, *args_span);
                    if let Some(n) = &arg.name {
                        self.ident("argument name", n, arg.span);
                    }
                    self.expr(&arg.value, arg.span);
                }
            }
            ExprKind::Member { base, name } => {
                self.expr(base, p);
                self.ident("member name", name, p);
                if !self.ends_together(name.span, p) {
                    self.problems
                        .push(format!("member name does not end the expression: {text:?}"));
                }
            }
            ExprKind::Index { base, index } => {
                self.expr(base, p);
                self.expr(index, p);
                if !text.ends_with(']') {
                    self.problems.push(format!("index spans {text:?}"));
                }
            }
            ExprKind::Configure { base, block: b } => {
                self.expr(base, p);
                self.block(b, p);
                if !self.ends_together(b.span, p) {
                    self.problems
                        .push(format!("configure block does not end the expression: {text:?}"));
                }
            }
        }
    }
}

/// Whitespace and `//` comments only.
pub fn is_trivia(s: &str) -> bool {
    s.split('\n').all(|l| {
        let l = l.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        l.is_empty() || l.starts_with("//")
    })
}

/// Every hand-written corpus file, with its path (`tests/corpus/*.wrl` and `tests/ui/ok/*.wrl`
/// at the workspace root, plus `recipes/` and `stdlib/`).
pub fn corpus() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["tests/corpus", "tests/ui/ok", "recipes", "stdlib"] {
        let mut files = Vec::new();
        walk(&root.join(dir), &mut files);
        files.sort();
        for f in files {
            let text =
                std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let name = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
            out.push((name, text));
        }
    }
    assert!(out.len() >= 4, "corpus too small: {}", out.len());
    out
}

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "wrl") {
            out.push(p);
        }
    }
}

/// A deterministic xorshift generator, so that no test depends on a crate for randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
