#!/usr/bin/env bash
# Cross-builds the CPU backend's unit tests (backend_tests) for aarch64 (Kunpeng) on an x86-64
# Debian 12 host and runs them under qemu-aarch64. Safe to run repeatedly: it installs only what
# is missing (the cross compiler, qemu-user, the :arm64 variants of the libraries CMake requires)
# and reuses build-arm64/.
#   JOBS=2 scripts/test-arm64.sh              # every test src/backend registers
#   scripts/test-arm64.sh -R 'FastCpuOpsTest'  # arguments go to ctest
# Knobs: JOBS (build and ctest parallelism, default nproc), BUILD_DIR (default build-arm64),
# BUILD_TYPE (default Release), CMAKE_ARGS (extra configure arguments), CTEST_ARGS (default
# --output-on-failure), SKIP_INSTALL=1 (skip the package check), INSTALL_OPTIONAL=1 (CI: when
# the packages cannot be installed, say so and exit 0 instead of failing), QEMU_CPU (read by qemu
# itself). Without QEMU_CPU the tests run twice: on neoverse-n1 (NEON only, like the Kunpeng 920:
# Highway picks NEON) and the FastCpuOps suites again on qemu's "max" CPU (SVE2: Highway's
# sizeless-vector code).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
BUILD_DIR=${BUILD_DIR:-build-arm64}
BUILD_TYPE=${BUILD_TYPE:-Release}
TRIPLE=aarch64-linux-gnu

# Host (amd64) packages: the cross compiler, the emulator, the build tools, and the
# architecture-independent header-only libraries (their arch "all" packages serve every arch).
HOST_PACKAGES=(
  cmake make pkg-config g++-aarch64-linux-gnu qemu-user nlohmann-json3-dev libcli11-dev
)
# :arm64 multiarch packages for every find_package/pkg_check_modules in the CMake files
# (Boost for src/server, GTest/GMock for the tests, Highway for the backend's kernels).
ARM64_PACKAGES=(
  libfmt-dev libpcre2-dev libutf8proc-dev libgtest-dev libgmock-dev libhwy-dev libboost-dev
)

t_phase=0
phase() { t_phase=$EPOCHREALTIME; echo "== test-arm64: $1"; }
phase_done() {
  awk -v p="$1" -v a="$EPOCHREALTIME" -v b="$t_phase" \
    'BEGIN { printf "== test-arm64: %s took %.1f s\n", p, a - b }'
}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
apt_get() {
  # Waits for a dpkg/apt lock held by someone else rather than failing.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 "$@"
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
has_arm64_candidate() {
  local c
  c=$(apt-cache policy libfmt-dev:arm64 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install_failed() {
  if [ "${INSTALL_OPTIONAL:-0}" = 1 ]; then
    echo "test-arm64: SKIPPED: could not install the aarch64 cross toolchain, qemu-user or the"
    echo "test-arm64: :arm64 libraries from the apt sources (see above); nothing was tested"
    exit 0
  fi
  echo "test-arm64: installing packages failed"
  exit 1
}

# ---- install ------------------------------------------------------------------------------------
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  phase install
  need_update=0
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "test-arm64: dpkg --add-architecture arm64"
    $SUDO dpkg --add-architecture arm64 || install_failed
    need_update=1
  fi
  missing=()
  for p in "${HOST_PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
  for p in "${ARM64_PACKAGES[@]}"; do installed "$p:arm64" || missing+=("$p:arm64"); done
  if ((${#missing[@]})) || ((need_update)); then
    apt_get update -qq || install_failed
    if ! has_arm64_candidate; then
      # Sources restricted to amd64 ([arch=amd64] / Architectures: amd64) or a mirror without
      # arm64: take arm64 from the main Debian mirror, which carries it.
      echo "test-arm64: no arm64 packages in the apt sources; adding deb.debian.org for arm64"
      signed_by=""
      if [ -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
        signed_by="Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
      fi
      $SUDO tee /etc/apt/sources.list.d/debian-arm64.sources >/dev/null <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Architectures: arm64
$signed_by

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Architectures: arm64
$signed_by
EOF
      apt_get update -qq || install_failed
      has_arm64_candidate || install_failed
    fi
    if ((${#missing[@]})); then
      echo "test-arm64: installing ${missing[*]}"
      apt_get install -y -qq --no-install-recommends "${missing[@]}" || install_failed
    fi
  fi
  phase_done install
fi

# ---- configure ----------------------------------------------------------------------------------
phase configure
mkdir -p "$BUILD_DIR"
# shellcheck disable=SC2086 # CMAKE_ARGS is a list of words
cmake -S . -B "$BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/$TRIPLE.cmake" \
  -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DXINFER_BUILD_TESTS=ON ${CMAKE_ARGS:-} >"$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log"; exit 1; }
grep -E "^-- (xinfer|Found)" "$BUILD_DIR/configure.log" || true
phase_done configure

# ---- build --------------------------------------------------------------------------------------
phase "build backend_tests (-j $JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS" --target backend_tests
file "$BUILD_DIR/bin/backend_tests" 2>/dev/null | sed 's/, BuildID.*//' || true
phase_done build

# ---- test ---------------------------------------------------------------------------------------
# ctest in the backend's build folder runs only the tests src/backend registers (backend_tests'
# cases, discovered at build time under qemu, and its extra add_test runs), each through the
# toolchain's CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64).
rc=0
run_ctest() {
  phase "ctest src/backend under qemu-aarch64, QEMU_CPU=${QEMU_CPU:-max} (-j $JOBS)"
  # shellcheck disable=SC2086 # CTEST_ARGS is a list of words
  (cd "$BUILD_DIR/src/backend" && ctest ${CTEST_ARGS:---output-on-failure} -j "$JOBS" "$@") || rc=$?
  phase_done test
}
if [ -n "${QEMU_CPU:-}" ]; then
  run_ctest "$@"
else
  QEMU_CPU=neoverse-n1 run_ctest "$@"
  QEMU_CPU=max run_ctest -R 'FastCpuOpsTest' "$@"
fi
if ((rc)); then
  echo "test-arm64: backend tests FAILED on aarch64 (ctest exit $rc)"
  exit "$rc"
fi
echo "test-arm64: backend tests passed on aarch64"
