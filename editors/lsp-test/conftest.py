"""Fixtures of the real-client test: `wrlc lsp` started as a subprocess and driven by
pytest-lsp's LanguageClient (pygls), with helpers to open files and find positions."""

import asyncio
import os
import pathlib
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = pathlib.Path(__file__).resolve().parents[2]
WRLC = os.environ.get("WRLC", str(ROOT / "target" / "debug" / "wrlc"))


def uri_of(rel: str) -> str:
    return (ROOT / rel).as_uri()


def pos(text: str, needle: str, delta: int = 0, nth: int = 0) -> types.Position:
    """The position of the nth `needle` in `text`, `delta` columns on (UTF-16 columns)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at)
    start = text.rfind("\n", 0, at) + 1
    col = len(text[start:at].encode("utf-16-le")) // 2
    return types.Position(line=line, character=col + delta)


def open_text(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="wrl", version=version, text=text)
        )
    )


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    client.diagnostics.pop(uri, None)


def open_file(client: LanguageClient, rel: str) -> tuple[str, str]:
    """Opens a file of the repository as an editor does (lossy for bytes that are not UTF-8)."""
    text = (ROOT / rel).read_bytes().decode("utf-8", errors="replace")
    uri = uri_of(rel)
    open_text(client, uri, text)
    return uri, text


async def diagnostics(client: LanguageClient, uri: str, timeout: float = 20.0) -> list[types.Diagnostic]:
    """The diagnostics published for `uri`, waiting for them; they are then forgotten, so
    that the next call waits for the next publication (after an edit)."""
    waited = 0.0
    while uri not in client.diagnostics:
        assert waited < timeout, f"no diagnostics for {uri} within {timeout} s"
        await asyncio.sleep(0.005)
        waited += 0.005
    return list(client.diagnostics.pop(uri))


# One server per test module: each test opens its own documents (and closes them).
@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[WRLC, "lsp"], server_env={**os.environ, "WRL_ERROR_PAGES": ""}),
    scope="module",
    loop_scope="module",
)
async def client(lsp_client: LanguageClient):
    if not os.path.exists(WRLC):
        sys.exit(f"no wrlc at {WRLC}: build it (editors/lsp-test.sh does)")
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=ROOT.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=ROOT.as_uri(), name="wrl")],
    )
    result = await lsp_client.initialize_session(params)
    assert result.server_info is not None and result.server_info.name == "wrlc lsp"
    yield
    await lsp_client.shutdown_session()
