#!/usr/bin/env bash
# verl 0.9.1 itself against wrl (CPU only, no Ray, no GPU): every shipped recipe and profile
# lowered with `wrlc lower --to verl` and each run's config accepted by verl's own loading and
# validation; then `wrlc env serve` of the quickstart job in real Chromium and the wrl agent loop
# (integrations/verl) running whole episodes against it with a scripted policy and a randomly
# initialised tiny Qwen2's `generate` in place of verl's rollout server; masks, rewards, failure
# classes and the reward entry point checked. See docs/verl.md.
#
# Usage: bench/verl-check.sh [WORK_DIR]
#   VERL_PY  the Python with verl==0.9.1 (default /work/venvs/verl/bin/python; make one with
#            integrations/verl/tests/make_venv.sh)
#   WRLC     the wrlc to test (default target/debug/wrlc; built when missing)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${VERL_PY:-/work/venvs/verl/bin/python}"
if ! "$py" -c 'import verl, sys; sys.exit(verl.__version__ != "0.9.1")' 2>/dev/null; then
  echo "verl-check: no Python with verl 0.9.1 at $py (set VERL_PY, or run integrations/verl/tests/make_venv.sh)" >&2
  exit 3
fi
wrlc="${WRLC:-${CARGO_TARGET_DIR:-$root/target}/debug/wrlc}"
[ -x "$wrlc" ] || cargo build -q -p wrl-cli
work="${1:-$(mktemp -d /tmp/wrl-verl-check.XXXXXX)}"
mkdir -p "$work"
echo "verl-check: $(date -u '+%Y-%m-%d %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), work dir $work"
# verl prints each tool's schema and dataset progress while loading; keep the check's own lines.
PYTHONPATH="$root/integrations/verl${PYTHONPATH:+:$PYTHONPATH}" \
  "$py" integrations/verl/tests/check_verl.py "$wrlc" "$work" >"$work/check.log" 2>&1 && rc=0 || rc=$?
grep -E '^(verl |configs:|  [a-z]|VERL CHECK)' "$work/check.log" || true
if [ "$rc" -ne 0 ]; then
  echo "verl-check: FAILED (rc $rc); the end of $work/check.log:" >&2
  tail -25 "$work/check.log" >&2
fi
exit "$rc"
