# GPUAlert build interface (docs/spec/cli.md). Each target installs what it needs first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps configure build run install test bench corpus fuzz expected-verdicts clean

all: build

deps:
	@scripts/install-deps.sh build

# Run every time (quick when nothing changed): packages installed since the last run
# (GoogleTest for `make test`, pandoc for `make install`) are then found.
configure:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs the two programs only, not the tests.
run:
	@scripts/install-deps.sh run
	@$(MAKE) --no-print-directory configure
	cmake --build $(BUILD) -j $(JOBS) --target gpualert gpualert-notify
	@scripts/demo.sh $(BUILD)/gpualert

# Both programs (side by side in $(PREFIX)/bin) and the man pages; DESTDIR is honoured.
install:
	@scripts/install-deps.sh install
	@$(MAKE) --no-print-directory configure
	cmake --build $(BUILD) -j $(JOBS) --target gpualert gpualert-notify man
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

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

# After a deliberate change of verdicts: rewrite corpus/expected-verdicts.tsv, then
# review and commit it with the change (see docs/evaluation.md).
expected-verdicts:
	@$(MAKE) --no-print-directory configure
	cmake --build $(BUILD) -j $(JOBS) --target gpualert gpualert-notify
	@scripts/expected-verdicts.py --update $(BUILD)/gpualert

clean:
	rm -rf $(BUILD)
