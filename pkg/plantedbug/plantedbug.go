// Package plantedbug holds known bugs the chaos suite plants in joiner to
// prove that its judges bite: a round run with a planted bug must fail,
// naming the promise the bug breaks (test/chaos, TestPlantedBugs).
//
// The bugs exist only in a binary built with the chaosbugs build tag
// (go build -tags chaosbugs), and then only those JOINER_PLANTED_BUGS
// names (comma-separated). Every other build compiles Active to a constant
// false, so the code paths it guards cannot run in a release.
package plantedbug

// Bug names one planted bug.
type Bug string

// The planted bugs, each the opposite of a promise the chaos observer
// judges.
const (
	// GCNamesake: the simulated cloud counts an instance as this
	// cluster's on its cluster name alone, so garbage collection deletes
	// the instances of another cluster that shares the name.
	GCNamesake Bug = "gc-namesake"
	// DrainIgnoresPDB: the drain deletes pods instead of evicting them,
	// so PodDisruptionBudgets are not asked.
	DrainIgnoresPDB Bug = "drain-ignores-pdb"
	// LaunchWithoutToken: the simulated cloud's Create forgets its
	// idempotency (the instance already launched for the NodeClaim), as a
	// launch retried without its client token would, so a retry after a
	// lost response launches a second instance.
	LaunchWithoutToken Bug = "launch-without-token"
	// DeleteBeforeReplacement: a replace decision deletes its candidates
	// as soon as their replacements are created, without waiting for them
	// to initialise, so the candidates' pods have nowhere to go.
	DeleteBeforeReplacement Bug = "delete-before-replacement"
)

// EnvVar lists the bugs to plant in a chaosbugs build.
const EnvVar = "JOINER_PLANTED_BUGS"

// Active reports whether b is planted in this process.
func Active(b Bug) bool {
	return enabled && planted[b]
}
