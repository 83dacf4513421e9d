# release-controller — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin

# Pinned tool versions.
CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION := v2.15.0
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_CONNECT_GO_VERSION := v1.21.1
KUBE_VERSION := v1.37.1
COSIGN_VERSION ?= v3.1.3
GOOS := $(shell $(GO) env GOOS)
GOARCH := $(shell $(GO) env GOARCH)

CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
BUF := $(BIN)/buf-$(BUF_VERSION)
# buf.gen.yaml runs bin/protoc-gen-go and bin/protoc-gen-connect-go: links that `make generate`
# points at these pinned builds.
PROTOC_GEN_GO := $(BIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
PROTOC_GEN_CONNECT_GO := $(BIN)/protoc-gen-connect-go-$(PROTOC_GEN_CONNECT_GO_VERSION)
PROTO_TOOLS := $(BUF) $(PROTOC_GEN_GO) $(PROTOC_GEN_CONNECT_GO)
# The cosign CLI the tests verify signatures with (COSIGN_VERSION): a plain name, as the tests
# look for bin/cosign.
COSIGN := $(BIN)/cosign
# KUBEBUILDER_ASSETS holds kube-apiserver and etcd built from Go modules (see hack/).
CONTROL_PLANE := $(BIN)/k8s/$(KUBE_VERSION:v%=%)-$(GOOS)-$(GOARCH)
export KUBEBUILDER_ASSETS := $(CONTROL_PLANE)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/release-controller/release-controller/internal/version.Version=$(VERSION)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Set-up commands

# DATA_DIR keeps the state of `make run` across restarts; delete it to start afresh.
DATA_DIR ?= $(CURDIR)/.data

.PHONY: run
run: build control-plane ## Start the embedded local environment (release-controller dev); state in DATA_DIR.
	@echo "==> bin/release-controller dev --data-dir $(DATA_DIR)"
	@PATH="$(BIN):$(CONTROL_PLANE):$$PATH" $(BIN)/release-controller dev --data-dir $(DATA_DIR) --control-plane-bin $(CONTROL_PLANE)

# -timeout 30m: go test's default of 10 minutes per package is too short on a cold cache
# (internal/imagebuild compiles the binary with -trimpath, which shares no cache entry with the
# tests' builds) and near UTC midnight (test/rbac waits for the day to turn).
# containers_image_openpgp: the test that verifies our signatures with containers/image uses
# its pure-Go OpenPGP mechanism, not gpgme (cgo).
# make faults: the fault suite's size (make test runs 20 streams x 3 jobs, 3 kills, 40 payloads
# in the kill case).
FAULTS_STREAMS ?= 100
FAULTS_JOBS ?= 10
FAULTS_KILLS ?= 10
FAULTS_KILL_PAYLOADS ?= 1000
FAULTS_REGISTRY_DOWN ?= 2m
# make soak: how long dev runs accelerated (make test runs 2 minutes).
SOAK_DURATION ?= 1h
TEST_TAGS := containers_image_openpgp

# test/cluster starts the local cluster (make cluster's) for its run and removes it at the end;
# the trap removes it as well when go test is killed (its timeout, ^C) before test/cluster could.
.PHONY: test
test: control-plane node-binaries cluster-deps cluster-tools chromium verify-generated lint $(COSIGN) ## Run every test against a real API server (builds it first) and on a local one-node cluster; golangci-lint (with govet) included.
	@echo "==> go test ./... (KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS))"
	@trap '$(SUDO) $(CLUSTER_TOOL) down | grep -v "no local cluster recorded" || true' EXIT; \
	$(GO) test -count=1 -timeout 30m -tags $(TEST_TAGS) ./...

##@ Local cluster

# A one-node cluster of Kubernetes' own components as local processes (internal/localcluster):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
# containerd with runc and a CNI bridge, and a registry with TLS and htpasswd. It needs root;
# SUDO runs it for anyone else.
CLUSTER_DIR ?= $(CURDIR)/.cluster
CLUSTER_TOOL := $(BIN)/cluster
PAUSE := $(BIN)/pause
# Debian's packages the cluster runs on, each with a file that says it is installed.
CLUSTER_PACKAGES := containerd:/usr/bin/containerd runc:/usr/sbin/runc containernetworking-plugins:/usr/lib/cni/bridge \
	iptables:/usr/sbin/iptables conntrack:/usr/sbin/conntrack iproute2:/usr/sbin/ip

.PHONY: cluster
cluster: cluster-deps control-plane node-binaries cluster-tools ## Start the local one-node cluster in CLUSTER_DIR (.cluster) and print its kubeconfig and registry.
	@$(SUDO) $(CLUSTER_TOOL) up --dir $(CLUSTER_DIR) --kube-bin $(CONTROL_PLANE) --pause $(PAUSE)

.PHONY: cluster-down
cluster-down: cluster-tools ## Stop the local cluster and remove every process, mount, cgroup, interface and iptables rule it made.
	@$(SUDO) $(CLUSTER_TOOL) down

.PHONY: cluster-status
cluster-status: cluster-tools ## Show the local cluster's components and the memory each takes.
	@$(SUDO) $(CLUSTER_TOOL) status

.PHONY: cluster-deps
cluster-deps: ## Install containerd, runc, the CNI plugins, iptables and conntrack (Debian packages) when missing.
	@missing=""; for entry in $(CLUSTER_PACKAGES); do \
		[ -e "$${entry#*:}" ] || missing="$$missing $${entry%%:*}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (Debian packages) for the local cluster"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

.PHONY: node-binaries
node-binaries: $(CONTROL_PLANE)/kubelet ## Get kube-controller-manager, kube-scheduler, kubelet and kube-proxy (once): prebuilt where reachable, else built from Go modules.

$(CONTROL_PLANE)/kubelet: | $(CONTROL_PLANE)/kubectl
	@$(GO) run ./hack/controlplane --node --version $(KUBE_VERSION) --out $(CONTROL_PLANE)

# Static: the pause binary is the sandbox image's only file.
.PHONY: cluster-tools
cluster-tools: ## Build bin/cluster (make cluster's command) and bin/pause (the sandbox process).
	@CGO_ENABLED=0 $(GO) build -o $(CLUSTER_TOOL) ./hack/cluster
	@CGO_ENABLED=0 $(GO) build -o $(PAUSE) ./hack/cluster/pause

##@ Development

# The inner loop: every test that needs no API server, node or browser. A test file that needs
# one starts with //go:build !unit, so this builds and runs without bin/k8s or root.
.PHONY: unit
unit: ## Run the tests that need no API server, node or browser (seconds to a minute; no bin/k8s).
	@echo "==> go test -short -tags unit ./... (files with //go:build !unit need an API server: make test runs them)"
	@$(GO) test -short -tags unit,$(TEST_TAGS) ./...

# The browser tests drive Debian's chromium; root installs it, anyone else through sudo.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: chromium
chromium: ## Install Debian's chromium for the browser tests when it is missing.
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "==> installing chromium (Debian package) for the browser tests"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	fi

# Static (CGO_ENABLED=0), as in the image: `dev` pushes this binary as the creation Jobs' image.
.PHONY: build
build: ## Build bin/release-controller.
	@echo "==> building bin/release-controller"
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/release-controller ./cmd/release-controller

# IMAGE=registry/repository:tag pushes the image index there (credentials from the Docker
# config, as docker login or crane auth login writes it); without IMAGE, make image writes an
# OCI image layout to bin/image/ (skopeo copy --all oci:bin/image:TAG docker://... pushes it).
# IMAGE_ARCHIVE=file.tar writes the image of this machine's platform as a docker archive
# instead (named IMAGE_ARCHIVE_TAG, default release-controller:<version>), which
# `kind load image-archive` and `k3d image import` take.
IMAGE ?=
IMAGE_ARCHIVE ?=
IMAGE_ARCHIVE_TAG ?=
ifneq ($(IMAGE_ARCHIVE),)
IMAGE_PLATFORMS ?= linux/$(GOARCH)
endif
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_SOURCE ?= https://github.com/release-controller/release-controller
IMAGE_BUILD := $(BIN)/image-build
# The image's CA certificates: Mozilla's roots as golang.org/x/crypto/x509roots/fallback
# ships them (bundle/bundle.der), pinned; see its newest version with
# `go list -m golang.org/x/crypto/x509roots/fallback@latest`. Read from the module cache, not
# from go.mod: the binary does not link them.
X509ROOTS_VERSION := v0.0.0-20261030153154-30a33513ff6d
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# Every file, configuration and history entry of the image carries the commit's time, so two
# builds of one commit give the same digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: image
image: ## Build the image (linux/amd64, linux/arm64) from static binaries; push it to IMAGE, write it to IMAGE_ARCHIVE (one platform), or write bin/image/.
	@for platform in $(IMAGE_PLATFORMS); do \
		os=$${platform%%/*}; arch=$${platform#*/}; \
		echo "==> go build $$platform (CGO_ENABLED=0, version $(VERSION))"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -buildid= $(LDFLAGS)" \
			-o $(IMAGE_BUILD)/$$os-$$arch/release-controller ./cmd/release-controller; \
	done
	@echo "==> CA certificates: golang.org/x/crypto/x509roots/fallback@$(X509ROOTS_VERSION)"
	@roots=$$($(GO) mod download -json golang.org/x/crypto/x509roots/fallback@$(X509ROOTS_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	test -f "$$roots/bundle/bundle.der" || { echo "no bundle/bundle.der in golang.org/x/crypto/x509roots/fallback@$(X509ROOTS_VERSION)" >&2; exit 1; }; \
	echo "==> image $(or $(IMAGE),$(IMAGE_ARCHIVE),bin/image/) (SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH))"; \
	$(GO) run ./hack/image $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(IMAGE_BUILD)/$(subst /,-,$(p))/release-controller) \
		--ca-der "$$roots/bundle/bundle.der" --version "$(VERSION)" --revision "$(REVISION)" --source "$(IMAGE_SOURCE)" \
		--source-date-epoch "$(SOURCE_DATE_EPOCH)" \
		$(if $(IMAGE),--push "$(IMAGE)",$(if $(IMAGE_ARCHIVE),--archive "$(IMAGE_ARCHIVE)" $(if $(IMAGE_ARCHIVE_TAG),--archive-tag "$(IMAGE_ARCHIVE_TAG)"),--layout $(BIN)/image))

# RBAC: one ClusterRole per component, release-controller-<component> in
# config/rbac/<component>/role.yaml, generated from the +kubebuilder:rbac markers of the packages
# only that component runs (controller-gen reads markers of the packages it is given, not of
# their imports). A package with markers must be in exactly one list
# (hack/check-rbac-packages.sh says so). The controller's file also holds the Role of its
# leader election, in namespace release-controller-system (see internal/manager).
RBAC_COMPONENTS := controller api build
RBAC_controller_PACKAGES := ./internal/manager ./internal/stream ./internal/payload ./internal/verify ./internal/releaselog/logcontroller ./internal/pipeline ./internal/freeze ./internal/audit ./internal/jira
RBAC_api_PACKAGES := ./internal/server/assemble ./internal/server/catalog ./internal/server ./internal/server/mcp ./internal/server/osrc ./internal/server/releaseapi ./internal/server/web ./internal/server/approval
RBAC_build_PACKAGES := ./cmd/release-controller
empty :=
space := $(empty) $(empty)
# $(call rbac,COMPONENT) runs controller-gen on the component's packages.
rbac = $(CONTROLLER_GEN) rbac:roleName=release-controller-$(1) paths="$(subst $(space),;,$(strip $(RBAC_$(1)_PACKAGES)))" output:rbac:artifacts:config=config/rbac/$(1)

# config/crd/policies also holds admission policies written by hand: generate removes only
# the one it writes.
.PHONY: generate
generate: $(CONTROLLER_GEN) $(PROTO_TOOLS) ## Generate deepcopy code, CRDs, RBAC, the Helm chart's copies of them and the Connect API's Go code.
	@echo "==> controller-gen $(CONTROLLER_GEN_VERSION): deepcopy, CRDs, RBAC"
	$(CONTROLLER_GEN) object paths=./api/...
	rm -rf config/crd/bases config/crd/test config/crd/policies/release-controller.dev_releasepayloads-policy.yaml $(foreach c,$(RBAC_COMPONENTS),config/rbac/$(c)/role.yaml)
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/prow/... output:crd:artifacts:config=config/crd/test
	@echo "==> ReleasePayload: the spec's CEL rules into a ValidatingAdmissionPolicy, off the status writes (hack/admissiongen)"
	mkdir -p config/crd/policies
	$(GO) run ./hack/admissiongen --crd config/crd/bases/release-controller.dev_releasepayloads.yaml \
		--policy config/crd/policies/release-controller.dev_releasepayloads-policy.yaml
	@echo "==> RBAC per component: $(RBAC_COMPONENTS)"
	hack/check-rbac-packages.sh $(foreach c,$(RBAC_COMPONENTS),$(RBAC_$(c)_PACKAGES))
	$(call rbac,controller)
	$(call rbac,api)
	$(call rbac,build)
	@echo "==> Helm chart: crds/ and templates/rbac-generated.yaml from config/ (hack/chartgen)"
	$(GO) run ./hack/chartgen --config config --chart charts/release-controller
	@echo "==> buf $(BUF_VERSION): lint proto/, generate internal/gen (protoc-gen-go $(PROTOC_GEN_GO_VERSION), protoc-gen-connect-go $(PROTOC_GEN_CONNECT_GO_VERSION))"
	ln -sf $(notdir $(PROTOC_GEN_GO)) $(BIN)/protoc-gen-go
	ln -sf $(notdir $(PROTOC_GEN_CONNECT_GO)) $(BIN)/protoc-gen-connect-go
	$(BUF) lint
	rm -rf internal/gen
	$(BUF) generate

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) $(PROTO_TOOLS) ## Fail when generated files differ from what make generate produces.
	@echo "==> checking generated files (deepcopy, CRDs, RBAC, internal/gen)"
	@hack/verify-generated.sh

.PHONY: vet
vet: ## Run go vet.
	@echo "==> go vet ./..."
	$(GO) vet -tags $(TEST_TAGS) ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml).
	@echo "==> golangci-lint $(GOLANGCI_LINT_VERSION) run ./..."
	$(GOLANGCI_LINT) run --build-tags $(TEST_TAGS) ./...

