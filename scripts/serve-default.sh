#!/usr/bin/env bash
# `make serve`: serves the default model on 127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! build/bin/xinfer --help 2>/dev/null | grep -q "^  serve"; then
  echo "make serve: the HTTP server (xinfer serve) is not built yet; see issue 'Serving'." >&2
  echo "Meanwhile: build/bin/xinfer generate --model ../shared/models/tinystories-656k --prompt-ids 1 --max-tokens 64 --temperature 0" >&2
  exit 1
fi
exec build/bin/xinfer serve "${XINFER_MODEL:-demo}" --host 127.0.0.1 --port 8000
