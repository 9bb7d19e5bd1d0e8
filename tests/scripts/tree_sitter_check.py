"""Holds the tree-sitter grammar (editors/tree-sitter-wrl) to the real parser (pest, in
compiler/syntax) through py-tree-sitter: every file pest rejects (tests/ui/syntax) gets an ERROR
or MISSING node, every other .wrl file of the repository parses without one, and every query
compiles against the grammar.

Usage: tree_sitter_check.py LIBRARY [WRLC]
  LIBRARY  the grammar compiled from editors/tree-sitter-wrl/src (parser.c + scanner.c)
  WRLC     optional: a built wrlc; then pest's own verdict (`wrlc fmt --check --error-format
           json`, which parses and reports syntax errors only) decides which files are broken,
           and the script checks that it is exactly tests/ui/syntax.
"""

import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import tree_sitter

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GRAMMAR = os.path.join(ROOT, "editors", "tree-sitter-wrl")
BROKEN_DIR = "tests/ui/syntax/"

# Files pest rejects that a tree-sitter grammar does not, each with why. A listed file that
# tree-sitter rejects after all fails the check, so that the list only shrinks.
EXPECTED_EXCEPTIONS = {
    # Limits of the compiler's lexical pre-pass (compiler/syntax/src/lex.rs), there so that its
    # recursive parser and later phases cannot overflow their stacks: brackets nested more than
    # MAX_NESTING = 64 deep, more than MAX_PREFIX_RUN = 32 prefix operators in a row, more than
    # MAX_IFS_PER_ITEM = 64 `if`s in one top-level item. A context-free grammar could only count
    # to 64 by unrolling the expression rules 64 times (each level a copy of every rule), and
    # tree-sitter's external scanner sees only the tokens it is asked for, not every bracket,
    # `-`, `not` and `if`; tree-sitter's parser has no such stack to protect. The language has
    # no depth limit of its own: these are resource limits, not syntax.
    "tests/ui/syntax/E0104_nested_brackets.wrl": "nesting limit (64) of the pre-pass",
    "tests/ui/syntax/E0104_prefix_run.wrl": "prefix-operator run limit (32) of the pre-pass",
    "tests/ui/syntax/E0104_too_many_ifs.wrl": "`if` count limit (64 per item) of the pre-pass",
}


def load_language(library):
    lib = ctypes.cdll.LoadLibrary(library)
    lib.tree_sitter_wrl.restype = ctypes.c_void_p
    # A PyCapsule named "tree_sitter.Language", as the packaged grammars hand it over.
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return tree_sitter.Language(new_capsule(lib.tree_sitter_wrl(), b"tree_sitter.Language", None))


def problems(node, out):
    """ERROR and MISSING nodes under `node`, as (line, column, what)."""
    if node.is_error or node.is_missing:
        what = "ERROR" if node.is_error else f"MISSING {node.type}"
        out.append((node.start_point[0] + 1, node.start_point[1] + 1, what))
    if node.has_error:
        for child in node.children:
            problems(child, out)
    return out


def wrl_files():
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.wrl"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in listed.split("\0") if p)


def pest_rejects(wrlc, path):
    """Whether pest (wrlc fmt --check, which only parses) reports a syntax error in `path`."""
    out = subprocess.run(
        [wrlc, "--error-format", "json", "fmt", "--check", path],
        cwd=ROOT, capture_output=True, text=True,
    )
    codes = set()
    out = out.stdout + out.stderr  # diagnostics go to stderr
    for line in out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("code", "").startswith("E01"):
                codes.add(d["code"])
    return sorted(codes)


CORPUS_TEST = re.compile(
    r"^(={3,})\n(?P<name>[^\n]+)\n(?P<attrs>(?::[^\n]*\n)*)\1\n(?P<input>.*?)\n-{3,}\n",
    re.S | re.M,
)


def corpus_cases():
    """The tree-sitter corpus (test/corpus/*.txt): (where, name, input, whether `:error`)."""
    d = os.path.join(GRAMMAR, "test", "corpus")
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), encoding="utf-8") as fh:
            text = fh.read()
        for m in CORPUS_TEST.finditer(text):
            attrs = m.group("attrs").split()
            yield f"test/corpus/{name}", m.group("name"), m.group("input"), ":error" in attrs


def quoted_words(text, start):
    """The quoted words of the first bracketed list after `start` in `text`."""
    i = text.index(start)
    open_ = min(j for j in (text.find("[", i + len(start)), text.find("{", i + len(start))) if j >= 0)
    close = min(j for j in (text.find("]", open_), text.find("}", open_)) if j >= 0)
    return sorted(re.findall(r"['\"]([^'\"]+)['\"]", text[open_:close]))


