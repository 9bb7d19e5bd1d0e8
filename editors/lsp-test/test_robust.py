"""A bad request, an unknown document, frames that are not JSON-RPC and a file that is not
UTF-8 each get an LSP error or a diagnostic, never a crash, and the server keeps serving."""

import json
import subprocess

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound
from pytest_lsp import LanguageClient

from conftest import ROOT, WRLC, close, diagnostics, open_file, pos


async def still_serving(client: LanguageClient) -> None:
    uri, text = open_file(client, "recipes/quickstart.wrl")
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=pos(text, "max_turns", 1))
    )
    assert h is not None and "field of `react`" in h.contents.value
    close(client, uri)


async def test_bad_requests_get_errors(client: LanguageClient):
    with pytest.raises(JsonRpcMethodNotFound):
        await client.protocol.send_request_async("wrl/noSuchRequest", {})
    with pytest.raises(JsonRpcInvalidParams):
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri="not a URI at all"),
                position=types.Position(line=0, character=0),
            )
        )
    with pytest.raises(JsonRpcException) as e:
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=(ROOT / "nowhere.wrl").as_uri()),
                position=types.Position(line=0, character=0),
            )
        )
    assert "not open" in str(e.value)
    await still_serving(client)


async def test_garbage_on_the_wire(client: LanguageClient):
    writer = client._server.stdin
    for body in [b"{this is not json", b"\xff\xfe\xfd", b'{"jsonrpc": "2.0", "id": 1}']:
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    await still_serving(client)


async def test_a_file_that_is_not_utf8(client: LanguageClient):
    uri, _ = open_file(client, "tests/ui/syntax/E0106_invalid_utf8.wrl")
    [d] = await diagnostics(client, uri)
    assert d.code == "E0106" and d.range.start == types.Position(line=2, character=17)
    close(client, uri)
    await still_serving(client)


def frame(obj: dict | bytes) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(data: bytes) -> list[dict]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int(head.split(b":")[1])
        out.append(json.loads(rest[:n]))
        data = rest[n:]
    return out


def test_parse_errors_are_answered_with_a_null_id():
    """Over raw pipes: what a broken client sends gets JSON-RPC's parse error, in order."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    bad = {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"textDocument": {"uri": 5}}}
    shutdown = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
    exit_ = {"jsonrpc": "2.0", "method": "exit"}
    stdin = frame(init) + frame(b"{nope") + frame(b"\xc3\x28") + frame(bad) + frame(shutdown) + frame(exit_)
    run = subprocess.run([WRLC, "lsp"], input=stdin, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    msgs = read_frames(run.stdout)
    assert [m.get("id") for m in msgs] == [1, None, None, 3, 2]
    assert msgs[1]["error"]["code"] == -32700 and msgs[2]["error"]["code"] == -32700
    assert msgs[3]["error"]["code"] == -32602
    assert msgs[4]["result"] is None
