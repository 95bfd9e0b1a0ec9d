#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only when some are missing.
# Safe to run repeatedly; a no-op on a machine that has them all.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libpcre2-dev libutf8proc-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev libboost-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm (server tests): Debian's package, unless the installed Node already ships its own npm
# (NodeSource builds do, and conflict with Debian's npm package).
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing npm"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
fi
