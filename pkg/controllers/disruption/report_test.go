package disruption

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
)

// Chaos round sim 2062 spent 11 minutes deciding nothing, and logging
// nothing, while 22 nodes wrongly marked deleting held a 50% budget of 44
// drifted nodes. A pass whose budget blocks a reason that has candidates
// says so at debug level, naming the nodes that hold the budget, once per
// change of that picture rather than on every pass.
func TestBudgetBlockedPassIsLogged(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	ctx := log.IntoContext(t.Context(), logger)
	c := &Controller{opts: Options{Recorder: &events.Buffer{}}}

	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	claim := func(name string, drifted bool) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if drifted {
			nc.StatusConditions().SetTrue(v1.ConditionTypeDrifted)
		}
		return nc
	}
	node := func(name string, deleting bool) disruption.Node {
		return disruption.Node{Name: name, NodeClaim: claim(name, true), NodePool: pool, Initialized: true, Deleting: deleting}
	}
	pass := func(allowed int, nodes ...disruption.Node) {
		in := &disruption.Input{Nodes: nodes, NodePools: map[string]*v1.NodePool{pool: np}}
		dec := &disruption.Decision{Verdicts: make([]disruption.Verdict, len(nodes)), Allowed: map[string]map[disruption.Reason]int{pool: {disruption.ReasonDrifted: allowed}}}
		for i := range nodes {
			dec.Verdicts[i].Candidate = !nodes[i].Deleting
		}
		c.report(ctx, in, dec)
	}
	blockedLines := func() []string {
		var out []string
		for _, l := range lines {
			if strings.Contains(l, "disruption budget blocks a reason") {
				out = append(out, l)
			}
		}
		return out
	}

	pass(0, node("a", true), node("b", true), node("c", false), node("d", false))
	got := blockedLines()
	if len(got) != 1 {
		t.Fatalf("a pass blocked by its budget logged %d budget lines, want 1: %q", len(got), lines)
	}
	for _, want := range []string{`"reason"="Drifted"`, `"nodes"=4`, `"deleting"="a,b"`} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the budget line %s lacks %s", got[0], want)
		}
	}
	pass(0, node("a", true), node("b", true), node("c", false), node("d", false))
	if n := len(blockedLines()); n != 1 {
		t.Errorf("an unchanged blocked pool was logged again (%d lines)", n)
	}
	pass(0, node("a", true), node("c", false), node("d", false))
	if n := len(blockedLines()); n != 2 {
		t.Errorf("a blocked pool whose nodes changed was not logged again (%d lines)", n)
	}
	pass(1, node("a", true), node("c", false), node("d", false))
	pass(0, node("a", true), node("c", false), node("d", false))
	if n := len(blockedLines()); n != 3 {
		t.Errorf("a pool blocked again after a pass with budget left was not logged again (%d lines)", n)
	}
}
