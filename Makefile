# warden — see README.md. One target dir for the host and the wasm guests.
export CARGO_TARGET_DIR := $(CURDIR)/target
WASM := --release --target wasm32-wasip2
TASK ?= List the files in this workspace and say in two sentences what the project is.

.PHONY: wasm-target tools helper test-guests build install man test lint fmt bench run authoring-toolchains authoring-check examples fuzz

## The guest target, installed once (what a fresh machine lacks).
wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## Built-in tool components (embedded into the warden binary).
tools: wasm-target
	cargo build $(WASM) --manifest-path tools-wasm/Cargo.toml

## The confinement helper (embedded into the warden binary): a small
## binary of its own, which starts faster than warden. On Linux it is
## linked statically against musl (its target installed once, as the
## guests' is): it then starts in a fifth of the time a dynamically linked
## one takes, twice for every confined command. runtime/cli/build.rs
## embeds it from the same path.
HELPER_TARGET := $(if $(filter Linux,$(shell uname -s)),$(shell uname -m)-unknown-linux-musl)
helper:
ifneq ($(HELPER_TARGET),)
	@rustup target list --installed | grep -qx $(HELPER_TARGET) || rustup target add $(HELPER_TARGET)
	cargo build --release -p warden-confine-helper --target $(HELPER_TARGET)
else
	cargo build --release -p warden-confine-helper
endif

## Hostile and broken components used only by the tests.
test-guests: wasm-target
	cargo build $(WASM) --manifest-path tests/guests/Cargo.toml

## The warden binary only: a fresh clone builds it without the test guests.
BIN := $(CARGO_TARGET_DIR)/release/warden
build: tools helper
	cargo build --release -p warden-cli
	@# The profile has no debug info (Cargo.toml); this drops what the
	@# standard library brings. Stripped into a new file renamed over the
	@# old one: a running warden (`warden mcp` serving an editor) keeps
	@# its file, which cannot be written while it runs.
	strip --strip-debug -o $(BIN).stripped $(BIN)
	mv -f $(BIN).stripped $(BIN)

## warden into ~/.cargo/bin (cargo install's root), built-in tools first.
install: tools helper
	cargo install --locked --path runtime/cli

## The manual pages, from the same definitions as the parser: target/man.
man: build
	$(BIN) man --dir $(CARGO_TARGET_DIR)/man

test: tools helper test-guests
	cargo build --release --workspace --bins
	@$(MAKE) --no-print-directory authoring-check
	cargo test --release --workspace
	cargo test --manifest-path tools-wasm/Cargo.toml

## The fuzz targets of the parsers of untrusted bytes (fuzz/: cargo-fuzz,
## libFuzzer, the nightly toolchain), one after the other, FUZZ_SECONDS each
## (FUZZ_TARGETS to choose). Each starts from its seeds (fuzz/seeds/) and
## the corpus grown so far (fuzz/corpus/); an input that fails is saved
## under fuzz/artifacts/TARGET/ and stops the run. `make test` runs the
## same properties under proptest, on stable.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(patsubst fuzz/fuzz_targets/%.rs,%,$(wildcard fuzz/fuzz_targets/*.rs))
fuzz:
	@rustup toolchain list | grep -q '^nightly' || { echo "make fuzz needs the nightly toolchain: rustup toolchain install nightly"; exit 1; }
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus/$$t fuzz/artifacts/$$t && \
		cargo +nightly fuzz run --target-dir $(CARGO_TARGET_DIR)/fuzz $$t fuzz/corpus/$$t fuzz/seeds/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 -artifact_prefix=fuzz/artifacts/$$t/ || exit 1; \
	done

## Python and JavaScript tool toolchains, from PyPI and npm (idempotent):
## componentize-py on PATH, componentize-js in target/authoring/js. The
## authoring tests and the examples skip a language whose toolchain is missing.
AUTHORING := $(CARGO_TARGET_DIR)/authoring
authoring-toolchains:
	@command -v componentize-py >/dev/null || pip install 'componentize-py==0.25.*'
	@[ -f $(AUTHORING)/js/node_modules/@bytecodealliance/componentize-js/package.json ] || \
		npm install --prefix $(AUTHORING)/js --no-save --no-audit --no-fund \
			'@bytecodealliance/componentize-js@0.23'

## Says which authoring tests will skip (no toolchain), before they run.
authoring-check:
	@command -v componentize-py >/dev/null || echo "note: componentize-py is missing: the Python tool tests skip (make authoring-toolchains)"
	@command -v node >/dev/null && [ -f $(AUTHORING)/js/node_modules/@bytecodealliance/componentize-js/package.json ] || \
		echo "note: node or componentize-js is missing: the JavaScript tool tests skip (make authoring-toolchains)"

## The example tools (examples/tools) built into target/examples, one per
## language whose toolchain is installed.
EXAMPLES := $(CARGO_TARGET_DIR)/examples
examples: wasm-target
	@mkdir -p $(EXAMPLES)
	cargo build $(WASM) --manifest-path examples/tools/rust/Cargo.toml
	cp $(CARGO_TARGET_DIR)/wasm32-wasip2/release/word_count.wasm $(EXAMPLES)/word_count_rust.wasm
	cargo build $(WASM) --manifest-path examples/tools/rust-note/Cargo.toml
	cp $(CARGO_TARGET_DIR)/wasm32-wasip2/release/save_note.wasm $(EXAMPLES)/save_note.wasm
	@if command -v componentize-py >/dev/null; then \
		cd examples/tools/python && componentize-py -d wit -w warden:tool/component componentize app \
			-o $(EXAMPLES)/word_count_python.wasm; \
	else echo "skipped the Python example: componentize-py is missing (make authoring-toolchains)"; fi
	@if command -v node >/dev/null && [ -d $(AUTHORING)/js/node_modules/@bytecodealliance/componentize-js ]; then \
		ln -sfn $(AUTHORING)/js/node_modules examples/tools/js/node_modules && \
		node examples/tools/js/build.mjs $(EXAMPLES)/word_count_js.wasm; \
	else echo "skipped the JavaScript example: componentize-js is missing (make authoring-toolchains)"; fi

lint: tools helper test-guests
	cargo fmt --all --check
	cargo fmt --manifest-path tools-wasm/Cargo.toml --all --check
	cargo fmt --manifest-path tests/guests/Cargo.toml --all --check
	cargo fmt --manifest-path fuzz/Cargo.toml --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	cargo clippy $(WASM) --manifest-path tools-wasm/Cargo.toml -- -D warnings
	cargo clippy $(WASM) --manifest-path tests/guests/Cargo.toml -- -D warnings

fmt:
	cargo fmt --all
	cargo fmt --manifest-path tools-wasm/Cargo.toml --all
	cargo fmt --manifest-path tests/guests/Cargo.toml --all
	cargo fmt --manifest-path fuzz/Cargo.toml --all

bench: build test-guests examples
	@# Built with the whole workspace: `-p warden-bench` alone unifies other
	@# features and would compile wasmtime a second time.
	cargo build --release --workspace --bins
	$(CARGO_TARGET_DIR)/release/warden-bench

## The main job: one task against the configured endpoint (see README).
run: build
	./target/release/warden run "$(TASK)"
