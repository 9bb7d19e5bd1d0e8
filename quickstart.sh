#!/usr/bin/env bash
# Sets up everything wrl needs on a Debian machine and runs the main job: the quickstart recipe
# on the embedded default (a tiny policy on the sandbox web, in real Chromium, on the CPU).
# Usage: ./quickstart.sh            (as root, or as a user who can sudo apt-get)
set -euo pipefail
cd "$(dirname "$0")"

need_pkgs=()
# Chromium's headless shell (its build for automation), which wrl prefers over `chromium`.
command -v chromium-headless-shell >/dev/null 2>&1 || need_pkgs+=(chromium-headless-shell fonts-liberation)
command -v cc >/dev/null 2>&1 || need_pkgs+=(gcc)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing system packages: ${need_pkgs[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "error: cargo not found; install Rust from https://rustup.rs and run this again" >&2
  exit 2
}

cargo build --release -p wrl-cli
wrlc=target/release/wrlc
"$wrlc" check recipes/
if "$wrlc" run --help >/dev/null 2>&1; then
  "$wrlc" run recipes/quickstart.wrl "$@"
else
  "$wrlc" check recipes/quickstart.wrl
fi
