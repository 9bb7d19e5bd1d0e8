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
import random
import subprocess
import sys
import tempfile

import tree_sitter

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GRAMMAR = os.path.join(ROOT, "editors", "tree-sitter-wrl")
BROKEN_DIR = "tests/ui/syntax/"
GENERATED = 1500  # generated cases compared with pest
INCREMENTAL_EDITS = 400  # edits per text reparsed incrementally

# Files pest rejects that a tree-sitter grammar does not, each with why. A listed file that
# tree-sitter rejects after all fails the check, so that the list only shrinks.
EXPECTED_EXCEPTIONS = {
    # None: the three limits of lex.rs (E0104: bracket depth, prefix-operator runs, `if`s per
    # item) are counted by the external scanner as lex.rs counts them.
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
    """ERROR and MISSING nodes under `node`, as (line, column, what); `has_error` says whether
    there is one. A MISSING hidden token (`- }` misses the number's regular expression) is not
    among the children: then the innermost node with the error stands for it."""
    if node.is_error or node.is_missing:
        what = "ERROR" if node.is_error else f"MISSING {node.type}"
        out.append((node.start_point[0] + 1, node.start_point[1] + 1, what))
    elif node.has_error:
        before = len(out)
        for child in node.children:
            problems(child, out)
        if len(out) == before:
            out.append((node.end_point[0] + 1, node.end_point[1] + 1, f"MISSING token in {node.type}"))
    return out


def wrl_files():
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.wrl"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in listed.split("\0") if p)


def pest_rejects(wrlc, paths):
    """The files of `paths` in which pest (`wrlc fmt --check`, which only parses) reports a
    syntax error (a code E01xx), one wrlc run for all."""
    out = subprocess.run(
        [wrlc, "--error-format", "json", "fmt", "--check", *paths],
        cwd=ROOT, capture_output=True, text=True,
    )
    rejected = set()
    for line in (out.stdout + out.stderr).splitlines():  # diagnostics go to stderr
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("code", "").startswith("E01") and d.get("file"):
                rejected.add(os.path.normpath(os.path.join(ROOT, d["file"])))
    return {p for p in paths if os.path.normpath(os.path.join(ROOT, p)) in rejected}


# Generated cases, each parsed by tree-sitter and by pest: both must accept or both reject.
# Seeded, so the same cases every run; half are mutated by a token put in, dropped or changed.
ATOMS = ["a", "b.c", "f(x)", "f(x, n: 1)", "1", "2.5", "1e3", "32k", "10 s", "3 steps",
         "1280 x 1000", '"s"', '"\\n"', "true", "unknown", "[1, 2]", "(a)", "{ x = 1 }",
         "g { y = 2 }", "std::m", "10%", "10MB"]
OPERATORS = ["+", "-", "*", "/", "==", "<", ">=", "and", "or", ".."]
PREFIXES = ["-", "not ", "- ", "not not "]
NOISE = ["", ",", "x", "3", "k", "tokens", "if", "not", "-", "->", ":", "=", "(", ")", "{", "}",
         '"\\q"', '"\\u{D7FF}"', '"\\u{DFFF}"', "1e309", "9007199254740993", "0x1", "1_", "1__0",
         "1e-999", "2.4703282292062328e-324", "2.47032822920623272e-324",
         "3.", ".5", "x1", "e5", "1e", "2Ki", "2KiB", "2 Ki", "Ki", "when", "module", "tool"]

# Inputs on which tree-sitter and pest knowingly disagree, with why; each is checked to still
# disagree (pest accepts, tree-sitter rejects), so that a fix shows.
KNOWN_DIFFERENCES = {
    # pest's `flag` is any non-reserved word; after an edge pest commits to the edge's limit
    # (`a -> b limit x`: PEG's ordered choice does not come back), so reading `limit` as a
    # flag here too would let `a -> b limit x = 3` parse (as an edge, a flag and a field),
    # which pest refuses. The word is a keyword in blocks, and a field name (`limit = 3`).
    "param p = { limit }\n": "`limit` as a flag",
}


def generated_cases(n, seed=7):
    """`n` generated sources."""
    rng = random.Random(seed)

    def expr(d):
        r = rng.random()
        if d <= 0 or r < 0.3:
            return rng.choice(ATOMS)
        if r < 0.45:
            return rng.choice(PREFIXES) + expr(d - 1)
        if r < 0.55:
            return f"if {expr(d - 1)} then {expr(d - 1)} else {expr(d - 1)}"
        if r < 0.6:
            return f"({expr(d - 1)})"
        return f"{expr(d - 1)} {rng.choice(OPERATORS)} {expr(d - 1)}"

    def block(d):
        items = []
        for _ in range(rng.randint(1, 3)):
            k = rng.random()
            if k < 0.6:
                items.append(f"{rng.choice(['x', 'y', 'lr', 'frozen'])} = {expr(d)}")
            elif k < 0.8:
                items.append(rng.choice(["frozen", "trainable"]))
            else:
                items.append(f"a.b = {expr(d)}")
        return "{ " + rng.choice([", ", " ", "\n  "]).join(items) + " }"

    for _ in range(n):
        k = rng.random()
        if k < 0.35:
            src = f"param p = {expr(3)}\n"
        elif k < 0.6:
            src = f"stage s = sft(a) {block(2)}\n"
        elif k < 0.7:
            src = rng.choice(["use std::a::b\n", "use std::r::{a, b,}\n", 'use "x.wrl" as c\n',
                              'extends "b.wrl" { lr = 1 }\n', "profile smoke { a.b[1].c = 2 }\n"])
        elif k < 0.8:
            src = ("agent g = graph { module p = llm(m) { emits = [a] }\n"
                   f"  p -> q when a | b limit {expr(1)}\n  q -> r }}\n")
        elif k < 0.9:
            src = (f"builtin f(init: model, n: int(min: 1) = {expr(1)}) -> stage "
                   "{ lr: float = 1e-5, x: int }\n")
        else:
            src = ("tools t = toolset { tool click(p: point, n: int = 1) { terminal }\n"
                   '  tool type(text: string) }\n/// doc\nparam q = "a\\tb" // c\n')
        if rng.random() < 0.5:
            toks = src.split(" ")
            j = rng.randrange(len(toks))
            m = rng.random()
            if m < 0.4:
                toks.insert(j, rng.choice(NOISE))
            elif m < 0.7:
                del toks[j]
            else:
                toks[j] = rng.choice(NOISE)
            src = " ".join(toks).rstrip("\n") + "\n"
        yield src


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


def point(text, pos):
    """The (row, column) of byte `pos` in `text`, as tree-sitter counts them."""
    return (text.count(b"\n", 0, pos), pos - text.rfind(b"\n", 0, pos) - 1)


def incremental_differences(parser, text, edits, seed=3):
    """Edits `text` as someone typing would (a character, a bracket, an `if`, a new item put
    in, a few bytes taken out; back to `text` every 8 edits), reparsing each time with the old
    tree, as editors do; the scanner keeps the bracket depth and the `if` count in its state,
    restored per token on such reparses.
    The differences from a fresh parse: a different verdict, or a different tree where the
    fresh one has no error (error recovery may take another way)."""
    rng = random.Random(seed)
    out = []
    current, tree = text, parser.parse(text)
    for i in range(edits):
        if i % 8 == 0:
            current, tree = text, parser.parse(text)
        pos = rng.randrange(len(current) + 1)
        if rng.random() < 0.4 and pos < len(current):
            end, new = min(len(current), pos + rng.randint(1, 3)), b""
        else:
            end, new = pos, rng.choice([b"(", b")", b"[", b"]", b"{", b"}", b"-", b"not ", b"x",
                                        b"3 ", b'"', b"\n", b" k", b"[[[[", b"]]]]",
                                        b"if x then 1 else ", b"\nparam z = "])
        edited = current[:pos] + new + current[end:]
        tree.edit(start_byte=pos, old_end_byte=end, new_end_byte=pos + len(new),
                  start_point=point(current, pos), old_end_point=point(current, end),
                  new_end_point=point(edited, pos + len(new)))
        tree, fresh = parser.parse(edited, tree), parser.parse(edited)
        if tree.root_node.has_error != fresh.root_node.has_error or (
                not fresh.root_node.has_error and str(tree.root_node) != str(fresh.root_node)):
            out.append(edited)
        current = edited
    return out


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
    # compiler/fmt/tests/all/editor_sync.rs holds to tokens.rs.
    with open(os.path.join(GRAMMAR, "grammar.js"), encoding="utf-8") as fh:
        keywords = quoted_words(fh.read(), "const KEYWORDS")
    with open(os.path.join(GRAMMAR, "src", "scanner.c"), encoding="utf-8") as fh:
        reserved = quoted_words(fh.read(), "RESERVED[]")
    if reserved != keywords:
        fail("scanner.c RESERVED", f"src/scanner.c RESERVED {reserved} != grammar.js KEYWORDS {keywords}")

    if wrlc:
        by_pest = sorted(pest_rejects(wrlc, files))
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
        paths = []
        for i, (where, name, text, error) in enumerate(cases):
            if parser.parse(text.encode()).root_node.has_error != error:
                fail((where, name), f"{where}: {name!r}: tree-sitter "
                                    f"{'accepts' if error else 'rejects'} it")
            paths.append(os.path.join(tmp, f"case{i}.wrl"))
            with open(paths[-1], "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        if wrlc:
            by_pest = pest_rejects(wrlc, paths)
            for path, (where, name, _, error) in zip(paths, cases):
                if (path in by_pest) != error:
                    fail((where, name), f"{where}: {name!r}: pest "
                                        f"{'accepts' if error else 'rejects'} it")
    print(f"{len(cases)} corpus cases ({sum(c[3] for c in cases)} `:error`) checked"
          + (" with pest" if wrlc else ""))

    # Generated cases: tree-sitter's verdict must be pest's.
    generated = []
    if wrlc:
        with tempfile.TemporaryDirectory() as tmp:
            texts = list(generated_cases(GENERATED))
            paths = []
            for i, text in enumerate(texts):
                paths.append(os.path.join(tmp, f"gen{i}.wrl"))
                with open(paths[-1], "w", encoding="utf-8") as fh:
                    fh.write(text)
            by_pest = pest_rejects(wrlc, paths)
            for i, (path, text) in enumerate(zip(paths, texts)):
                ts = parser.parse(text.encode()).root_node.has_error
                if ts != (path in by_pest):
                    fail(("generated", i), f"generated case {i}: tree-sitter "
                                           f"{'rejects' if ts else 'accepts'}, pest does not: {text!r}")
            generated = texts
            # The known differences: pest accepts each, tree-sitter rejects it.
            known = []
            for i, text in enumerate(KNOWN_DIFFERENCES):
                known.append(os.path.join(tmp, f"known{i}.wrl"))
                with open(known[-1], "w", encoding="utf-8") as fh:
                    fh.write(text)
            by_pest_known = pest_rejects(wrlc, known)
            for path, (text, why) in zip(known, KNOWN_DIFFERENCES.items()):
                ts = parser.parse(text.encode()).root_node.has_error
                if path in by_pest_known or not ts:
                    fail(("known", text), f"known difference {why} ({text!r}) is gone: "
                                          "remove it from KNOWN_DIFFERENCES")
            print(f"{len(texts)} generated cases, {len(by_pest)} rejected by pest: "
                  "tree-sitter's verdicts compared")

    # Reparsing after edits gives what parsing afresh gives.
    edits = 0
    for name, text in [
        ("recipes/openwebrl.wrl", open(os.path.join(ROOT, "recipes", "openwebrl.wrl"), "rb").read()),
        ("brackets 61 deep", b"param a = " + b"[" * 61 + b"1" + b"]" * 61 + b"\nparam b = [[(1)]]\n"
         + b"param c = " + b"{ x = " * 20 + b"1" + b" }" * 20 + b"\n"),
        ("62 ifs in each of two items", (b"reward r = " + b"if c then 1 else " * 62 + b"0\n") * 2),
    ]:
        for edited in incremental_differences(parser, text, INCREMENTAL_EDITS):
            fail(("incremental", name), f"{name}: an incremental reparse differs from a fresh "
                                        f"parse of {edited[:200]!r}…")
        edits += INCREMENTAL_EDITS
    print(f"{edits} edits reparsed incrementally: verdicts (and trees without errors) as fresh")

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
    checks = (3 + len(broken) + len(valid) + len(cases) + len(generated) + len(queries)
              + (1 + len(KNOWN_DIFFERENCES) if wrlc else 0))
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
