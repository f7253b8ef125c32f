package lifecycle

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// The checks the controller acts on, exported so that `joiner explain`
// describes a waiting NodeClaim with the same verdicts, in the same order
// and words, that the controller uses when it gives up on it.

// NotInitialized is the first reason node is not initialized for nc yet
// (Ready, startup taints, the legacy karpenter.sh/uninitialized taint,
// ephemeral taints, extended resources), with what is awaited; "" when it
// is initialised.
func NotInitialized(nc *v1.NodeClaim, node *corev1.Node) (reason, message string) {
	return notInitialized(nc, node)
}

// ArchitectureMismatch explains a Node whose kubernetes.io/arch nc does
// not allow, or returns "".
func ArchitectureMismatch(nc *v1.NodeClaim, node *corev1.Node) string {
	return architectureMismatch(nc, node)
}

// RegistrationAdvice is the registration checklist for a NodeClaim whose
// Node has not registered, from its Registered condition.
func RegistrationAdvice(registered metav1.Condition) string {
	return registrationAdvice(registered)
}
