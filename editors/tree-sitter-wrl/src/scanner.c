// External scanner for tree-sitter-wrl: what compiler/syntax/src/wrl.pest and its pre-pass
// lex.rs decide by looking at the line, the value or a count, which a context-free grammar
// cannot.
// - A word on the number's line is its unit (pest's `numeric`: any word but a reserved one), so
//   `3 lr` and `32k tokenz` are a number with an unknown unit, which pest refuses (E0103): here
//   an unknown unit is an `_error_sentinel` token, valid nowhere, so the parse has an ERROR.
// - A magnitude (`32k`) sits right against its number; `10MB` is a unit. The `x` of
//   `1280 x 1000` stays on the line.
// - A number out of range (E0105: not finite as an f64, a non-zero number that reads as 0, or
//   a whole number past 2^53) is an `_error_sentinel` too, and so is a run of more than 32
//   prefix operators (`-`, `not`; a binary `-` counts, as in lex.rs; E0104). `_check`, valid
//   where an operand or a binary `-` may come, makes tree-sitter ask here first; it is never
//   produced.
// - Brackets and the `if` of an `if` expression are lexed here, counted in the scanner's
//   state (bracket depth over the file, `if`s per item as lex.rs finds items), and past
//   lex.rs's limits (64 and 64; E0104) are an `_error_sentinel`.
// The UNITS and MAGNITUDES lists are checked against compiler/syntax/src/tokens.rs by
// compiler/fmt/tests/editor_sync.rs; RESERVED against grammar.js's KEYWORDS (which that test
// checks) by tests/scripts/tree_sitter_check.py.
#include "tree_sitter/alloc.h"
#include "tree_sitter/parser.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum TokenType {
  MAGNITUDE, UNIT, DIMS_X, CHECK,
  LPAREN, RPAREN, LBRACKET, RBRACKET, LBRACE, RBRACE,
  IF, ITEM_START,
  ERROR_SENTINEL,
};

static const char *const UNITS[] = {
    "token", "tokens", "step", "steps", "turn", "turns", "iter", "iters", "epoch", "epochs",
    "sample", "samples", "prompt", "prompts", "trajectory", "trajectories", "call", "calls",
    "image", "images", "px", "ms", "s", "min", "h",
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "%",
};
static const char *const MAGNITUDES[] = {"Ki", "Mi", "Gi", "k", "M", "G"};
// pest's `keyword`: words that are never a unit (nor a name).
static const char *const RESERVED[] = {
    "and", "else", "false", "if", "not", "or", "then", "true", "unknown", "use", "when",
};

#define COUNT(a) (sizeof(a) / sizeof *(a))

static bool is_digit(int32_t c) { return c >= '0' && c <= '9'; }

static bool is_word_char(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static bool in_list(const char *word, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(word, list[i]) == 0) return true;
  }
  return false;
}

// lex.rs's MAX_NESTING: brackets may nest this deep; MAX_IFS_PER_ITEM: one item may hold this
// many `if` expressions.
#define MAX_NESTING 64
#define MAX_IFS_PER_ITEM 64

// The scanner's state, counted as lex.rs counts, in the file's order: how deep the brackets
// before this point nest (every `(`, `[`, `{` opens, every `)`, `]`, `}` closes one if any is
// open), and how many `if`s the item has had. tree-sitter saves it after each external token
// and restores it when it reparses.
typedef struct {
  uint32_t depth;
  uint32_t ifs;
} Scanner;

void *tree_sitter_wrl_external_scanner_create(void) {
  Scanner *s = ts_malloc(sizeof(Scanner));
  s->depth = 0;
  s->ifs = 0;
  return s;
}
void tree_sitter_wrl_external_scanner_destroy(void *payload) { ts_free(payload); }
unsigned tree_sitter_wrl_external_scanner_serialize(void *payload, char *buffer) {
  memcpy(buffer, payload, sizeof(Scanner));
  return sizeof(Scanner);
}
void tree_sitter_wrl_external_scanner_deserialize(void *payload, const char *buffer,
                                                  unsigned length) {
  Scanner *s = payload;
  s->depth = 0;
  s->ifs = 0;
  if (length == sizeof(Scanner)) memcpy(s, buffer, sizeof(Scanner));
}

