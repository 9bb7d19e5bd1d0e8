/**
 * @file Tree-sitter grammar for .wrl, the wrl recipe language.
 *
 * It mirrors compiler/syntax/src/wrl.pest (the reference); the word lists below are checked
 * against compiler/syntax/src/tokens.rs by compiler/fmt/tests/editor_sync.rs (`WRL_BLESS=1`
 * rewrites them). It rejects what pest rejects (tests/scripts/tree-sitter-check.sh holds it
 * to pest): what depends on the line, the value or a count (units on the number's line,
 * numbers out of range, bracket depth, prefix-operator runs, `if`s per item, as
 * compiler/syntax/src/lex.rs counts them) is the external scanner's (src/scanner.c).
 */

/* eslint-disable no-undef */

// Reserved words: never names.
const KEYWORDS = ['and', 'else', 'false', 'if', 'not', 'or', 'then', 'true', 'unknown', 'use', 'when'];
// Keywords only where the grammar expects them.
const CONTEXTUAL_KEYWORDS = ['as', 'builtin', 'extends', 'limit', 'module', 'profile', 'tool', 'variant'];
// The kind words of declarations.
const DECL_KINDS = ['model', 'dataset', 'env', 'tools', 'agent', 'reward', 'stage', 'eval', 'param', 'claim'];

// Pratt levels of compiler/syntax/src/parser/expr.rs, lowest first.
const PREC = {
  if: 0, range: 1, or: 2, and: 3, not: 4, compare: 5, add: 6, mul: 7, neg: 8, postfix: 9,
};

const commaSep = (rule) => optional(seq(rule, repeat(seq(',', rule)), optional(',')));
const COMPARISONS = choice('==', '!=', '<=', '>=', '<', '>');
const commaSep1 = (rule) => seq(rule, repeat(seq(',', rule)));

// Brackets come from the external scanner, which keeps their depth (see `externals`); they
// show as the anonymous nodes `(` `)` `[` `]` `{` `}` that queries name.
const parens = ($, ...rules) => seq(alias($._lparen, '('), ...rules, alias($._rparen, ')'));
const brackets = ($, ...rules) => seq(alias($._lbracket, '['), ...rules, alias($._rbracket, ']'));
const braces = ($, ...rules) => seq(alias($._lbrace, '{'), ...rules, alias($._rbrace, '}'));

// `lhs op rhs` at a level of the Pratt table.
const binary = (p, op, left, right) => prec.left(p, seq(
  field('left', left), field('operator', op), field('right', right),
));
// `lhs + rhs` and `lhs - rhs`: the external scanner looks at a binary `-` first, since pest counts
// it in a run of prefix operators (see `_check`).
const sum = ($, left, right) => prec.left(PREC.add, seq(
  field('left', left), optional($._check), field('operator', choice('+', '-')),
  field('right', right),
));

// The hexadecimal digits of a Unicode scalar value without leading zeros: up to U+10FFFF,
// not a surrogate (U+D800–U+DFFF), as `char::from_u32` accepts.
const UNICODE_SCALAR = [
  '[0-9A-Fa-f]{1,3}',
  '[0-9A-Ca-cE-Fe-f][0-9A-Fa-f]{3}',
  '[Dd][0-7][0-9A-Fa-f]{2}',
  '[1-9A-Fa-f][0-9A-Fa-f]{4}',
  '10[0-9A-Fa-f]{4}',
].join('|');
// Any character but `"`, as ranges that end at U+10FFFE (see `string_content`).
const NOT_QUOTE = new RustRegex(String.raw`[\x01-\x21\x23-\x{10FFFE}]`);
const NOT_LF = new RustRegex(String.raw`[\x01-\x09\x0B-\x{10FFFE}]`);
const NOT_SLASH_OR_LF = new RustRegex(String.raw`[\x01-\x09\x0B-\x2E\x30-\x{10FFFE}]`);

