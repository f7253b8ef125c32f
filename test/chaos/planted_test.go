package chaos

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/plantedbug"
)

// plantedCases are the bugs TestPlantedBugs plants, each with the promise
// the observer must then name as broken (a substring of its report).
var plantedCases = []struct {
	bug plantedbug.Bug
	// ghostAtLeast: the bug shows only when launches lose their response.
	ghostAtLeast float64
	// broken are the reports that name the broken promise; any one will do.
	broken []string
}{
	{plantedbug.GCNamesake, 0, []string{"of the other cluster"}},
	{plantedbug.DrainIgnoresPDB, 0, []string{"PDB"}},
	{plantedbug.LaunchWithoutToken, 0.5, []string{"two live instances for one NodeClaim", "has no NodeClaim", "instances ["}},
}

// TestPlantedBugs proves the chaos judges bite: for each planted bug
// (pkg/plantedbug, compiled in only with -tags chaosbugs) a seeded round on
// the simulated cloud must fail, and its report must name the promise the
// bug breaks. CHAOS_PLANTED=1 runs it (make chaos-planted); CHAOS_SEED
// picks the round (default 1), CHAOS_PLANTED_BUGS narrows the bugs.
func TestPlantedBugs(t *testing.T) {
	if os.Getenv("CHAOS_PLANTED") != "1" {
		t.Skip("a round per planted bug: make chaos-planted (CHAOS_PLANTED=1)")
	}
	seed := uint64(1)
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: want an unsigned integer", s)
		}
		seed = n
	}
	only := os.Getenv("CHAOS_PLANTED_BUGS")
	for _, c := range plantedCases {
		if only != "" && !strings.Contains(","+only+",", ","+string(c.bug)+",") {
			continue
		}
		t.Run(string(c.bug), func(t *testing.T) {
			w := newWorld(t, &simCloud{})
			w.planted, w.ghostAtLeast = c.bug, c.ghostAtLeast
			defer w.teardown()
			s, problems := w.play(t, seed)
			report := strings.Join(problems, "\n")
			for _, want := range c.broken {
				if strings.Contains(report, want) {
					t.Logf("planted %s, seed %d: the round failed, naming the broken promise (%q):\n%s", c.bug, seed, want, report)
					return
				}
			}
			t.Errorf("planted %s, seed %d (%s): the round did not report the broken promise (any of %q); its problems:\n%s", c.bug, seed, s, c.broken, report)
		})
	}
}
