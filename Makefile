# GPUAlert build interface (spec/cli.md). Each target installs what it needs first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test bench corpus fuzz clean

all: build

deps:
	@scripts/install-deps.sh build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/install-deps.sh test
	@scripts/demo.sh $(BUILD)/gpualert

test:
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory build
	FUZZ_SECONDS=$${FUZZ_SECONDS:-15} JOBS=$(JOBS) tests/fuzz/run-fuzz.sh
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

fuzz:
	@scripts/install-deps.sh test
	FUZZ_SECONDS=$${FUZZ_SECONDS:-300} JOBS=$(JOBS) tests/fuzz/run-fuzz.sh

bench: build
	@scripts/install-deps.sh test
	@bench/run.sh $(BUILD)

corpus: build
	@scripts/install-deps.sh corpus
	@corpus/make-corpus.sh $(BUILD)/gpualert

clean:
	rm -rf $(BUILD)
