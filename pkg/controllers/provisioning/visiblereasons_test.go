package provisioning_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestProvisionMakesSilentSkipsVisible checks that the pods Karpenter
// passes over without a word (inline in-tree volumes, pods refusing every
// managed node, a resource no instance type has, pods without requests)
// each get an event on the pod that says why, and that the unschedulable
// ones are counted in joiner_pods_unschedulable{reason}.
func TestProvisionMakesSilentSkipsVisible(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		// kind is the reason kind counted in the metric ("" when the pod is
		// placed anyway).
		kind        scheduling.ReasonKind
		eventReason string
		eventText   string
		wantClaims  int
	}{
		{
			name: "inline in-tree volume",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"}}}}
			},
			kind:        scheduling.KindVolume,
			eventReason: events.FailedScheduling,
			eventText:   `volume "data" uses the in-tree awsElasticBlockStore plugin, which joiner does not support; use its CSI driver`,
		},
		{
			name: "refuses every managed node",
			mutate: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}}
			},
			kind:        scheduling.KindExcludesNodePools,
			eventReason: events.FailedScheduling,
			eventText:   "excludes every node with label karpenter.sh/nodepool, so no nodepool can launch for it",
		},
		{
			name: "a resource no instance type has",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/fpga"] = resource.MustParse("1")
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}
			},
			kind:        scheduling.KindResourceNotOffered,
			eventReason: events.FailedScheduling,
			eventText:   "no instance type has example.com/fpga (requested 1)",
		},
		{
			name: "resource claims under IGNORE_DRA_REQUESTS=true",
			mutate: func(p *corev1.Pod) {
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")}}
			},
			kind:        scheduling.KindDynamicResources,
			eventReason: events.FailedScheduling,
			eventText:   "pod has Dynamic Resource Allocation claims (gpus) and IGNORE_DRA_REQUESTS=true (Karpenter's default) leaves such pods unprovisioned",
		},
		{
			name:        "no requests is a warning, and the pod is still planned",
			mutate:      func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} },
			eventReason: events.NoResourceRequests,
			eventText:   "pod has no cpu or memory requests",
			wantClaims:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.createNodePool(nil)
			f.pendingPods(1, "1", tt.mutate)
			r := f.replica()
			res := r.provision()
			if got := len(f.nodeClaims()); got != tt.wantClaims {
				t.Fatalf("%d nodeclaims, want %d", got, tt.wantClaims)
			}
			var found []string
			for _, e := range f.events() {
				if strings.Contains(e, " "+tt.eventReason+" ") {
					found = append(found, e)
				}
			}
			if len(found) != 1 || !strings.Contains(found[0], tt.eventText) {
				t.Fatalf("%s events %q, want one containing %q; all events:\n%s", tt.eventReason, found, tt.eventText, strings.Join(f.events(), "\n"))
			}
			if tt.kind != "" {
				if len(res.Unschedulable) != 1 {
					t.Fatalf("%d unschedulable, want 1", len(res.Unschedulable))
				}
				if got := testutil.ToFloat64(metrics.PodsUnschedulable.WithLabelValues(string(tt.kind))); got != 1 {
					t.Errorf("joiner_pods_unschedulable{reason=%q} = %v, want 1", tt.kind, got)
				}
			}
			// A second pass does not repeat the event.
			r.provision()
			n := 0
			for _, e := range f.events() {
				if strings.Contains(e, " "+tt.eventReason+" ") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d %s events after two passes, want 1", n, tt.eventReason)
			}
		})
	}
}

// TestProvisionReportsNodePoolsWithoutCompatibleTypes checks the NodePool
// event Karpenter declares: a NodePool whose requirements no instance type
// meets, or whose node class offers none, gets NoCompatibleInstanceTypes.
func TestProvisionReportsNodePoolsWithoutCompatibleTypes(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*fixture)
		message string
	}{
		{
			name: "requirements no type meets",
			mutate: func(f *fixture) {
				f.createNodePool(func(np *v1.NodePool) {
					np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
						v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"no-such-type"}})
				})
			},
			message: "no instance type meets its requirements (karpenter.sh/capacity-type In [on-demand]",
		},
		{
			name: "no types at all",
			mutate: func(f *fixture) {
				f.createNodePool(nil)
				f.cloud.InstanceTypesForNodePool = map[string][]*scheduling.InstanceType{f.nodePool.Name: {}}
			},
			message: "its node class offers no instance types",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.mutate(f)
			f.pendingPods(1, "1", nil)
			f.replica().provision()
			var found []string
			for _, e := range f.recorder.Events() {
				if e.Reason == events.NoCompatibleInstanceTypes {
					found = append(found, e.Message)
					if np, ok := e.Regarding.(*v1.NodePool); !ok || np.Name != f.nodePool.Name {
						t.Errorf("event regarding %#v, want the NodePool", e.Regarding)
					}
				}
			}
			if len(found) != 1 || !strings.Contains(found[0], tt.message) {
				t.Fatalf("NoCompatibleInstanceTypes events %q, want one containing %q; all events:\n%s", found, tt.message, strings.Join(f.events(), "\n"))
			}
		})
	}
}
