"""Runs wrlc with `--error-format sarif` and `json` on inputs with errors, warnings, usage errors
and none, and validates: every SARIF log against the SARIF 2.1.0 schema, every JSON line against
the stream's schema (docs/diagnostics-json.md)."""

import json
import subprocess
import sys

import jsonschema

wrlc = sys.argv[1]
schema = json.load(open("tests/fixtures/sarif-2.1.0-rtm.5.json"))
validator = jsonschema.Draft4Validator(schema)

cases = [
    (["check", "tests/ui/syntax"], 1),            # many errors in many files
    (["check", "tests/ui/ok"], 0),                 # none
    (["check", "tests/ui/run/data/no-such-recipe.wrl"], 2),   # a usage error: no file
    (["check", "--no-such-flag"], 2),                          # clap's refusal
    (["serve", "--addr", "0.0.0.0:1", "x"], 2),                # E0530
    (["run", "--dry-run", "tests/ui/run/E0503_missing_file.wrl"], 1),
]
DIAG_KEYS = {"type", "version", "code", "severity", "message", "labels", "file", "span", "line", "column", "help"}
checked = 0
for args, want in cases:
    sarif = subprocess.run([wrlc, "--error-format", "sarif", *args], capture_output=True, text=True)
    assert sarif.returncode == want, (args, sarif.returncode, sarif.stderr)
    log = json.loads(sarif.stderr)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, f"{args}: not valid SARIF 2.1.0: {errors[0].message} at {list(errors[0].path)}"
    results = log["runs"][0]["results"]
    js = subprocess.run([wrlc, "--error-format", "json", *args], capture_output=True, text=True)
    assert js.returncode == want
    lines = [json.loads(l) for l in js.stderr.splitlines() if l.strip()]
    diags = [l for l in lines if l["type"] == "diagnostic"]
    assert lines[-1]["type"] == "summary" and lines[-1]["exit"] == want, lines[-1]
    assert lines[-1]["errors"] == sum(d["severity"] == "error" for d in diags)
    for l in lines:
        assert l["version"] == 1 and l["type"] in ("diagnostic", "log", "summary"), l
        if l["type"] == "diagnostic":
            assert set(l) <= DIAG_KEYS, set(l) - DIAG_KEYS
            assert l.get("file", "") is not None, "no `file: null`"
            assert l["code"][0] in "EW" and len(l["code"]) == 5, l
    assert len(results) == len(diags), (args, len(results), len(diags))
    assert [r["ruleId"] for r in results] == [d["code"] for d in diags]
    if want == 1:
        assert any("locations" in r for r in results), args
    checked += 1
    print(f"{' '.join(args)}: exit {want}, {len(results)} results, valid SARIF 2.1.0 and JSON stream")
print(f"sarif-check: {checked} command lines")
