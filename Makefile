# The two commands of the README: `make demo` (install + build + run the demo) and `make test`
# (install + build + run every test CI runs: house-rule checks, the release tests, then the
# ASan/UBSan build with -Werror and its tests). `make tsan-test` runs the ThreadSanitizer build.
.PHONY: demo test build setup check release-test dev-test tsan-test bench clean

JOBS ?= $(shell nproc)

setup:
	./scripts/setup

build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

demo: build
	rm -rf build/quickstart
	./scripts/quickstart build/quickstart

test: check release-test dev-test

# House rules: the layer graph (DESIGN.md section 2) and clang-format on lines changed since
# .ci/format-base.
check: setup
	./scripts/check_layers.py
	./scripts/check_format

release-test: build
	ctest --preset release

dev-test: setup
	cmake --preset dev >/dev/null
	cmake --build --preset dev -j $(JOBS)
	ctest --preset dev

tsan-test: setup
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan

bench: build
	./bench/train/run.sh

clean:
	rm -rf build
