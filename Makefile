# single-owner-policy: the usual Kubewarden policy targets.
SHELL := /bin/bash
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
HOST := target/host/policy-host
WASM_OUT := target/wasm32-wasip1/release/single_owner_policy.wasm
# kwctl when it is installed, else the in-tree compatible host.
KWCTL ?= $(shell command -v kwctl 2>/dev/null || echo $(CURDIR)/$(HOST))
SAMPLE := e2e-tests/fixtures/crd-owner-change.json

OCI_REF ?= registry://ghcr.io/single-owner-policy/policies/single-owner:v$(VERSION)

.PHONY: all setup run host test e2e-tests lint fmt fmt-check check test-all clean publish bench fuzz-smoke FORCE

all: annotated-policy.wasm

# Installs what the build and tests need (wasm target, bats, registry, binaryen, jq).
setup:
	./scripts/setup.sh

# Debian's binaryen 108 needs the post-MVP features Rust emits named explicitly.
WASM_OPT_FLAGS := --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
	--enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types --enable-simd

policy.wasm: FORCE
	cargo build --target wasm32-wasip1 --release -p single-owner-policy
	cp $(WASM_OUT) target/policy.unopt.wasm
	wasm-opt $(WASM_OPT_FLAGS) -Oz target/policy.unopt.wasm -o policy.wasm

$(HOST): FORCE
	cargo build --profile host -p policy-host

host: $(HOST)

annotated-policy.wasm: policy.wasm $(HOST) metadata.yml README.md
	$(HOST) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# Artifact Hub package, generated from metadata.yml (the e2e suite checks it is up to date).
artifacthub-pkg.yml: $(HOST) FORCE
	$(HOST) scaffold artifacthub -m metadata.yml -q questions-ui.yml \
		--previous artifacthub-pkg.yml --output artifacthub-pkg.yml.tmp
	mv artifacthub-pkg.yml.tmp artifacthub-pkg.yml

# Push the annotated module: kwctl when installed, else policy-host (same artifact).
publish: annotated-policy.wasm
	@if command -v kwctl >/dev/null; then kwctl push annotated-policy.wasm $(OCI_REF); \
	else $(HOST) push annotated-policy.wasm $(OCI_REF); fi

# The main job: build the module and evaluate a sample request (an owner change on a CRD).
run:
	./scripts/setup.sh build
	$(MAKE) annotated-policy.wasm
	$(HOST) run -r $(SAMPLE) annotated-policy.wasm

test:
	cargo test --workspace

e2e-tests: annotated-policy.wasm
	KWCTL=$(KWCTL) bats e2e-tests/

# The comparison with the null and conventional modules; prints the table and the targets.
bench: policy.wasm $(HOST)
	cargo build --target wasm32-wasip1 --release -p null-module -p conventional-module
	python3 scripts/make-requests.py bench/requests
	python3 bench/run.py

# Each fuzz target for 60 s (CI); `cargo +nightly fuzz run TARGET` for longer runs.
FUZZ_TARGETS := validate_raw validate_structured validate_settings
fuzz-smoke:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$t && \
		cargo +nightly fuzz run $$t corpus/$$t -- -max_total_time=60 -max_len=65536 || exit 1; \
	done

lint:
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy --target wasm32-wasip1 -p single-owner-policy -- -D warnings

fmt:
	cargo fmt --all

fmt-check:
	cargo fmt --all -- --check

# Every test: formatting, lints, unit and property tests, the e2e suites through the built
# module (rules, hostile inputs, leak check, registry push/pull, metadata), and the fuzz smoke.
test-all: setup fmt-check lint test e2e-tests fuzz-smoke

clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm
