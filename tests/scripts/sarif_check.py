"""Runs wrlc with `--error-format sarif` and `json` over every command on inputs with errors,
warnings, usage errors and none, and validates: every SARIF log against the official SARIF 2.1.0
JSON schema (OASIS, vendored in tests/fixtures) with `jsonschema`, formats included; every line
of every JSON stream against the stream's shape (docs/diagnostics-json.md), the summary last.
A deliberately broken log must fail validation, so the check itself is known to bite."""

import copy
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

wrlc = sys.argv[1]
schema = json.load(open("tests/fixtures/sarif-schema-2.1.0.json"))
jsonschema.Draft4Validator.check_schema(schema)
validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
# The JSON stream's own schema (docs/diagnostics-json.schema.json, version 1): every line.
line_schema = json.load(open("docs/diagnostics-json.schema.json"))
jsonschema.Draft7Validator.check_schema(line_schema)
line_validator = jsonschema.Draft7Validator(line_schema)

tmp = tempfile.mkdtemp()
unformatted = os.path.join(tmp, "unformatted.wrl")
with open(unformatted, "w") as f:
    f.write("model  m = std::models::tiny\n")
spaced = os.path.join(tmp, "a dir", "with space#1.wrl")
os.makedirs(os.path.dirname(spaced))
with open(spaced, "w") as f:
    f.write("model m = hf(\"x\") { context = 5 steps }\n")

# (arguments, exit status, whether results must carry a location)
cases = [
    (["check", "tests/ui/syntax"], 1, True),                    # many errors in many files
    (["check", "tests/ui/check"], 1, True),                     # names, types, rules, warnings
    (["check", "tests/ui/ok"], 0, False),                       # none
    (["check", spaced], 1, True),                               # a path a URI must escape
    (["check", "tests/ui/run/data/no-such-recipe.wrl"], 2, False),  # usage error: no file
    (["check", "--no-such-flag"], 2, False),                    # clap's refusal
    (["--error-format=json", "frobnicate"], 2, False),         # an unknown command
    (["plan", "recipes/quickstart.wrl", "--format", "dot"], 0, False),
    (["plan", "recipes/quickstart.wrl", "--profile", "nope"], 1, False),  # E0206: no place
    (["plan", "tests/ui/run/data/no-such-recipe.wrl"], 2, False),
    (["estimate", "recipes/quickstart.wrl"], 0, False),
    (["run", "--dry-run", "recipes/quickstart.wrl"], 0, False),
    (["run", "--dry-run", "tests/ui/run/E0500_unknown_lr.wrl"], 1, True),
    (["run", "--dry-run", "tests/ui/run/E0503_missing_file.wrl"], 1, True),
    (["fmt", "--check", "recipes/quickstart.wrl"], 0, False),
    (["fmt", "--check", unformatted], 1, False),
    (["fmt", "tests/ui/run/data/no-such-recipe.wrl"], 2, False),
    (["serve", "--addr", "0.0.0.0:1", "x"], 2, False),          # E0530: not loopback
    (["serve", "--addr", "127.0.0.1:0", tmp], 2, False),        # not a checkpoint
    (["explain", "E9999"], 2, False),
]
DIAG_KEYS = {"type", "version", "code", "severity", "message", "labels", "file", "span", "line", "column", "help"}
LABEL_KEYS = {"file", "span", "line", "column", "end_line", "end_column", "message"}


def run(fmt, args):
    argv = [wrlc, *args] if any(a.startswith("--error-format") for a in args) else [wrlc, "--error-format", fmt, *args]
    if fmt == "sarif":
        argv = [a.replace("--error-format=json", "--error-format=sarif") for a in argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


checked = 0
for args, want, located in cases:
    sarif = run("sarif", args)
    assert sarif.returncode == want, (args, sarif.returncode, sarif.stderr)
    log = json.loads(sarif.stderr)  # the whole of standard error is one log
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, f"{args}: not valid SARIF 2.1.0: {errors[0].message} at {list(errors[0].path)}"
    results = log["runs"][0]["results"]
    inv = log["runs"][0]["invocations"][0]
    assert inv["exitCode"] == want and inv["executionSuccessful"] == (want in (0, 1)), inv
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert rules == sorted(set(rules)), rules
    for r in results:
        assert rules[r["ruleIndex"]] == r["ruleId"], r

    js = run("json", args)
    assert js.returncode == want, (args, js.returncode)
    lines = []
    for raw in js.stderr.splitlines():
        assert raw.strip(), f"{args}: an empty line in the JSON stream"
        lines.append(json.loads(raw))  # every line is one JSON object
        errs = list(line_validator.iter_errors(lines[-1]))
        assert not errs, f"{args}: a line off docs/diagnostics-json.schema.json: {raw}: {errs[0].message}"
    assert lines and lines[-1]["type"] == "summary", (args, lines[-1:])
    assert sum(l["type"] == "summary" for l in lines) == 1, args
    diags = [l for l in lines if l["type"] == "diagnostic"]
    s = lines[-1]
    assert s["exit"] == want and s["version"] == 1, s
    assert s["errors"] == sum(d["severity"] == "error" for d in diags), s
    assert s["warnings"] == sum(d["severity"] == "warning" for d in diags), s
    if want == 2:
        assert s["errors"] >= 1, f"{args}: a usage error is a diagnostic, not plain text"
    for l in lines:
        assert l["version"] == 1 and l["type"] in ("diagnostic", "log", "summary"), l
        if l["type"] == "diagnostic":
            assert set(l) <= DIAG_KEYS, set(l) - DIAG_KEYS
            assert all(v is not None for v in l.values()), f"a null in {l}"
            assert l["code"][0] in "EW" and len(l["code"]) == 5 and l["code"][1:].isdigit(), l
            assert l["severity"] in ("error", "warning"), l
            assert ("file" in l) == bool(l["labels"]), l
            for lab in l["labels"]:
                assert set(lab) <= LABEL_KEYS and "file" in lab, lab
    assert [r["ruleId"] for r in results] == [d["code"] for d in diags], args
    if located:
        assert any("locations" in r for r in results), args
    checked += 1
    print(f"{' '.join(args)}: exit {want}, {len(results)} results, valid SARIF 2.1.0 and JSON stream")

# The check bites: a log with a level SARIF does not have, or without `version`, is refused.
good = json.loads(run("sarif", ["check", "tests/ui/syntax"]).stderr)
bad = copy.deepcopy(good)
bad["runs"][0]["results"][0]["level"] = "fatal"
assert not validator.is_valid(bad), "the validator accepted level `fatal`"
bad = copy.deepcopy(good)
del bad["version"]
assert not validator.is_valid(bad), "the validator accepted a log without `version`"
bad = copy.deepcopy(good)
bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
assert not validator.is_valid(bad), "the validator accepted line 0"
# The stream's schema bites too: `file: null`, a bad code and a summary without `exit` are refused.
for bad in [
    {"type": "diagnostic", "version": 1, "code": "E0531", "severity": "error", "message": "x", "labels": [], "file": None},
    {"type": "diagnostic", "version": 1, "code": "X1", "severity": "error", "message": "x", "labels": []},
    {"type": "summary", "version": 1, "command": "check", "errors": 0, "warnings": 0},
]:
    assert not line_validator.is_valid(bad), bad
print(f"sarif-check: {checked} command lines valid; 3 broken logs and 3 broken lines refused")
