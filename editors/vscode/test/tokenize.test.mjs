// Tokenises .wrl files with the real VS Code TextMate engine (vscode-textmate + vscode-oniguruma)
// and asserts the scopes of keywords, declaration names, units, numbers, strings and comments:
// exact expectations on fixture.wrl, and consistency rules over every recipe and stdlib file.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
await oniguruma.loadWASM(wasm);
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (s) => new oniguruma.OnigScanner(s),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async () => vsctm.parseRawGrammar(
    fs.readFileSync(path.join(here, '../syntaxes/wrl.tmLanguage.json'), 'utf8'), 'wrl.tmLanguage.json'),
});
const grammar = await registry.loadGrammar('source.wrl');

// The word lists, read from the one place they are defined.
const tokensRs = fs.readFileSync(path.join(root, 'compiler/syntax/src/tokens.rs'), 'utf8');
const list = (name) => {
  const m = tokensRs.match(new RegExp(`pub const ${name}: &\\[&str\\] =\\s*&\\[([^\\]]*)\\]`));
  if (!m) throw new Error(`${name} not found in tokens.rs`);
  return [...m[1].matchAll(/"([^"]*)"/g)].map((x) => x[1]);
};
const KEYWORDS = list('KEYWORDS');
const UNITS = [...tokensRs.matchAll(/u\("([^"]+)", Dimension::/g)].map((x) => x[1]);
if (KEYWORDS.length < 5 || UNITS.length < 10) throw new Error('could not read tokens.rs');

function tokenize(text) {
  let state = vsctm.INITIAL;
  const out = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const r = grammar.tokenizeLine(line, state);
    for (const t of r.tokens) {
      out.push({ line: i + 1, text: line.slice(t.startIndex, t.endIndex), start: t.startIndex, scopes: t.scopes });
    }
    state = r.ruleStack;
  });
  return out;
}

let failures = 0;
const fail = (msg) => { failures++; console.error('FAIL ' + msg); };
const has = (t, scope) => t.scopes.some((s) => s.startsWith(scope));
const show = (t) => `${t.line}:${t.start} ${JSON.stringify(t.text)} [${t.scopes.slice(1).join(' ')}]`;

// 1. Exact expectations on the fixture: [line, text, scope prefix].
const fixture = tokenize(fs.readFileSync(path.join(here, 'fixture.wrl'), 'utf8'));
const expect = [
  [1, 'use', 'keyword.control.import'], [1, 'std::tools::browser', 'support.module.std'],
  [2, 'as', 'keyword.control.import.as'], [2, 'common.wrl', 'string.quoted.double'],
  [3, '///', 'comment.line.documentation'], [3, ' The policy.', 'comment.line.documentation'],
  [4, 'model', 'storage.type.declaration'], [4, 'policy', 'entity.name.function.declaration'],
  [4, 'hf', 'entity.name.function.call'], [4, '\\n', 'constant.character.escape'],
  [5, 'context', 'variable.other.property'], [5, '32', 'constant.numeric'], [5, 'Ki', 'constant.numeric.magnitude'],
  [5, 'tokens', 'keyword.other.unit'], [5, '//', 'comment.line.double-slash'],
  [8, '1280', 'constant.numeric'], [8, 'x', 'keyword.operator.dims'], [8, '1000', 'constant.numeric'],
  [8, 's', 'keyword.other.unit'], [8, 'MB', 'keyword.other.unit'], [8, 'M', 'constant.numeric.magnitude'], [8, 'min', 'keyword.other.unit'], [8, '%', 'keyword.other.unit'],
  [9, 'reward', 'storage.type.declaration'], [9, 'outcome', 'entity.name.function.declaration'],
  [9, 'if', 'keyword.control'], [9, 'then', 'keyword.control'], [9, 'else', 'keyword.control'],
  [9, 'model', 'variable.parameter'], [9, '*', 'keyword.operator.arithmetic'],
  [10, '1e-6', 'constant.numeric'], [10, '..', 'keyword.operator.range'], [10, '0.28', 'constant.numeric'],
  [10, 'true', 'constant.language'], [10, 'and', 'keyword.operator.logical'], [10, 'not', 'keyword.operator.logical'],
  [10, 'unknown', 'constant.language'],
  [12, 'module', 'storage.type.module'], [12, 'planner', 'entity.name.function.module'],
  [13, '->', 'keyword.operator.arrow'], [13, 'when', 'keyword.control'], [13, '|', 'keyword.operator.guard'],
  [13, 'limit', 'keyword.control.limit'], [13, '3', 'constant.numeric'],
  [15, 'tool', 'storage.type.tool'], [15, 'done', 'entity.name.function.tool'],
  [16, 'profile', 'keyword.other.profile'], [16, 'smoke', 'entity.name.section.profile'],
  [16, 'std::models::tiny', 'support.module.std'],
  [17, 'extends', 'keyword.other.extends'],
  [18, 'builtin', 'storage.type.builtin'], [18, 'grpo', 'entity.name.function.builtin'],
  [20, '  not // a comment, not a "string"', 'string.quoted.triple'],
];
for (const [line, text, scope] of expect) {
  const t = fixture.find((x) => x.line === line && x.text === text);
  if (!t) fail(`fixture line ${line}: no token ${JSON.stringify(text)}: ${fixture.filter((x) => x.line === line).map(show).join(', ')}`);
  else if (!has(t, scope)) fail(`fixture: expected ${scope}: ${show(t)}`);
}

