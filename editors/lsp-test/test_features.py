"""Every feature of `wrlc lsp` answers on the shipped recipes, seen from a real LSP client:
hover, definition (into the stdlib's read-only documents), references, completion, inlay
hints, code actions, document symbols, formatting and semantic tokens."""

import re

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import ROOT, close, diagnostics, open_file, open_text, pos

OWRL = "recipes/openwebrl.wrl"


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def hover(client: LanguageClient, uri: str, p: types.Position) -> str:
    h = await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=p))
    assert h is not None, p
    return h.contents.value


async def test_hover(client: LanguageClient):
    uri, text = open_file(client, OWRL)
    h = await hover(client, uri, pos(text, "mini_batch = 256", 1))
    assert "field of `grpo` (stage)" in h
    assert "**value** `256 turns`" in h
    assert "profile `smoke`: `32 turns`, set by `online.mini_batch = 32 turns`" in h
    h = await hover(client, uri, pos(text, "concurrency = 90", 1))
    assert "`int(min: 1, max: 1024)`, default `8`" in h and "profile `smoke`: `4`" in h
    h = await hover(client, uri, pos(text, "36864 tokens", 7))
    assert "= **36864 tokens**" in h and "in `max_length` of `sft`" in h
    h = await hover(client, uri, pos(text, "warmup.model", 1))
    assert "stage warmup = sft(policy, demos)" in h
    h = await hover(client, uri, pos(text, "std::tools::openwebrl", 14))
    assert "tools openwebrl" in h
    close(client, uri)


async def test_definition_opens_the_stdlib(client: LanguageClient):
    uri, text = open_file(client, OWRL)
    loc = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=pos(text, "hf_dataset(", 1))
    )
    assert loc.uri == "wrl-stdlib:///std/prelude.wrl"
    source = await client.protocol.send_request_async(
        "wrl/virtualTextDocument", {"textDocument": {"uri": loc.uri}}
    )
    assert source.splitlines()[loc.range.start.line].startswith("builtin hf_dataset(")
    assert source == (ROOT / "stdlib" / "prelude.wrl").read_text()
    loc = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=pos(text, "tasks, actor)", 1))
    )
    assert loc.uri == uri and loc.range.start == pos(text, "tasks = parquet", 0)
    close(client, uri)


async def test_references(client: LanguageClient):
    uri, text = open_file(client, OWRL)
    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(uri),
            position=pos(text, "reward webvoyager_judge", 8),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    # The declaration, the WebVoyager evaluation that uses it and the three offline profiles
    # (`smoke`, `smoke_vl`, `claims`) that override it.
    lines = sorted(r.range.start.line for r in refs)
    want = sorted(
        i for i, line in enumerate(text.splitlines())
        if re.search(r"\bwebvoyager_judge\b", line) and not line.lstrip().startswith("//")
    )
    assert len(refs) == 5 and lines == want, refs
    close(client, uri)


async def test_completion(client: LanguageClient):
    base = (ROOT / OWRL).read_text()
    at = base.index("  micro_batch = 1")
    text = base[:at] + "  lo\n" + base[at:]
    uri = (ROOT / "recipes" / "completion-scratch.wrl").as_uri()
    open_text(client, uri, text)
    items = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=pos(text, "  lo\n", 4))
    )
    labels = {i.label: i for i in (items.items if hasattr(items, "items") else items)}
    assert "loss_on" in labels and "epochs" not in labels  # `epochs` is already set
    assert labels["loss_on"].detail.startswith("enum(")
    close(client, uri)


async def test_inlay_hints(client: LanguageClient):
    uri, text = open_file(client, OWRL)
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=doc(uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=400, character=0)),
        )
    )
    labels = [h.label for h in hints]
    assert any(l.startswith("21,600 trajectories · ≤ 324,000 env steps · 2,520 optimizer steps · turn 15: ~") for l in labels), labels
    assert any("after warmup: 595 episodes" in l for l in labels), labels
    close(client, uri)


async def test_code_action_applies(client: LanguageClient):
    text = (ROOT / OWRL).read_text().replace("loss_on = current_turn", "loss_on = curent_turn", 1)
    uri = (ROOT / "recipes" / "action-scratch.wrl").as_uri()
    open_text(client, uri, text)
    [d] = [d for d in await diagnostics(client, uri) if d.code == "E0307"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(text_document=doc(uri), range=d.range, context=types.CodeActionContext(diagnostics=[d]))
    )
    [fix] = [a for a in actions if a.title == "Replace `curent_turn` with `current_turn`"]
    [edit] = fix.edit.changes[uri]
    assert edit.new_text == "current_turn" and edit.range == d.range
    close(client, uri)


async def test_symbols_formatting_tokens(client: LanguageClient):
    uri, text = open_file(client, "recipes/webdancer.wrl")
    syms = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(uri)))
    names = [s.name for s in syms]
    assert "smoke" in names and any(s.kind == types.SymbolKind.Event for s in syms)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(text_document=doc(uri), options=types.FormattingOptions(tab_size=2, insert_spaces=True))
    )
    assert not edits  # the shipped recipes are formatted
    tokens = await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc(uri)))
    assert len(tokens.data) % 5 == 0 and len(tokens.data) > 500
    close(client, uri)
