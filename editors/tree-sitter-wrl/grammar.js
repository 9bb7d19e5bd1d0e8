/**
 * @file Tree-sitter grammar for .wrl, the wrl recipe language.
 *
 * It mirrors compiler/syntax/src/wrl.pest (the reference); the word lists below are checked
 * against compiler/syntax/src/tokens.rs by compiler/fmt/tests/editor_sync.rs (`WRL_BLESS=1`
 * rewrites them). Units, number magnitudes and the `x` of `1280 x 1000` are found by the
 * external scanner (src/scanner.c) because they must sit on the same line as their number,
 * which a context-free lexer cannot see.
 */

/* eslint-disable no-undef */

// Reserved words: never names.
const KEYWORDS = ['and', 'else', 'false', 'if', 'not', 'or', 'then', 'true', 'unknown', 'use', 'when'];
// Keywords only where the grammar expects them.
const CONTEXTUAL_KEYWORDS = ['as', 'builtin', 'extends', 'limit', 'module', 'profile', 'tool'];
// The kind words of declarations.
const DECL_KINDS = ['model', 'dataset', 'env', 'tools', 'agent', 'reward', 'stage', 'eval', 'param'];

// Pratt levels of compiler/syntax/src/parser/expr.rs, lowest first.
const PREC = {
  if: 0, range: 1, or: 2, and: 3, not: 4, compare: 5, add: 6, mul: 7, neg: 8, postfix: 9,
};

const BINARY = [
  ['..', PREC.range], ['or', PREC.or], ['and', PREC.and],
  ['==', PREC.compare], ['!=', PREC.compare], ['<=', PREC.compare], ['>=', PREC.compare],
  ['<', PREC.compare], ['>', PREC.compare],
  ['+', PREC.add], ['-', PREC.add], ['*', PREC.mul], ['/', PREC.mul],
];

const commaSep = (rule) => optional(seq(rule, repeat(seq(',', rule)), optional(',')));

