# capm3-preprov: build, generate, test and run.
SHELL := /usr/bin/env bash -o errexit -o pipefail -o nounset
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
K8S_BIN := $(BIN)/k8s
# The checksum database lacks the metal3-io and some k8s.io staging modules;
# the committed go.sum files pin them.
export GONOSUMDB ?= github.com/metal3-io,k8s.io
export KUBEBUILDER_ASSETS ?= $(K8S_BIN)

K8S_VERSION := v1.35.4
K8S_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=35 \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=35

CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize
CLUSTERCTL := $(BIN)/clusterctl
GOLANGCI_LINT := $(BIN)/golangci-lint
CLUSTERCTL_LDFLAGS := -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitMinor=13 \
	-X sigs.k8s.io/cluster-api/version.gitVersion=v1.13.4 -X sigs.k8s.io/cluster-api/version.gitCommit=27f464418c195d96ae2ef4b96f3b6a047ea89310 \
	-X sigs.k8s.io/cluster-api/version.gitTreeState=clean -X sigs.k8s.io/cluster-api/version.buildDate=2026-07-14T11:31:17Z
KUBE_BINARIES := $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kubectl $(K8S_BIN)/etcd

GO_TEST_FLAGS ?= -count=1

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the manager into bin/manager and the kubectl plugin into bin/kubectl-preprov.
	CGO_ENABLED=0 go build -o $(BIN)/manager .
	go build -o $(BIN)/kubectl-preprov ./cmd/kubectl-preprov

# make run: a local control plane with the examples and the IPAM stand-ins
# (IPAM=none leaves IPAM to real controllers you point at its kubeconfig).
# make run KUBECONFIG=<file>: the manager against that cluster instead.
IPAM ?= standin
.PHONY: run
run: build ## Run the manager on a local control plane with the examples until interrupted (or: make run KUBECONFIG=<file>).
ifeq ($(origin KUBECONFIG),command line)
	$(BIN)/manager --kubeconfig $(KUBECONFIG) --webhook-port=0
else
	$(MAKE) kube-binaries
	go run ./hack/run --manager $(BIN)/manager --ipam $(IPAM)
endif

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy, our CRDs and RBAC, and the upstream CRDs.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths=./api/... paths=./controllers/... paths=. \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook
	CONTROLLER_GEN=$(CONTROLLER_GEN) hack/upstream-crds.sh
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt crd paths=./test/standins/capiipamstandin/v1alpha2/... \
		output:crd:dir=test/standins/capiipamstandin/crd

.PHONY: verify-generate
verify-generate: generate ## Fail if generated files are stale.
	@if [ -n "$$(git status --porcelain -- api config test/standins/capiipamstandin)" ]; then \
		git status --porcelain -- api config test/standins/capiipamstandin; git diff --stat -- api config test/standins/capiipamstandin; \
		echo "generated files are stale: run make generate and commit the result"; exit 1; fi

