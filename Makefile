# joiner's developer entry points. Every target works on a fresh machine with
# only Go, gcc and git: tools come from go.mod's tool directives, and the local
# control plane is built from the Go module proxy into ./bin/k8s (gitignored).

SHELL := /usr/bin/env bash
GO ?= go
K8S_BIN ?= $(CURDIR)/bin/k8s
export JOINER_K8S_BIN ?= $(K8S_BIN)

.PHONY: all build generate verify test test-unit run run-aws bench controlplane clean

all: build

build:
	$(GO) build ./...
	$(GO) build -o bin/joiner ./cmd/joiner

## generate: CRDs, deepcopy and RBAC from the API types (controller-gen).
generate:
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	$(GO) tool controller-gen crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:artifacts:config=pkg/apis/crds
	$(GO) tool controller-gen rbac:roleName=joiner "paths=./pkg/controllers/...;./pkg/state/...;./pkg/operator/..." output:rbac:artifacts:config=config/rbac

## verify: regenerate, tidy, format and vet; fails if any of it changed the tree.
verify: generate
	$(GO) mod tidy
	gofmt -s -w $$(git ls-files '*.go')
	$(GO) vet ./...
	@if [ -n "$$(git status --porcelain -- . ':!bin')" ]; then \
		echo "verify: the tree is dirty after generate/tidy/gofmt:"; git status --porcelain; exit 1; fi

## controlplane: build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok.
controlplane:
	bash hack/controlplane.sh

## test: the whole suite, against a real local control plane.
test: controlplane
	$(GO) test -count=1 -timeout 60m ./...

## run: the main job on the embedded default (local control plane + simulated cloud).
run: controlplane
	$(GO) run ./cmd/joiner run

## run-aws: the same demo with the AWS provider against a local EC2 (moto_server, `pip install 'moto[server]'`).
run-aws: controlplane
	$(GO) run ./cmd/joiner run --cloud-provider=aws --local-ec2

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/scheduling/...

## bench-latency: pending → Running per pod on the local control plane and the
## simulated cloud (Karpenter's example workloads, a 500-pod burst; LATENCY=all
## adds a 5,000-pod burst). Figures: docs/performance.md.
LATENCY ?= 1
bench-latency: controlplane
	JOINER_BENCH_LATENCY=$(LATENCY) $(GO) test ./pkg/operator -run '^TestLatency$$' -v -count=1 -timeout 40m

clean:
	rm -rf bin .run
