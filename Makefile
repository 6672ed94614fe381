# single-owner-policy: the usual Kubewarden policy targets.
SHELL := /bin/bash
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
HOST := target/host/policy-host
# policy-host as the timing targets build it: wasmtime's runtime optimized (Cargo.toml, host-opt).
HOST_OPT := target/host-opt/policy-host
WASM_OUT := target/wasm32-wasip1/release/single_owner_policy.wasm
# kwctl when it is installed, else the in-tree compatible host.
KWCTL_BIN := $(shell command -v kwctl 2>/dev/null)
KWCTL ?= $(if $(KWCTL_BIN),$(KWCTL_BIN),$(CURDIR)/$(HOST))
SAMPLE := e2e-tests/fixtures/crd-owner-change.json

# The cluster suites' kubectl: the one built with the kube-apiserver (KUBECTL, else
# control-plane/build.sh kubectl), linked into target/tools/kube by `scripts/setup.sh cluster`,
# ahead of the machine's own on every recipe's PATH.
export PATH := $(CURDIR)/target/tools/kube:$(PATH)

OCI_REF ?= registry://ghcr.io/single-owner-policy/policies/single-owner:v$(VERSION)

.PHONY: all setup run host test e2e-tests lint lint-workflows fmt fmt-check test-all clean \
	publish readme-test bench fuzz-smoke host-bin race race-smoke cluster-up cluster-down cluster-e2e cluster-race \
	cluster-race-smoke cluster-latency cluster-olm cluster-olm-smoke kube-apiserver kubectl-plugin cluster-smoke cluster-e2e-full \
	cluster-owners bench-owners bench-owners-smoke cluster-olm-v0 proof-writes kubectl-plugin-archive FORCE

all: annotated-policy.wasm

# Installs what the build and tests need (wasm target, bats, registry, binaryen, etcd, ...).
setup:
	./scripts/setup.sh

# Debian's binaryen 108 needs the post-MVP features Rust emits named explicitly.
WASM_OPT_FLAGS := --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
	--enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types --enable-simd

policy.wasm: FORCE
	@command -v wasm-opt >/dev/null && rustup target list --installed | grep -qx wasm32-wasip1 \
		|| ./scripts/setup.sh build
	cargo build --target wasm32-wasip1 --release -p single-owner-policy
	cp $(WASM_OUT) target/policy.unopt.wasm
	wasm-opt $(WASM_OPT_FLAGS) -Oz target/policy.unopt.wasm -o policy.wasm

# policy-host and every other native build use the `host` profile (Cargo.toml), and build
# the whole workspace with all its targets, as the tests do: with the same packages selected,
# the features of the shared dependencies (syn, through the tests' proc macros) are the same,
# so that wasmtime compiles once per machine, not once per command.
#
# Clippy is the workspace wrapper of every host build and of the tests (the mechanism `cargo
# clippy` itself uses, with CLIPPY_ARGS): the workspace's own crates are linted as they
# compile, in build mode, and compile once. A build without the wrapper has other
# fingerprints, so lint, test and host compiled them three times (83 s of a CI run on 2
# cores); `cargo clippy` would also check every dependency again (wasmtime above all), four
# more minutes on a fresh machine.
CLIPPY_DRIVER = $(shell dirname $$(rustup which cargo))/clippy-driver
HOST_CARGO = CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
	RUSTC_WORKSPACE_WRAPPER=$(CLIPPY_DRIVER) cargo
NEED_CLIPPY = @[ -x "$(CLIPPY_DRIVER)" ] || rustup component add clippy
HOST_BUILD = $(HOST_CARGO) build --profile host --workspace --all-targets
$(HOST): FORCE
	$(NEED_CLIPPY)
	$(HOST_BUILD)

host: $(HOST)

# policy-host for the targets that time the host's side of a call (bench, race, cluster-race,
# cluster-latency): a second wasmtime build, optimized, in a profile of its own.
$(HOST_OPT): FORCE
	$(NEED_CLIPPY)
	$(HOST_CARGO) build --profile host-opt -p policy-host --bin policy-host

# The one host binary that running the module needs (annotate, run, and README's
# verify-manifest, selects and match-conditions after `make run`), built alone and with only
# the feature those need (`selects`): not the kubectl plugin, the tests, the examples or the
# benchmarks, nor policy-host's registry client, HTTP server and client, or jemalloc. Through
# the same clippy wrapper as the full build, and with the workspace-hack crate (.config/
# hakari.toml) giving every crate it shares with the full build the full build's features, so
# that the full build finds wasmtime compiled (e2e-tests/build.bats); the full build then
# compiles policy-host with all its features beside this one (cargo keeps both).
HOST_BIN_FEATURES := --no-default-features --features selects
host-bin:
	$(NEED_CLIPPY)
	$(HOST_CARGO) build --profile host -p policy-host --bin policy-host $(HOST_BIN_FEATURES)

