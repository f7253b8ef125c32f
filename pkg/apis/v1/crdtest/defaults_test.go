package crdtest

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

func keyOf(u *unstructured.Unstructured) client.ObjectKey { return client.ObjectKeyFromObject(u) }

// TestDefaults creates objects with fields left out and reads back what the
// apiserver stored.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate []mutation
		check  func(t *testing.T, np *v1.NodePool)
	}{
		{name: "no disruption block", check: func(t *testing.T, np *v1.NodePool) {
			d := np.Spec.Disruption
			expectString(t, "consolidateAfter", d.ConsolidateAfter.String(), "0s")
			expectString(t, "consolidationPolicy", string(d.ConsolidationPolicy), string(v1.ConsolidationPolicyWhenEmptyOrUnderutilized))
			if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" || d.Budgets[0].Schedule != nil || len(d.Budgets[0].Reasons) != 0 {
				t.Fatalf("budgets = %+v, want [{nodes: 10%%}]", d.Budgets)
			}
			expectString(t, "expireAfter", np.Spec.Template.Spec.ExpireAfter.String(), "720h")
			if np.Spec.Template.Spec.TerminationGracePeriod != nil {
				t.Fatalf("terminationGracePeriod defaulted to %v, want unset", np.Spec.Template.Spec.TerminationGracePeriod)
			}
			if np.Spec.Weight != nil {
				t.Fatalf("weight defaulted to %d, want unset", *np.Spec.Weight)
			}
		}},
		{name: "policy without consolidateAfter", mutate: []mutation{set("spec.disruption", `{consolidationPolicy: WhenEmptyOrUnderutilized}`)},
			check: func(t *testing.T, np *v1.NodePool) {
				expectString(t, "consolidateAfter", np.Spec.Disruption.ConsolidateAfter.String(), "0s")
				if len(np.Spec.Disruption.Budgets) != 1 || np.Spec.Disruption.Budgets[0].Nodes != "10%" {
					t.Fatalf("budgets = %+v, want the default", np.Spec.Disruption.Budgets)
				}
			}},
		{name: "explicit null consolidateAfter", mutate: []mutation{set("spec.disruption", `{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: null}`)},
			check: func(t *testing.T, np *v1.NodePool) {
				expectString(t, "consolidateAfter", np.Spec.Disruption.ConsolidateAfter.String(), "0s")
			}},
		{name: "Balanced policy is accepted as Karpenter accepts it", mutate: []mutation{set("spec.disruption", `{consolidationPolicy: Balanced, consolidateAfter: 1m}`)},
			check: func(t *testing.T, np *v1.NodePool) {
				expectString(t, "consolidationPolicy", string(np.Spec.Disruption.ConsolidationPolicy), "Balanced")
				expectString(t, "consolidateAfter", np.Spec.Disruption.ConsolidateAfter.String(), "1m")
			}},
		{name: "consolidateAfter without policy", mutate: []mutation{set("spec.disruption", `{consolidateAfter: Never}`)},
			check: func(t *testing.T, np *v1.NodePool) {
				if !np.Spec.Disruption.ConsolidateAfter.IsNever() {
					t.Fatalf("consolidateAfter = %s, want Never", np.Spec.Disruption.ConsolidateAfter)
				}
				expectString(t, "consolidationPolicy", string(np.Spec.Disruption.ConsolidationPolicy), "WhenEmptyOrUnderutilized")
			}},
		{name: "budget without nodes", mutate: []mutation{set("spec.disruption.budgets", `[{reasons: [Drifted]}]`)},
			check: func(t *testing.T, np *v1.NodePool) {
				b := np.Spec.Disruption.Budgets
				if len(b) != 1 || b[0].Nodes != "10%" || len(b[0].Reasons) != 1 {
					t.Fatalf("budgets = %+v, want [{nodes: 10%%, reasons: [Drifted]}]", b)
				}
			}},
		{name: "durations kept as written", mutate: []mutation{
			set("spec.template.spec.expireAfter", `1h30m`),
			set("spec.template.spec.terminationGracePeriod", `90m`),
			set("spec.disruption", `{consolidateAfter: 45s}`),
		}, check: func(t *testing.T, np *v1.NodePool) {
			expectString(t, "expireAfter", np.Spec.Template.Spec.ExpireAfter.String(), "1h30m")
			expectString(t, "consolidateAfter", np.Spec.Disruption.ConsolidateAfter.String(), "45s")
			if got := np.Spec.Template.Spec.TerminationGracePeriod.Duration; got != 90*time.Minute {
				t.Fatalf("terminationGracePeriod = %v, want 90m", got)
			}
			b, err := json.Marshal(np.Spec.Template.Spec.ExpireAfter)
			if err != nil {
				t.Fatal(err)
			}
			expectString(t, "expireAfter JSON", string(b), `"1h30m"`)
		}},
		{name: "expireAfter Never", mutate: []mutation{set("spec.template.spec.expireAfter", `Never`)},
			check: func(t *testing.T, np *v1.NodePool) {
				if !np.Spec.Template.Spec.ExpireAfter.IsNever() {
					t.Fatalf("expireAfter = %s, want Never", np.Spec.Template.Spec.ExpireAfter)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := test.Env(t)
			u := object(t, validNodePool, test.Name(t, "np"))
			for _, m := range tc.mutate {
				m(t, u)
			}
			env.Create(t, u)
			np := &v1.NodePool{}
			if err := env.Client.Get(t.Context(), keyOf(u), np); err != nil {
				t.Fatal(err)
			}
			tc.check(t, np)
		})
	}
}

