// Package test holds what joiner's tests share: the harness that runs one
// real control plane (etcd, kube-apiserver and, on request, kube-scheduler,
// kube-controller-manager and kwok) per test package, a manager wired as the
// operator wires it (NewManager), unique names and namespaces per test,
// polling assertions, and builders for the objects tests make (Pod,
// NodeClaim, NodePool).
//
// A test package that talks to the API server starts its control plane in
// TestMain with Main and reaches it with Env:
//
//	func TestMain(m *testing.M) {
//		test.Main(m, controlplane.Options{
//			Scheduler: true, ControllerManager: true, Kwok: true,
//			Scheme:         scheme, // client-go types plus joiner's APIs
//			CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
//		})
//	}
//
//	func TestSomething(t *testing.T) {
//		env := test.Env(t)
//		ns := env.Namespace(t)                  // deleted when t ends
//		env.Create(t, somePod(ns, test.Name(t, "pod")))
//		test.Eventually(t, 0, func(ctx context.Context) error {
//			return checkSomething(ctx, env.Client)
//		})
//	}
//
// When the binaries are missing, the package fails (it does not skip): run
// `make controlplane`.
//
// It never sleeps to wait for a write to be visible: Eventually polls the
// condition until it holds or the time runs out.
package test
