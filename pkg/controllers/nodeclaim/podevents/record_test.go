package podevents_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/podevents"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// Record runs against a real kube-apiserver: it reads the manager's cache
// by the provider ID index and patches the status subresource.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
}

func TestRecord(t *testing.T) {
	env := test.Env(t)
	now := time.Now().UTC().Truncate(time.Second)
	mgr := env.NewManager(t)
	c, err := podevents.NewController(podevents.Options{
		Client: mgr.GetClient(), CloudProvider: fake.New(), Clock: clocktesting.NewFakePassiveClock(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)

	initAt := now.Add(-time.Hour)
	initialized := metav1.Condition{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(initAt)}
	for _, tc := range []struct {
		name        string
		initialized bool
		// boundAt is the pod's binding time; zero for other pod events.
		boundAt time.Time
		lastPod time.Time
		// other names a node class the fake provider does not serve.
		other     bool
		want      time.Time
		wantAgain time.Duration
	}{
		{name: "initialised and never stamped: stamped", initialized: true, want: now},
		{name: "bound after initialisation: stamped", initialized: true, boundAt: initAt.Add(time.Second), want: now},
		{name: "bound in the second of initialisation: stamped", initialized: true, boundAt: initAt, want: now},
		{name: "stamped before the window: stamped again", initialized: true, lastPod: now.Add(-time.Minute), want: now},
		{name: "stamped within the window: folded into it", initialized: true, lastPod: now.Add(-5 * time.Second), want: now.Add(-5 * time.Second)},
		// The quiet time starts at initialisation: a pod bound before it
		// costs no write.
		{name: "bound before initialisation: left alone", initialized: true, boundAt: initAt.Add(-time.Second), want: time.Time{}},
		// Until it is initialised, whether the event counts is not known:
		// asked again later.
		{name: "not initialised: left alone, asked again soon after a recent binding", boundAt: now, want: time.Time{}, wantAgain: time.Second},
		{name: "not initialised: left alone, asked again later after an old binding", boundAt: now.Add(-time.Hour), want: time.Time{}, wantAgain: podevents.DedupeWindow},
		{name: "another provider's node class: left alone", initialized: true, other: true, want: time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			name := test.Name(t, "nc")
			pid := "fake:///a/" + name
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: pid}}
			opts := test.NodeClaimOptions{Name: name, Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			}}
			if tc.other {
				opts.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
			}
			nc := test.NodeClaim(opts)
			env.Create(t, node, nc)
			nc.Status.ProviderID = pid
			if tc.initialized {
				nc.Status.Conditions = []metav1.Condition{initialized}
			}
			nc.Status.LastPodEventTime = metav1.NewTime(tc.lastPod)
			if err := env.Client.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
			// Record reads the cache: wait until it holds this status.
			test.Eventually(t, 10*time.Second, func(ctx context.Context) error {
				var list v1.NodeClaimList
				if err := mgr.GetClient().List(ctx, &list, client.MatchingFields{state.IndexNodeClaimProviderID: pid}); err != nil {
					return err
				}
				if len(list.Items) != 1 || list.Items[0].ResourceVersion != nc.ResourceVersion {
					return fmt.Errorf("cache holds %d nodeclaims with provider ID %s, not yet resourceVersion %s", len(list.Items), pid, nc.ResourceVersion)
				}
				return nil
			})

			again, err := c.Record(ctx, name, tc.boundAt)
			if err != nil {
				t.Fatal(err)
			}
			if again != tc.wantAgain {
				t.Errorf("asks again after %s, want %s", again, tc.wantAgain)
			}
			got := &v1.NodeClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
				t.Fatal(err)
			}
			if !got.Status.LastPodEventTime.Time.Equal(tc.want) {
				t.Errorf("lastPodEventTime = %v, want %v", got.Status.LastPodEventTime.Time, tc.want)
			}
		})
	}
}