// 2. Rules over every recipe, stdlib file and sample.
function wrlFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? wrlFiles(p) : e.name.endsWith('.wrl') ? [p] : [];
  });
}
const files = [
  ...wrlFiles(path.join(root, 'recipes')), ...wrlFiles(path.join(root, 'stdlib')),
  ...wrlFiles(path.join(root, 'compiler/fmt/tests')), path.join(here, 'fixture.wrl'),
];
const NUMBER = /^\d(?:_?\d)*(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
let checked = 0;
for (const file of files) {
  const rel = path.relative(root, file);
  const toks = tokenize(fs.readFileSync(file, 'utf8'));
  toks.forEach((t, i) => {
    const inText = has(t, 'string') || has(t, 'comment');
    if (inText) {
      checked++;
      return;
    }
    const word = t.text.trim();
    if (t.text.includes('//')) fail(`${rel}: comment not scoped: ${show(t)}`);
    if (t.text.includes('"')) fail(`${rel}: string not scoped: ${show(t)}`);
    if (KEYWORDS.includes(word) && !has(t, 'keyword') && !has(t, 'constant.language') && !has(t, 'variable.other.property'))
      fail(`${rel}: keyword not scoped: ${show(t)}`);
    if (NUMBER.test(word) && !has(t, 'constant.numeric')) fail(`${rel}: number not scoped: ${show(t)}`);
    // A unit word right after a number on the same line is a unit.
    const prev = toks[i - 1];
    const prevNum = prev && prev.line === t.line && has(prev, 'constant.numeric') && /^\s*$/.test(toks[i]?.text ?? '');
    if (UNITS.includes(word) && prev && prev.line === t.line && has(prev, 'constant.numeric') && !has(t, 'keyword.other.unit'))
      fail(`${rel}: unit not scoped: ${show(t)}`);
    if (UNITS.includes(word) && has(t, 'keyword.other.unit') && !(prev && has(prev, 'constant.numeric')) && !prevNum) {
      const before = toks.slice(Math.max(0, i - 2), i);
      if (!before.some((b) => has(b, 'constant.numeric'))) fail(`${rel}: unit without a number: ${show(t)}`);
    }
    if (word && !/^[\s,{}()\[\]:.]*$/.test(word) && t.scopes.length < 2) fail(`${rel}: unclassified: ${show(t)}`);
    checked++;
  });
}
console.log(`${files.length} files, ${checked} tokens, ${expect.length} fixture expectations, ${failures} failures`);
process.exit(failures ? 1 : 0);
