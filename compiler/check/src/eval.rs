//! Evaluating expressions to values: names are resolved, constants folded with their units,
//! builtins applied to their arguments and blocks, reward expressions kept symbolic.

use std::collections::BTreeMap;
use std::sync::Arc;

use wrl_diagnostics::{Diagnostic, Span};

use crate::suggest::did_you_mean;
use wrl_syntax::ast::{self, BinaryOp, BlockItem, DeclKind, Expr, ExprKind, PathSegment, UnaryOp};
use wrl_syntax::tokens::Dimension;

use crate::checker::{BuiltinId, Checker, ModId, Target};
use crate::fields::{Defaults, Fields};
use crate::name::Name;
use crate::value::{EdgeV, ModuleV, Obj, SigExpr, ToolParamV, ToolV, V, Val};

impl Checker<'_> {
    /// Evaluates an expression without an expected type. Bare names that resolve to nothing
    /// become symbols, resolved later against the expected type (enum values, verdicts).
    pub(crate) fn eval(&mut self, m: ModId, e: &Expr) -> Val {
        let span = self.tight(e.span);
        let v = match &e.kind {
            ExprKind::Number(n) => V::Num { value: n.value },
            ExprKind::Quantity { value, unit, .. } => {
                V::Qty { value: value.value * unit.scale, dim: unit.dim }
            }
            ExprKind::Dims(w, h) => V::Dims { width: w.value, height: h.value },
            ExprKind::Str(s) | ExprKind::Text(s) => V::Str { value: s.clone() },
            ExprKind::Bool(b) => V::Bool { value: *b },
            ExprKind::Unknown | ExprKind::Error => V::Unknown,
            ExprKind::Path(segs) => return self.eval_path(m, segs, span),
            ExprKind::List(items) => {
                V::List { items: items.iter().map(|i| self.eval(m, i)).collect() }
            }
            ExprKind::Record(block) => V::Record { fields: self.record_fields(m, block) },
            ExprKind::Paren(inner) => return Val::new(self.eval(m, inner).v, span),
            ExprKind::Unary { op, operand, .. } => {
                let x = self.eval(m, operand);
                let x = self.force(m, x);
                return self.unary(*op, x, span);
            }
            ExprKind::Binary { op, op_span, lhs, rhs } => {
                let a = self.eval(m, lhs);
                let a = self.force(m, a);
                let b = self.eval(m, rhs);
                let b = self.force(m, b);
                return self.binary(*op, *op_span, a, b, span);
            }
            ExprKind::Range { lo, hi } => {
                V::Range { lo: Box::new(self.eval(m, lo)), hi: Box::new(self.eval(m, hi)) }
            }
            ExprKind::If { cond, then, otherwise } => {
                let c = self.eval(m, cond);
                let c = self.force(m, c);
                let t = self.eval(m, then);
                let t = self.force(m, t);
                let o = self.eval(m, otherwise);
                let o = self.force(m, o);
                return self.if_value(c, t, o, span);
            }
            ExprKind::Call { callee, args, .. } => {
                return self.eval_ctor(m, callee, args, None, span);
            }
            ExprKind::Configure { base, block } => match &base.kind {
                ExprKind::Call { callee, args, .. } => {
                    return self.eval_ctor(m, callee, args, Some(block), span);
                }
                _ => return self.eval_ctor(m, base, &[], Some(block), span),
            },
            ExprKind::Member { base, name } => return self.member(m, base, name, span),
            ExprKind::Index { base, index } => {
                let b = self.eval(m, base);
                let i = self.eval(m, index);
                match (&b.v, i.as_f64()) {
                    (V::List { items }, Some(ix))
                        if ix >= 0.0 && ix.fract() == 0.0 && (ix as usize) < items.len() =>
                    {
                        return Val::new(items[ix as usize].v.clone(), span);
                    }
                    (V::List { items }, _) => {
                        self.diags.push(
                            Diagnostic::new("E0306", "list index out of range")
                                .label(i.span, format!("the list has {} items", items.len()))
                                .help("indices start at 0"),
                        );
                        V::Unknown
                    }
                    _ => {
                        self.diags.push(
                            Diagnostic::new("E0300", format!("cannot index {}", b.describe()))
                                .label(b.span, "not a list"),
                        );
                        V::Unknown
                    }
                }
            }
        };
        Val::new(v, span)
    }

    fn eval_path(&mut self, m: ModId, segs: &[ast::Ident], span: Span) -> Val {
        let names = Words::of(segs);
        if let [one] = &*names {
            self.bare.insert(span, (*one).to_string());
        }
        match self.resolve(m, &names) {
            Some(Target::Decl(d)) => self.decl_ref(d, span),
            // A bare builtin name stays a symbol until a slot says what it wants: `tasks` may be
            // an enum value or the constructor `tasks()`.
            Some(Target::Builtin(_)) if names.len() == 1 => {
                Val::new(V::Symbol { name: names[0].to_string() }, span)
            }
            Some(Target::Builtin(b)) => self.apply_builtin(m, b, &[], None, span, span),
            Some(Target::Module(_)) => {
                self.diags.push(
                    Diagnostic::new(
                        "E0300",
                        format!("`{}` is a module, not a value", names.join("::")),
                    )
                    .label(span, "a module")
                    .help("name an item inside it: `module::item`"),
                );
                Val::new(V::Unknown, span)
            }
            None if names.len() == 1 => Val::new(V::Symbol { name: names[0].to_string() }, span),
            None => {
                let wanted = names.join("::");
                let prefix = &names[..names.len() - 1];
                let cands: Vec<String> = match self.resolve_quiet(m, prefix) {
                    Some(Target::Module(pm)) => self
                        .names_in(pm)
                        .into_iter()
                        .map(|n| format!("{}::{n}", prefix.join("::")))
                        .collect(),
                    _ => Vec::new(),
                };
                self.diags.push(
                    Diagnostic::new("E0200", format!("cannot find `{wanted}`"))
                        .label(span, "not found")
                        .maybe_help(did_you_mean(&wanted, cands.iter().map(String::as_str))),
                );
                Val::new(V::Unknown, span)
            }
        }
    }

    /// A use of a declaration: a reference, or for `param` its value.
    pub(crate) fn decl_ref(&mut self, d: usize, span: Span) -> Val {
        if self.decls[d].kind == DeclKind::Param {
            self.param_uses.push((d, span));
            let v = self.decl_value(d);
            return Val::new(v.v, span);
        }
        let e = &self.decls[d];
        Val::new(V::Ref { decl: e.key.clone(), kind: e.kind, member: None }, span)
    }

    fn member(&mut self, m: ModId, base: &Expr, name: &ast::Ident, span: Span) -> Val {
        let b = self.eval(m, base);
        let b = self.force(m, b);
        match &b.v {
            V::Ref { decl, kind: DeclKind::Stage, member: None } if name.name == "model" => {
                Val::new(
                    V::Ref {
                        decl: decl.clone(),
                        kind: DeclKind::Stage,
                        member: Some("model".into()),
                    },
                    span,
                )
            }
            V::Ref { kind: DeclKind::Stage, member: None, .. } => {
                self.diags.push(
                    Diagnostic::new("E0301", format!("a stage has no output `{}`", name.name))
                        .label(name.span, "unknown output")
                        .help("a stage's output is its trained model: `stage.model`"),
                );
                Val::new(V::Unknown, span)
            }
            V::Obj(o) => match o.fields.get(&name.name) {
                Some(v) => Val::new(v.v.clone(), span),
                None => {
                    let cands: Vec<&str> = o.fields.keys().map(|k| k.as_str()).collect();
                    self.diags.push(
                        Diagnostic::new(
                            "E0301",
                            format!("`{}` has no field `{}`", o.ctor, name.name),
                        )
                        .label(name.span, "unknown field")
                        .maybe_help(did_you_mean(&name.name, cands)),
                    );
                    Val::new(V::Unknown, span)
                }
            },
            V::Record { fields } => match fields.get(&name.name) {
                Some(v) => Val::new(v.v.clone(), span),
                None => {
                    let cands: Vec<&str> = fields.keys().map(String::as_str).collect();
                    self.diags.push(
                        Diagnostic::new(
                            "E0301",
                            format!("the record has no field `{}`", name.name),
                        )
                        .label(name.span, "unknown field")
                        .maybe_help(did_you_mean(&name.name, cands)),
                    );
                    Val::new(V::Unknown, span)
                }
            },
            V::Unknown => Val::new(V::Unknown, span),
            V::Symbol { name: sym } => {
                self.unknown_name(m, sym, b.span);
                Val::new(V::Unknown, span)
            }
            _ => {
                self.diags.push(
                    Diagnostic::new("E0300", format!("{} has no fields", b.describe()))
                        .label(name.span, format!("no field `{}`", name.name)),
                );
                Val::new(V::Unknown, span)
            }
        }
    }

    /// Applies a bare builtin name (`format_ok`, `url`) now that a value is needed.
    pub(crate) fn force(&mut self, m: ModId, v: Val) -> Val {
        if let V::Symbol { name } = &v.v
            && let Some(Target::Builtin(b)) = self.resolve(m, &[name.as_str()])
        {
            return self.apply_builtin(m, b, &[], None, v.span, v.span);
        }
        v
    }

    pub(crate) fn unknown_name(&mut self, m: ModId, name: &str, span: Span) {
        let cands = self.visible_names(m);
        self.diags.push(
            Diagnostic::new("E0200", format!("cannot find `{name}` in this scope"))
                .label(span, "not found")
                .maybe_help(did_you_mean(name, cands.iter().map(String::as_str))),
        );
    }

    fn record_fields(&mut self, m: ModId, block: &ast::Block) -> BTreeMap<String, Val> {
        let mut fields = BTreeMap::new();
        let mut seen: BTreeMap<String, Span> = BTreeMap::new();
        for item in &block.items {
            let (name, span, val) = match item {
                BlockItem::Field(f) => match f.path.segments.as_slice() {
                    [PathSegment::Name(n)] => (n.name.clone(), n.span, self.eval(m, &f.value)),
                    _ => {
                        self.dotted_field(f.path.span);
                        continue;
                    }
                },
                BlockItem::Flag(n) => {
                    (n.name.clone(), n.span, Val::new(V::Bool { value: true }, n.span))
                }
                BlockItem::Module(x) => {
                    self.misplaced(x.span, "a `module`", "an agent `graph { … }`");
                    continue;
                }
                BlockItem::Edge(x) => {
                    self.misplaced(x.span, "an edge", "an agent `graph { … }`");
                    continue;
                }
                BlockItem::Tool(x) => {
                    self.misplaced(x.span, "a `tool`", "a `toolset { … }`");
                    continue;
                }
            };
            if let Some(first) = seen.get(&name) {
                self.diags.push(
                    Diagnostic::new("E0304", format!("field `{name}` is set twice"))
                        .label(span, "set again here")
                        .label(*first, "first set here")
                        .help("remove one of them"),
                );
                continue;
            }
            seen.insert(name.clone(), span);
            fields.insert(name, val);
        }
        fields
    }

    fn dotted_field(&mut self, span: Span) {
        self.diags.push(
            Diagnostic::new("E0301", "dotted field paths belong in profiles and overrides")
                .label(span, "a dotted path inside a block")
                .help("write the inner value as a record: `timeout = { step = 45 s }`"),
        );
    }

    fn misplaced(&mut self, span: Span, what: &str, place: &str) {
        self.diags.push(
            Diagnostic::new("E0301", format!("{what} can only appear in {place}"))
                .label(span, "not allowed here"),
        );
    }

    fn eval_ctor(
        &mut self,
        m: ModId,
        callee: &Expr,
        args: &[ast::Arg],
        block: Option<&ast::Block>,
        span: Span,
    ) -> Val {
        let is_builtin = match &callee.kind {
            ExprKind::Path(segs) => {
                let names = Words::of(segs);
                matches!(self.resolve_quiet(m, &names), Some(Target::Builtin(_)))
            }
            _ => false,
        };
        if !is_builtin {
            // The call is an error, but the names in its arguments are still uses (no
            // "unused" warnings for them) and their own mistakes are still reported.
            self.eval_ignored(m, args, block);
        }
        let ExprKind::Path(segs) = &callee.kind else {
            self.diags.push(
                Diagnostic::new("E0310", "only constructors can be called or configured")
                    .label(self.tight(callee.span), "not a constructor name"),
            );
            return Val::new(V::Unknown, span);
        };
        let names = Words::of(segs);
        let callee_span = self.tight(callee.span);
        match self.resolve(m, &names) {
            Some(Target::Builtin(b)) => self.apply_builtin(m, b, args, block, span, callee_span),
            Some(Target::Decl(d)) => {
                let what = format!(
                    "`{}` is {}",
                    names.join("::"),
                    crate::value::article(self.decls[d].kind.word())
                );
                self.diags.push(
                    Diagnostic::new("E0310", format!("{what}, not a constructor"))
                        .label(callee_span, "cannot be called or configured")
                        .help("to change a declaration, use a profile: `profile p { name.field = value }`"),
                );
                Val::new(V::Unknown, span)
            }
            Some(Target::Module(_)) => {
                self.diags.push(
                    Diagnostic::new(
                        "E0310",
                        format!("`{}` is a module, not a constructor", names.join("::")),
                    )
                    .label(callee_span, "a module"),
                );
                Val::new(V::Unknown, span)
            }
            None => {
                let wanted = names.join("::");
                let cands = self.visible_names(m);
                self.diags.push(
                    Diagnostic::new("E0200", format!("cannot find constructor `{wanted}`"))
                        .label(callee_span, "not found")
                        .maybe_help(did_you_mean(&wanted, cands.iter().map(String::as_str))),
                );
                Val::new(V::Unknown, span)
            }
        }
    }

    /// Evaluates the arguments and block of a call that cannot be applied, for their uses.
    fn eval_ignored(&mut self, m: ModId, args: &[ast::Arg], block: Option<&ast::Block>) {
        for a in args {
            let v = self.eval(m, &a.value);
            self.force(m, v);
        }
        for item in block.map(|b| b.items.as_slice()).unwrap_or_default() {
            match item {
                BlockItem::Field(f) => {
                    let v = self.eval(m, &f.value);
                    self.force(m, v);
                }
                BlockItem::Module(x) => {
                    self.eval(m, &x.value);
                }
                BlockItem::Flag(_) | BlockItem::Edge(_) | BlockItem::Tool(_) => {}
            }
        }
    }

    /// Applies a builtin: positional and named arguments, block fields, defaults, types.
    pub(crate) fn apply_builtin(
        &mut self,
        m: ModId,
        b: BuiltinId,
        args: &[ast::Arg],
        block: Option<&ast::Block>,
        span: Span,
        callee_span: Span,
    ) -> Val {
        let qual = self.builtins[b].qual.clone();
        let kind = self.builtins[b].kind.clone();
        let bmod = self.builtins[b].module;
        let slots = self.builtins[b].slots.clone();
        let positional = slots.iter().filter(|s| s.positional).count();
        // What the call gives each slot (by slot, so that no name is copied for it).
        let mut given: Vec<Option<(Val, Span)>> =
            std::iter::repeat_with(|| None).take(slots.len()).collect();
        let mut obj = Obj {
            ctor: qual.clone(),
            kind: kind.clone(),
            fields: Fields::default(),
            meta: Default::default(),
            modules: Vec::new(),
            edges: Vec::new(),
            tools: Vec::new(),
        };
        let mut pos_i = 0;
        for a in args {
            let (name, name_span) = match &a.name {
                Some(n) => (n.name.as_str(), n.span),
                None => match slots.iter().filter(|s| s.positional).nth(pos_i) {
                    Some(slot) => {
                        pos_i += 1;
                        (slot.name.as_str(), a.span)
                    }
                    None => {
                        self.diags.push(
                            Diagnostic::new(
                                "E0310",
                                format!(
                                    "`{qual}` takes {} positional argument{}",
                                    positional,
                                    if positional == 1 { "" } else { "s" }
                                ),
                            )
                            .label(a.span, "one too many")
                            .help(self.signature_help(b)),
                        );
                        continue;
                    }
                },
            };
            let val = self.eval(m, &a.value);
            self.give(b, &qual, &mut given, name, name_span, val, "argument");
        }
        if let Some(block) = block {
            for item in &block.items {
                match item {
                    BlockItem::Field(f) => match f.path.segments.as_slice() {
                        [PathSegment::Name(n)] => {
                            let val = self.eval(m, &f.value);
                            self.give(b, &qual, &mut given, &n.name, n.span, val, "field");
                        }
                        _ => self.dotted_field(f.path.span),
                    },
                    BlockItem::Flag(n) => {
                        let val = Val::new(V::Bool { value: true }, n.span);
                        self.give(b, &qual, &mut given, &n.name, n.span, val, "field");
                    }
                    BlockItem::Module(x) if kind == "agent" && qual == "graph" => {
                        let value = self.eval(m, &x.value);
                        let value =
                            self.conform(m, value, &crate::types::Ty::Kind("module".into()));
                        obj.modules.push(ModuleV {
                            name: x.name.name.clone(),
                            value,
                            span: self.tight(x.span),
                        });
                    }
                    BlockItem::Edge(x) if kind == "agent" && qual == "graph" => {
                        let when: Vec<String> = x.guard.iter().map(|g| g.name.clone()).collect();
                        let limit = x.limit.as_ref().map(|l| {
                            let v = self.eval(m, l);
                            self.conform(m, v, &crate::types::Ty::Int { min: Some(1.0), max: None })
                        });
                        let edge_span = self.tight(x.span);
                        for pair in x.nodes.windows(2) {
                            obj.edges.push(EdgeV {
                                from: pair[0].name.clone(),
                                to: pair[1].name.clone(),
                                when: if std::ptr::eq(&pair[0], &x.nodes[0]) {
                                    when.clone()
                                } else {
                                    Vec::new()
                                },
                                limit: limit.clone(),
                                span: edge_span,
                                from_span: pair[0].span,
                                to_span: pair[1].span,
                            });
                        }
                    }
                    BlockItem::Tool(t) if kind == "tools" => {
                        let tool = self.tool(m, t);
                        obj.tools.push(tool);
                    }
                    BlockItem::Module(x) => {
                        self.misplaced(x.span, "a `module`", "an agent `graph { … }`")
                    }
                    BlockItem::Edge(x) => {
                        self.misplaced(x.span, "an edge", "an agent `graph { … }`")
                    }
                    BlockItem::Tool(x) => self.misplaced(x.span, "a `tool`", "a `toolset { … }`"),
                }
            }
        }
        // Every slot: given (checked against its type), default (shared by every object of
        // the builtin, not copied), or missing.
        let defaults = self.builtin_defaults(b);
        let mut own: Vec<(Name, Val)> = Vec::with_capacity(given.iter().flatten().count());
        let mut missing = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            match given[i].take() {
                Some((val, _)) => {
                    let default = defaults
                        .binary_search_by(|(k, _)| k.as_str().cmp(&slot.name))
                        .ok()
                        .map(|j| &defaults[j].1);
                    let before = self.diags.len();
                    let val = self.conform_with_default(m, val, &slot.ty, default);
                    if slot.name == "clip" && kind == "stage" {
                        clip_help(&mut self.diags[before..]);
                    }
                    own.push((slot.name.clone(), val));
                }
                None if slot.default.is_some() => {}
                None => missing.push(slot.name.clone()),
            }
        }
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
            let label = if block.is_some() || !args.is_empty() { span } else { callee_span };
            self.diags.push(
                Diagnostic::new("E0303", format!("`{qual}` needs {}", list.join(", ")))
                    .label(label, format!("missing {}", list.join(", ")))
                    .help(self.signature_help(b)),
            );
            for n in missing {
                own.push((n, Val::new(V::Unknown, span)));
            }
        }
        obj.fields = Fields::new(own, Some(defaults));
        obj.meta = self.builtin_meta(bmod, b);
        Val::new(V::Obj(Arc::new(obj)), span)
    }

    #[allow(clippy::too_many_arguments)]
    fn give(
        &mut self,
        b: BuiltinId,
        qual: &str,
        given: &mut [Option<(Val, Span)>],
        name: &str,
        name_span: Span,
        val: Val,
        what: &str,
    ) {
        let Some(i) = self.builtins[b].slots.iter().position(|s| s.name == name) else {
            let cands: Vec<&str> = self.builtins[b].slots.iter().map(|s| s.name.as_str()).collect();
            let code = if what == "argument" { "E0302" } else { "E0301" };
            let help = did_you_mean(name, cands.iter().copied())
                .or_else(|| crate::suggest::peer_name(name))
                .unwrap_or_else(|| {
                    format!(
                        "`{qual}` accepts {}",
                        cands.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                    )
                });
            self.diags.push(
                Diagnostic::new(code, format!("`{qual}` has no {what} `{name}`"))
                    .label(name_span, format!("unknown {what}"))
                    .help(help),
            );
            return;
        };
        if let Some((_, first)) = &given[i] {
            self.diags.push(
                Diagnostic::new("E0304", format!("`{name}` is given twice"))
                    .label(name_span, "given again here")
                    .label(*first, "first given here")
                    .help("remove one of them"),
            );
            return;
        }
        given[i] = Some((val, name_span));
    }

    fn signature_help(&self, b: BuiltinId) -> String {
        let e = &self.builtins[b];
        let params: Vec<String> = e
            .slots
            .iter()
            .filter(|s| s.positional)
            .map(|s| format!("{}: {}", s.name, s.ty_text))
            .collect();
        let required: Vec<&str> = e
            .slots
            .iter()
            .filter(|s| !s.positional && s.default.is_none())
            .map(|s| s.name.as_str())
            .collect();
        let mut h = format!("the signature is `{}({})`", e.qual, params.join(", "));
        if !required.is_empty() {
            h.push_str(&format!(
                " with required fields {}",
                required.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        h
    }

    /// A slot's default value, evaluated once in the builtin's own module.
    pub(crate) fn slot_default(&mut self, b: BuiltinId, i: usize) -> Option<Val> {
        if let Some(v) = &self.builtins[b].defaults[i] {
            return Some(v.clone());
        }
        let slots = self.builtins[b].slots.clone();
        let expr = slots[i].default.as_ref()?;
        let bmod = self.builtins[b].module;
        let raw = self.eval(bmod, expr);
        let v = self.conform(bmod, raw, &slots[i].ty);
        self.builtins[b].defaults[i] = Some(v.clone());
        Some(v)
    }

    /// Every slot default of a builtin, evaluated once and shared by all its objects.
    fn builtin_defaults(&mut self, b: BuiltinId) -> Defaults {
        if let Some(d) = &self.builtins[b].shared_defaults {
            return d.clone();
        }
        let slots = self.builtins[b].slots.clone();
        let mut all = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            if let Some(v) = self.slot_default(b, i) {
                all.push((slot.name.clone(), v));
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let shared: Defaults = all.into();
        self.builtins[b].shared_defaults = Some(shared.clone());
        shared
    }

    fn builtin_meta(&mut self, bmod: ModId, b: BuiltinId) -> Arc<BTreeMap<String, Val>> {
        if let Some(m) = &self.builtins[b].meta {
            return m.clone();
        }
        let args = self.builtins[b].meta_args.clone();
        let mut meta = BTreeMap::new();
        for a in &args {
            if let Some(n) = &a.name {
                let v = self.eval(bmod, &a.value);
                meta.insert(n.name.clone(), v);
            }
        }
        let meta = Arc::new(meta);
        self.builtins[b].meta = Some(meta.clone());
        meta
    }

    fn tool(&mut self, m: ModId, t: &ast::Tool) -> ToolV {
        let mut params = Vec::new();
        for p in &t.params {
            if let Err(d) = crate::types::parse_type(&p.ty) {
                self.diags.push(d);
            }
            let default = p.default.as_ref().map(|d| self.eval(m, d));
            params.push(ToolParamV {
                name: p.name.name.clone(),
                ty: crate::checker::type_text(self.text(p.ty.span)),
                default,
            });
        }
        let mut terminal = false;
        if let Some(body) = &t.body {
            for item in &body.items {
                match item {
                    BlockItem::Flag(f) if f.name == "terminal" => terminal = true,
                    BlockItem::Flag(f) => self.diags.push(
                        Diagnostic::new("E0301", format!("unknown tool flag `{}`", f.name))
                            .label(f.span, "unknown flag")
                            .help("the only tool flag is `terminal`"),
                    ),
                    BlockItem::Field(f) => self.diags.push(
                        Diagnostic::new("E0301", "tools take no fields")
                            .label(f.span, "not allowed here")
                            .help("mark a tool that ends the episode with `{ terminal }`"),
                    ),
                    BlockItem::Module(x) => {
                        self.misplaced(x.span, "a `module`", "an agent `graph { … }`")
                    }
                    BlockItem::Edge(x) => {
                        self.misplaced(x.span, "an edge", "an agent `graph { … }`")
                    }
                    BlockItem::Tool(x) => self.misplaced(x.span, "a `tool`", "a `toolset { … }`"),
                }
            }
        }
        ToolV { name: t.name.name.clone(), params, terminal, span: self.tight(t.span) }
    }

    fn unary(&mut self, op: UnaryOp, x: Val, span: Span) -> Val {
        let v = match (op, &x.v) {
            (_, V::Unknown) => V::Unknown,
            (UnaryOp::Neg, V::Num { value }) => V::Num { value: -value },
            (UnaryOp::Neg, V::Qty { value, dim }) => V::Qty { value: -value, dim: *dim },
            (UnaryOp::Not, V::Bool { value }) => V::Bool { value: !value },
            (_, _) if is_signal(&x) => {
                let arg = Box::new(to_sig(&x));
                V::Signal {
                    expr: Box::new(match op {
                        UnaryOp::Neg => SigExpr::Unary { neg: true, arg },
                        UnaryOp::Not => SigExpr::Unary { neg: false, arg },
                    }),
                }
            }
            _ => {
                let what = match op {
                    UnaryOp::Neg => "negate",
                    UnaryOp::Not => "apply `not` to",
                };
                self.diags.push(
                    Diagnostic::new("E0300", format!("cannot {what} {}", x.describe()))
                        .label(x.span, "wrong type here"),
                );
                V::Unknown
            }
        };
        Val::new(v, span)
    }

    fn binary(&mut self, op: BinaryOp, op_span: Span, a: Val, b: Val, span: Span) -> Val {
        if matches!(a.v, V::Unknown) || matches!(b.v, V::Unknown) {
            return Val::new(V::Unknown, span);
        }
        if (is_signal(&a) || is_signal(&b))
            && let (Some(x), Some(y)) = (sig_operand(&a), sig_operand(&b))
        {
            let expr = SigExpr::Binary { bin: op, lhs: Box::new(x), rhs: Box::new(y) };
            return Val::new(V::Signal { expr: Box::new(expr) }, span);
        }
        let num = |v: &Val| match v.v {
            V::Num { value } => Some((value, None)),
            V::Qty { value, dim } => Some((value, Some(dim))),
            _ => None,
        };
        let mismatch = |this: &mut Self, msg: String, help: &str| {
            this.diags.push(
                Diagnostic::new("E0305", msg)
                    .label(op_span, "these cannot be combined")
                    .label(a.span, a.describe())
                    .label(b.span, b.describe())
                    .help(help.to_string()),
            );
            Val::new(V::Unknown, span)
        };
        let v = match op {
            BinaryOp::And | BinaryOp::Or => match (&a.v, &b.v) {
                (V::Bool { value: x }, V::Bool { value: y }) => {
                    V::Bool { value: if op == BinaryOp::And { *x && *y } else { *x || *y } }
                }
                _ => return self.type_error_bin(op, op_span, &a, &b, span),
            },
            _ => {
                let (Some((x, dx)), Some((y, dy))) = (num(&a), num(&b)) else {
                    if op.is_comparison() && a.v == b.v {
                        return Val::new(
                            V::Bool {
                                value: op == BinaryOp::Eq
                                    || op == BinaryOp::Le
                                    || op == BinaryOp::Ge,
                            },
                            span,
                        );
                    }
                    return self.type_error_bin(op, op_span, &a, &b, span);
                };
                match op {
                    BinaryOp::Add | BinaryOp::Sub => match (dx, dy) {
                        (Some(p), Some(q)) if p != q => {
                            return mismatch(
                                self,
                                format!(
                                    "cannot {} {} and {}",
                                    if op == BinaryOp::Add { "add" } else { "subtract" },
                                    p.describe(),
                                    q.describe()
                                ),
                                "both sides need the same unit",
                            );
                        }
                        (Some(_), None) | (None, Some(_)) => {
                            return mismatch(
                                self,
                                "cannot add a plain number to a quantity".into(),
                                "give the number a unit, e.g. `2 steps`",
                            );
                        }
                        (d, _) => qty(if op == BinaryOp::Add { x + y } else { x - y }, d),
                    },
                    BinaryOp::Mul => match (dx, dy) {
                        (Some(p), Some(q)) => {
                            return mismatch(
                                self,
                                format!("cannot multiply {} by {}", p.describe(), q.describe()),
                                "multiply a quantity by a plain number",
                            );
                        }
                        (d, e) => qty(x * y, d.or(e)),
                    },
                    BinaryOp::Div => {
                        if y == 0.0 {
                            self.diags.push(
                                Diagnostic::new("E0306", "division by zero")
                                    .label(b.span, "this is zero"),
                            );
                            return Val::new(V::Unknown, span);
                        }
                        match (dx, dy) {
                            (Some(p), Some(q)) if p == q => V::Num { value: x / y },
                            (Some(p), Some(q)) => {
                                return mismatch(
                                    self,
                                    format!("cannot divide {} by {}", p.describe(), q.describe()),
                                    "divide quantities of the same unit, or by a plain number",
                                );
                            }
                            (None, Some(_)) => {
                                return mismatch(
                                    self,
                                    "cannot divide a plain number by a quantity".into(),
                                    "divide a quantity by a plain number",
                                );
                            }
                            (d, None) => qty(x / y, d),
                        }
                    }
                    _ => {
                        if dx != dy {
                            return mismatch(
                                self,
                                "cannot compare values of different units".into(),
                                "compare quantities of the same unit",
                            );
                        }
                        let r = match op {
                            BinaryOp::Eq => x == y,
                            BinaryOp::Ne => x != y,
                            BinaryOp::Lt => x < y,
                            BinaryOp::Le => x <= y,
                            BinaryOp::Gt => x > y,
                            _ => x >= y,
                        };
                        V::Bool { value: r }
                    }
                }
            }
        };
        Val::new(v, span)
    }

    fn type_error_bin(&mut self, op: BinaryOp, op_span: Span, a: &Val, b: &Val, span: Span) -> Val {
        for v in [a, b] {
            if let V::Symbol { name } = &v.v {
                let name = name.clone();
                let m = self
                    .modules
                    .iter()
                    .position(|md| md.file == v.span.file)
                    .unwrap_or(self.prelude);
                self.unknown_name(m, &name, v.span);
                return Val::new(V::Unknown, span);
            }
        }
        self.diags.push(
            Diagnostic::new(
                "E0300",
                format!("`{}` cannot combine {} and {}", op.symbol(), a.describe(), b.describe()),
            )
            .label(op_span, "here")
            .label(a.span, a.describe())
            .label(b.span, b.describe()),
        );
        Val::new(V::Unknown, span)
    }

    fn if_value(&mut self, c: Val, t: Val, o: Val, span: Span) -> Val {
        match &c.v {
            V::Bool { value } => Val::new(if *value { t.v } else { o.v }, span),
            V::Unknown => Val::new(V::Unknown, span),
            _ if is_signal(&c) => match (sig_operand(&t), sig_operand(&o)) {
                (Some(x), Some(y)) => {
                    let expr = SigExpr::If {
                        cond: Box::new(to_sig(&c)),
                        then: Box::new(x),
                        otherwise: Box::new(y),
                    };
                    Val::new(V::Signal { expr: Box::new(expr) }, span)
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new(
                            "E0300",
                            "both branches of a reward `if` must be numbers or signals",
                        )
                        .label(t.span, t.describe())
                        .label(o.span, o.describe()),
                    );
                    Val::new(V::Unknown, span)
                }
            },
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        "E0300",
                        format!("an `if` condition must be true or false, found {}", c.describe()),
                    )
                    .label(c.span, "not a condition"),
                );
                Val::new(V::Unknown, span)
            }
        }
    }
}

