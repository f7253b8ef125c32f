package explain_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/explain"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func viewPool(name, nodeClass string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
	return &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.sh.sim", Kind: "SimNodeClass", Name: nodeClass},
			Requirements: reqs,
		}}},
	}
}

func viewPod(name string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func viewType(name, arch string) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name:         name,
		Requirements: map[string][]string{corev1.LabelInstanceTypeStable: {name}, corev1.LabelArchStable: {arch}, corev1.LabelOSStable: {"linux"}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("20")},
		Offerings:    []scheduling.Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: 0.05, Available: true}},
	}
}

func viewConfigMap(t *testing.T, v controllerview.View) *corev1.ConfigMap {
	t.Helper()
	data, err := controllerview.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: controllerview.Name(v.ClusterName), Labels: map[string]string{controllerview.LabelView: "true"}},
		BinaryData: data,
	}
}

// TestControllerViewIsTheSource: explain solves with the instance types the
// controller's provider gave the provisioner, not the built-in catalog. A
// Graviton pool whose node class selects only amd64 images gets no instance
// type from the provider: the controller says NoCompatibleInstanceTypes,
// and explain must not say "joiner would launch t4g.small" beside it.
func TestControllerViewIsTheSource(t *testing.T) {
	arm := viewPool("arm", "amd64-images", v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})
	pod := viewPod("armapp", map[string]string{v1.LabelNodePool: "arm"})
	objs := []runtime.Object{arm, pod}

	without, err := explain.FromObjects(objs, explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := explain.Pod(without, "shop", "armapp", nil, explain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.NewNode == nil || !strings.Contains(v.InstanceTypeSource, "built-in catalog") {
		t.Fatalf("without a view: want a launch from the built-in catalog, said so; got %+v", v)
	}

	view := controllerview.View{ClusterName: "shop", Read: metav1.NewTime(now.Add(-5 * time.Second)),
		RegistrationTTL: metav1.Duration{Duration: 2 * time.Minute}, InitializationTTL: metav1.Duration{Duration: 3 * time.Minute},
		NodePools: map[string]controllerview.NodePoolTypes{"arm": {}}}
	with, err := explain.FromObjects(append(objs, viewConfigMap(t, view)), explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	v, err = explain.Pod(with, "shop", "armapp", nil, explain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.NewNode != nil {
		t.Errorf("with the controller's view: explain would launch %v, the controller has no instance type for the pool", v.NewNode.InstanceTypes)
	}
	if len(v.Rejections) == 0 || !strings.Contains(v.InstanceTypeSource, "the controller's own") || !strings.Contains(v.InstanceTypeSource, "ConfigMap kube-system/joiner-controller-view-shop") {
		t.Errorf("want a rejection and the controller named as the source; got rejections %+v, source %q", v.Rejections, v.InstanceTypeSource)
	}
	if with.View == nil || with.View.RegistrationTTL.Duration != 2*time.Minute {
		t.Errorf("the controller's TTLs are not read: %+v", with.View)
	}
}

// TestNodePoolBackingOffCannotLaunch: a NodePool whose every instance type
// is backing off is not called able to launch.
func TestNodePoolBackingOffCannotLaunch(t *testing.T) {
	np := viewPool("default", "broken")
	launchhealth.Set(np, launchhealth.Record{Backoffs: []launchhealth.Backoff{{
		Scope: launchhealth.Scope{NodeClass: "broken"}, NodePoolHash: np.Hash(), Failures: 2,
		Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound", RetryAfter: metav1.NewTime(now.Add(20 * time.Minute)),
	}}})
	view := controllerview.View{ClusterName: "shop", Read: metav1.NewTime(now),
		NodePools: map[string]controllerview.NodePoolTypes{"default": {InstanceTypes: []*scheduling.InstanceType{viewType("m5.large", "amd64")}}}}
	snap, err := explain.FromObjects([]runtime.Object{np, viewConfigMap(t, view)}, explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := explain.NodePool(snap, "default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Summary, "cannot launch nodes") || !strings.Contains(v.Summary, "backing off") || !strings.Contains(v.Summary, "NodeNotFound") {
		t.Errorf("summary %q, want it to say the pool is backing off", v.Summary)
	}
	if v.InstanceTypes.Compatible != 1 || v.InstanceTypes.BackingOff != 1 {
		t.Errorf("instance types %+v, want 1 compatible, 1 backing off", v.InstanceTypes)
	}
}

// TestNodePoolStatic: explain says a NodePool is static and how many nodes
// it keeps.
func TestNodePoolStatic(t *testing.T) {
	np := viewPool("default", "ok")
	np.Spec.Replicas = ptr.To[int64](3)
	snap, err := explain.FromObjects([]runtime.Object{np}, explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := explain.NodePool(snap, "default")
	if err != nil {
		t.Fatal(err)
	}
	if v.Replicas == nil || *v.Replicas != 3 {
		t.Fatalf("replicas %v, want 3", v.Replicas)
	}
	var out strings.Builder
	if err := explain.Write(&out, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Static: keeps 3 node(s)") {
		t.Errorf("text %q does not say the NodePool keeps 3 nodes", out.String())
	}
}

// TestBootstrapWarningShownOnce: the controller publishes a bootstrap
// warning on the NodeClaim and on its Node; explain lists it once.
func TestBootstrapWarningShownOnce(t *testing.T) {
	nc := &v1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc"},
		Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.sh.sim", Kind: "SimNodeClass", Name: "default"}},
		Status:     v1.NodeClaimStatus{NodeName: "node-a", ProviderID: "sim:///zone-a/i-1"},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "sim:///zone-a/i-1"}}
	msg := "Node node-a registered without the karpenter.sh/unregistered:NoExecute taint"
	event := func(kind, name string) *eventsv1.Event {
		return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: kind + "-" + name}, EventTime: metav1.NewMicroTime(now.Add(-time.Minute)),
			Regarding: corev1.ObjectReference{Kind: kind, Name: name}, Reason: events.UnregisteredTaintMissing, Type: corev1.EventTypeWarning, Note: msg,
			ReportingController: "joiner", ReportingInstance: "joiner", Action: "Register"}
	}
	snap, err := explain.FromObjects([]runtime.Object{nc, node, event("NodeClaim", nc.Name), event("Node", node.Name)}, explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := explain.NodeClaim(snap, nc.Name, explain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Bootstrap) != 1 {
		t.Errorf("bootstrap warnings %+v, want the one warning once", v.Bootstrap)
	}
}
