package scheduling

import "time"

// LaunchBackoff is a NodePool's launch that failed to register or
// initialise and is waiting before its next attempt (the caller keeps the
// record; see pkg/launchhealth). Until NextAttempt the instance types it
// covers are unavailable to the NodePool, as an offering the cloud has no
// capacity for is: pods go to other instance types or NodePools, and a pod
// nothing else can carry gets a BackingOff reason instead of an error.
type LaunchBackoff struct {
	// InstanceTypes are the NodePool's instance types the back-off covers.
	InstanceTypes []string `json:"instanceTypes"`
	// What names the failing scope for people ("image img-1 (amd64)",
	// "instance type g5.xlarge with image img-1").
	What string `json:"what"`
	// Phase is where the launches stopped (Registration, Initialization),
	// Cause the last failure's reason (NodeNotFound, NodeNotReady, ...).
	Phase string `json:"phase"`
	Cause string `json:"cause"`
	// Failures counts the consecutive failures.
	Failures int `json:"failures"`
	// NextAttempt is when the covered instance types may launch again.
	NextAttempt time.Time `json:"nextAttempt"`
}

// BackingOff: the NodePool could carry the pod only on instance types that
// are backing off after failed launches (Backoffs, earliest retry first).
type BackingOff struct {
	NodePool string          `json:"nodePool"`
	Backoffs []LaunchBackoff `json:"backoffs"`
}

// KindBackingOff is BackingOff's kind.
const KindBackingOff ReasonKind = "BackingOff"

func (BackingOff) Kind() ReasonKind { return KindBackingOff }
func (r BackingOff) String() string { return Message(r) }

// activeBackoffs are np's back-offs still waiting at now, and the set of
// instance type names they cover.
func activeBackoffs(np *NodePool, now time.Time) ([]LaunchBackoff, map[string]bool) {
	var active []LaunchBackoff
	covered := map[string]bool{}
	for _, b := range np.Backoffs {
		if !now.Before(b.NextAttempt) {
			continue
		}
		active = append(active, b)
		for _, name := range b.InstanceTypes {
			covered[name] = true
		}
	}
	return active, covered
}
