package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// LabelClass is a ProvisioningRequest's provisioning class.
const (
	LabelClass   = "class"
	LabelOutcome = "outcome"
)

// ProvisioningRequest outcomes (joiner's; Cluster Autoscaler has none
// under these names).
var (
	// ProvisioningRequestOutcomes counts what became of ProvisioningRequest
	// attempts, by class and outcome: provisioned, capacity_not_found,
	// launch_rolled_back, failed, booking_expired, capacity_revoked.
	ProvisioningRequestOutcomes = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "provisioningrequest", Name: "outcomes_total",
		Help: "Number of ProvisioningRequest attempts by class and outcome (provisioned, capacity_not_found, launch_rolled_back, failed, booking_expired, capacity_revoked).",
	}, LabelClass, LabelOutcome)

	// ProvisioningRequestsBooked is the number of ProvisioningRequests whose
	// capacity is booked for their pods right now.
	ProvisioningRequestsBooked = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: JoinerNamespace, Subsystem: "provisioningrequest", Name: "booked",
		Help: "Number of ProvisioningRequests whose capacity is held for their pods, by class.",
	}, LabelClass)
)
