# The two commands of the README: `make demo` (install + build + run the demo) and `make test`
# (install + build + run every test CI runs). `make dev-test` runs the ASan/UBSan build.
.PHONY: demo test build setup dev-test bench clean

JOBS ?= $(shell nproc)

setup:
	./scripts/setup

build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

demo: build
	rm -rf build/quickstart
	./scripts/quickstart build/quickstart

test: build
	ctest --preset release

dev-test: setup
	cmake --preset dev >/dev/null
	cmake --build --preset dev -j $(JOBS)
	ctest --preset dev

bench: build
	./bench/train/run.sh

clean:
	rm -rf build