.PHONY: docs-flags
docs-flags: ## Regenerate README's table of the manager's flags (go test . checks that it is fresh).
	go test . -run '^TestREADMEFlagTable$$' -count=1 -update-readme

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Licence headers, then golangci-lint (.golangci.yaml: gofmt, goimports, go vet and CAPM3's linters).
	hack/verify-boilerplate.sh
	$(GOLANGCI_LINT) run --timeout 20m ./...

##@ Test

.PHONY: test
test: kube-binaries $(KUSTOMIZE) $(CLUSTERCTL) packages debian13-root ## Run every test: unit tests, integration tests on the real kube-apiserver and etcd, Ironic 29 from the Debian 13 root.
	go test $(GO_TEST_FLAGS) ./...

# The packages whose tests need no control plane and no Debian package:
# rendering, selection, validation, claim naming, outcomes, the cache's copies.
# webhooks also has tests on the API server, which -short leaves out.
UNIT_PACKAGES := . ./networkdata ./template ./baremetal ./ipam ./internal/expectations ./internal/index ./internal/ownership \
	./internal/slim ./webhooks ./cmd/kubectl-preprov/plugin ./test/docs ./test/framework
.PHONY: test-unit
test-unit: ## Run the tests that need no control plane (no bin/k8s, no Debian packages), in seconds.
	env -u KUBEBUILDER_ASSETS go test $(GO_TEST_FLAGS) -short $(UNIT_PACKAGES)

# The tests run cloud-init, isoinfo and podman from the machine's Debian
# packages and read Ironic's network_data schema from python3-ironic; without
# them they fail. On Debian or Ubuntu hack/install-packages.sh installs the
# missing ones (as root, or with sudo), saying which; elsewhere it names them.
.PHONY: packages
packages: ## Install the Debian packages the tests run (cloud-init, isoinfo, podman, Ironic's schema) when missing, or name them off Debian and Ubuntu.
	@hack/install-packages.sh --auto

# The one Ironic of the tests (Ironic 29) and the real ironic-python-agent run
# in a Debian 13 root built once per machine into bin/debian13-root (as root;
# 10-50 minutes the first time, a second when its stamp is fresh).
.PHONY: debian13-root
debian13-root: ## Build the Debian 13 root with Ironic 29 and ironic-python-agent into bin/ (once per machine; as root).
	hack/debian13-root.sh

.PHONY: test-e2e
test-e2e: kube-binaries build $(KUSTOMIZE) packages debian13-root ## Run the end-to-end and fault suite (test/e2e) on a local control plane with bin/manager as a process.
	go test -tags e2e ./test/e2e/ -count=1 -v -timeout 40m -args -e2e.manager=$(BIN)/manager -e2e.artifacts-folder=$(ROOT)/out/e2e

# Not in make test (build tag inspection): eight agents and two Ironics for
# 5 to 8 minutes; .ci/run runs it.
.PHONY: test-inspection
test-inspection: packages debian13-root ## Inspect the example hosts with Ironic 29 and the real ironic-python-agent over IPv4 and IPv6, with negative cases (root).
	go test -tags inspection ./test/consumers/agent/ -count=1 -v -parallel 8 -timeout 30m

BENCH_HOSTS ?= 1000
BENCH_RUNS ?= 3
BENCH_SCENARIO ?= plain
BENCH_TIMEOUT ?= 45m
BENCH_OUT ?= docs/performance.md
.PHONY: bench
bench: kube-binaries build ## Fleet benchmark against the floor, into BENCH_OUT: BENCH_HOSTS (1000), BENCH_RUNS (3), BENCH_SCENARIO=plain|hardware|restart|handoff|shard|delete; then the Go benchmarks.
	go run ./test/bench -hosts $(BENCH_HOSTS) -runs $(BENCH_RUNS) -scenario $(BENCH_SCENARIO) -timeout $(BENCH_TIMEOUT) \
		-manager $(BIN)/manager $(if $(BENCH_OUT),-out $(BENCH_OUT))
	go test ./networkdata/ ./template/ ./baremetal/ ./internal/slim/ -run '^$$' -bench . -benchmem -count 5

# The soak: SOAK_STEPS operations of a seeded random sequence against the
# manager, IPAM's stand-in, the garbage collector and BMO's model; without
# SOAK_SEED a seed is drawn and printed first (SOAK_SEED=<seed> replays it).
SOAK_STEPS ?= 1000
SOAK_SEED ?= 0
# SOAK_FLAGS=-keep-going reports every broken invariant once and runs to the last step.
SOAK_FLAGS ?=
.PHONY: soak
soak: kube-binaries build $(KUSTOMIZE) ## Soak: SOAK_STEPS (1000) seeded random operations with invariants at quiet points; SOAK_SEED replays a seed.
	go run ./test/soak -steps $(SOAK_STEPS) -seed $(SOAK_SEED) $(SOAK_FLAGS) -manager $(BIN)/manager -artifacts $(ROOT)/out/soak

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## Run the fuzz tests of the renderer, its template validator and the selector, FUZZTIME each (default 30s).
	go test ./networkdata/ -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME)
	go test ./networkdata/ -run '^$$' -fuzz '^FuzzValidateTemplate$$' -fuzztime $(FUZZTIME)
	go test ./template/ -run '^$$' -fuzz '^FuzzHostSelector$$' -fuzztime $(FUZZTIME)

.PHONY: kube-binaries
kube-binaries: $(KUBE_BINARIES) ## Build kube-apiserver, kube-controller-manager, kubectl and etcd into bin/k8s (once).

$(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kubectl: hack/tools/k8s/go.mod
	mkdir -p $(K8S_BIN)
	cd hack/tools/k8s && go build -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
	touch $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kubectl

$(K8S_BIN)/etcd: hack/tools/etcd/go.mod
	mkdir -p $(K8S_BIN)
	cd hack/tools/etcd && go build -o $@ .

$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod
	cd hack/tools/controller-gen && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

$(KUSTOMIZE): hack/tools/kustomize/go.mod
	cd hack/tools/kustomize && go build -o $@ sigs.k8s.io/kustomize/kustomize/v5

$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod
	cd hack/tools/golangci-lint && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CLUSTERCTL): hack/tools/clusterctl/go.mod
	cd hack/tools/clusterctl && go build -trimpath -ldflags "$(CLUSTERCTL_LDFLAGS)" -o $@ sigs.k8s.io/cluster-api/cmd/clusterctl

##@ Release

# The manager's image: what make image and make docker-build build and what
# make release-manifests names. bin/manager is static (CGO_ENABLED=0).
IMG ?= quay.io/capm3-preprov/capm3-preprov
TAG ?= v0.1.0
IMAGE_ARCHIVE ?= out/capm3-preprov-image.tar
CONTAINER_ENGINE ?= docker

.PHONY: image
image: build ## Build the image IMG:TAG from bin/manager into IMAGE_ARCHIVE without a container engine (for docker/podman load, kind load image-archive).
	go run ./hack/image -binary $(BIN)/manager -image $(IMG):$(TAG) -out $(IMAGE_ARCHIVE) -revision "$$(git rev-parse HEAD 2>/dev/null || true)"

.PHONY: docker-build
docker-build: ## Build the image IMG:TAG from the Dockerfile with CONTAINER_ENGINE (docker).
	$(CONTAINER_ENGINE) build --build-arg ARCH=$$(go env GOARCH) --build-arg TAG=$(TAG) -t $(IMG):$(TAG) .

.PHONY: release-manifests
release-manifests: $(KUSTOMIZE) ## Build the clusterctl release assets into out/, naming the image IMG:TAG (OUT).
	KUSTOMIZE=$(KUSTOMIZE) IMG=$(IMG) TAG=$(TAG) hack/release-manifests.sh

##@ Clean

.PHONY: clean
clean: ## Remove the manager and plugin binaries and release output; keeps the slow-to-build tools and control plane.
	rm -f $(BIN)/manager $(BIN)/kubectl-preprov
	rm -rf out

.PHONY: clean-all
clean-all: clean ## Remove every built binary, bin/k8s included.
	rm -rf $(BIN)