module.exports = grammar({
  name: 'wrl',

  word: ($) => $.identifier,

  extras: ($) => [/[\s\uFEFF]/, $.comment, $.doc_comment],

  externals: ($) => [$.magnitude, $.unit, $._dims_x, $._error_sentinel],

  rules: {
    source_file: ($) => repeat($._item),

    // `///` documents the item below; `////…` is an ordinary comment.
    doc_comment: (_) => token(/\/\/\/([^\/\n][^\n]*)?/),
    comment: (_) => token(choice(/\/\/([^\/\n][^\n]*)?/, /\/\/\/\/[^\n]*/)),

    identifier: (_) => /[A-Za-z_][A-Za-z0-9_]*/,

    // ───────────── items ─────────────

    _item: ($) => choice($.use_item, $.extends_item, $.profile_item, $.builtin_item, $.declaration),

    use_item: ($) => seq('use', choice(
      seq(field('file', $.string), optional(seq('as', field('alias', $.identifier)))),
      $.use_path,
    )),
    use_path: ($) => seq(
      $.identifier,
      repeat(seq('::', $.identifier)),
      optional(seq('::', $.use_group)),
    ),
    use_group: ($) => seq('{', $.identifier, repeat(seq(',', $.identifier)), optional(','), '}'),

    extends_item: ($) => seq('extends', field('file', $.string), optional(field('overrides', $.block))),

    profile_item: ($) => seq('profile', field('name', $.identifier), field('overrides', $.block)),

    builtin_item: ($) => seq(
      'builtin', field('name', $.identifier), field('parameters', $.parameters),
      '->', field('returns', $.return_type), optional(field('fields', $.spec_block)),
    ),
    return_type: ($) => seq($.path, optional($.arguments)),

    declaration: ($) => seq(
      field('kind', $.decl_kind), field('name', $.identifier), '=', field('value', $._expression),
    ),
    decl_kind: (_) => choice(...DECL_KINDS),

    parameters: ($) => seq('(', commaSep($.parameter), ')'),
    parameter: ($) => seq(
      field('name', $._name), ':', field('type', $._expression),
      optional(seq('=', field('default', $._expression))),
    ),
    spec_block: ($) => seq('{', repeat(seq($.parameter, optional(','))), '}'),

    // ───────────── blocks ─────────────

    block: ($) => seq('{', repeat(seq($._block_item, optional(','))), '}'),
    record: ($) => seq('{', repeat(seq($._block_item, optional(','))), '}'),
    _block_item: ($) => choice($.module_item, $.tool_item, $.edge, $.field, $.flag),

    module_item: ($) => seq('module', field('name', $.identifier), '=', field('value', $._expression)),
    tool_item: ($) => seq(
      'tool', field('name', $.identifier), field('parameters', $.parameters),
      optional(field('body', $.block)),
    ),
    edge: ($) => seq(
      $.identifier, repeat1(seq('->', $.identifier)), optional($.guard), optional($.edge_limit),
    ),
    guard: ($) => seq('when', $.identifier, repeat(seq('|', $.identifier))),
    edge_limit: ($) => seq('limit', $._expression),
    field: ($) => seq(field('path', $.field_path), '=', field('value', $._expression)),
    field_path: ($) => seq(
      $._name,
      repeat(choice(seq('.', $._name), seq('[', $.index_number, ']'))),
    ),
    index_number: (_) => /[0-9]+/,
    flag: ($) => $.identifier,

    // A name where the grammar also allows the contextual keywords `module` and `tool`.
    _name: ($) => choice($.identifier, alias(choice('module', 'tool'), $.identifier)),

    // ───────────── expressions ─────────────

    _expression: ($) => choice(
      $.if_expression, $.binary_expression, $.unary_expression,
      $.call, $.member, $.index, $.configure,
      $.parenthesized, $.list, $.record, $.text_block, $.string,
      $.dims, $.quantity, $.number, $.boolean, $.unknown, $.path,
    ),

    if_expression: ($) => prec.right(PREC.if, seq(
      'if', field('condition', $._expression),
      'then', field('consequence', $._expression),
      'else', field('alternative', $._expression),
    )),

    binary_expression: ($) => choice(...BINARY.map(([op, p]) => prec.left(p, seq(
      field('left', $._expression), field('operator', op), field('right', $._expression),
    )))),

    unary_expression: ($) => choice(
      prec(PREC.not, seq(field('operator', 'not'), field('operand', $._expression))),
      prec(PREC.neg, seq(field('operator', '-'), field('operand', $._expression))),
    ),

    call: ($) => prec(PREC.postfix, seq(field('function', $._expression), field('arguments', $.arguments))),
    arguments: ($) => seq('(', commaSep($.argument), ')'),
    argument: ($) => seq(optional(seq(field('name', $.identifier), ':')), field('value', $._expression)),
    member: ($) => prec(PREC.postfix, seq(field('object', $._expression), '.', field('name', $._name))),
    index: ($) => prec(PREC.postfix, seq(field('object', $._expression), '[', field('index', $._expression), ']')),
    configure: ($) => prec(PREC.postfix, seq(field('base', $._expression), field('block', $.block))),

    parenthesized: ($) => seq('(', $._expression, ')'),
    list: ($) => seq('[', commaSep($._expression), ']'),

    path: ($) => prec.left(seq($.identifier, repeat(seq('::', $.identifier)))),

    number: ($) => seq(/\d(_?\d)*(\.\d+)?([eE][+-]?\d+)?/, optional($.magnitude)),
    quantity: ($) => seq(field('value', $.number), field('unit', $.unit)),
    dims: ($) => seq(field('width', $.number), alias($._dims_x, 'x'), field('height', $.number)),

    string: ($) => seq('"', repeat(choice($.string_content, $.escape_sequence)), token.immediate('"')),
    string_content: (_) => token.immediate(prec(1, /[^"\\\n]+/)),
    escape_sequence: (_) => token.immediate(seq('\\', choice(/u\{[0-9A-Fa-f]+\}/, /[^u\n]/))),
    text_block: (_) => token(seq('"""', /([^"]|"[^"]|""[^"])*/, '"""')),

    boolean: (_) => choice('true', 'false'),
    unknown: (_) => 'unknown',
  },
});
