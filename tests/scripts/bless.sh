#!/usr/bin/env bash
# Regenerates every generated file the tests hold to the code, in one command, after an
# intended change: docs/stdlib.md (the stdlib's `///`), recipes/golden/*.plan and *.dot, the
# UI snapshots of tests/ui/, the tiny models under recipes/models/, docs/scale.md's portability
# tables, the editor grammars' word lists, and bench/hf-parity/recipe-tools.json. Review `git diff` like code, then run the tests
# again without it. Usage: bash tests/scripts/bless.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export WRL_BLESS=1 INSTA_UPDATE=always
cargo test -q -p wrl-check --test all stdlib_doc
cargo test -q -p wrl-fmt --test all editor_sync
# recipe-tools.json first: the tiny models' tokenizers learn its schemas (shipped_models).
cargo test -q -p wrl-exec --test all hermes_chat
cargo test -q -p wrl-tests --test all -- golden_plans:: plan_dot:: ui:: shipped_models::
cargo test -q -p wrl-verl --test all lower
git status --short -- docs recipes/golden tests/ui editors bench/hf-parity
