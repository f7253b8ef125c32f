# joiner's developer entry points. Every target works on a fresh machine with
# only Go, gcc and git: tools come from go.mod's tool directives, and the local
# control plane is built from the Go module proxy into ./bin/k8s (gitignored).

SHELL := /usr/bin/env bash
GO ?= go
K8S_BIN ?= $(CURDIR)/bin/k8s
export JOINER_K8S_BIN ?= $(K8S_BIN)

.PHONY: all build generate verify lint test test-packages test-unit run run-aws e2e-aws bench bench-latency load wide-deployments controlplane chromium podman clean chaos fuzz image helm-test conformance conformance-performance chaos-planted chaos-soak kueue e2e-kueue

all: build

build:
	$(GO) build ./...
	$(GO) build -o bin/joiner ./cmd/joiner
	ln -f bin/joiner bin/kubectl-joiner

## generate: CRDs, deepcopy and RBAC from the API types (controller-gen).
generate:
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	$(GO) tool controller-gen crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:artifacts:config=pkg/apis/crds
	$(GO) tool controller-gen rbac:roleName=joiner "paths=./pkg/controllers/...;./pkg/state/...;./pkg/livemodel/...;./pkg/nodeclaims/...;./pkg/operator/..." output:rbac:artifacts:config=config/rbac
	@# The chart ships the same CRDs and takes its RBAC rules from the same file
	@# (charts/chart_test.go fails when the copies drift).
	rm -f charts/joiner/crds/*.yaml && cp pkg/apis/crds/*.yaml charts/joiner/crds/
	cp config/rbac/role.yaml charts/joiner/rbac/role.yaml
	@# The simulated cloud's Node rights, granted by the chart only with settings.cloudProvider=sim.
	$(GO) tool controller-gen rbac:roleName=joiner-sim "paths=./pkg/cloudprovider/sim/..." output:rbac:artifacts:config=config/rbac/sim
	cp config/rbac/sim/role.yaml charts/joiner/rbac/sim-role.yaml
	@# Reading kube-system/aws-auth (seed 001): a Role the chart binds in kube-system, not in the release's namespace.
	$(GO) tool controller-gen rbac:roleName=joiner-aws-auth "paths=./pkg/controllers/nodepool/awsauth/..." output:rbac:artifacts:config=config/rbac/awsauth
	cp config/rbac/awsauth/role.yaml charts/joiner/rbac/aws-auth-role.yaml
	$(GO) test ./pkg/operator/reference -run TestGeneratedDocs -count=1 -update

## verify: regenerate, tidy, format and vet; fails if any of it changed the tree; then lint.
## lint: golangci-lint v2 with the house rules of .golangci.yml (pkg/pods is the one
## home of the pod predicates, no controller borrows another's, the providers share
## no code but pkg/cloudprovider/identity, pure solver and engine, import aliases,
## the standard bug finders). Its own tool module, hack/tools/go.mod, built by
## `go tool` on first use: golangci-lint's dependencies would raise golang.org/x/tools,
## x/mod, x/sync and x/sys in joiner's go.mod. A whole-tree run takes about 3.5 minutes
## on an idle 2-core machine from a cold cache (building the linter included), under a
## minute when little changed; `make test` runs it beside the control plane's build.
lint:
	$(GO) tool -modfile=hack/tools/go.mod golangci-lint run ./...

verify: generate
	$(GO) mod tidy
	gofmt -s -w $$(git ls-files '*.go')
	$(GO) vet ./...
	@if [ -n "$$(git status --porcelain -- . ':!bin')" ]; then \
		echo "verify: the tree is dirty after generate/tidy/gofmt:"; git status --porcelain; exit 1; fi
	$(MAKE) lint

## controlplane: build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok.
controlplane:
	bash hack/controlplane.sh

## chromium: Debian's chromium at /usr/bin/chromium, for the status page's headless browser tests (apt-get; once).
chromium:
	bash hack/apt-install.sh chromium

## test: the whole suite, against a real local control plane.
## podman: Debian's podman, for the image test that `podman load`s joiner's image (apt-get; once).
podman:
	bash hack/apt-install.sh podman

## nodeadm: the AL2023 image's own nodeadm (hack/nodeadm), the judge of AL2023 user data in the tests.
.PHONY: nodeadm
nodeadm:
	cd hack/nodeadm && GOWORK=off $(GO) build -o ../../bin/nodeadm github.com/awslabs/amazon-eks-ami/nodeadm/cmd/nodeadm

# The tests build with the image's flags (no cgo, -trimpath) so that the image
# test's static build, and the joiner binaries the end-to-end tests build, reuse
# the packages `go test` already compiled instead of compiling every dependency
# a second time (about 10 of a fresh run's minutes); -ldflags=-w leaves DWARF
# out of the ~70 test binaries, which only a debugger reads (panics keep their
# stack traces). The Debian packages install while the control plane compiles.
TEST_ENV := CGO_ENABLED=0 GOFLAGS='-trimpath -ldflags=-w'
test:
	$(MAKE) -j2 controlplane test-packages nodeadm lint
	$(TEST_ENV) $(GO) test -count=1 -timeout 60m ./...

# test-packages: the Debian packages the tests drive, one apt-get after the other
# (apt holds one lock).
test-packages: chromium
	bash hack/apt-install.sh podman

## run: the main job on the embedded default (local control plane + simulated cloud).
run: controlplane
	$(GO) run ./cmd/joiner run

## run-aws: the same demo with the AWS provider against a local EC2 (moto_server, `pip install 'moto[server]'`).
run-aws: controlplane
	$(GO) run ./cmd/joiner run --cloud-provider=aws --local-ec2

## e2e-aws: the end-to-end suite against YOUR AWS account: launches ONE on-demand t3.micro/t3.small/t4g.micro
## (the cheapest; about $0.01, billed for a minute or so), terminates it, deletes its launch template and instance profile.
## Needs credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID or web identity; or AWS_ENDPOINT_URL for a local EC2), AWS_REGION
## and CLUSTER_NAME; optional NODE_ROLE (default KarpenterNodeRole-$$CLUSTER_NAME), KUBERNETES_VERSION, CLUSTER_ENDPOINT.
e2e-aws:
	@if [ -z "$$AWS_ACCESS_KEY_ID$$AWS_PROFILE$$AWS_WEB_IDENTITY_TOKEN_FILE$$AWS_ENDPOINT_URL" ]; then \
		echo "e2e-aws: no AWS credentials: set AWS_PROFILE (e.g. AWS_PROFILE=default), AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_WEB_IDENTITY_TOKEN_FILE/AWS_ROLE_ARN, and AWS_REGION (or AWS_ENDPOINT_URL for a local EC2); nothing was launched" >&2; exit 2; fi
	@if [ -z "$$CLUSTER_NAME" ]; then \
		echo "e2e-aws: CLUSTER_NAME is not set: set it to the cluster whose subnets and security groups carry karpenter.sh/discovery=<cluster>; nothing was launched" >&2; exit 2; fi
	$(GO) test -tags e2eaws -count=1 -timeout 30m -v -run '^TestRealAccount$$' ./pkg/cloudprovider/aws/e2e/realaccount/

## image: joiner's container image without a Docker daemon (hack/image: go-containerregistry,
## static binary on an empty base, user 65532, reproducible from the commit's time) for linux/amd64
## and linux/arm64: bin/joiner-image-linux-<arch>.tar for `docker load -i` / `podman load -i`, and
## the multi-platform OCI index in bin/joiner-image.tar (`podman load`, `skopeo copy --all
## oci-archive:`). Docker users: see Dockerfile. docs/install.md says more.
IMAGE ?= ghcr.io/joiner-dev/joiner
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
image:
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		$(GO) run ./hack/image -o bin/joiner-image.tar -tag $(IMAGE):$(VERSION) -version $(VERSION) \
		-revision $$(git rev-parse HEAD 2>/dev/null)

## helm-test: the chart's tests alone (lint, template drift, server dry-run, install with
## leader election between two replicas); helm is a go.mod tool (`go tool helm`).
helm-test: controlplane
	$(GO) test -count=1 -v ./charts/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/scheduling/...

## bench-latency: pending → Running per pod on the local control plane and the
## simulated cloud (Karpenter's example workloads, a 500-pod burst; LATENCY=all
## adds a 5,000-pod burst). Figures: docs/performance.md.
LATENCY ?= 1
bench-latency: controlplane
	JOINER_BENCH_LATENCY=$(LATENCY) $(GO) test ./pkg/operator -run '^TestLatency$$' -v -count=1 -timeout 40m

## chaos: seeded chaos rounds (kill -9 the leader, restart kube-apiserver, cloud call
## faults, a namesake cluster) judged by an independent observer, on the simulated cloud
## (CLOUD=sim) or the local EC2 behind a fault proxy (CLOUD=aws); `make test` runs one of
## each plus the regression rounds. A failing round prints
## `make chaos CLOUD=<cloud> ROUNDS=1 SEED=<seed>` to reproduce it. See test/chaos/README.md.
ROUNDS ?= 10
SEED ?= $(shell date +%s)
CLOUD ?= sim
CHAOS_ROUND_MINUTES ?= 5
CHAOS_TEST_sim := TestChaos
CHAOS_TEST_aws := TestChaosEC2
chaos: controlplane
	@test -n "$(CHAOS_TEST_$(CLOUD))" || { echo "CLOUD=$(CLOUD): want sim or aws"; exit 2; }
	CHAOS_ROUNDS=$(ROUNDS) CHAOS_SEED=$(SEED) $(GO) test ./test/chaos -run '^$(CHAOS_TEST_$(CLOUD))$$' -v -count=1 -timeout $$(( $(ROUNDS) * $(CHAOS_ROUND_MINUTES) + 5 ))m

## chaos-soak: SOAK_ROUNDS (100) big seeded rounds on each cloud, sim then the local EC2, from SEED: each
## scales web to 100-120 pods over dozens of nodes, down to 10-20, drifts every node, with raised cloud fault
## rates (CHAOS_SIZE=big); a cloud's run stops at its first failing round. Hours: not part of `make test`.
SOAK_ROUNDS ?= 100
chaos-soak: controlplane
	for cloud in sim aws; do \
		CHAOS_SIZE=big $(MAKE) --no-print-directory chaos CLOUD=$$cloud ROUNDS=$(SOAK_ROUNDS) SEED=$(SEED) CHAOS_ROUND_MINUTES=20 || exit 1; \
	done

## conformance: Karpenter's own end-to-end suites (sigs.k8s.io/karpenter's test/suites/regression and
## performance, at the release pinned in test/conformance/upstream/go.mod, unmodified) against joiner on
## the local control plane and the simulated cloud's KWOKNodeClass: one spec per process, each bounded by
## CONFORMANCE_SPEC_TIMEOUT, the pass table in CONFORMANCE_REPORT. `make test` runs a focused selection.
## CONFORMANCE_SUITES picks suites, CONFORMANCE_FOCUS / CONFORMANCE_SKIP filter specs (regular expressions
## on the full spec text). See docs/conformance.md.
CONFORMANCE_SUITES ?= regression performance
CONFORMANCE_FOCUS ?= .
CONFORMANCE_SKIP ?=
CONFORMANCE_SPEC_TIMEOUT ?= 20m
CONFORMANCE_REPORT ?= $(CURDIR)/bin/conformance/report.md
conformance: controlplane
	JOINER_CONFORMANCE=1 CONFORMANCE_SUITES="$(CONFORMANCE_SUITES)" CONFORMANCE_FOCUS="$(CONFORMANCE_FOCUS)" \
		CONFORMANCE_SKIP="$(CONFORMANCE_SKIP)" CONFORMANCE_SPEC_TIMEOUT=$(CONFORMANCE_SPEC_TIMEOUT) \
		CONFORMANCE_REPORT=$(CONFORMANCE_REPORT) CONFORMANCE_DIR=$(CURDIR)/bin/conformance \
		$(GO) test ./test/conformance -run '^TestConformance$$' -v -count=1 -timeout 24h

## conformance-performance: upstream's performance suite alone (test/suites/performance, 7 specs of 500 to
## 2,000 pods; their own phase bounds add up to 20 to 51 minutes a spec), one spec per process, with joiner's
## CPU and peak memory and upstream's per-phase reports in the pass table. See docs/conformance.md.
PERFORMANCE_SPEC_TIMEOUT ?= 60m
conformance-performance:
	$(MAKE) --no-print-directory conformance CONFORMANCE_SUITES=performance CONFORMANCE_SPEC_TIMEOUT=$(PERFORMANCE_SPEC_TIMEOUT)

## chaos-planted: one seeded round per planted bug (pkg/plantedbug, a joiner built with -tags chaosbugs):
## each round must fail and name the promise the bug breaks (SEED picks the round).
chaos-planted: controlplane
	CHAOS_PLANTED=1 CHAOS_SEED=$(SEED) $(GO) test ./test/chaos -run '^TestPlantedBugs$$' -v -count=1 -timeout 60m

## kueue: build Kueue's manager (sigs.k8s.io/kueue from the module proxy) into bin/kueue/ (hack/kueue.sh; cached).
kueue:
	bash hack/kueue.sh

## e2e-kueue: Kueue drives joiner's ProvisioningRequests on the local control plane, joiner on the AWS provider against
## the local EC2: a 6-pod GPU Job admitted only once joiner launched its 6 nodes in one all-or-nothing fleet, the same
## Job with room for 4 never admitted and leaving no instance (test/kueue, build tag kueue). Not part of `make test`:
## a fresh Kueue build takes about 3 minutes (then cached); the test itself about 1.5.
e2e-kueue: controlplane kueue
	$(GO) test -tags kueue ./test/kueue -v -count=1 -timeout 20m

## fuzz: each fuzz target for FUZZTIME (their seed corpora under testdata/fuzz run in `make test`).
FUZZTIME ?= 60s
FUZZ_TARGETS := ./pkg/cloudprovider/aws/userdata:FuzzRender ./pkg/apis/v1:FuzzRequirement \
	./pkg/scheduling:FuzzSolveAdmittedNodePool ./pkg/cloudprovider/aws/interruption:FuzzParse
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -parallel 1; \
	done

## wide-deployments: upstream's "Wide Deployments" consolidation at WIDE_REPLICAS pods per Deployment (default
## 20, upstream 35; not in make test, whose check of the replay is pkg/controllers/disruption/realise) on kube-scheduler and kwok: pods moved, commands, node-count range and
## nodes launched for evicted pods (pkg/controllers/disruption/e2e/churn_test.go).
WIDE_REPLICAS ?= 20
wide-deployments: controlplane
	JOINER_WIDE_REPLICAS=$(WIDE_REPLICAS) JOINER_WIDE_WATCH=10m $(GO) test ./pkg/controllers/disruption/e2e -run '^TestWideDeploymentsSettle$$' -v -count=1 -timeout 40m

## load: issue 12's load test on the local control plane and the simulated
## cloud: LOAD_PODS pods (default 10,000) on nodes of ten pods each, time to
## all Running, joiner's peak RSS, CPU and API request rate, then scale to
## zero and time until every node is given back (LOAD_BUDGET: the NodePool's
## disruption budget, default Karpenter's 10%; LOAD_MEMORY_LIMIT: joiner's
## MEMORY_LIMIT in bytes, as the chart sets it from the container's limit).
## Figures: docs/performance.md.
LOAD_PODS ?= 10000
LOAD_BUDGET ?=
LOAD_MEMORY_LIMIT ?=
load: controlplane
	JOINER_LOAD_PODS=$(LOAD_PODS) JOINER_LOAD_BUDGET=$(LOAD_BUDGET) JOINER_LOAD_MEMORY_LIMIT=$(LOAD_MEMORY_LIMIT) $(GO) test ./pkg/operator -run '^TestLoad$$' -v -count=1 -timeout 120m

clean:
	rm -rf bin .run
