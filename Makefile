# warden — see README.md. One target dir for the host and the wasm guests.
export CARGO_TARGET_DIR := $(CURDIR)/target
WASM := --release --target wasm32-wasip2
TASK ?= List the files in this workspace and say in two sentences what the project is.

.PHONY: wasm-target tools test-guests build test lint fmt bench run

## The guest target, installed once (what a fresh machine lacks).
wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## Built-in tool components (embedded into the warden binary).
tools: wasm-target
	cargo build $(WASM) --manifest-path tools-wasm/Cargo.toml

## Hostile and broken components used only by the tests.
test-guests: wasm-target
	cargo build $(WASM) --manifest-path tests/guests/Cargo.toml

## The warden binary only: a fresh clone builds it without the test guests.
build: tools
	cargo build --release -p warden-cli
	@# Shipped without debug info (about 40 MB instead of 190 MB); the test
	@# binaries keep their line tables.
	strip --strip-debug $(CARGO_TARGET_DIR)/release/warden

test: tools test-guests
	cargo build --release --workspace --bins
	cargo test --release --workspace
	cargo test --manifest-path tools-wasm/Cargo.toml

lint:
	cargo fmt --all --check
	cargo fmt --manifest-path tools-wasm/Cargo.toml --all --check
	cargo fmt --manifest-path tests/guests/Cargo.toml --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	cargo clippy $(WASM) --manifest-path tools-wasm/Cargo.toml -- -D warnings
	cargo clippy $(WASM) --manifest-path tests/guests/Cargo.toml -- -D warnings

fmt:
	cargo fmt --all
	cargo fmt --manifest-path tools-wasm/Cargo.toml --all
	cargo fmt --manifest-path tests/guests/Cargo.toml --all

bench: build test-guests
	cargo run --release -p warden-bench

## The main job: one task against the configured endpoint (see README).
run: build
	./target/release/warden run "$(TASK)"