# kwctl annotates when it is installed (Kubewarden's release workflow has it), else policy-host:
# the whole one ($(HOST)), which every target that tests the module needs anyway, or with
# `make run` the one host-bin builds (ANNOTATE_HOST=host-bin). Both land at $(HOST): cargo puts
# the binary of its last build there.
ANNOTATE_HOST ?= $(HOST)
ifeq ($(KWCTL_BIN),)
annotated-policy.wasm: policy.wasm $(ANNOTATE_HOST) metadata.yml README.md
	$(HOST) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm
else
annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL_BIN) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm
endif

# Artifact Hub package, generated from metadata.yml (the e2e suite checks it is up to date).
artifacthub-pkg.yml: $(HOST) FORCE
	$(HOST) scaffold artifacthub -m metadata.yml -q questions-ui.yml \
		--previous artifacthub-pkg.yml --output artifacthub-pkg.yml.tmp
	mv artifacthub-pkg.yml.tmp artifacthub-pkg.yml

# Push the annotated module: kwctl when installed, else policy-host (same artifact).
publish: annotated-policy.wasm
	@if [ -n "$(KWCTL_BIN)" ]; then $(KWCTL_BIN) push annotated-policy.wasm $(OCI_REF); \
	else $(MAKE) -s host && $(HOST) push annotated-policy.wasm $(OCI_REF); fi

# The main job: build the module and evaluate a sample request (an owner change on a CRD)
# with the annotated module, as a cluster would pull it: with kwctl when it is installed (then
# nothing else is built), else with policy-host, the one host binary built beside the module
# (the module's last step, fat LTO in one codegen unit, keeps one core busy alone).
run:
	$(MAKE) --no-print-directory -j2 policy.wasm $(if $(KWCTL_BIN),,host-bin)
	$(MAKE) --no-print-directory annotated-policy.wasm ANNOTATE_HOST=host-bin
	$(KWCTL) run -r $(SAMPLE) annotated-policy.wasm

# The shell commands of README.md and docs/*.md, in order, on the built tree (scripts/readme-test.py says which it
# cannot run here, and why).
# README's `make run` leaves its policy-host (host-bin's, with `selects` alone) at $(HOST), and
# the README's commands after it run on that one; the whole one is put back after them (cargo
# finds it built: a copy), for the targets after this one.
readme-test: annotated-policy.wasm $(HOST)
	python3 scripts/readme-test.py
	$(HOST_BUILD)

test:
	$(NEED_CLIPPY)
	$(HOST_CARGO) test --workspace --profile host

# The proof's generated marker changes (policy-host/src/proof.rs) as request files, for the
# suites that send them through a real API server (e2e-tests/cluster/selection.py).
proof-writes:
	$(NEED_CLIPPY)
	rm -rf target/proof-writes
	PROOF_WRITES_DIR=$(CURDIR)/target/proof-writes $(HOST_CARGO) test --workspace --profile host -- \
		--ignored --exact proof::write_the_generated_writes

e2e-tests: annotated-policy.wasm $(HOST)
	@./scripts/setup.sh test
	KWCTL=$(KWCTL) bats e2e-tests/

# The comparison with the null, floor, index floor and conventional modules; prints the
# table and the targets, and writes them into docs/performance.md.
bench: policy.wasm $(HOST_OPT)
	cargo build --target wasm32-wasip1 --release -p null-module -p floor-module -p conventional-module
	cargo build --target wasm32-wasip1 --release -p floor-module --features index --target-dir target/index-floor
	python3 scripts/make-requests.py bench/requests
	POLICY_HOST=$(HOST_OPT) python3 bench/run.py

# Racing reconcilers over a real etcd: every scenario, client check against admission.
RACE_FLAGS ?= --writers 8 --objects 12 --writes 5000 --duration 120 --think-ms 5
# The table lands in docs/concurrency.md too, between its race markers.
race: policy.wasm $(HOST_OPT)
	@./scripts/setup.sh race
	set -o pipefail; $(HOST_OPT) race $(RACE_FLAGS) policy.wasm | tee target/race.md
	python3 scripts/doc_table.py docs/concurrency.md race --tables-only \
		--command "make race RACE_FLAGS='$(RACE_FLAGS)'" <target/race.md

