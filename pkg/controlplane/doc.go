// Package controlplane runs a real, local Kubernetes control plane for joiner's
// tests and for `joiner run`: etcd and kube-apiserver, and optionally
// kube-scheduler, kube-controller-manager and kwok, each as a child process
// built by hack/controlplane.sh (`make controlplane`).
//
// It decides the processes' flags, ports, certificates and credentials,
// writes an admin kubeconfig, waits until every component is healthy,
// installs CRDs and hands out a *rest.Config and a controller-runtime client.
// Every process runs in its own process group, writes its log to a file in
// the run directory, and is killed when Stop is called or when the process
// that started it dies.
//
// It never downloads anything, never touches the user's kubeconfig or
// ~/.kube, and never listens on anything but the loopback interface.
package controlplane
