package disruption

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	fakecloud "github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// laggingCache is a manager's cache that has not yet received some
// NodeClaims the API server already holds.
type laggingCache struct {
	client.Client
	hidden map[string]bool
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok && c.hidden[key.Name] {
		return apierrors.NewNotFound(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// Issue 34, conformance run P16 (Host Name Spreading Deployment XL): a
// consolidation command replaced 768 nodes by 700; creating the 700
// NodeClaims took 2m43s, and the queue, counting its 30 s grace from the
// decision, took one the cache had not yet shown (created 41 s before)
// for deleted and rolled the command back while every replacement was
// launching. The 700 nodes came up empty, and the same command was
// decided again 13 minutes later and rolled back the same way. The cache
// is not the judge of a replacement's deletion, the API server is; and a
// command's clocks start once its replacements exist.
func TestReplacementsTheCacheHasNotShownYet(t *testing.T) {
	twoReplacements := func() *disruption.Command {
		return &disruption.Command{Method: disruption.MethodMultiNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"},
			Replacements: []*scheduling.NewNodeClaim{replacement(), replacement()}}
	}
	for _, tc := range []struct {
		name string
		// took is how long creating the replacements takes; hidden are
		// the replacements the cache does not show until reveal.
		took   time.Duration
		hidden []string
		// wait is the time between Execute and the first check.
		wait time.Duration
		// gone deletes the second replacement from the API server before
		// anyone saw it.
		gone         bool
		wantRollback bool
	}{
		{name: "creation outlasts the grace, the cache has not shown the last replacement yet", took: 2*time.Minute + 43*time.Second, hidden: []string{"replacement-b"}},
		{name: "the cache lags past the grace, the API server holds the replacement", hidden: []string{"replacement-b"}, wait: 40 * time.Second},
		{name: "creation outlasts the replacement timeout, which counts from the creation", took: 6 * time.Minute},
		{name: "a replacement the API server does not hold either rolls back after the grace", hidden: []string{"replacement-b"}, wait: 31 * time.Second, gone: true, wantRollback: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t)
			cache := &laggingCache{Client: u.kube, hidden: map[string]bool{}}
			for _, name := range tc.hidden {
				cache.hidden[name] = true
			}
			var err error
			u.ctrl, err = NewController(Options{Client: cache, APIReader: u.kube, CloudProvider: fakecloud.New(), State: u.state, Model: u.prov, NodeClaims: u.prov, Recorder: u.events, Clock: u.clock, ReplacementTimeout: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			u.prov.took = tc.took
			n1 := u.node("n1")
			if err := u.ctrl.queue.Execute(u.ctx, twoReplacements(), u.input(n1)); err != nil {
				t.Fatal(err)
			}
			if tc.gone {
				nc := u.getClaim("replacement-b")
				nc.Finalizers = nil
				if err := u.kube.Update(u.ctx, nc); err != nil {
					t.Fatal(err)
				}
				if err := u.kube.Delete(u.ctx, nc); err != nil {
					t.Fatal(err)
				}
				u.ctrl.queue.Process(u.ctx)
				if u.ctrl.queue.Len() != 1 {
					t.Fatal("rolled back within the grace")
				}
			}
			u.clock.Step(tc.wait)
			u.ctrl.queue.Process(u.ctx)
			if tc.wantRollback {
				if u.ctrl.queue.Len() != 0 {
					t.Fatal("a replacement deleted from the API server did not roll the command back")
				}
				if v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints) {
					t.Error("rolled-back candidate still tainted")
				}
				return
			}
			if u.ctrl.queue.Len() != 1 {
				t.Fatalf("command rolled back while its replacements were launching; events %v", u.events.Reasons())
			}
			if !v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints) {
				t.Fatal("candidate untainted while its command waits")
			}
			cache.hidden = map[string]bool{}
			for _, name := range u.prov.created {
				u.initialize(name)
			}
			u.ctrl.queue.Process(u.ctx)
			if u.ctrl.queue.Len() != 0 {
				t.Fatal("command not finished once its replacements initialised")
			}
			if u.getClaim("n1").DeletionTimestamp == nil {
				t.Error("candidate not deleted once its replacements initialised")
			}
		})
	}
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets map[string]int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets[key.Name]++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// The lag the queue was fixed for (P16: 35 and 41 s) outlasts the grace:
// the API server is asked about a replacement the cache does not show at
// most once per grace, not on every one-second tick, since the API server
// behind such a cache is already overloaded.
func TestLaggingCacheAsksTheAPIServerOncePerGrace(t *testing.T) {
	u := newUnit(t)
	cache := &laggingCache{Client: u.kube, hidden: map[string]bool{"replacement-b": true}}
	reader := &countingReader{Reader: u.kube, gets: map[string]int{}}
	var err error
	u.ctrl, err = NewController(Options{Client: cache, APIReader: reader, CloudProvider: fakecloud.New(), State: u.state, Model: u.prov, NodeClaims: u.prov, Recorder: u.events, Clock: u.clock, ReplacementTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &disruption.Command{Method: disruption.MethodMultiNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"},
		Replacements: []*scheduling.NewNodeClaim{replacement(), replacement()}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(u.node("n1"))); err != nil {
		t.Fatal(err)
	}
	const ticks = 120
	for range ticks {
		u.clock.Step(time.Second)
		u.ctrl.queue.Process(u.ctx)
	}
	if u.ctrl.queue.Len() != 1 {
		t.Fatalf("command rolled back while the API server held its replacement; events %v", u.events.Reasons())
	}
	// 90 s past the grace: asked at about 31, 61, 91 and 121 s.
	if got, limit := reader.gets["replacement-b"], (ticks-int(unseenGrace/time.Second))/int(unseenGrace/time.Second)+1; got == 0 || got > limit {
		t.Errorf("asked the API server about the hidden replacement %d times in %d ticks; want 1 to %d", got, ticks, limit)
	}
	if got := reader.gets["replacement-a"]; got != 0 {
		t.Errorf("asked the API server about a replacement the cache shows %d times", got)
	}
}