# BENCH_LARGE=1 puts 10,000 payloads in flight instead of 1,000 (BENCH_PAYLOADS=N: any N).
.PHONY: bench
.PHONY: soak
soak: control-plane ## Run make run's demo accelerated (a build every 10 s, broken builds at random) for SOAK_DURATION (1h); sample dev's memory and goroutines every 30 s. make test runs 2 minutes.
	@echo "==> soak: release-controller dev for $(SOAK_DURATION), a build every 10 s"
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -timeout 0 -tags $(TEST_TAGS) -run '^TestSoak$$' ./test/soak/ | tee $(BIN)/soak.log | grep -E '^(=== RUN|--- |SOAK|PASS|FAIL|ok)|_test.go:'
	@echo "==> the whole output is in $(BIN)/soak.log"

.PHONY: faults
faults: control-plane ## Break the parts around the shipped controller (API server, etcd, registry, signature store, priority and fairness, a remote cluster, the controller itself) and dev's changelog cache with 100 streams x 10 jobs in flight; check nothing is lost. make test runs a small version.
	@echo "==> fault suite: FAULTS_STREAMS=$(FAULTS_STREAMS) streams x FAULTS_JOBS=$(FAULTS_JOBS) jobs, FAULTS_KILLS=$(FAULTS_KILLS) controller kills during FAULTS_KILL_PAYLOADS=$(FAULTS_KILL_PAYLOADS) payloads"
	FAULTS_STREAMS=$(FAULTS_STREAMS) FAULTS_JOBS=$(FAULTS_JOBS) FAULTS_KILLS=$(FAULTS_KILLS) FAULTS_KILL_PAYLOADS=$(FAULTS_KILL_PAYLOADS) FAULTS_REGISTRY_DOWN=$(FAULTS_REGISTRY_DOWN) $(GO) test -count=1 -v -timeout 120m -tags $(TEST_TAGS) -run '^TestFault' ./test/scale/ ./test/soak/ | tee $(BIN)/faults.log | grep -E '^(=== RUN|--- |FAULT|PASS|FAIL|ok)|_test.go:'
	@echo "==> the whole output is in $(BIN)/faults.log"

