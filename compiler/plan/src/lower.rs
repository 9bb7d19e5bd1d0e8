//! Lowering a checked recipe to plan nodes and edges: one node per model, dataset, env, agent
//! and reward the stages use, one per SFT stage, one per RL phase, a checkpoint after every
//! training stage, and one per evaluation. Then the graph checks in `checks.rs`.

use std::collections::{BTreeMap, BTreeSet};

use wrl_check::{CheckedDecl, Recipe, V, Val};
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::DeclKind;

use crate::convert::{Converter, Input};
use crate::model::{DataKind, Edge, Node, NodeKind, PLAN_VERSION, Plan};
use crate::value::{PExpr, PVal};

/// Where an edge came from in the source, for diagnostics.
pub(crate) type EdgeSpans = BTreeMap<(String, String), Span>;

pub(crate) struct Lowering<'r> {
    pub recipe: &'r Recipe,
    pub values: BTreeMap<String, Val>,
    pub decls: BTreeMap<String, &'r CheckedDecl>,
    pub nodes: BTreeMap<String, Node>,
    pub edges: Vec<Edge>,
    pub edge_spans: EdgeSpans,
    pub diags: Vec<Diagnostic>,
    queued: BTreeSet<String>,
    queue: Vec<String>,
}

impl<'r> Lowering<'r> {
    pub fn new(recipe: &'r Recipe) -> Lowering<'r> {
        let values = recipe.decls.iter().map(|d| (d.name.clone(), d.value.clone())).collect();
        let decls = recipe.decls.iter().map(|d| (d.name.clone(), d)).collect();
        Lowering {
            recipe,
            values,
            decls,
            nodes: BTreeMap::new(),
            edges: Vec::new(),
            edge_spans: BTreeMap::new(),
            diags: Vec::new(),
            queued: BTreeSet::new(),
            queue: Vec::new(),
        }
    }

    /// Lowers every stage and eval of the recipe and whatever they use.
    pub fn run(&mut self) {
        let roots: Vec<String> = self
            .recipe
            .decls
            .iter()
            .filter(|d| !d.std && matches!(d.kind, DeclKind::Stage | DeclKind::Eval))
            .map(|d| d.name.clone())
            .collect();
        for r in roots {
            self.enqueue(&r);
        }
        while let Some(name) = self.queue.pop() {
            self.lower_decl(&name);
        }
    }

    fn enqueue(&mut self, decl: &str) {
        if self.queued.insert(decl.to_string()) {
            self.queue.push(decl.to_string());
        }
    }

    /// Adds a node and the edges of its inputs.
    fn add(&mut self, node: Node, inputs: Vec<Input>) {
        for i in inputs {
            self.enqueue(&i.decl);
            self.edge_spans.insert((node.id.clone(), i.port.clone()), i.span);
            self.edges.push(Edge { from: i.from, to: node.id.clone(), port: i.port, data: i.data });
        }
        self.nodes.insert(node.id.clone(), node);
    }

    fn lower_decl(&mut self, name: &str) {
        let Some(d) = self.decls.get(name).copied() else { return };
        match d.kind {
            DeclKind::Model => self.simple(d, "model", NodeKind::LoadModel),
            DeclKind::Dataset => self.simple(d, "dataset", NodeKind::LoadDataset),
            DeclKind::Env => self.simple(d, "env", NodeKind::Env),
            DeclKind::Agent => self.simple(d, "agent", NodeKind::Agent),
            DeclKind::Reward => self.reward(d),
            DeclKind::Stage => self.stage(d),
            DeclKind::Eval => self.eval(d),
            DeclKind::Tools | DeclKind::Param => {}
        }
    }

    /// Follows `model policy = std::models::tiny` to the declaration that builds the value.
    fn resolve_alias(&self, d: &'r CheckedDecl) -> (&'r Val, Option<String>) {
        let mut v = &d.value;
        let mut alias = None;
        for _ in 0..16 {
            match &v.v {
                V::Ref { decl, kind, member: None } if *kind == d.kind => {
                    match self.decls.get(decl) {
                        Some(t) => {
                            alias = Some(decl.clone());
                            v = &t.value;
                        }
                        None => break,
                    }
                }
                _ => break,
            }
        }
        (v, alias)
    }

    /// A model, dataset, env or agent: one node with the constructor's fields.
    fn simple(&mut self, d: &'r CheckedDecl, prefix: &str, kind: NodeKind) {
        let id = format!("{prefix}:{}", d.name);
        let (v, alias_of) = self.resolve_alias(d);
        let mut c = Converter::new(&self.values);
        let (ctor, params) = match &v.v {
            V::Obj(o) => {
                let p = c.obj(o, "", 0);
                let mut params = p.fields;
                if !p.modules.is_empty() {
                    let modules = p.modules.into_iter().map(|m| (m.name, m.value)).collect();
                    params.insert("modules".into(), PVal::Record { fields: modules });
                }
                if !p.edges.is_empty() {
                    params.insert("graph".into(), graph_edges(&p.edges));
                }
                (o.ctor.clone(), params)
            }
            _ => ("unknown".to_string(), BTreeMap::new()),
        };
        let node =
            Node { id, kind, decl: d.name.clone(), ctor, alias_of, doc: d.doc.clone(), params };
        let inputs = c.inputs;
        self.add(node, inputs);
    }

    fn reward(&mut self, d: &'r CheckedDecl) {
        let mut c = Converter::new(&self.values);
        let expr = match &d.value.v {
            V::Signal { expr } => c.expr(expr, "expr", 0),
            V::Obj(o) => PExpr::Signal { obj: c.obj(o, "expr", 0) },
            V::Ref { decl, .. } => {
                let v = c.val(&Val::new(d.value.v.clone(), d.value.span), "expr");
                match v {
                    PVal::Ref { node } => PExpr::Reward { node },
                    _ => PExpr::Reward { node: format!("reward:{decl}") },
                }
            }
            V::Num { value } => PExpr::Const { value: *value },
            _ => PExpr::Const { value: 0.0 },
        };
        let mut params = BTreeMap::new();
        let level = reward_level(&expr);
        params.insert("level".into(), PVal::Enum { value: level.into() });
        params.insert("expr".into(), PVal::Reward { expr: Box::new(expr) });
        let node = Node {
            id: format!("reward:{}", d.name),
            kind: NodeKind::Reward,
            decl: d.name.clone(),
            ctor: "reward".into(),
            alias_of: None,
            doc: d.doc.clone(),
            params,
        };
        let inputs = c.inputs;
        self.add(node, inputs);
    }

    fn stage(&mut self, d: &'r CheckedDecl) {
        let V::Obj(o) = &d.value.v else { return };
        let is_rl = o.fields.contains_key("phases");
        let last = if is_rl { self.rl_stage(d, o) } else { self.sft_stage(d, o) };
        let mut params = BTreeMap::new();
        params.insert("stage".into(), PVal::Str { value: d.name.clone() });
        if let Some(every) = o.fields.get("checkpoint_every") {
            params.insert("every".into(), Converter::new(&self.values).val(every, "every"));
        }
        let node = Node {
            id: format!("checkpoint:{}", d.name),
            kind: NodeKind::Checkpoint,
            decl: d.name.clone(),
            ctor: "checkpoint".into(),
            alias_of: None,
            doc: None,
            params,
        };
        let inputs = last
            .map(|from| Input {
                from,
                port: "model".into(),
                data: DataKind::Checkpoint,
                decl: d.name.clone(),
                span: d.name_span,
            })
            .into_iter()
            .collect();
        self.add(node, inputs);
    }

    fn sft_stage(&mut self, d: &'r CheckedDecl, o: &'r wrl_check::Obj) -> Option<String> {
        let id = format!("stage:{}", d.name);
        let mut c = Converter::new(&self.values);
        let mut params: BTreeMap<String, PVal> =
            o.fields.iter().map(|(k, v)| (k.clone(), c.val(v, k))).collect();
        params.insert("stage".into(), PVal::Str { value: d.name.clone() });
        let node = Node {
            id: id.clone(),
            kind: NodeKind::Sft,
            decl: d.name.clone(),
            ctor: o.ctor.clone(),
            alias_of: None,
            doc: d.doc.clone(),
            params,
        };
        let inputs = c.inputs;
        self.add(node, inputs);
        Some(id)
    }

    /// One node per phase; each phase starts from the previous one's weights and optimiser.
    fn rl_stage(&mut self, d: &'r CheckedDecl, o: &'r wrl_check::Obj) -> Option<String> {
        let phases: Vec<&Val> = match o.fields.get("phases").map(|p| &p.v) {
            Some(V::List { items }) => items.iter().collect(),
            Some(V::Unknown) => vec![],
            _ => vec![],
        };
        let unknown_phases = matches!(o.fields.get("phases").map(|p| &p.v), Some(V::Unknown));
        let count = if unknown_phases { 1 } else { phases.len() };
        if count == 0 {
            let span = o.fields.get("phases").map_or(d.name_span, |p| p.span);
            self.diags.push(crate::errors::no_phases(&d.name, d.name_span, span));
            return None;
        }
        let binds = self.agent_binds(o.fields.get("agent"));
        let mut prev: Option<String> = None;
        for i in 0..count {
            let id = format!("stage:{}/phase:{}", d.name, i + 1);
            let mut c = Converter::new(&self.values);
            let mut params = BTreeMap::new();
            for (k, v) in &o.fields {
                if k == "phases" {
                    continue;
                }
                if k == "init"
                    && let Some(p) = &prev
                {
                    c.inputs.push(Input {
                        from: p.clone(),
                        port: "init".into(),
                        data: DataKind::Checkpoint,
                        decl: d.name.clone(),
                        span: v.span,
                    });
                    params.insert(k.clone(), PVal::Ref { node: p.clone() });
                    continue;
                }
                params.insert(k.clone(), c.val(v, k));
            }
            match phases.get(i).map(|p| &p.v) {
                Some(V::Record { fields }) => {
                    for (k, v) in fields {
                        params.insert(k.clone(), c.val(v, k));
                    }
                }
                _ => {
                    for k in ["iters", "horizon", "lr"] {
                        params.insert(k.into(), PVal::Unknown);
                    }
                }
            }
            params.insert("stage".into(), PVal::Str { value: d.name.clone() });
            params.insert("phase".into(), PVal::Num { value: (i + 1) as f64 });
            params.insert("phases".into(), PVal::Num { value: count as f64 });
            params.insert(
                "resume".into(),
                PVal::Enum { value: if i == 0 { "fresh" } else { "weights_and_optimizer" }.into() },
            );
            params.insert("binds".into(), binds.clone());
            let node = Node {
                id: id.clone(),
                kind: NodeKind::RlPhase,
                decl: d.name.clone(),
                ctor: o.ctor.clone(),
                alias_of: None,
                doc: if i == 0 { d.doc.clone() } else { None },
                params,
            };
            let inputs = c.inputs;
            self.add(node, inputs);
            prev = Some(id);
        }
        prev
    }

    fn eval(&mut self, d: &'r CheckedDecl) {
        let V::Obj(o) = &d.value.v else { return };
        let after: Vec<(String, Span)> = match o.fields.get("after").map(|a| &a.v) {
            Some(V::List { items }) => items
                .iter()
                .filter_map(|i| match &i.v {
                    V::Ref { decl, kind: DeclKind::Stage, .. } => Some((decl.clone(), i.span)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let binds = self.agent_binds(o.fields.get("agent"));
        let runs: Vec<Option<(String, Span)>> =
            if after.is_empty() { vec![None] } else { after.into_iter().map(Some).collect() };
        let many = runs.len() > 1;
        for run in runs {
            let id = match (&run, many) {
                (Some((s, _)), true) => format!("eval:{}/after:{s}", d.name),
                _ => format!("eval:{}", d.name),
            };
            let mut c = Converter::new(&self.values);
            let mut params: BTreeMap<String, PVal> = o
                .fields
                .iter()
                .filter(|(k, _)| k.as_str() != "after")
                .map(|(k, v)| (k.clone(), c.val(v, k)))
                .collect();
            match &run {
                Some((stage, span)) => {
                    let node = format!("checkpoint:{stage}");
                    params.insert("after".into(), PVal::Str { value: stage.clone() });
                    params.insert("checkpoint".into(), PVal::Ref { node: node.clone() });
                    params.insert("binds".into(), binds.clone());
                    c.inputs.push(Input {
                        from: node,
                        port: "checkpoint".into(),
                        data: DataKind::Checkpoint,
                        decl: stage.clone(),
                        span: *span,
                    });
                }
                None => {
                    params.insert("binds".into(), PVal::List { items: vec![] });
                }
            }
            let node = Node {
                id,
                kind: NodeKind::Eval,
                decl: d.name.clone(),
                ctor: o.ctor.clone(),
                alias_of: None,
                doc: d.doc.clone(),
                params,
            };
            let inputs = c.inputs;
            self.add(node, inputs);
        }
    }

    /// The agent slots a stage's checkpoint is bound to: a ReAct agent's `policy`, and the
    /// `policy_of` modules of a graph marked `trainable`.
    fn agent_binds(&self, agent: Option<&Val>) -> PVal {
        let names = agent.map(|a| self.bind_slots(a)).unwrap_or_default();
        PVal::List { items: names.into_iter().map(|n| PVal::Str { value: n }).collect() }
    }

    pub fn bind_slots(&self, agent: &Val) -> Vec<String> {
        let obj = match &agent.v {
            V::Ref { decl, .. } => match self.decls.get(decl) {
                Some(d) => match &self.resolve_alias(d).0.v {
                    V::Obj(o) => Some(o),
                    _ => None,
                },
                None => None,
            },
            V::Obj(o) => Some(o),
            _ => None,
        };
        let Some(o) = obj else { return Vec::new() };
        if o.fields.contains_key("policy") {
            return vec!["policy".into()];
        }
        o.modules
            .iter()
            .filter(|m| match &m.value.v {
                V::Obj(mo) => {
                    mo.ctor == "policy_of"
                        && matches!(
                            mo.fields.get("trainable").map(|t| &t.v),
                            Some(V::Bool { value: true })
                        )
                }
                _ => false,
            })
            .map(|m| format!("modules.{}.model", m.name))
            .collect()
    }

    /// The finished plan: nodes in topological order (ties by id), edges sorted.
    pub fn finish(mut self, order: Vec<String>) -> (Plan, Vec<Diagnostic>) {
        let mut nodes = Vec::new();
        for id in order {
            if let Some(n) = self.nodes.remove(&id) {
                nodes.push(n);
            }
        }
        let mut edges = std::mem::take(&mut self.edges);
        edges.sort_by(|a, b| (&a.to, &a.port, &a.from).cmp(&(&b.to, &b.port, &b.from)));
        edges.dedup();
        let plan = Plan {
            version: PLAN_VERSION,
            recipe: self.recipe.file.replace('\\', "/"),
            profile: self.recipe.profile.clone(),
            nodes,
            edges,
        };
        (plan, self.diags)
    }
}

fn graph_edges(edges: &[crate::value::PGraphEdge]) -> PVal {
    PVal::List {
        items: edges
            .iter()
            .map(|e| {
                let mut f = BTreeMap::new();
                f.insert("from".to_string(), PVal::Str { value: e.from.clone() });
                f.insert("to".to_string(), PVal::Str { value: e.to.clone() });
                f.insert(
                    "when".to_string(),
                    PVal::List {
                        items: e.when.iter().map(|w| PVal::Str { value: w.clone() }).collect(),
                    },
                );
                f.insert(
                    "limit".to_string(),
                    e.limit.map_or(PVal::Unknown, |l| PVal::Num { value: l }),
                );
                PVal::Record { fields: f }
            })
            .collect(),
    }
}

/// `process` when any signal of the expression is per step, else `outcome`.
fn reward_level(e: &PExpr) -> &'static str {
    let process = e
        .signals()
        .iter()
        .any(|s| matches!(s.meta.get("level"), Some(PVal::Enum { value }) if value == "process"));
    if process { "process" } else { "outcome" }
}
