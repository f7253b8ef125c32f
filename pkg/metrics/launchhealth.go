package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Launch health: NodeClaims that launched but failed to register or
// initialise, and the back-offs that follow (joiner's; Karpenter counts
// launches only, in NodeClaimsLaunched).
var (
	// NodeClaimsRegistrationFailed counts NodeClaims deleted because their
	// Node did not register within the registration TTL.
	NodeClaimsRegistrationFailed = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "registration_failures_total",
		Help: "Number of NodeClaims deleted because their Node did not register within the registration TTL, by NodePool.",
	}, LabelNodePool)

	// NodeClaimsInitializationFailed counts NodeClaims deleted because
	// their Node did not initialise within the initialization TTL, by the
	// check that failed.
	NodeClaimsInitializationFailed = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "initialization_failures_total",
		Help: "Number of NodeClaims deleted because their Node did not initialise within the initialization TTL, by NodePool and reason.",
	}, LabelNodePool, LabelReason)

	// NodePoolLaunchBackoffs counts the back-offs started after a failure,
	// by NodePool and phase (registration, initialization).
	NodePoolLaunchBackoffs = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodepool", Name: "launch_backoffs_total",
		Help: "Number of launch back-offs started after a NodeClaim failed to register or initialise, by NodePool and phase.",
	}, LabelNodePool, LabelPhase)

	// NodePoolLaunchBackoffSeconds is the longest back-off a NodePool is
	// currently waiting out after a failure, 0 when none.
	NodePoolLaunchBackoffSeconds = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: JoinerNamespace, Subsystem: "nodepool", Name: "launch_backoff_seconds",
		Help: "Length of the longest launch back-off of a NodePool when it started, 0 when none is active, by NodePool.",
	}, LabelNodePool)
)
