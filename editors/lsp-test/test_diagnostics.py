"""Diagnostics over LSP are `wrlc check`'s: for every shipped recipe and every UI case, the
server publishes the same codes at the same places with the same messages, help and labels as
`wrlc check --error-format json` prints, each linked to its error page."""

import json
import pathlib
import subprocess
from urllib.parse import unquote, urlparse

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import ROOT, WRLC, close, diagnostics, open_file


def cases() -> list[str]:
    out = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "recipes").glob("*.wrl"))
    for phase in ["syntax", "check", "plan", "ok"]:
        for p in sorted((ROOT / "tests" / "ui" / phase).glob("*.wrl")):
            # Cases checked with `--profile` (their first line says so) are `wrlc check`'s alone.
            if not p.read_bytes().startswith(b"// wrlc:"):
                out.append(str(p.relative_to(ROOT)))
    return out


def wrlc_check(rel: str) -> list[dict]:
    run = subprocess.run([WRLC, "check", "--error-format", "json", rel], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    # The JSON stream (docs/diagnostics-json.md): diagnostic objects, then one summary.
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    return [d for d in lines if d.get("type") == "diagnostic"]


def as_cli(rel: str, d: types.Diagnostic) -> dict:
    """An LSP diagnostic in the terms of `wrlc check`'s JSON: code, line, column, message, help."""
    message, _, help_ = d.message.partition("\nhelp: ")
    return {
        "code": d.code,
        "severity": "error" if d.severity == types.DiagnosticSeverity.Error else "warning",
        "line": d.range.start.line + 1,
        "column": d.range.start.character + 1,
        "message": message,
        "help": help_ or None,
    }


@pytest.mark.parametrize("rel", cases())
async def test_same_diagnostics_as_wrlc_check(client: LanguageClient, rel: str):
    uri, _ = open_file(client, rel)
    got = await diagnostics(client, uri)
    want = wrlc_check(rel)
    assert len(got) == len(want), f"{rel}: {[d.code for d in got]} vs {[w['code'] for w in want]}"
    for d, w in zip(got, want):
        mine = as_cli(rel, d)
        if w["file"] == rel:
            # `help` is left out of the stream when there is none (schema v1).
            expect = {k: w.get(k) for k in ["code", "severity", "line", "column", "message", "help"]}
            assert mine == expect, rel
        else:
            # Its place is in an imported file: shown on the import, saying which file.
            assert mine["code"] == w["code"]
            assert mine["message"] == f"in `{w['file']}`: {w['message']}", rel
        # Every label is there, in its file, with its text.
        related = [(unquote(urlparse(r.location.uri).path), r.location.range.start.line + 1, r.message) for r in d.related_information or []]
        labels = [(str((ROOT / l["file"]).resolve()) if not l["file"].startswith("std/") else "/" + l["file"], l["line"], l["message"]) for l in w["labels"] if l["message"]]
        assert related == labels, rel
        # The link leads to the code's page.
        assert d.code_description is not None
        page = pathlib.Path(unquote(urlparse(d.code_description.href).path))
        assert page.name == f"{d.code}.md" and page.is_file(), d.code_description.href
    close(client, uri)