module.exports = grammar({
  name: 'wrl',

  word: ($) => $.identifier,

  // Where pest's ordered choice backtracks, tree-sitter tries both readings (GLR): after an
  // edge, `when` and `limit` open its guard and limit, or a field of that name
  // (`a -> b limit = 3`); `module` and `tool` open an item, or are a flag or an edge's first
  // name (`{ module }`, `{ module -> b }`); `and` … after a value (see `_field_start`).
  conflicts: ($) => [
    [$.edge], [$.module_item, $._block_name], [$.tool_item, $._block_name],
    [$._unary_any, $._unary_c],
  ],

  // pest's whitespace, as compiler/syntax/src/lex.rs hands it over: spaces, tabs, line breaks,
  // carriage returns and byte-order marks (no other Unicode space).
  extras: ($) => [/[ \t\n\r\uFEFF]/, $.comment, $.doc_comment],

  // The brackets are the scanner's too: it keeps their depth, as lex.rs does, and refuses an
  // opening one past MAX_NESTING = 64 (E0104). So is the `if` of an `if` expression, which it
  // counts per item (lex.rs's MAX_IFS_PER_ITEM = 64); `_item_start`, a token of no width where
  // an item may start, is where it starts counting again.
  externals: ($) => [
    $.magnitude, $.unit, $._dims_x, $._check,
    $._lparen, $._rparen, $._lbracket, $._rbracket, $._lbrace, $._rbrace,
    $._if, $._item_start,
    $._error_sentinel,
  ],

  // pest's `keyword`s are never an identifier, except where pest reads a `raw_ident`: a field
  // path (see `_field_start`), a member name, a parameter name (the word set `raw`, empty).
  reserved: {
    global: (_) => KEYWORDS,
    raw: (_) => [],
  },

  rules: {
    source_file: ($) => repeat(seq(optional($._item_start), $._item)),

    // `///` documents the item below; `////…` is an ordinary comment. The rest of the line:
    // any character but a line break, as ranges (see `string_content`).
    doc_comment: (_) => token(seq('///', optional(seq(NOT_SLASH_OR_LF, repeat(NOT_LF))))),
    comment: (_) => token(choice(
      seq('//', optional(seq(NOT_SLASH_OR_LF, repeat(NOT_LF)))),
      seq('////', repeat(NOT_LF)),
    )),

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
    use_group: ($) => braces($, $.identifier, repeat(seq(',', $.identifier)), optional(',')),

    extends_item: ($) => seq('extends', field('file', $.string), optional(field('overrides', $.block))),

    profile_item: ($) =>
      seq(choice('profile', 'variant'), field('name', $.identifier), field('overrides', $.block)),

    builtin_item: ($) => seq(
      'builtin', field('name', $.identifier), field('parameters', $.parameters),
      '->', field('returns', $.return_type), optional(field('fields', $.spec_block)),
    ),
    return_type: ($) => seq($.path, optional($.arguments)),

    declaration: ($) => seq(
      field('kind', $.decl_kind), field('name', $.identifier), '=', field('value', $._expression),
    ),
    decl_kind: (_) => choice(...DECL_KINDS),

    parameters: ($) => parens($, commaSep($.parameter)),
    parameter: ($) => seq(
      field('name', $._raw_name), ':', field('type', $._expression),
      optional(seq('=', field('default', $._expression))),
    ),
    spec_block: ($) => braces($, repeat(seq($.parameter, optional(',')))),

    // ───────────── blocks ─────────────

    block: ($) => braces($, repeat(seq($._block_item, optional(',')))),
    record: ($) => braces($, repeat(seq($._block_item, optional(',')))),
    _block_item: ($) => choice($.module_item, $.tool_item, $.edge, $.field, $.flag),

    module_item: ($) => seq('module', field('name', $.identifier), '=', field('value', $._expression)),
    tool_item: ($) => seq(
      'tool', field('name', $.identifier), field('parameters', $.parameters),
      optional(field('body', $.block)),
    ),
    edge: ($) => seq(
      $._block_name, repeat1(seq('->', $.identifier)), optional($.guard), optional($.edge_limit),
    ),
    guard: ($) => seq('when', $.identifier, repeat(seq('|', $.identifier))),
    edge_limit: ($) => seq('limit', $._expression),
    field: ($) => seq(field('path', $.field_path), '=', field('value', $._expression)),
    field_path: ($) => seq(
      $._field_start,
      repeat(choice(seq('.', $._raw_name), brackets($, $.index_number))),
    ),
    index_number: (_) => /[0-9]+/,
    flag: ($) => $._block_name,
    // A name that starts a flag or an edge: pest's `ident`, so also `module` and `tool`, which
    // open an item there too. Not `limit`: after an edge pest commits to its limit
    // (`a -> b limit x`), so a flag of that name is the one flag pest reads that this grammar
    // does not (tests/scripts/tree_sitter_check.py, KNOWN_DIFFERENCES).
    _block_name: ($) => choice($.identifier, alias(choice('module', 'tool'), $.identifier)),

    // pest's `raw_ident`: any word, the contextual keywords `module` and `tool` and the
    // reserved words included.
    _raw_name: ($) => reserved('raw', choice(
      $.identifier, alias(choice('module', 'tool'), $.identifier),
    )),
    // The first word of a field path is a `raw_ident` too, but a flag or an edge, which may
    // also start there, is a name (`{ true }` is an error, `{ true = 1 }` a field): reserved
    // words stay keywords here, and a field path may start with one. After a value, `and`,
    // `or`, `then`, `else` may go on with it or start a field (`{ x = a and = 1 }`, which
    // pest reads as two fields after its ordered choice backtracks): both readings are tried.
    _field_start: ($) => choice(
      $.identifier, alias(choice('module', 'tool', 'limit', ...KEYWORDS), $.identifier),
    ),

    // ───────────── expressions ─────────────
    // Hidden rules per level of the Pratt table (compiler/syntax/src/parser/expr.rs), loosest
    // first, so that what pest's Pratt loop refuses has no parse here either: a comparison's
    // operands are sums (`a < b < c` is E0108 there, an ERROR here), a range's are `or`
    // expressions (`a .. b .. c`). Every binary level shows as `binary_expression`.
    //
    // `not` and `-` may open any operand, as `prefix*` does in pest. Two forms are open to the
    // right: an `if`, whose `else` branch takes everything after it, and `not`, whose operand
    // takes every comparison, sum and product after it (`not a == b` is `not (a == b)`). An
    // operator never follows what would have taken it, or `(if c then x else a < b) < d` and
    // `(not (a < b)) < c` would be parses where pest sees a chained comparison. So each level
    // has up to three forms: `_any`, `_c` (not ending in an `if`: left of `..`, `or`, `and`)
    // and `_cc` (ending in neither `if` nor `not`: left of a comparison, `+`, `-`, `*`, `/`).

    _expression: ($) => choice(alias($._range, $.binary_expression), $._or_any),
    _range: ($) => binary(PREC.range, '..', $._or_c, $._or_any),

    _or_any: ($) => choice(alias($._or_any_op, $.binary_expression), $._and_any),
    _or_any_op: ($) => binary(PREC.or, 'or', $._or_c, $._and_any),
    _or_c: ($) => choice(alias($._or_c_op, $.binary_expression), $._and_c),
    _or_c_op: ($) => binary(PREC.or, 'or', $._or_c, $._and_c),

    _and_any: ($) => choice(alias($._and_any_op, $.binary_expression), $._compare_any),
    _and_any_op: ($) => binary(PREC.and, 'and', $._and_c, $._compare_any),
    _and_c: ($) => choice(alias($._and_c_op, $.binary_expression), $._compare_c),
    _and_c_op: ($) => binary(PREC.and, 'and', $._and_c, $._compare_c),

    _compare_any: ($) => choice(alias($._compare_any_op, $.binary_expression), $._add_any),
    _compare_any_op: ($) => binary(PREC.compare, COMPARISONS, $._add_cc, $._add_any),
    _compare_c: ($) => choice(alias($._compare_c_op, $.binary_expression), $._add_c),
    _compare_c_op: ($) => binary(PREC.compare, COMPARISONS, $._add_cc, $._add_c),

    _add_any: ($) => choice(alias($._add_any_op, $.binary_expression), $._mul_any),
    _add_any_op: ($) => sum($, $._add_cc, $._mul_any),
    _add_c: ($) => choice(alias($._add_c_op, $.binary_expression), $._mul_c),
    _add_c_op: ($) => sum($, $._add_cc, $._mul_c),
    _add_cc: ($) => choice(alias($._add_cc_op, $.binary_expression), $._mul_cc),
    _add_cc_op: ($) => sum($, $._add_cc, $._mul_cc),

    _mul_any: ($) => choice(alias($._mul_any_op, $.binary_expression), $._unary_any),
    _mul_any_op: ($) => binary(PREC.mul, choice('*', '/'), $._mul_cc, $._unary_any),
    _mul_c: ($) => choice(alias($._mul_c_op, $.binary_expression), $._unary_c),
    _mul_c_op: ($) => binary(PREC.mul, choice('*', '/'), $._mul_cc, $._unary_c),
    _mul_cc: ($) => choice(alias($._mul_cc_op, $.binary_expression), $._unary_cc),
    _mul_cc_op: ($) => binary(PREC.mul, choice('*', '/'), $._mul_cc, $._unary_cc),

    _unary_any: ($) => choice(
      alias($._not_any, $.unary_expression), alias($._neg_any, $.unary_expression),
      $.if_expression, $._postfix,
    ),
    _not_any: ($) => prec(PREC.not, seq(
      field('operator', 'not'), field('operand', $._compare_any),
    )),
    _neg_any: ($) => prec(PREC.neg, seq(field('operator', '-'), field('operand', $._unary_any))),
    _unary_c: ($) => choice(
      alias($._not_c, $.unary_expression), alias($._neg_c, $.unary_expression), $._postfix,
    ),
    _not_c: ($) => prec(PREC.not, seq(field('operator', 'not'), field('operand', $._compare_c))),
    _neg_c: ($) => prec(PREC.neg, seq(field('operator', '-'), field('operand', $._unary_c))),
    _unary_cc: ($) => choice(alias($._neg_cc, $.unary_expression), $._postfix),
    _neg_cc: ($) => prec(PREC.neg, seq(field('operator', '-'), field('operand', $._unary_cc))),

    // Postfix forms bind to the primary before them (`-f(x)` is `-(f(x))`); an `if` takes
    // them into its `else` branch.
    _postfix: ($) => choice($.call, $.member, $.index, $.configure, $._primary),
    call: ($) => prec(PREC.postfix, seq(field('function', $._postfix), field('arguments', $.arguments))),
    // Positional arguments first, then named ones (pest's E0107 otherwise).
    arguments: ($) => parens($, optional(seq(
      choice(
        seq(commaSep1($._positional_argument), optional(seq(',', commaSep1($._named_argument)))),
        commaSep1($._named_argument),
      ),
      optional(','),
    ))),
    _positional_argument: ($) => alias($._positional, $.argument),
    _positional: ($) => field('value', $._expression),
    _named_argument: ($) => alias($._named, $.argument),
    _named: ($) => seq(field('name', $.identifier), ':', field('value', $._expression)),
    member: ($) => prec(PREC.postfix, seq(field('object', $._postfix), '.', field('name', $._raw_name))),
    index: ($) => prec(PREC.postfix, seq(
      field('object', $._postfix), brackets($, field('index', $._expression)),
    )),
    configure: ($) => prec(PREC.postfix, seq(field('base', $._postfix), field('block', $.block))),

    _primary: ($) => choice(
      $.parenthesized, $.list, $.record, $.text_block, $.string,
      $.dims, $.quantity, $.number, $.boolean, $.unknown, $.path,
    ),

    // A primary whose branches extend as far right as possible (see the top of this section).
    if_expression: ($) => prec.right(PREC.if, seq(
      alias($._if, 'if'), field('condition', $._expression),
      'then', field('consequence', $._expression),
      'else', field('alternative', $._expression),
    )),

    parenthesized: ($) => parens($, $._expression),
    list: ($) => brackets($, commaSep($._expression)),

    path: ($) => prec.left(seq($.identifier, repeat(seq('::', $.identifier)))),

    // A number is lexed by the regular expression. `_check`, valid where a number (so any
    // operand) or a binary `-` may come and never produced, makes tree-sitter ask the external
    // scanner first, which refuses a number out of range (pest's E0105) and a run of more than
    // 32 prefix operators (lex.rs's MAX_PREFIX_RUN, E0104) with an `_error_sentinel`.
    number: ($) => seq(
      optional($._check), /\d(_?\d)*(\.\d+)?([eE][+-]?\d+)?/, optional($.magnitude),
    ),
    quantity: ($) => seq(field('value', $.number), field('unit', $.unit)),
    dims: ($) => seq(field('width', $.number), alias($._dims_x, 'x'), field('height', $.number)),

    // Strings: the escapes of pest's `unescape` (\n \t \r \\ \" \0 and \u{…} of a Unicode
    // scalar value, leading zeros and a `+` allowed as `u32::from_str_radix` does). The
    // character classes stop at U+10FFFE so that tree-sitter tests them as ranges, which a
    // byte that is not UTF-8 (lookahead -1) fails, as pest's E0106 does; U+10FFFF, a
    // noncharacter, is the one character refused with them.
    string: ($) => seq('"', repeat(choice($.string_content, $.escape_sequence)), token.immediate('"')),
    string_content: (_) => token.immediate(prec(1, new RustRegex(
      String.raw`[\x01-\x09\x0B-\x21\x23-\x5B\x5D-\x{10FFFE}]+`,
    ))),
    escape_sequence: (_) => token.immediate(seq('\\', choice(
      /[ntr"0\\]/,
      seq('u{', new RustRegex(String.raw`\+?0*(` + UNICODE_SCALAR + ')'), '}'),
    ))),
    text_block: (_) => token(seq(
      '"""', repeat(choice(NOT_QUOTE, seq('"', NOT_QUOTE), seq('""', NOT_QUOTE))), '"""',
    )),

    boolean: (_) => choice('true', 'false'),
    unknown: (_) => 'unknown',
  },
});
