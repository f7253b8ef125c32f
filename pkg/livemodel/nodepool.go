package livemodel

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// schedulingNodePool is the solver's view of np, with the live usage
// inUse (existing and in-flight NodeClaims) counted against its limits
// instead of status.resources, which lags.
func schedulingNodePool(np *v1.NodePool, inUse corev1.ResourceList) *scheduling.NodePool {
	out := nodepool.FromNodePool(np)
	out.InUse = inUse
	return out
}
