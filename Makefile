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

.PHONY: demo
demo: cluster ## Start the local control plane and show how to use it
	@echo
	@echo "Try: source <(sed 's/^/export /' $(WINDLASS_CLUSTER_DIR)/cluster.env) && kubectl get nodes"

.PHONY: unit
unit: ## Unit and library tests (no cluster needed)
	$(CARGO) test --workspace --exclude windlass-e2e

.PHONY: e2e
e2e: ## End-to-end tests against the local control plane (starts it and the manager if needed)
	$(CARGO) build -p windlass
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/debug/windlass $(E2E)/with-cluster.sh $(CARGO) test --no-fail-fast -p windlass-e2e -- --test-threads=4

.PHONY: test
test: ## Every test: unit, corpus and end-to-end (starts and stops the local control plane)
	$(CARGO) build --workspace --all-targets
	$(MAKE) unit
	$(MAKE) e2e

.PHONY: lint
lint: ## rustfmt and clippy, warnings as errors
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

.PHONY: crds
crds: ## Regenerate the CRD YAML in config/crd and the Helm chart from crates/api
	$(CARGO) run -q -p windlass-api --bin crdgen -- config/crd config/helm/windlass/crds

.PHONY: bench-e2e
bench-e2e: ## Benchmarks against the local control plane (CSV install time vs kubectl, idle writes, RSS)
	$(CARGO) build --release -p windlass
	WINDLASS_MANAGER_BIN=$(TARGET_DIR)/release/windlass $(E2E)/with-cluster.sh $(CARGO) bench -p windlass-e2e --bench csv_install
