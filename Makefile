# windlass developer entry points. `make demo` and `make test` are the two a newcomer needs.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

E2E := e2e/scripts
CARGO ?= cargo
# Where `make cluster` keeps its state; tests find the cluster through the same variable.
export WINDLASS_CLUSTER_DIR ?= $(or $(TMPDIR),/tmp)/windlass-cluster
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Build the pinned Kubernetes, etcd, kwok and helm binaries (cached by version)
	$(E2E)/build-tools.sh

.PHONY: cluster
cluster: ## Start the local control plane (etcd, apiserver, controller-manager, scheduler, kwok, registry)
	$(E2E)/cluster-up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its state
	$(E2E)/cluster-down.sh

.PHONY: cluster-status
cluster-status: ## Say whether the local control plane is up and how to reach it
	$(E2E)/cluster-status.sh

.PHONY: prerequisites
prerequisites: ## Install the Debian packages the tests need (as root; otherwise print the command to run)
	$(E2E)/prerequisites.sh test

.PHONY: demo
demo: ## Local control plane + manager + built-in catalog: install, upgrade, automatic and manual rollback
	$(E2E)/prerequisites.sh demo
	$(E2E)/cluster-up.sh
	$(CARGO) build -p windlass
	$(E2E)/manager-restart.sh $(TARGET_DIR)/debug/windlass
	$(E2E)/demo.sh $(TARGET_DIR)/debug/windlass

.PHONY: unit
unit: ## Unit and library tests (no cluster needed)
	CARGO=$(CARGO) $(E2E)/unit-tests.sh

# `make e2e E2E_MODULES="examples helm_chart"` runs some modules of e2e/tests/e2e only.
E2E_MODULES ?=

.PHONY: e2e
e2e: ## End-to-end tests against the local control plane (starts it and the manager if needed)
	$(E2E)/prerequisites.sh test
	$(E2E)/build-tools.sh cosign
	$(E2E)/build-tools.sh oc
	$(CARGO) build --workspace --all-targets
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/debug/windlass CARGO=$(CARGO) $(E2E)/with-cluster.sh $(E2E)/e2e-tests.sh $(E2E_MODULES)

.PHONY: build
build: ## Build every crate, test and benchmark
	$(CARGO) build --workspace --all-targets

# Where `make install` puts windlass: under ~/.local, which needs no root and whose bin/ most
# distributions put on PATH; `make install PREFIX=/usr/local` (as root) installs for everyone.
# BINDIR and DATADIR follow PREFIX unless set; DESTDIR stages the tree for a package.
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
COMPLETIONS := bash-completion/completions/windlass zsh/site-functions/_windlass \
	fish/vendor_completions.d/windlass.fish

.PHONY: install
install: ## Build the release binary; install windlass, the kubectl plugin (kubectl windlass) and bash/zsh/fish completions under PREFIX (~/.local)
	$(CARGO) build --release -p windlass
	install -d "$(DESTDIR)$(BINDIR)" $(foreach f,$(COMPLETIONS),"$(DESTDIR)$(DATADIR)/$(dir $(f))")
	install -m 0755 "$(TARGET_DIR)/release/windlass" "$(DESTDIR)$(BINDIR)/windlass"
	ln -sfn windlass "$(DESTDIR)$(BINDIR)/kubectl-windlass"
	"$(DESTDIR)$(BINDIR)/windlass" completion kubectl > "$(DESTDIR)$(BINDIR)/kubectl_complete-windlass"
	chmod 0755 "$(DESTDIR)$(BINDIR)/kubectl_complete-windlass"
	"$(DESTDIR)$(BINDIR)/windlass" completion bash > "$(DESTDIR)$(DATADIR)/bash-completion/completions/windlass"
	"$(DESTDIR)$(BINDIR)/windlass" completion zsh > "$(DESTDIR)$(DATADIR)/zsh/site-functions/_windlass"
	"$(DESTDIR)$(BINDIR)/windlass" completion fish > "$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/windlass.fish"
	@echo "installed windlass, kubectl-windlass and kubectl_complete-windlass in $(BINDIR)$(if $(filter $(BINDIR),$(subst :, ,$(PATH))),, (not on PATH yet: add it))"

.PHONY: uninstall
uninstall: ## Remove what `make install` installed (same PREFIX, BINDIR, DATADIR)
	rm -f "$(DESTDIR)$(BINDIR)/windlass" "$(DESTDIR)$(BINDIR)/kubectl-windlass" "$(DESTDIR)$(BINDIR)/kubectl_complete-windlass"
	rm -f $(foreach f,$(COMPLETIONS),"$(DESTDIR)$(DATADIR)/$(f)")

.PHONY: test
test: ## Every test: unit, corpus and end-to-end (starts and stops the local control plane), then a summary
	$(E2E)/prerequisites.sh test
	$(E2E)/with-test-summary.sh $(MAKE) --no-print-directory build unit e2e

.PHONY: lint
lint: ## rustfmt and clippy, warnings as errors
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The generators run from the workspace build: `cargo run -p windlass-api` would resolve features
# for that one package and compile most dependencies a second time (and take that much more disk).
.PHONY: crds
crds: build ## Regenerate the CRD YAML in config/crd and the Helm chart from crates/api
	$(TARGET_DIR)/debug/crdgen config/crd config/helm/windlass/crds