// The smallest values that overflow an f64 (2^1024 - 2^970, half an ulp past f64::MAX: from
// there parsing rounds to infinity), divided by 1, 2^10, 2^20 and 2^30 (the binary magnitudes
// multiply exactly, so these are exact too): significant digits and decimal exponent, the
// value being 0.DIGITS x 10^EXP.
static const char T0[] =
    "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977"
    "587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845"
    "817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559"
    "699508093042880177904174497792";
static const char T10[] =
    "175555970201398028118875948637991616288998176474646315367357206035590789348403077096336931618"
    "737506930010045328801648350533745652199160549444001453780767403009676662110066780933861186372"
    "868858917738745830341865093331413046506682534003770346617651653045970867621450694047209679257"
    "519050872112187673734545408";
static const char T20[] =
    "171441377149802761834839793591788687782224781713521792350934771519131630223049879976891534783"
    "923346611337934891407859717318110988475742724066407669707780667001637365341862090755723814817"
    "254745036854243974943227630206458053229182162113056979118800442427705925411572943405478202399"
    "920948117297058275131392";
static const char T30[] =
    "167423219872854259604335735929481140412328888392111125342709737811651982639697148414933139437"
    "425143175134702042390488005193467762183342503971101239949004557618786489591662198003636537907"
    "475336950052972631780495732623494192606623205188532206170703557058306567784739202544412307031"
    "172800895797908471808";

// Half the smallest subnormal f64, 2^-1075 (= 5^1075 x 10^-1075, exact): a non-zero number at
// or below it parses to 0 (ties round to even), which literal.rs refuses (E0105); as
// 0.DIGITS x 10^-323.
static const char UNDER[] =
    "24703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081"
    "79961898982823477228588654633283551779698981993873980053909390631503565951557022639229085839244"
    "91051844359318028499365361525003193704576782492193656236698636584807570015857692699037063119282"
    "79558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470"
    "45402082816622623785739345073633900796776193057750674017632467360096895134053553745851666113422"
    "37666786041621596804619144672918403005300575308490487653917113865916462395249126236538818796362"
    "39373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186"
    "948667994968324049705821028513185451396213837722826145437693412532098591327667236328125";

#define MAX_DIGITS 400

// Whether 0.digits x 10^exp >= 0.limit x 10^limit_exp.
static bool at_least(const char *digits, size_t n, long exp, const char *limit, long limit_exp) {
  if (exp != limit_exp) return exp > limit_exp;
  size_t m = strlen(limit);
  for (size_t i = 0; i < m; i++) {
    char d = i < n ? digits[i] : '0';
    if (d != limit[i]) return d > limit[i];
  }
  return true;  // equal up to the limit's last digit: at least the limit
}

// Whether 0.digits > 0.limit (same exponent).
static bool greater(const char *digits, size_t n, const char *limit) {
  size_t m = strlen(limit);
  size_t len = n > m ? n : m;
  for (size_t i = 0; i < len; i++) {
    char d = i < n ? digits[i] : '0';
    char l = i < m ? limit[i] : '0';
    if (d != l) return d > l;
  }
  return false;
}

