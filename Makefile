# xinfer top-level entry points. The README's quick start is `make serve` and `make test`.
JOBS ?= $(shell nproc)
CMAKE ?= cmake
CTEST_ARGS ?= --output-on-failure

.PHONY: all deps build build-debug test test-asan test-tsan test-arm64 serve format clean node-deps

all: build

# The presets configure with Ninja. A build folder configured earlier with another generator is
# reconfigured from scratch (CMake refuses to switch generators in place); its objects are rebuilt.
define forget-other-generator
@if [ -f $(1)/CMakeCache.txt ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$$' $(1)/CMakeCache.txt; then \
  echo "$(1): configured with another generator; reconfiguring with Ninja"; \
  rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles; fi
endef

deps:
	@scripts/install-deps.sh

build: deps
	$(call forget-other-generator,build)
	@$(CMAKE) --preset release >/dev/null
	@$(CMAKE) --build --preset release -j $(JOBS)
	@echo "built build/bin/xinfer"

build-debug: deps
	$(call forget-other-generator,build-debug)
	@$(CMAKE) --preset debug >/dev/null
	@$(CMAKE) --build --preset debug -j $(JOBS)

# Release build, all unit + integration tests (those needing ../shared skip when it is absent).
test: build node-deps
	@cd build && ctest $(CTEST_ARGS) -j $(JOBS)

# The server tests' npm packages (the official openai client), from package-lock.json.
node-deps:
	@[ -d tests/server/node_modules/openai ] || (cd tests/server && npm ci --no-audit --no-fund)

# The same tests under AddressSanitizer + UndefinedBehaviorSanitizer (run by CI), but for the
# whole-model reruns with XINFER_ISA=avx2 (the release run has them; the kernels they switch to
# keep their ASan coverage in backend_tests_simd_*): 2.4 of ASan's 7.6 test minutes (summed).
test-asan: deps node-deps
	$(call forget-other-generator,build-asan)
	@$(CMAKE) --preset asan >/dev/null
	@$(CMAKE) --build --preset asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest $(CTEST_ARGS) -j $(JOBS) \
	  -E '^(engine_batch_invariance|integration_tests)_simd_'

# ThreadSanitizer on what runs threads: the CPU backend's thread pool (its unit tests, and the
# model's ops on it with 2 threads), the async engine and the HTTP server (unit tests and the
# Node client tests at a smaller load).
test-tsan: deps node-deps
	$(call forget-other-generator,build-tsan)
	@$(CMAKE) --preset tsan >/dev/null
	@$(CMAKE) --build --preset tsan -j $(JOBS) --target xinfer base_tests engine_tests server_tests
	@cd build-tsan && ./bin/base_tests --gtest_filter='ThreadPool*' && ./bin/engine_tests && \
	  ./bin/server_tests && ctest $(CTEST_ARGS) -L server

# The CPU backend's unit tests cross-compiled for aarch64 (Kunpeng) in build-arm64/ and run under
# qemu-aarch64; the script installs the cross compiler, qemu-user and the :arm64 libraries.
test-arm64:
	@JOBS=$(JOBS) scripts/test-arm64.sh

serve: build
	@scripts/serve-default.sh

format:
	@clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')

clean:
	rm -rf build build-debug build-asan build-tsan build-arm64
