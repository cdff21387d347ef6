# Peri-C top-level targets. `make demo` and `make test` work on a fresh Debian 12
# machine: both first install missing packages through scripts/deps.sh.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=
# scripts/deps.sh puts a Node.js >= 20 here when the system's is older; the tests that
# run node or npx find it first on PATH.
PERI_CACHE_DIR ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/peri
export PERI_CACHE_DIR
export PATH := $(PERI_CACHE_DIR)/node/bin:$(PATH)

.PHONY: all deps build build-asan demo test test-release test-asan spectest bench fuzz fuzz-diff format clean install deb

all: build

deps:
	@./scripts/deps.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

$(ASAN_BUILD)/Makefile:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERI_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null

build: deps $(BUILD)/Makefile
	@$(MAKE) --no-print-directory -C $(BUILD) -j$(JOBS)

build-asan: deps $(ASAN_BUILD)/Makefile
	@$(MAKE) --no-print-directory -C $(ASAN_BUILD) -j$(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD)

test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS)

spectest: build
	./$(BUILD)/peri-spectest

bench: build
	./bench/run.sh $(BUILD)

fuzz: deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERI_FUZZ=ON -DPERI_SANITIZE=ON >/dev/null
	@$(MAKE) --no-print-directory -C build-fuzz -j$(JOBS) fuzz-wasm-decode fuzz-wasm-wat fuzz-room-yuyan fuzz-room-wasi fuzz-mcp-decode fuzz-wasm-diff \
	  fuzz-json fuzz-pgwire fuzz-net-http

# The differential fuzzer (interpreter vs JIT) for FUZZ_SECONDS (default 600), seeded
# with the spec testsuite's modules (unpacked from tests/data at configure time).
FUZZ_SECONDS ?= 600
fuzz-diff: fuzz
	mkdir -p build-fuzz/corpus-diff
	./build-fuzz/fuzz-wasm-diff -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=20 \
	  build-fuzz/corpus-diff $$(ls -d build-fuzz/testdata/spectest/core/*/ 2>/dev/null | head -200)

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: bin/peri, libexec/peri/peri-agent,
# the library, headers and docs (cmake/package.cmake).
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# make deb: build/peri_<version>_<arch>.deb (apt install ./build/peri_*.deb)
deb: build
	cd $(BUILD) && cpack -G DEB >/dev/null && ls -1 $$PWD/peri_*.deb

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