// Reads a number as pest's `number` rule does (`1_000`, `0.28`, `1e-5`, `32k`) and tells whether
// compiler/syntax/src/parser/literal.rs `number()` refuses it (E0105). Marks its end.
static bool number_out_of_range(TSLexer *lexer) {
  char digits[MAX_DIGITS];
  size_t n = 0;            // significant digits kept
  long int_digits = 0;     // significant digits before the point
  long leading_frac_zeros = 0;
  bool is_int = true;

#define PUSH(c)                                          \
  do {                                                   \
    if (n == 0 && (c) == '0') break;                     \
    if (n < MAX_DIGITS) digits[n++] = (char)(c);         \
  } while (0)

  // Integer part: a digit, then digits each with an optional `_` before it.
  while (true) {
    int32_t c = lexer->lookahead;
    PUSH(c);
    if (n > 0) int_digits++;
    lexer->advance(lexer, false);
    lexer->mark_end(lexer);
    if (lexer->lookahead == '_') {
      lexer->advance(lexer, false);
      if (!is_digit(lexer->lookahead)) break;
    } else if (!is_digit(lexer->lookahead)) {
      break;
    }
  }
  bool ended = lexer->lookahead == '_';  // `1_x`: the number is `1`
  if (!ended && lexer->lookahead == '.') {
    lexer->advance(lexer, false);
    if (is_digit(lexer->lookahead)) {
      is_int = false;
      while (is_digit(lexer->lookahead)) {
        int32_t c = lexer->lookahead;
        if (n == 0 && c == '0') leading_frac_zeros++;
        PUSH(c);
        lexer->advance(lexer, false);
      }
      lexer->mark_end(lexer);
    } else {
      ended = true;  // `3.name`: a member of 3
    }
  }
  long exp = 0;
  if (!ended && (lexer->lookahead == 'e' || lexer->lookahead == 'E')) {
    lexer->advance(lexer, false);
    bool negative = false;
    if (lexer->lookahead == '+' || lexer->lookahead == '-') {
      negative = lexer->lookahead == '-';
      lexer->advance(lexer, false);
    }
    if (is_digit(lexer->lookahead)) {
      is_int = false;
      while (is_digit(lexer->lookahead)) {
        if (exp < 100000000L) exp = exp * 10 + (lexer->lookahead - '0');
        lexer->advance(lexer, false);
      }
      if (negative) exp = -exp;
      lexer->mark_end(lexer);
    } else {
      ended = true;  // `1e`: the number is `1`, `e` a unit
    }
  }
  // A magnitude right after the number and before a non-word character.
  int magnitude = 0;  // 1: k, 2: M, 3: G (powers of 1000); 11, 12, 13: Ki, Mi, Gi
  if (!ended) {
    int32_t c = lexer->lookahead;
    int m = c == 'k' ? 1 : c == 'M' ? 2 : c == 'G' ? 3 : c == 'K' ? 10 : 0;
    if (m) {
      lexer->advance(lexer, false);
      if (lexer->lookahead == 'i' && m != 1) {
        lexer->advance(lexer, false);
        m = m == 10 ? 11 : m + 10;
      } else if (m == 10) {
        m = 0;  // `K` alone is no magnitude
      }
      if (m && !is_word_char(lexer->lookahead)) {
        magnitude = m;
        lexer->mark_end(lexer);
      }
    }
  }
#undef PUSH

  if (n == 0) return false;  // zero
  // The value is 0.DIGITS x 10^e10.
  long e10 = (int_digits > 0 ? int_digits : -leading_frac_zeros) + exp;

  // Too small: 0 as an f64 before the magnitude (literal.rs multiplies the parsed value).
  // A number of more than MAX_DIGITS significant digits that equals UNDER on all of them is
  // taken as UNDER.
  if (!is_int && e10 <= -323) {
    return e10 < -323 || !greater(digits, n, UNDER);
  }
  if (is_int) {
    // Whole numbers: exact up to 2^53 (literal.rs: MAX_EXACT_INT), after the magnitude.
    if (e10 > 19) return true;
    uint64_t d = 0;
    for (size_t i = 0; i < n; i++) d = d * 10 + (uint64_t)(digits[i] - '0');
    static const double SCALE[] = {1.0, 1e3, 1e6, 1e9};
    double v = (double)d;
    if (magnitude >= 11) v *= (double)(1ULL << (10 * (magnitude - 10)));
    else v *= SCALE[magnitude];
    return v > 9007199254740992.0;
  }
  // Others: infinite as an f64 after the magnitude. Decimal magnitudes compare the exact
  // product, where literal.rs multiplies the rounded value: they differ only for a number
  // within an ulp of the limit.
  if (magnitude >= 1 && magnitude <= 3) e10 += 3L * magnitude;
  if (e10 > 400) return true;
  if (e10 < 290) return false;
  switch (magnitude) {
    case 11: return at_least(digits, n, e10, T10, 306);
    case 12: return at_least(digits, n, e10, T20, 303);
    case 13: return at_least(digits, n, e10, T30, 300);
    default: return at_least(digits, n, e10, T0, 309);
  }
}

// lex.rs's MAX_PREFIX_RUN: this many prefix operators may follow each other.
#define MAX_PREFIX_RUN 32

static bool is_space(int32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xFEFF;
}

// Counts the run of `-` (not `->`) and `not` that starts here, with spaces, line breaks and
// comments between them as lex.rs allows; true, with the end marked after the operator past
// the limit, when it is longer than MAX_PREFIX_RUN.
static bool prefix_run_too_long(TSLexer *lexer) {
  unsigned run = 0;
  while (true) {
    int32_t c = lexer->lookahead;
    if (is_space(c)) {
      lexer->advance(lexer, run == 0);
    } else if (c == '/') {
      lexer->advance(lexer, run == 0);
      if (lexer->lookahead != '/') return false;  // a division
      while (lexer->lookahead != '\n' && !lexer->eof(lexer)) lexer->advance(lexer, false);
    } else if (c == '-') {
      lexer->advance(lexer, false);
      if (lexer->lookahead == '>') return false;  // an arrow
      run++;
    } else if (c == 'n') {
      lexer->advance(lexer, false);
      if (lexer->lookahead != 'o') return false;
      lexer->advance(lexer, false);
      if (lexer->lookahead != 't') return false;
      lexer->advance(lexer, false);
      if (is_word_char(lexer->lookahead)) return false;
      run++;
    } else {
      return false;
    }
    if (run > MAX_PREFIX_RUN) {
      lexer->mark_end(lexer);
      return true;
    }
  }
}

enum Found { TOKEN, NONE, NOT_A_WORD };

// A unit, a magnitude or the `x` of a size on the number's line, or an unknown unit; NOT_A_WORD
// when no word (nor `%`) follows on the line, the spaces before it skipped.
static enum Found scan_unit(TSLexer *lexer, const bool *valid) {
  bool spaced = false;
  while (lexer->lookahead == ' ' || lexer->lookahead == '\t') {
    lexer->advance(lexer, true);
    spaced = true;
  }
  if (lexer->lookahead == '%' && valid[UNIT]) {
    lexer->advance(lexer, false);
    lexer->result_symbol = UNIT;
    return TOKEN;
  }
  if (!((lexer->lookahead >= 'a' && lexer->lookahead <= 'z') ||
        (lexer->lookahead >= 'A' && lexer->lookahead <= 'Z') || lexer->lookahead == '_')) {
    return NOT_A_WORD;
  }
  char word[16];  // longer than the longest unit (`trajectories`), magnitude and keyword
  size_t n = 0;
  while (is_word_char(lexer->lookahead)) {
    if (n < sizeof word - 1) word[n] = (char)lexer->lookahead;
    n++;
    lexer->advance(lexer, false);
  }
  lexer->mark_end(lexer);
  bool long_word = n >= sizeof word;
  word[long_word ? sizeof word - 1 : n] = '\0';

  if (!long_word && !spaced && valid[MAGNITUDE] &&
      in_list(word, MAGNITUDES, COUNT(MAGNITUDES))) {
    lexer->result_symbol = MAGNITUDE;
    return TOKEN;
  }
  if (!long_word && valid[DIMS_X] && strcmp(word, "x") == 0) {
    while (lexer->lookahead == ' ' || lexer->lookahead == '\t') lexer->advance(lexer, false);
    if (is_digit(lexer->lookahead)) {
      lexer->result_symbol = DIMS_X;
      return TOKEN;
    }
    // `3 x name`: pest reads `x` as a unit, an unknown one.
  }
  if (!valid[UNIT]) return NONE;
  if (!long_word && in_list(word, RESERVED, COUNT(RESERVED))) return NONE;
  // Any other word on the line is pest's unit: a known one, or an error.
  lexer->result_symbol = !long_word && in_list(word, UNITS, COUNT(UNITS)) ? UNIT : ERROR_SENTINEL;
  return TOKEN;
}

// A bracket, valid here or during error recovery (when every token is), with the depth kept.
static bool scan_bracket(Scanner *s, TSLexer *lexer, const bool *valid, bool recovering) {
  enum TokenType token;
  switch (lexer->lookahead) {
    case '(': token = LPAREN; break;
    case ')': token = RPAREN; break;
    case '[': token = LBRACKET; break;
    case ']': token = RBRACKET; break;
    case '{': token = LBRACE; break;
    case '}': token = RBRACE; break;
    default: return false;
  }
  if (!valid[token] && !recovering) return false;  // an error: recovery comes back here
  lexer->advance(lexer, false);
  lexer->mark_end(lexer);
  bool opens = token == LPAREN || token == LBRACKET || token == LBRACE;
  if (opens) {
    s->depth++;
    // Past the limit, an error (pest's E0104) where a bracket was expected.
    lexer->result_symbol = s->depth > MAX_NESTING && !recovering ? ERROR_SENTINEL : token;
  } else {
    if (s->depth > 0) s->depth--;
    lexer->result_symbol = token;
  }
  return true;
}

// The word `if` of an `if` expression, counted; past the limit an error (pest's E0104).
static bool scan_if(Scanner *s, TSLexer *lexer, bool recovering) {
  if (lexer->lookahead != 'i') return false;
  lexer->advance(lexer, false);
  if (lexer->lookahead != 'f') return false;
  lexer->advance(lexer, false);
  if (is_word_char(lexer->lookahead)) return false;
  lexer->mark_end(lexer);
  s->ifs++;
  lexer->result_symbol = s->ifs > MAX_IFS_PER_ITEM && !recovering ? ERROR_SENTINEL : IF;
  return true;
}

static bool is_decl_kind(const char *word) {
  static const char *const KINDS[] = {
      "model", "dataset", "env", "tools", "agent", "reward", "stage", "eval", "param",
  };
  return in_list(word, KINDS, COUNT(KINDS));
}

// Where lex.rs starts counting `if`s again: a line that looks like the start of an item
// (`looks_like_item_start`: at its first column `use` and a space, `extends` and a string,
// `profile`, `variant`, `builtin` or a declaration kind and a name). A token of no width, produced only
// when it changes the count.
// Called at a letter in the first column, which it reads: so it also takes an `if` there.
static bool scan_item_start(Scanner *s, TSLexer *lexer, const bool *valid) {
  lexer->mark_end(lexer);
  char word[8];
  size_t n = 0;
  while (is_word_char(lexer->lookahead)) {
    if (n < sizeof word - 1) word[n] = (char)lexer->lookahead;
    n++;
    lexer->advance(lexer, false);
  }
  if (n == 0 || n >= sizeof word) return false;
  word[n] = '\0';
  if (strcmp(word, "if") == 0) {
    if (!valid[IF]) return false;
    lexer->mark_end(lexer);
    s->ifs++;
    lexer->result_symbol = s->ifs > MAX_IFS_PER_ITEM ? ERROR_SENTINEL : IF;
    return true;
  }
  bool spaced = lexer->lookahead == ' ' || lexer->lookahead == '\t';
  bool starts;
  if (strcmp(word, "use") == 0) {
    starts = spaced;
  } else if (strcmp(word, "extends") == 0 || strcmp(word, "profile") == 0 ||
             strcmp(word, "variant") == 0 || strcmp(word, "builtin") == 0 ||
             is_decl_kind(word)) {
    bool extends = strcmp(word, "extends") == 0;
    if (!extends && !spaced) return false;
    while (is_space(lexer->lookahead)) lexer->advance(lexer, false);
    int32_t c = lexer->lookahead;
    starts = extends ? c == '"' : (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  } else {
    starts = false;
  }
  if (!starts) return false;
  s->ifs = 0;
  lexer->result_symbol = ITEM_START;
  return true;
}

bool tree_sitter_wrl_external_scanner_scan(void *payload, TSLexer *lexer, const bool *valid) {
  Scanner *s = payload;
  if (valid[ERROR_SENTINEL]) {
    // Error recovery: brackets and `if`s still count; everything else is the internal lexer's.
    while (is_space(lexer->lookahead)) lexer->advance(lexer, true);
    return scan_bracket(s, lexer, valid, true) || scan_if(s, lexer, true);
  }

  if (valid[MAGNITUDE] || valid[UNIT] || valid[DIMS_X]) {
    enum Found found = scan_unit(lexer, valid);
    if (found != NOT_A_WORD) return found == TOKEN;
  }
  while (is_space(lexer->lookahead)) lexer->advance(lexer, true);
  if (scan_bracket(s, lexer, valid, false)) return true;
  int32_t c = lexer->lookahead;
  bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (letter && valid[ITEM_START] && s->ifs > 0 && lexer->get_column(lexer) == 0) {
    return scan_item_start(s, lexer, valid);  // it reads the word: nothing else can follow
  }
  if (c == 'i') return valid[IF] && scan_if(s, lexer, false);
  if (valid[CHECK]) {
    if (is_digit(lexer->lookahead)) {
      if (!number_out_of_range(lexer)) return false;  // the grammar's regular expression reads it
      lexer->result_symbol = ERROR_SENTINEL;
      return true;
    }
    if (prefix_run_too_long(lexer)) {
      lexer->result_symbol = ERROR_SENTINEL;
      return true;
    }
  }
  return false;
}