# The short, bounded version (CI): fails on any admission-mode violation, or a client-check
# run that shows no race.
race-smoke: policy.wasm $(HOST)
	@./scripts/setup.sh race
	$(HOST) race --writers 6 --objects 9 --duration 4 --think-ms 5 --require policy.wasm

# A real control plane on loopback (control-plane/cluster.sh): etcd, kube-apiserver (KUBE_APISERVER,
# else upstream Kubernetes 1.37 built once per machine from the Go module proxy:
# control-plane/build.sh, control-plane/kubernetes/go.mod), the webhook backend (POLICY_SERVER,
# else policy-host serve) and the webhooks kubewarden-controller makes of deploy/*.yaml. `make
# cluster-up`, then `source target/cluster/env` and use kubectl; `make cluster-down` stops it.
# `make kube-apiserver` prints the binary's path (building it when the cache has none).
kube-apiserver:
	@./control-plane/build.sh kube-apiserver

cluster-up: annotated-policy.wasm $(HOST)
	./control-plane/cluster.sh up

cluster-down:
	./control-plane/cluster.sh down

# Every rule through kubectl, real Helm and the real API server, with the shipped manifests: the
# one-tool presets, the identity presets, then the all-tools preset, each on a cluster of its own.
# The real tools the suites run (REAL_TOOLS: Flux's controllers and Timoni's CLI, whose builds fit
# CI's budget) are built once per machine from the Go module proxy (control-plane/build.sh); a
# suite whose tool is left out skips. `make cluster-e2e-full` adds Argo CD and Crossplane: their
# first builds (about 4 and 2.5 minutes on 2 cores after the others) and suites (about 10 minutes
# over the three clusters) would take CI past its budget.
REAL_TOOLS ?= source-controller kustomize-controller helm-controller timoni
REAL_TOOLS_FULL := $(REAL_TOOLS) argocd crossplane function-patch-and-transform
cluster-e2e-full:
	$(MAKE) cluster-e2e REAL_TOOLS="$(REAL_TOOLS_FULL)"

