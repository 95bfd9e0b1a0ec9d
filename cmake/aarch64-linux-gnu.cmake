# Toolchain file: cross-compile for aarch64 (Kunpeng) on an x86-64 Debian 12 host with Debian's
# cross compiler (g++-aarch64-linux-gnu) against the host's :arm64 multiarch libraries
# (dpkg --add-architecture arm64; apt-get install libfmt-dev:arm64 ...), and run what was built
# (gtest_discover_tests at build time, ctest) under qemu-user. scripts/test-arm64.sh sets it all up:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(XINFER_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${XINFER_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${XINFER_CROSS_TRIPLE}-g++)
# Multiarch layout: find_library/find_package look in <prefix>/lib/aarch64-linux-gnu (never in
# .../x86_64-linux-gnu); CMake would also detect this from the compiler.
set(CMAKE_LIBRARY_ARCHITECTURE ${XINFER_CROSS_TRIPLE})

# Libraries and CMake package files come from the cross toolchain's own tree and from the :arm64
# multiarch packages under / (/usr/lib/aarch64-linux-gnu, headers in /usr/include); programs
# (pkg-config, the emulator) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${XINFER_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The cross compiler searches /usr/aarch64-linux-gnu/include but not the multiarch /usr/include.
# Add those after its own directories (-idirafter), so that the C library and libstdc++ headers
# stay the toolchain's. CMake's compiler detection then lists them as implicit include
# directories, so an imported target's INTERFACE_INCLUDE_DIRECTORIES of /usr/include adds no
# -isystem /usr/include (which would put the host's x86-64 C headers ahead of the toolchain's).
set(_xinfer_multiarch_includes
    "-idirafter /usr/include/${XINFER_CROSS_TRIPLE} -idirafter /usr/include")
set(CMAKE_C_FLAGS_INIT "${_xinfer_multiarch_includes}")
set(CMAKE_CXX_FLAGS_INIT "${_xinfer_multiarch_includes}")
# The linker finds libraries that the :arm64 packages' libraries need (DT_NEEDED), e.g. when a
# package's .so depends on another.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,/usr/lib/${XINFER_CROSS_TRIPLE}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,/usr/lib/${XINFER_CROSS_TRIPLE}")

# pkg_check_modules: only the :arm64 .pc files (and arch-independent ones), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${XINFER_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Run aarch64 binaries (test discovery at build time, ctest) under qemu-user. -L is the prefix
# where qemu looks first for the ELF interpreter and for every library the program opens. With
# the :arm64 multiarch glibc installed (libc6:arm64, which every :arm64 library package pulls in)
# it must be / : -L /usr/aarch64-linux-gnu would pair the cross toolchain's ld.so (2.36-8cross1)
# with the multiarch libc.so.6 from /lib/aarch64-linux-gnu (2.36-9+deb12uN), and with that mix
# the first thread the program starts hangs. The cross toolchain's glibc only serves the linker.
find_program(XINFER_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(XINFER_QEMU_LD_PREFIX /)
else()
  set(XINFER_QEMU_LD_PREFIX /usr/${XINFER_CROSS_TRIPLE})
endif()
if(XINFER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${XINFER_QEMU_AARCH64} -L ${XINFER_QEMU_LD_PREFIX})
else()
  message(WARNING "qemu-aarch64 not found (apt-get install qemu-user): aarch64 binaries will "
                  "build but gtest_discover_tests and ctest cannot run them")
endif()