def main(library, wrlc=None):
    lang = load_language(library)
    parser = tree_sitter.Parser(lang)
    files = wrl_files()
    broken = [f for f in files if f.startswith(BROKEN_DIR)]
    valid = [f for f in files if not f.startswith(BROKEN_DIR)]
    failures = {}  # what was checked -> what went wrong

    def fail(key, msg):
        failures.setdefault(key, []).append(msg)

    # The scanner's reserved words (never a unit) are grammar.js's KEYWORDS, which
    # compiler/fmt/tests/editor_sync.rs holds to tokens.rs.
    with open(os.path.join(GRAMMAR, "grammar.js"), encoding="utf-8") as fh:
        keywords = quoted_words(fh.read(), "const KEYWORDS")
    with open(os.path.join(GRAMMAR, "src", "scanner.c"), encoding="utf-8") as fh:
        reserved = quoted_words(fh.read(), "RESERVED[]")
    if reserved != keywords:
        fail("scanner.c RESERVED", f"src/scanner.c RESERVED {reserved} != grammar.js KEYWORDS {keywords}")

    if wrlc:
        by_pest = [f for f in files if pest_rejects(wrlc, f)]
        if by_pest != broken:
            fail("pest's verdict",
                "pest's broken files are not tests/ui/syntax: only pest "
                f"{sorted(set(by_pest) - set(broken))}, only the directory "
                f"{sorted(set(broken) - set(by_pest))}"
            )
        print(f"pest (wrlc fmt --check) rejects {len(by_pest)} of {len(files)} files")

    for f in sorted(EXPECTED_EXCEPTIONS):
        if f not in broken:
            fail(f, f"expected exception {f} is not a broken file any more")

    rejected = 0
    for f in broken:
        with open(os.path.join(ROOT, f), "rb") as fh:
            found = problems(parser.parse(fh.read()).root_node, [])
        if f in EXPECTED_EXCEPTIONS:
            if found:
                fail(f, f"{f} is rejected now: remove it from EXPECTED_EXCEPTIONS")
            continue
        if found:
            rejected += 1
            line, col, what = found[0]
            print(f"rejected  {f}  ({what} at {line}:{col})")
        else:
            fail(f, f"{f}: pest rejects it, tree-sitter parses it without ERROR/MISSING")
    print(f"{rejected} of {len(broken)} broken files rejected by tree-sitter, "
          f"{len(EXPECTED_EXCEPTIONS)} listed exceptions")

    for f in valid:
        with open(os.path.join(ROOT, f), "rb") as fh:
            found = problems(parser.parse(fh.read()).root_node, [])
        for line, col, what in found[:3]:
            fail(f, f"{f}:{line}:{col}: {what} in a file pest accepts")
    print(f"{len(valid)} valid files parsed by tree-sitter")

    # The corpus: cases marked `:error` must have an ERROR or MISSING node, the others none;
    # with wrlc, pest must agree on each case, so that the corpus is a check of both.
    cases = list(corpus_cases())
    with tempfile.TemporaryDirectory() as tmp:
        for i, (where, name, text, error) in enumerate(cases):
            found = bool(problems(parser.parse(text.encode()).root_node, []))
            if found != error:
                fail((where, name), f"{where}: {name!r}: tree-sitter "
                                f"{'rejects' if found else 'accepts'} it")
            if wrlc:
                path = os.path.join(tmp, f"case{i}.wrl")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")
                if bool(pest_rejects(wrlc, path)) != error:
                    fail((where, name), f"{where}: {name!r}: pest "
                                    f"{'accepts' if error else 'rejects'} it")
    print(f"{len(cases)} corpus cases ({sum(c[3] for c in cases)} `:error`) checked"
          + (" with pest" if wrlc else ""))

    queries = sorted(
        os.path.join(d, q)
        for d in (os.path.join(GRAMMAR, "queries"), os.path.join(GRAMMAR, "queries", "helix"))
        for q in os.listdir(d) if q.endswith(".scm")
    )
    sample = os.path.join(ROOT, "recipes", "openwebrl.wrl")
    with open(sample, "rb") as fh:
        tree = parser.parse(fh.read())
    for q in queries:
        name = os.path.relpath(q, GRAMMAR)
        try:
            with open(q, encoding="utf-8") as fh:
                query = tree_sitter.Query(lang, fh.read())
        except Exception as e:  # py-tree-sitter's QueryError and its subclasses
            fail(q, f"{name} does not compile: {e}")
            continue
        captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
        if not captures:
            fail(q, f"{name} captures nothing in recipes/openwebrl.wrl")
        print(f"query {name}: {sum(len(v) for v in captures.values())} captures "
              f"({len(captures)} names) in recipes/openwebrl.wrl")

    for msgs in failures.values():
        for m in msgs:
            print("FAIL", m)
    # One check per file, corpus case and query (and pest's verdict on the files).
    checks = 1 + len(broken) + len(valid) + len(cases) + len(queries) + (1 if wrlc else 0)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