/// The words of a path (`std::models::tiny`), without a `Vec` for the usual one-word path.
enum Words<'e> {
    One([&'e str; 1]),
    Many(Vec<&'e str>),
}

impl<'e> Words<'e> {
    fn of(segs: &'e [ast::Ident]) -> Words<'e> {
        match segs {
            [one] => Words::One([one.name.as_str()]),
            _ => Words::Many(segs.iter().map(|s| s.name.as_str()).collect()),
        }
    }
}

impl<'e> std::ops::Deref for Words<'e> {
    type Target = [&'e str];

    fn deref(&self) -> &[&'e str] {
        match self {
            Words::One(one) => one,
            Words::Many(many) => many,
        }
    }
}

/// A reversed `clip` range gets help in the terms of PPO's ε_low and ε_high.
fn clip_help(diags: &mut [Diagnostic]) {
    for d in diags.iter_mut().filter(|d| d.code == "E0401") {
        d.message = format!("clip range is reversed: {}", d.message);
        let fix = d.help.take().unwrap_or_default();
        d.help = Some(format!(
            "`clip = low .. high` keeps the ratio in [1 − low, 1 + high]; DAPO's decoupled clip raises only the upper bound (`0.2 .. 0.28`): {fix}"
        ));
    }
}

fn qty(value: f64, dim: Option<Dimension>) -> V {
    match dim {
        Some(dim) => V::Qty { value, dim },
        None => V::Num { value },
    }
}

/// Whether a value is evaluated per episode (a signal, a condition, a reward).
pub(crate) fn is_signal(v: &Val) -> bool {
    match &v.v {
        V::Obj(o) => o.kind == "signal" || o.kind == "condition",
        V::Signal { .. } => true,
        V::Ref { kind: DeclKind::Reward, .. } => true,
        _ => false,
    }
}

fn sig_operand(v: &Val) -> Option<SigExpr> {
    match &v.v {
        V::Num { value } => Some(SigExpr::Const { value: *value }),
        V::Bool { value } => Some(SigExpr::Bool { value: *value }),
        _ if is_signal(v) => Some(to_sig(v)),
        _ => None,
    }
}

/// A signal-like value as a reward expression.
pub(crate) fn to_sig(v: &Val) -> SigExpr {
    match &v.v {
        V::Obj(o) => SigExpr::Signal { obj: o.clone() },
        V::Signal { expr } => (**expr).clone(),
        V::Ref { decl, .. } => SigExpr::Reward { name: decl.to_string() },
        V::Num { value } => SigExpr::Const { value: *value },
        V::Bool { value } => SigExpr::Bool { value: *value },
        _ => SigExpr::Const { value: 0.0 },
    }
}