func TestNodeClaimDefaults(t *testing.T) {
	env := test.Env(t)
	u := object(t, validNodeClaim, test.Name(t, "nc"))
	env.Create(t, u)
	nc := &v1.NodeClaim{}
	if err := env.Client.Get(t.Context(), keyOf(u), nc); err != nil {
		t.Fatal(err)
	}
	expectString(t, "expireAfter", nc.Spec.ExpireAfter.String(), "720h")
	if got := nc.Spec.Resources.Requests.Cpu().String(); got != "1" {
		t.Fatalf("resources.requests.cpu = %s, want 1", got)
	}
}

// TestTypedRoundTrip creates a NodePool and a NodeClaim from the Go types
// and writes conditions through the status subresource with the helpers,
// which must produce conditions the schema accepts.
func TestTypedRoundTrip(t *testing.T) {
	env := test.Env(t)
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}}},
				NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
				ExpireAfter:  v1.MustParseNillableDuration("Never"),
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("5m")},
		},
	}
	env.Create(t, np)
	if got := np.Spec.Disruption.ConsolidationPolicy; got != v1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Fatalf("create response consolidationPolicy = %q, want the default", got)
	}
	conds := np.StatusConditions()
	conds.SetTrue(v1.ConditionTypeValidationSucceeded)
	conds.SetFalse(v1.ConditionTypeNodeClassReady, "NodeClassNotFound", "SimNodeClass default not found")
	conds.SetUnknown(v1.ConditionTypeNodeRegistrationHealthy)
	if err := env.Client.Status().Update(t.Context(), np); err != nil {
		t.Fatalf("writing NodePool status: %v", err)
	}
	got := &v1.NodePool{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	ready := got.StatusConditions().Get(v1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "NodeClassNotFound" {
		t.Fatalf("stored Ready = %+v, want False/NodeClassNotFound", ready)
	}
	types := sets.New[string]()
	for _, c := range got.Status.Conditions {
		types.Insert(c.Type)
	}
	if types.Len() != 4 {
		t.Fatalf("stored conditions %v, want Ready, ValidationSucceeded, NodeClassReady, NodeRegistrationHealthy", sets.List(types))
	}

	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: np.Name}},
		Spec: v1.NodeClaimSpec{
			Requirements: np.Spec.Template.Spec.Requirements,
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
		},
	}
	env.Create(t, nc)
	nc.StatusConditions().Initialize()
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.Status.ProviderID = "sim:///sim-east-1a/i-1"
	nc.Status.LastPodEventTime = metav1.Now()
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatalf("writing NodeClaim status: %v", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	if !nc.StatusConditions().IsTrue(v1.ConditionTypeLaunched) || !nc.StatusConditions().IsUnknown(v1.ConditionTypeReady) {
		t.Fatalf("stored conditions = %+v, want Launched=True and Ready=Unknown", nc.Status.Conditions)
	}
	expectString(t, "expireAfter", nc.Spec.ExpireAfter.String(), "720h")
}

func expectString(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}
