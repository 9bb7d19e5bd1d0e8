//! The outline (document symbols: items, their top-level fields, a profile's overrides, a
//! graph's modules) and formatting through `wrl-fmt` (a file with syntax errors is not
//! formatted: the request fails and says why).

use lsp_types::{DocumentSymbol, DocumentSymbolResponse, SymbolKind, TextEdit};
use wrl_diagnostics::Span;
use wrl_syntax::ast::{self, BlockItem, DeclKind, ExprKind, ItemKind, Use};

use crate::codes::REQUEST_FAILED;
use crate::view::View;

pub fn symbols(view: &View<'_>) -> Option<DocumentSymbolResponse> {
    let owned;
    let file = match view.analysis().and_then(|a| a.file.as_ref()) {
        Some(f) => f,
        None => {
            // A stdlib document (or one that is not UTF-8): the outline is syntax only.
            owned = wrl_syntax::parse(crate::analysis::DOC, &view.doc.text).file;
            &owned
        }
    };
    let out = file.items.iter().filter_map(|item| item_symbol(view, item)).collect();
    Some(DocumentSymbolResponse::Nested(out))
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must be written out
fn symbol(
    view: &View<'_>,
    name: String,
    detail: Option<String>,
    kind: SymbolKind,
    span: Span,
    sel: Span,
    children: Vec<DocumentSymbol>,
) -> DocumentSymbol {
    DocumentSymbol {
        name: if name.is_empty() { "_".into() } else { name },
        detail,
        kind,
        tags: None,
        deprecated: None,
        range: view.range(span),
        selection_range: view.range(sel),
        children: (!children.is_empty()).then_some(children),
    }
}

fn item_symbol(view: &View<'_>, item: &ast::Item) -> Option<DocumentSymbol> {
    Some(match &item.kind {
        ItemKind::Decl(d) => {
            let detail = Some(format!("{} = {}", d.kind.word(), ctor_name(&d.value)));
            let children = block_of(&d.value).map(|b| fields(view, b)).unwrap_or_default();
            symbol(
                view,
                d.name.name.clone(),
                detail,
                kind_of(d.kind),
                item.span,
                d.name.span,
                children,
            )
        }
        ItemKind::Profile(p) => {
            let children = fields(view, &p.overrides);
            symbol(
                view,
                p.name.name.clone(),
                Some(p.kind.word().into()),
                SymbolKind::NAMESPACE,
                item.span,
                p.name.span,
                children,
            )
        }
        ItemKind::Extends(e) => {
            let children = e.overrides.as_ref().map(|b| fields(view, b)).unwrap_or_default();
            symbol(
                view,
                format!("extends \"{}\"", e.path.value),
                None,
                SymbolKind::PACKAGE,
                item.span,
                e.path.span,
                children,
            )
        }
        ItemKind::Use(Use::Path { segments, group }) => {
            let path: Vec<&str> = segments.iter().map(|s| s.name.as_str()).collect();
            let mut name = format!("use {}", path.join("::"));
            if let Some(g) = group {
                let items: Vec<&str> = g.iter().map(|i| i.name.as_str()).collect();
                name.push_str(&format!("::{{{}}}", items.join(", ")));
            }
            symbol(view, name, None, SymbolKind::MODULE, item.span, item.span, Vec::new())
        }
        ItemKind::Use(Use::File { path, alias }) => {
            let name = match alias {
                Some(a) => format!("use \"{}\" as {}", path.value, a.name),
                None => format!("use \"{}\"", path.value),
            };
            symbol(view, name, None, SymbolKind::FILE, item.span, path.span, Vec::new())
        }
        ItemKind::Builtin(b) => {
            let children = b
                .params
                .iter()
                .chain(&b.fields)
                .map(|p| {
                    symbol(
                        view,
                        p.name.name.clone(),
                        None,
                        SymbolKind::FIELD,
                        p.span,
                        p.name.span,
                        Vec::new(),
                    )
                })
                .collect();
            symbol(
                view,
                b.name.name.clone(),
                Some("builtin".into()),
                SymbolKind::CONSTRUCTOR,
                item.span,
                b.name.span,
                children,
            )
        }
    })
}

fn kind_of(k: DeclKind) -> SymbolKind {
    match k {
        DeclKind::Model => SymbolKind::CLASS,
        DeclKind::Dataset => SymbolKind::ARRAY,
        DeclKind::Env => SymbolKind::OBJECT,
        DeclKind::Tools => SymbolKind::INTERFACE,
        DeclKind::Agent => SymbolKind::STRUCT,
        DeclKind::Reward => SymbolKind::FUNCTION,
        DeclKind::Stage => SymbolKind::EVENT,
        DeclKind::Eval => SymbolKind::METHOD,
        DeclKind::Param => SymbolKind::CONSTANT,
        DeclKind::Claim => SymbolKind::PROPERTY,
    }
}

/// `grpo`, `std::sandbox::tasks`, or `…` for a value that is not a constructor.
fn ctor_name(e: &ast::Expr) -> String {
    let path = |e: &ast::Expr| match &e.kind {
        ExprKind::Path(s) => Some(s.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::")),
        _ => None,
    };
    match &e.kind {
        ExprKind::Call { callee, .. } => path(callee),
        ExprKind::Configure { base, .. } => match &base.kind {
            ExprKind::Call { callee, .. } => path(callee),
            _ => path(base),
        },
        _ => path(e),
    }
    .unwrap_or_else(|| "…".into())
}

fn block_of(e: &ast::Expr) -> Option<&ast::Block> {
    match &e.kind {
        ExprKind::Configure { block, .. } => Some(block),
        _ => None,
    }
}

fn fields(view: &View<'_>, b: &ast::Block) -> Vec<DocumentSymbol> {
    b.items
        .iter()
        .filter_map(|i| match i {
            BlockItem::Field(f) => {
                let name = view.doc.text.get(f.path.span.range()).unwrap_or("").to_string();
                Some(symbol(view, name, None, SymbolKind::FIELD, f.span, f.path.span, Vec::new()))
            }
            BlockItem::Module(m) => Some(symbol(
                view,
                m.name.name.clone(),
                Some("module".into()),
                SymbolKind::MODULE,
                m.span,
                m.name.span,
                Vec::new(),
            )),
            BlockItem::Tool(t) => Some(symbol(
                view,
                t.name.name.clone(),
                Some("tool".into()),
                SymbolKind::FUNCTION,
                t.span,
                t.name.span,
                Vec::new(),
            )),
            BlockItem::Flag(_) | BlockItem::Edge(_) => None,
        })
        .collect()
}

/// The whole document, formatted; no edit when it already is.
pub fn format(view: &View<'_>) -> Result<Vec<TextEdit>, (i32, String)> {
    let text = &view.doc.text;
    match wrl_fmt::format_source(text) {
        Ok(out) if out == *text => Ok(Vec::new()),
        Ok(out) => {
            let end = view.position(text.len());
            Ok(vec![TextEdit::new(lsp_types::Range::new(lsp_types::Position::new(0, 0), end), out)])
        }
        Err(diags) => {
            let first = diags.first().map(|d| {
                let line = d.primary_span().map_or(0, |s| view.position(s.start as usize).line + 1);
                format!(": line {line}: {}", d.message)
            });
            Err((
                REQUEST_FAILED,
                format!("not formatted: the file has syntax errors{}", first.unwrap_or_default()),
            ))
        }
    }
}