.PHONY: rbac
rbac: build ## Regenerate the manager's RBAC in config/rbac and the Helm chart from crates/api/src/bin/rbacgen.rs
	$(TARGET_DIR)/debug/rbacgen config/rbac config/helm/windlass/templates

.PHONY: admission
admission: build ## Regenerate the admission policies in config/admission and the Helm chart from crates/api/src/bin/admissiongen.rs
	$(TARGET_DIR)/debug/admissiongen config/admission config/helm/windlass/templates

.PHONY: openshift-api
openshift-api: ## Copy OpenShift's ClusterVersion/ClusterOperator CRDs and capability sets from the pinned github.com/openshift/api module
	$(E2E)/openshift-api.sh

# What the generators write; `make verify` fails when regenerating changes any of it.
GENERATED := config/crd config/helm/windlass/crds config/rbac/cluster_role.yaml config/rbac/role.yaml \
	config/rbac/openshift_role.yaml config/helm/windlass/templates/clusterrole-openshift.yaml \
	config/rbac/view_role.yaml config/rbac/package_reader_role.yaml \
	config/helm/windlass/templates/clusterrole.yaml config/helm/windlass/templates/role.yaml \
	config/helm/windlass/templates/clusterrole-view.yaml \
	config/helm/windlass/templates/clusterrole-package-reader.yaml \
	config/helm/windlass/templates/clusterrole-custom-resources.yaml \
	config/admission config/helm/windlass/templates/admission-policies.yaml \
	config/openshift crates/release/data config/helm/windlass/templates/openshift-crds.yaml

.PHONY: verify
verify: lint crds rbac admission openshift-api ## lint, then regenerate CRDs, RBAC, admission policies and the OpenShift API copies and fail if that changed a checked-in file
	@if ! git diff --exit-code --stat -- $(GENERATED) || [[ -n "$$(git status --porcelain -- $(GENERATED))" ]]; then \
	  git status --short -- $(GENERATED); \
	  echo "generated files differ from their sources: run 'make crds rbac admission openshift-api' and commit the result" >&2; exit 1; \
	fi

# Each benchmark on a control plane of its own; the scale run with ten simulated nodes' worth
# of pods, the controller-manager and scheduler at a large control plane's rate limits, the
# manager's reads in the audit log and glibc's allocator as it comes.
BENCH_MANAGER := WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass
SCALE_CLUSTER := WINDLASS_KCM_QPS=150 WINDLASS_KWOK_NODES=11 WINDLASS_AUDIT=requests MALLOC_ARENA_MAX=default

.PHONY: bench
bench: ## The scale numbers in one run, each row beside its anchor and target: 10,000 Subscriptions (time, RSS, requests per install, settled writes), catalog resolve vs CPython json (one file, a folder, a core kept busy), release updates of 1,000 manifests vs kubectl
	$(E2E)/prerequisites.sh test
	$(MAKE) --no-print-directory tools
	$(CARGO) build --release -p windlass
	$(E2E)/bench-summary.sh \
	  "$(CARGO) bench -p windlass --bench catalog_scale" \
	  "$(SCALE_CLUSTER) $(BENCH_MANAGER) $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench lifecycle -- scale" \
	  "$(BENCH_MANAGER) $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench release_update"

.PHONY: bench-e2e
bench-e2e: ## Benchmarks on the local control plane: install and release update times vs kubectl, rollback times, 10,000 Subscriptions, 15 idle minutes of writes, RSS, a 100,000-bundle Catalog, Package views of the corpus, operand snapshot and restore of 1,000 custom resources; package build/push vs skopeo; fleet wave decisions for 1,000 members
	$(CARGO) build --release -p windlass
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench csv_install
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench lifecycle -- install
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench lifecycle -- rollback
	$(SCALE_CLUSTER) $(BENCH_MANAGER) $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench lifecycle -- scale
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench verify
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench catalog_manager
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench package_views
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench release_update
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench operands
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(CARGO) bench -p windlass-e2e --bench package
	$(CARGO) bench -p windlass-fleet --bench fleet_waves

.PHONY: bench-fleet
bench-fleet: ## The fleet controller's wave decisions over 1,000 simulated member clusters: time per decision, peak memory
	$(CARGO) bench -p windlass-fleet --bench fleet_waves

# The manager image without a container engine (crates/windlass/Containerfile is for those with
# one, and describes the same image). No musl target here: a static glibc build
# (`+crt-static`, symbols stripped as the Containerfile does). The explicit --target puts it in
# its own directory and keeps these RUSTFLAGS off the host build, so other builds stay valid.
IMAGE_TARGET := x86_64-unknown-linux-gnu

.PHONY: image
image: cluster ## Static manager binary as an OCI image (see crates/windlass/Containerfile), pushed to the local registry
	RUSTFLAGS="-C target-feature=+crt-static -C strip=symbols" $(CARGO) build --release -p windlass --target $(IMAGE_TARGET)
	$(CARGO) run -q -p windlass-e2e --bin windlass-image -- --binary $(TARGET_DIR)/$(IMAGE_TARGET)/release/windlass