bench: build control-plane ## Run the benchmarks on bin/release-controller as shipped: payload acceptance, payload build, release pages and REST reads; release log reads; stream health; the update service's /graph; Sigstore signing.
	@echo "==> bin/release-controller controller --kubeconfig with 1,000 payloads x 10 jobs in flight on a local API server (BENCH_LARGE=1: 10,000); bin/release-controller payload build of 1,000 components; bin/release-controller api serving 10,000 payloads; bin/release-controller controller with 100 pipelines x 3 environments x 2 targets over 3 API servers, without and with promotion policies (a soak on every environment, freezes, prod approved by two approvers through bin/release-controller api)"
	RELEASE_CONTROLLER_BINARY=$(BIN)/release-controller $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 90m ./test/bench/
	@echo "==> payload build of 200 components against the embedded registry (in-process)"
	$(GO) test -run '^$$' -bench BenchmarkBuild200 -benchtime 20x ./internal/releaseimage/
	@echo "==> ListReleases with 10,000 entries in a day and 365 days"
	$(GO) test -run '^$$' -bench BenchmarkListReleases -benchmem ./internal/server/releaseapi/
	@echo "==> stream health of 10,000 payloads x 10 verifications: the report alone, and the page and its JSON over loopback (after each change of the stream, and unchanged)"
	$(GO) test -run '^$$' -bench BenchmarkHealth -benchtime 200x ./internal/server/catalog/
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench BenchmarkStreamHealth -benchtime 200x ./internal/server/web/
	@echo "==> /graph, the update service, of 10,000 payloads with 1,000 risks and 20 declared channels: from the cache (p99 under 50 ms), and computed again after a risk is declared (well under 2 s)"
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench BenchmarkGraphUpdateService -benchtime 2000x ./internal/server/osrc/
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench BenchmarkGraphRebuild -benchtime 20x ./internal/server/osrc/
	@echo "==> Sigstore: one payload's signature and six attestations attached, then checked again as after a restart, on a registry with the referrers API and on one with the referrers tag"
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench BenchmarkSignPayload -benchtime 20x ./internal/signing/cosign/

