package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestCluster(t testing.TB, objs ...client.Object) (*Cluster, *clocktesting.FakeClock, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1.NodeClaim{}).Build()
	clk := clocktesting.NewFakeClock(epoch)
	c, err := NewCluster(Options{Reader: kube, Clock: clk, NominationTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk, kube
}

func nodeClaim(name, pool, providerID string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m.large", "m.xlarge"}},
			},
			Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
		},
		Status: v1.NodeClaimStatus{ProviderID: providerID},
	}
}

func launched(nc *v1.NodeClaim, cpu, mem string) *v1.NodeClaim {
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	nc.Status.Allocatable = nc.Status.Capacity.DeepCopy()
	return nc
}

func node(name, providerID string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m"), corev1.ResourceMemory: resource.MustParse("15Gi")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func pod(ns, name, nodeName, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func daemonPod(ns, name, nodeName, cpu string) *corev1.Pod {
	p := pod(ns, name, nodeName, cpu)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
	return p
}

func cpu(rl corev1.ResourceList) string {
	q := rl[corev1.ResourceCPU]
	return q.String()
}
