# Sourced by the vision benches (vision-speed.sh, vl-turn.sh): the Python with torch and
# transformers they compare against (VISION_PYTHON, else bench/.venv-vision-tower, made from PyPI
# the first time) as $PY, and the Chromium that takes their screenshot as $CHROME. $1: the
# bench's name, for the error.
PY="${VISION_PYTHON:-bench/.venv-vision-tower/bin/python}"
if [ -z "${VISION_PYTHON:-}" ] && [ ! -x "$PY" ]; then
  python3 -m venv bench/.venv-vision-tower >&2
  bench/.venv-vision-tower/bin/pip install --quiet "transformers>=5.20" torch pillow numpy safetensors >&2
fi
CHROME="$(command -v chromium-headless-shell || command -v chromium || true)"
[ -n "$CHROME" ] || { echo "$1: no Chromium (chromium-headless-shell) on PATH" >&2; exit 1; }
