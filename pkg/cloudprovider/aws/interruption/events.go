package interruption

// Event reasons of the interruption controller, Karpenter's (reference
// §4.5).
const (
	ReasonSpotInterrupted                        = "SpotInterrupted"
	ReasonSpotRebalanceRecommendation            = "SpotRebalanceRecommendation"
	ReasonInstanceUnhealthy                      = "InstanceUnhealthy"
	ReasonInstanceStopping                       = "InstanceStopping"
	ReasonInstanceTerminating                    = "InstanceTerminating"
	ReasonCapacityReservationInstanceInterrupted = "CapacityReservationInstanceInterrupted"
	ReasonTerminatingOnInterruption              = "TerminatingOnInterruption"
)

// what each kind of message says, for its event.
var kindEvents = map[Kind]struct {
	reason, note string
	warning      bool
}{
	KindSpotInterruption:            {ReasonSpotInterrupted, "Spot interruption warning: EC2 reclaims instance %s in two minutes", true},
	KindRebalanceRecommendation:     {ReasonSpotRebalanceRecommendation, "Spot rebalance recommendation: instance %s is at elevated risk of interruption", false},
	KindScheduledChange:             {ReasonInstanceUnhealthy, "AWS Health scheduled change: instance %s is scheduled for maintenance or retirement", true},
	KindInstanceStopped:             {ReasonInstanceStopping, "Instance %s is stopping", true},
	KindInstanceImpaired:            {ReasonInstanceUnhealthy, "EC2 status check: instance %s is impaired", true},
	KindInstanceTerminated:          {ReasonInstanceTerminating, "Instance %s is terminating", true},
	KindCapacityReservationInterupt: {ReasonCapacityReservationInstanceInterrupted, "Capacity reservation interruption: EC2 reclaims instance %s from its reservation", true},
}