.PHONY: control-plane
control-plane: $(CONTROL_PLANE)/kubectl ## Get kube-apiserver, etcd and kubectl (once): prebuilt where reachable, else built from Go modules.

# The prebuilt archive setup-envtest uses, SHA-512 checked, when the machine reaches it;
# otherwise (no internet, CONTROL_PLANE_DOWNLOAD=0) hack/build-control-plane.sh builds them.
$(CONTROL_PLANE)/kubectl:
	@$(GO) run ./hack/controlplane --version $(KUBE_VERSION) --out $(CONTROL_PLANE)

# The cosign CLI, only a test client (the main module never imports cosign): the tests verify
# our Sigstore signatures and attestations with it. The stamp rebuilds it when COSIGN_VERSION
# changes; `make bin/cosign` names the same file.
$(COSIGN): $(BIN)/.cosign-$(COSIGN_VERSION)
	@echo "==> building cosign $(COSIGN_VERSION) into $(BIN) (compiled from source the first time: 8 CPU minutes, 17 minutes on a busy 2-core machine)"
	GOBIN=$(BIN) $(GO) install github.com/sigstore/cosign/v3/cmd/cosign@$(COSIGN_VERSION)
	@touch $@

$(BIN)/.cosign-$(COSIGN_VERSION):
	@mkdir -p $(BIN)
	@rm -f $(BIN)/.cosign-v*
	@touch $@