cluster-e2e: annotated-policy.wasm $(HOST) proof-writes
	@./scripts/setup.sh test
	tools="$$(./control-plane/build.sh --exports $(REAL_TOOLS))" && eval "$$tools" || exit 1; \
	trap './control-plane/cluster.sh down' EXIT; ./control-plane/cluster.sh up && bats e2e-tests/cluster/ && \
		./control-plane/cluster.sh up deploy/identity/*.yaml && bats e2e-tests/cluster-identity/ && \
		./control-plane/cluster.sh up deploy/all-tools.yaml && bats e2e-tests/cluster-tools/

# The smoke on the older release (Kubernetes 1.35, the oldest upstream supports:
# control-plane/kubernetes-1.35/go.mod, its kube-apiserver, kube-controller-manager and
# kube-scheduler): the one-tool presets with the real Kubewarden controller, the webhooks
# compared with the emulation's, the selection proof (every write sent exactly as `selects`
# predicts, through 1.35's CEL) and the outage test.
SMOKE_TESTS := the controller wrote|exactly the writes policy-host selects predicts|the backend down
cluster-smoke: annotated-policy.wasm $(HOST) proof-writes
	@./scripts/setup.sh test
	trap './control-plane/cluster.sh down' EXIT; \
		export KUBE_APISERVER="$$(./control-plane/build.sh kube-apiserver-1.35)" && \
		export KUBE_CONTROLLER_MANAGER="$$(./control-plane/build.sh kube-controller-manager-1.35)" && \
		export KUBE_SCHEDULER="$$(./control-plane/build.sh kube-scheduler-1.35)" && \
		./control-plane/cluster.sh up && \
		bats --filter '$(SMOKE_TESTS)' e2e-tests/cluster/kubewarden.bats e2e-tests/cluster/selection.bats \
			e2e-tests/cluster/rules.bats

# The race through real API servers: every scenario, write style and mode through one API
# server, then again with the writers split between two on the same etcd, each with a
# backend of its own (two replicas on one address), then real Helm's releases racing for
# shared objects (scripts/helm-race.py); the tables land in docs/concurrency.md.
CLUSTER_RACE_FLAGS ?= --writers 8 --objects 12 --writes 2000 --duration 20 --think-ms 5
HELM_RACE_FLAGS ?= --rounds 20 --releases 2
cluster-race: annotated-policy.wasm $(HOST) $(HOST_OPT)
	POLICY_HOST=$${POLICY_HOST:-$(HOST_OPT)} CLUSTER_RACE_FLAGS="$(CLUSTER_RACE_FLAGS)" HELM_RACE_FLAGS="$(HELM_RACE_FLAGS)" REQUIRE_RACE=1 \
		./scripts/cluster-race.sh target/cluster-race.md
	python3 scripts/doc_table.py docs/concurrency.md cluster-race --tables-only \
		--command "make cluster-race CLUSTER_RACE_FLAGS='$(CLUSTER_RACE_FLAGS)' HELM_RACE_FLAGS='$(HELM_RACE_FLAGS)'" \
		<target/cluster-race.md

# The short version, for CI: fails on any admission violation, or a run that wrote nothing or
# in which no Helm action got through to the API server's answer (whether a short client-check
# run loses the race is left to the full run).
cluster-race-smoke: annotated-policy.wasm $(HOST)
	CLUSTER_RACE_FLAGS="--writers 6 --objects 6 --writes 400 --duration 4 --think-ms 5" \
		HELM_RACE_FLAGS="--rounds 3 --releases 2" ./scripts/cluster-race.sh target/cluster-race-smoke.md

# What a preset costs a write through the API server: the ordinary UPDATE of an owned object and
# owner changes, with and without a lookup, under no policy, a VAP, the preset as shipped and
# without its generated condition, in interleaved blocks (the latency table of
# docs/performance.md; scripts/cluster-latency.sh).
cluster-latency: annotated-policy.wasm $(HOST) $(HOST_OPT)
	POLICY_HOST=$${POLICY_HOST:-$(HOST_OPT)} ./scripts/cluster-latency.sh target/cluster-latency.md
	python3 scripts/doc_table.py docs/performance.md latency <target/cluster-latency.md \
		--command "make cluster-latency$(if $(POLICY_SERVER), POLICY_SERVER=$(POLICY_SERVER))$(if $(LATENCY_BLOCKS), LATENCY_BLOCKS=$(LATENCY_BLOCKS))$(if $(LATENCY_WRITES), LATENCY_WRITES=$(LATENCY_WRITES))"

# The real OLM v1 (operator-controller and catalogd) through a real kube-apiserver, with the
# policy (scripts/cluster-olm.sh): install, upgrade and a second extension sharing a CRD under
# deploy/olm-v1.yaml and deploy/all-tools.yaml, the identity preset with the writer
# operator-controller really uses, the move from the Helm applier to boxcutter (with OLM_CRDS
# naming the ClusterObjectSet CRD), and two operator-controllers racing. Needs
# OPERATOR_CONTROLLER, CATALOGD and a KUBE_APISERVER 1.28 or newer (none is on any registry:
# build them from their public sources, outside the repository); without them it prints why it
# skips and passes.
OLM_RACE_ROUNDS ?= 10
cluster-olm: annotated-policy.wasm $(HOST)
	OLM_RACE_ROUNDS=$(OLM_RACE_ROUNDS) ./scripts/cluster-olm.sh

cluster-olm-smoke: annotated-policy.wasm $(HOST)
	OLM_RACE_ROUNDS=3 ./scripts/cluster-olm.sh

# The real OLM v0 (olm-operator, catalog-operator, opm) through a real kube-apiserver, with the
# policy (scripts/cluster-olm-v0.sh, e2e-tests/cluster-olm-v0/): install from a catalog, upgrades
# along replaces and skips, a second operator shipping the first's objects or CRD, uninstall,
# under deploy/olm-v0.yaml and deploy/all-tools.yaml, and a lookup refused by RBAC. Needs
# OLM_OPERATOR, CATALOG_OPERATOR, OPM, OLM_CRDS_DIR (OLM's deploy/chart/crds) and a
# KUBE_APISERVER 1.30 or newer, and root (network namespaces); none is on any registry: build
# them from their public sources, outside the repository. Without them it says why it skips.
cluster-olm-v0: annotated-policy.wasm $(HOST)
	./scripts/cluster-olm-v0.sh

# Each fuzz target for FUZZ_SECONDS (CI: the whole committed corpus replayed against the
# oracles, then 20 s of new inputs each); `make fuzz-smoke FUZZ_SECONDS=600`, or `cargo
# +nightly fuzz run -s none TARGET`, for the long runs that grow the corpus. No sanitizer:
# the policy's `unsafe` is SSE2/SIMD intrinsics on 16-byte arrays and one str view of bytes
# already checked as UTF-8, where AddressSanitizer finds nothing that bounds checks and the
# oracles (UTF-8 included) do not; without it the targets build in half the time and run
# 1.4x-2.8x more inputs a second; leaks are checked by the 100,000-evaluation soak in
# e2e-tests/hostile.bats. cargo-fuzz only drives cargo and libFuzzer, so it is installed
# unoptimised (--debug): 22 s instead of about two minutes.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := validate_raw validate_structured validate_settings
fuzz-smoke:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --debug
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p corpus/$$t && \
		cargo +nightly fuzz run -s none $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536 || exit 1; \
	done

# Clippy on the native workspace is the host build's (see HOST_BUILD); the module's crates
# are linted for the wasm target too.
lint: lint-workflows $(HOST)
	cargo clippy --target wasm32-wasip1 -p single-owner-policy -- -D warnings
	cargo clippy --target wasm32-wasip1 -p floor-module --features index --target-dir target/index-floor \
		-- -D warnings

# actionlint and zizmor on .github/workflows, and the make targets they call.
lint-workflows:
	./scripts/lint-workflows.sh

# The fuzz crate is a workspace of its own (cargo-fuzz's layout), so it is named apart.
fmt:
	cargo fmt --all
	cargo fmt --all --manifest-path fuzz/Cargo.toml

fmt-check:
	cargo fmt --all -- --check
	cargo fmt --all --manifest-path fuzz/Cargo.toml -- --check

# Every test: formatting, lints, unit and property tests, the e2e suites through the built
# module (rules, hostile inputs, leak check, registry push/pull, metadata, the README's refusal
# table), README's commands, the race against etcd, the fuzz smoke, and the rules and the race through
# upstream Kubernetes 1.37 with the real Kubewarden controller, and the smoke on 1.35 (all built once
# per machine from the Go module proxy on first use: control-plane/build.sh).
test-all: setup fmt-check lint test e2e-tests readme-test race-smoke fuzz-smoke cluster-e2e cluster-smoke \
	cluster-race-smoke cluster-olm-smoke cluster-owners bench-owners-smoke

# kubectl single-owner (kubectl-plugin/, docs/owners.md): target/host/kubectl-single_owner; on
# PATH it is `kubectl single-owner`. The host build builds it, with the rest of the workspace
# (the same features, so nothing compiles twice).
kubectl-plugin: $(HOST)

# The plugin's release archive for one platform, as krew installs it (the release workflow
# builds one per platform; scripts/plugin-archive.sh, .krew.yaml): target/plugin/.
PLUGIN_TARGET ?= x86_64-unknown-linux-gnu
PLUGIN_PLATFORM ?= linux_amd64
kubectl-plugin-archive:
	cargo build --release --locked -p kubectl-single-owner --target $(PLUGIN_TARGET)
	./scripts/plugin-archive.sh target/$(PLUGIN_TARGET)/release/kubectl-single_owner $(PLUGIN_PLATFORM) target/plugin

# The plugin against a real API server of its own (etcd and a kube-apiserver on free ports):
# KUBE_APISERVER, else the one control-plane/build.sh builds.
cluster-owners: kubectl-plugin
	@./scripts/setup.sh test && ./scripts/setup.sh cluster
	KUBE_APISERVER="$$(./control-plane/build.sh kube-apiserver)" bats e2e-tests/cluster-owners/

# kubectl single-owner at cluster scale (bench/owners.py): 10,000, 50,000 and 100,000 objects
# on a control plane of its own, the whole-cluster scan against the kubectl loop it replaces
# and the floor (the same metadata-only lists, nothing else); the table goes into
# docs/performance.md. KUBE_APISERVER, else the project's own. The smoke run checks the
# harness and the scan's answer on 2,000 objects, timing nothing.
BENCH_OWNERS_FLAGS ?=
bench-owners: kubectl-plugin
	@./scripts/setup.sh test && ./scripts/setup.sh cluster
	KUBE_APISERVER="$$(./control-plane/build.sh kube-apiserver)" python3 bench/owners.py $(BENCH_OWNERS_FLAGS)

bench-owners-smoke: kubectl-plugin
	@./scripts/setup.sh test && ./scripts/setup.sh cluster
	KUBE_APISERVER="$$(./control-plane/build.sh kube-apiserver)" python3 bench/owners.py \
		--sizes 2000 --runs 1 --loop-runs 0 --no-doc

clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm
