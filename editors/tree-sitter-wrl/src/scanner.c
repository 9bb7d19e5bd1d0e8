// External scanner for tree-sitter-wrl: the tokens that must sit on the same line as the number
// before them (a unit, `15 steps`, `10%`; the `x` of `1280 x 1000`) or right against it (a
// magnitude, `32k`, which `10MB` is not). The UNITS list is checked against
// compiler/syntax/src/tokens.rs by compiler/fmt/tests/editor_sync.rs.
#include "tree_sitter/parser.h"

#include <stdbool.h>
#include <string.h>

enum TokenType { MAGNITUDE, UNIT, DIMS_X, ERROR_SENTINEL };

static const char *const UNITS[] = {
    "token", "tokens", "step", "steps", "turn", "turns", "iter", "iters", "epoch", "epochs",
    "sample", "samples", "call", "calls", "image", "images", "px", "ms", "s", "min", "h",
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "%",
};
static const char *const MAGNITUDES[] = {"Ki", "Mi", "Gi", "k", "M", "G"};

static bool is_word_char(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool in_list(const char *word, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(word, list[i]) == 0) return true;
  }
  return false;
}

void *tree_sitter_wrl_external_scanner_create(void) { return NULL; }
void tree_sitter_wrl_external_scanner_destroy(void *payload) { (void)payload; }
unsigned tree_sitter_wrl_external_scanner_serialize(void *payload, char *buffer) {
  (void)payload;
  (void)buffer;
  return 0;
}
void tree_sitter_wrl_external_scanner_deserialize(void *payload, const char *buffer, unsigned length) {
  (void)payload;
  (void)buffer;
  (void)length;
}

bool tree_sitter_wrl_external_scanner_scan(void *payload, TSLexer *lexer, const bool *valid) {
  (void)payload;
  if (valid[ERROR_SENTINEL]) return false;  // error recovery: let the internal lexer work
  if (!valid[MAGNITUDE] && !valid[UNIT] && !valid[DIMS_X]) return false;

  bool spaced = false;
  while (lexer->lookahead == ' ' || lexer->lookahead == '\t') {
    lexer->advance(lexer, true);
    spaced = true;
  }
  if (lexer->lookahead == '%' && valid[UNIT]) {
    lexer->advance(lexer, false);
    lexer->result_symbol = UNIT;
    return true;
  }
  char word[8];
  size_t n = 0;
  while (is_word_char(lexer->lookahead)) {
    if (n < sizeof word - 1) word[n] = (char)lexer->lookahead;
    n++;
    lexer->advance(lexer, false);
  }
  if (n == 0 || n >= sizeof word) return false;
  word[n] = '\0';
  lexer->mark_end(lexer);

  if (!spaced && valid[MAGNITUDE] && in_list(word, MAGNITUDES, sizeof MAGNITUDES / sizeof *MAGNITUDES)) {
    lexer->result_symbol = MAGNITUDE;
    return true;
  }
  if (valid[DIMS_X] && strcmp(word, "x") == 0) {
    while (lexer->lookahead == ' ' || lexer->lookahead == '\t') lexer->advance(lexer, false);
    if (lexer->lookahead >= '0' && lexer->lookahead <= '9') {
      lexer->result_symbol = DIMS_X;
      return true;
    }
    return false;
  }
  if (valid[UNIT] && in_list(word, UNITS, sizeof UNITS / sizeof *UNITS)) {
    lexer->result_symbol = UNIT;
    return true;
  }
  return false;
}
