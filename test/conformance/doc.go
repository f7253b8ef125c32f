// Package conformance runs Karpenter's own end-to-end suites against joiner:
// the regression and performance suites of sigs.k8s.io/karpenter at the
// release pinned in upstream/go.mod, unmodified, with Karpenter's default
// KWOKNodeClass (served by joiner's simulated cloud) and default NodePool.
//
// The suites are a dependency, never copied: upstream/ is a Go module of its
// own (so the main module never requires sigs.k8s.io/karpenter) from which
// `go test -c` builds each suite's test binary. The harness starts a local
// control plane (pkg/controlplane: kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok) and `joiner controller` on the simulated
// cloud, lists the suite's specs with a Ginkgo dry run, and runs each spec
// in its own process with a timeout, so a hung spec costs its timeout and
// no more, and every spec gets a verdict: passed, failed, timed out, or
// excluded with the reason recorded in exclusions.go.
//
// `make test` runs a short focused selection (TestConformanceFocused);
// `make conformance` runs whole suites (TestConformance) and writes the
// pass table; docs/conformance.md says how to read it.
package conformance
