// Package test holds what joiner's tests share: the harness that runs one
// real control plane (etcd, kube-apiserver and, on request, kube-scheduler,
// kube-controller-manager and kwok) per test package, unique names and
// namespaces per test, and polling assertions.
//
// A test package that talks to the API server starts its control plane in
// TestMain with Main and reaches it with Env. When the binaries are missing,
// the package fails: run `make controlplane`.
//
// It never sleeps to wait for a write to be visible: Eventually polls the
// condition until it holds or the time runs out.
package test
