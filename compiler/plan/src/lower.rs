//! Lowering a checked recipe to plan nodes and edges: one node per model, dataset, env, agent
//! and reward the stages use (here), and the stage nodes (`stages.rs`: one per SFT stage, one
//! per RL phase, a checkpoint after every training stage, one per evaluation). Then the graph
//! checks in `checks.rs`.

use std::collections::{BTreeMap, BTreeSet};

use wrl_check::{CheckedDecl, Recipe, V, Val};
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::DeclKind;

use crate::convert::{Converter, Decls, Input};
use crate::model::{Edge, Node, NodeKind, PLAN_VERSION, Plan};
use crate::value::{PExpr, PVal};

/// A recipe being lowered: its declarations, the nodes and edges made so far, diagnostics.
pub(crate) struct Lowering<'r> {
    pub recipe: &'r Recipe,
    /// Declarations by name (borrowed: lowering reads values, it never changes them; the
    /// last of a repeated name wins).
    pub decls: Decls<'r>,
    pub nodes: BTreeMap<String, Node>,
    pub edges: Vec<Edge>,
    /// Where each edge came from in the source (by edge), for diagnostics.
    pub edge_spans: Vec<Span>,
    pub diags: Vec<Diagnostic>,
    /// Edge indices sorted by (to, port), ties in edge order, once every edge is added
    /// (`check`): the first edge into a node's port is found by binary search.
    pub edge_into: Vec<usize>,
    /// Declarations queued for lowering (names borrowed from the recipe).
    queued: BTreeSet<&'r str>,
    queue: Vec<&'r str>,
    /// The recipe's claims, lowered once every stage and evaluation is (`claims.rs`).
    pub claims: Vec<crate::params::Claim>,
    /// Lowering only for the checks (`wrlc check`): values are walked for their inputs but not
    /// converted, and nodes keep only the parameters the checks read.
    pub lean: bool,
}

/// The node parameters the checks read (`checks.rs`); a lean lowering keeps only these.
const CHECKED_PARAMS: &[&str] =
    &["model", "data", "init", "tasks", "agent", "reward", "phase", "binds", "after"];

impl<'r> Lowering<'r> {
    pub fn new(recipe: &'r Recipe) -> Lowering<'r> {
        let mut decls = BTreeMap::new();
        for d in &recipe.decls {
            decls.insert(d.name.as_str(), &**d);
        }
        Lowering {
            recipe,
            decls,
            nodes: BTreeMap::new(),
            edges: Vec::new(),
            edge_spans: Vec::new(),
            diags: Vec::new(),
            edge_into: Vec::new(),
            queued: BTreeSet::new(),
            queue: Vec::new(),
            claims: Vec::new(),
            lean: false,
        }
    }

    /// Lowers every stage and eval of the recipe and whatever they use.
    pub fn run(&mut self) {
        let recipe = self.recipe;
        let roots = recipe
            .decls
            .iter()
            .filter(|d| !d.std && matches!(d.kind, DeclKind::Stage | DeclKind::Eval));
        for r in roots {
            self.enqueue(&r.name);
        }
        while let Some(name) = self.queue.pop() {
            self.lower_decl(name);
        }
        self.claims = self.claims();
    }

    /// Queues a declaration for lowering once (a name the recipe does not declare lowers to
    /// nothing).
    fn enqueue(&mut self, decl: &str) {
        if let Some((&name, _)) = self.decls.get_key_value(decl)
            && self.queued.insert(name)
        {
            self.queue.push(name);
        }
    }

    /// A converter of values for one node.
    pub(crate) fn converter(&self) -> Converter<'_> {
        let mut c = Converter::new(&self.decls);
        c.lean = self.lean;
        c
    }

    /// Whether a node keeps parameter `k` (all of them, unless lean).
    pub(crate) fn keeps(&self, k: &str) -> bool {
        !self.lean || CHECKED_PARAMS.contains(&k)
    }

    /// A node's doc comment (none in a lean lowering: no check reads it).
    pub(crate) fn doc(&self, d: &CheckedDecl) -> Option<String> {
        if self.lean { None } else { d.doc.clone() }
    }

    /// Adds a node and the edges of its inputs.
    pub(crate) fn add(&mut self, mut node: Node, inputs: Vec<Input>) {
        if self.lean {
            node.params.retain(|k, _| CHECKED_PARAMS.contains(&k.as_str()));
        }
        for i in inputs {
            self.enqueue(&i.decl);
            self.edge_spans.push(i.span);
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
            // Claims run nothing: `run` lowers them into the plan's `claims`.
            DeclKind::Tools | DeclKind::Param | DeclKind::Claim => {}
        }
    }

    /// Follows `model policy = std::models::tiny` to the declaration that builds the value.
    pub(crate) fn resolve_alias(&self, d: &'r CheckedDecl) -> (&'r Val, Option<String>) {
        let mut v = &d.value;
        let mut alias = None;
        for _ in 0..16 {
            match &v.v {
                V::Ref { decl, kind, member: None } if *kind == d.kind => {
                    match self.decls.get(decl.as_str()) {
                        Some(t) => {
                            alias = Some(decl.to_string());
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
        let mut c = self.converter();
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
                (o.ctor.to_string(), params)
            }
            _ => ("unknown".to_string(), BTreeMap::new()),
        };
        let node =
            Node { id, kind, decl: d.name.clone(), ctor, alias_of, doc: self.doc(d), params };
        let inputs = c.inputs;
        self.add(node, inputs);
    }

    fn reward(&mut self, d: &'r CheckedDecl) {
        let mut c = self.converter();
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
            doc: self.doc(d),
            params,
        };
        let inputs = c.inputs;
        self.add(node, inputs);
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
            variant: self.recipe.variant.clone(),
            nodes,
            edges,
            claims: std::mem::take(&mut self.claims),
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