bin/cosign: $(COSIGN)

$(CONTROLLER_GEN):
	@echo "==> installing controller-gen $(CONTROLLER_GEN_VERSION) into $(BIN)"
	@mkdir -p $(BIN)/.controller-gen
	GOBIN=$(BIN)/.controller-gen $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/.controller-gen/controller-gen $@

$(GOLANGCI_LINT):
	@echo "==> installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(BIN) (compiled from source the first time: 3 to 9 minutes)"
	@mkdir -p $(BIN)/.golangci-lint
	GOBIN=$(BIN)/.golangci-lint $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.golangci-lint/golangci-lint $@

$(BUF):
	@echo "==> installing buf $(BUF_VERSION) into $(BIN) (compiled from source the first time: a minute or two)"
	@mkdir -p $(BIN)/.buf
	GOBIN=$(BIN)/.buf $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	mv $(BIN)/.buf/buf $@

$(PROTOC_GEN_GO):
	@echo "==> installing protoc-gen-go $(PROTOC_GEN_GO_VERSION) into $(BIN)"
	@mkdir -p $(BIN)/.protoc-gen-go
	GOBIN=$(BIN)/.protoc-gen-go $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	mv $(BIN)/.protoc-gen-go/protoc-gen-go $@

$(PROTOC_GEN_CONNECT_GO):
	@echo "==> installing protoc-gen-connect-go $(PROTOC_GEN_CONNECT_GO_VERSION) into $(BIN)"
	@mkdir -p $(BIN)/.protoc-gen-connect-go
	GOBIN=$(BIN)/.protoc-gen-connect-go $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)
	mv $(BIN)/.protoc-gen-connect-go/protoc-gen-connect-go $@

.PHONY: clean
clean: ## Remove build output (keeps the control-plane binaries; use clean-all for those).
	rm -f $(BIN)/release-controller
	rm -rf $(IMAGE_BUILD) $(BIN)/image

.PHONY: clean-all
clean-all: ## Remove bin/ entirely.
	rm -rf $(BIN)
