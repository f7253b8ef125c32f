// Package chaos is joiner's chaos suite: seeded rounds that kill the
// leading replica mid-launch, mid-registration, mid-drain and
// mid-consolidation, restart kube-apiserver, make the simulated cloud's
// calls fail (throttling, capacity, 5xx, slow creates, ghost instances) and
// run a second cluster with the same name on the same cloud, while an
// observer that shares no code with joiner checks its promises. See
// README.md.
package chaos
