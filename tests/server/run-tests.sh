#!/usr/bin/env bash
# Runs one server test file under `node --test` (called by CTest; see CMakeLists.txt).
# Exit 77 (CTest: skipped) when Node or the openai package is missing, e.g. on a machine where
# `make test` has not run `npm ci` yet.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
if [ ! -d node_modules/openai ]; then
  echo "SKIP: tests/server/node_modules is missing; run 'npm ci' in tests/server (make test does)"
  exit 77
fi
exec node --test --test-reporter=spec "$@"
