#!/usr/bin/env bash
# Times the release build of `wrlc` that ./quickstart.sh makes, under build settings side by side
# (#45 item 6: a newcomer's first run in 15 minutes), and prints a table with the load average
# beside each figure. Settings are passed as `cargo --config` overrides, so Cargo.toml is not
# edited; each is timed in its own target folder.
# Usage: bench/build.sh [--fresh] [--runs N] [NAME=OVERRIDES ...]
#   --fresh   every build starts from an empty target folder (dependencies too), as a newcomer's
#             does; without it the dependencies are built once and only our crates are timed.
#   NAME=...  a setting to time, its overrides separated by spaces; the defaults compare the
#             profile in Cargo.toml (`as-is`: our crates that do no numerical work and the large
#             dependencies off the hot paths at opt-level 1, since 2026-12-07) with everything at
#             opt-level 3 (`all-o3`, the profile before).
# The folders go under $BUILD_BENCH_DIR (default target/build-bench).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fresh=0
runs=1
configs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fresh) fresh=1 ;;
    --runs) runs="$2"; shift ;;
    *=*) configs+=("$1") ;;
    *) echo "bench/build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# The packages the release profile builds at opt-level 1 (Cargo.toml): our crates that do no
# numerical work and the large dependencies off the hot paths; `all-o3` raises them back to 3.
low=(wrl-diagnostics wrl-syntax wrl-check wrl-plan wrl-fmt wrl-lsp wrl-cli wrl-verl wrl-envd wrl-serve wrl-exec
  chromiumoxide_cdp chromiumoxide parquet rmcp minijinja lsp-types serde-sarif clap_builder miette pest_meta)
if [ ${#configs[@]} -eq 0 ]; then
  o3=""
  for c in "${low[@]}"; do o3+="profile.release.package.$c.opt-level=3 "; done
  configs=("as-is=" "all-o3=$o3")
fi
root="${BUILD_BENCH_DIR:-target/build-bench}"
mkdir -p "$root"
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0

ours() { # touch our crates, so that only they rebuild
  find compiler runtime -maxdepth 3 -path '*/src/lib.rs' -o -maxdepth 3 -path '*/src/main.rs' |
    xargs touch
}

echo "wrlc release build — $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), rustc $(rustc --version | cut -d' ' -f2)"
echo "(${runs} run(s) each; $([ $fresh = 1 ] && echo 'from an empty target folder' || echo 'our crates only, dependencies built beforehand'))"
echo
printf '| %-8s | %8s | %8s | %-15s | %-15s |\n' setting wall_s cpu_s "load before" "load after"
printf '|%s|%s|%s|%s|%s|\n' ---------- ---------- ---------- ----------------- -----------------
for spec in "${configs[@]}"; do
  name="${spec%%=*}"
  overrides=()
  for o in ${spec#*=}; do overrides+=(--config "$o"); done
  dir="$root/$name"
  if [ $fresh = 0 ]; then
    # The dependencies once: copied from target/release when it is there (their settings are
    # the same in every column), else built.
    if [ ! -d "$dir/release" ] && [ -d target/release ]; then
      mkdir -p "$dir" && cp -a target/release "$dir/release"
    fi
    CARGO_TARGET_DIR="$dir" cargo build --release -q -p wrl-cli "${overrides[@]}"
  fi
  for _ in $(seq "$runs"); do
    if [ $fresh = 1 ]; then rm -rf "$dir"; else ours; fi
    before="$(cut -d' ' -f1-3 /proc/loadavg)"
    t0=$(date +%s.%N)
    CARGO_TARGET_DIR="$dir" /usr/bin/time -f '%U %S' -o "$root/.cpu" \
      cargo build --release -q -p wrl-cli "${overrides[@]}"
    t1=$(date +%s.%N)
    cpu=$(awk '{printf "%.0f", $1+$2}' "$root/.cpu")
    printf '| %-8s | %8.0f | %8s | %-15s | %-15s |\n' "$name" "$(echo "$t1 - $t0" | bc)" "$cpu" \
      "$before" "$(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
