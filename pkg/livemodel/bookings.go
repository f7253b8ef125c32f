package livemodel

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Bookings is capacity held for pods that do not exist yet (a
// ProvisioningRequest's), which the ordinary batch must neither give to
// other pods nor provision again.
type Bookings interface {
	// Consumes reports whether pod consumes a booking that is still held:
	// such a pod is left out of the batch, the capacity booked for it
	// exists or is on its way and kube-scheduler binds it there.
	Consumes(pod *corev1.Pod) bool
	// Booked are placeholder pods holding room on the node or in-flight
	// NodeClaim named name (nil when nothing is booked there).
	Booked(name string) []*corev1.Pod
}

// withBookings adds the placeholder pods booked on n (a fresh slice: the
// state's own is shared and read-only).
func (b *Builder) withBookings(n *scheduling.ExistingNode) {
	if b.opts.Bookings == nil {
		return
	}
	booked := b.opts.Bookings.Booked(n.Name)
	if n.NodeClaim != "" && n.NodeClaim != n.Name {
		booked = slices.Concat(booked, b.opts.Bookings.Booked(n.NodeClaim))
	}
	if len(booked) > 0 {
		n.Pods = slices.Concat(n.Pods, booked)
	}
}

// consumesBooking reports whether pod is left to a booking.
func (b *Builder) consumesBooking(pod *corev1.Pod) bool {
	return b.opts.Bookings != nil && b.opts.Bookings.Consumes(pod)
}
