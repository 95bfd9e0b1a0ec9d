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
# XINFER_TEST_TMPDIR (set by CMakeLists.txt, one per test file) becomes TMPDIR for the tests and
# the servers they start, emptied first. Anything left in it afterwards fails the run, so that
# temporary files a test or xinfer forgets to remove cannot pile up in /tmp unnoticed.
if [ -n "${XINFER_TEST_TMPDIR:-}" ]; then
  rm -rf "$XINFER_TEST_TMPDIR"
  mkdir -p "$XINFER_TEST_TMPDIR"
  export TMPDIR="$XINFER_TEST_TMPDIR"
fi
rc=0
node --test --test-reporter=spec "$@" || rc=$?
if [ -n "${XINFER_TEST_TMPDIR:-}" ] && [ -n "$(ls -A "$XINFER_TEST_TMPDIR")" ]; then
  echo "FAIL: left behind in TMPDIR ($XINFER_TEST_TMPDIR):"
  ls -lA "$XINFER_TEST_TMPDIR"
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
