package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
	"github.com/joiner-dev/joiner/pkg/test"
)

// plantedCases are the bugs TestPlantedBugs plants, each with the promise
// the observer must then name as broken (a substring of its report).
var plantedCases = []struct {
	bug plantedbug.Bug
	// ghostAtLeast: the bug shows only when launches lose their response.
	ghostAtLeast float64
	// drainWeb: after the round, delete the NodeClaim of a node running
	// web pods, so joiner drains them (a round's consolidation may not).
	drainWeb bool
	// broken are the reports that name the broken promise; any one will do.
	broken []string
}{
	{plantedbug.GCNamesake, 0, false, []string{"of the other cluster"}},
	{plantedbug.DrainIgnoresPDB, 0, true, []string{"PDB"}},
	{plantedbug.LaunchWithoutToken, 0.5, false, []string{"two live instances for one NodeClaim", "has no NodeClaim", "instances ["}},
	// Every round drifts its nodes, so replace decisions are taken.
	{plantedbug.DeleteBeforeReplacement, 0, false, []string{"before any replacement had initialised"}},
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
			if c.drainWeb {
				w.drainWebNode(t)
				if v := w.observer.Violations(); len(v) > 0 {
					problems = append(problems, "after draining a web node: "+strings.Join(v, "\n  "))
				}
			}
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

// drainWebNode deletes the NodeClaim of a node running a web pod, as a
// user's kubectl delete nodeclaim would, and waits until the node's web
// pods are gone: joiner drains them through the Eviction API, under the
// web PDB.
func (w *world) drainWebNode(t *testing.T) {
	ctx := t.Context()
	var pods corev1.PodList
	if err := w.env.Client.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	node := ""
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			node = p.Spec.NodeName
			break
		}
	}
	if node == "" {
		t.Fatalf("no web pod runs on a node")
	}
	var claims v1.NodeClaimList
	if err := w.env.Client.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if claims.Items[i].Status.NodeName == node {
			w.log("deleting NodeClaim %s of node %s, which runs web pods", claims.Items[i].Name, node)
			if err := w.env.Client.Delete(ctx, &claims.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	test.Eventually(t, 3*time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := w.env.Client.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{"app": "web"}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node {
				return fmt.Errorf("web pod %s still on node %s", p.Name, node)
			}
		}
		return nil
	})
}
