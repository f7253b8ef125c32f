// Package e2e tests the simulated cloud against a real control plane
// (kube-apiserver, etcd and kwok from pkg/controlplane): instances launched
// by the sim provider register as Nodes through the machines runnable and
// kwok makes them Ready, with or without the injected faults. It holds
// tests only.
package e2e
