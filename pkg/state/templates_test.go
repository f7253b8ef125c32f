package state

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// replica is a pod of ReplicaSet rs as the API server would send it: every
// part its own copy.
func replica(rs types.UID, name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels:          map[string]string{"app": "web", "pod-template-hash": "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: rs, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Tolerations:  []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Volumes:      []corev1.Volume{{Name: "kube-api-access-" + name}},
		},
	}
}

// same reports whether two maps or slices are one (the same backing
// storage), not merely equal.
func same(a, b any) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// TestPodTemplatesShareWhatReplicasHaveEqual: the replicas of one
// ReplicaSet end up sharing their labels, owners, containers, tolerations
// and node selector with the first one, and keep what is their own (name,
// volumes) or differs (another request, another ReplicaSet's pods, a pod
// with no controller).
func TestPodTemplatesShareWhatReplicasHaveEqual(t *testing.T) {
	tpl := newPodTemplates()
	first, second := replica("rs-1", "a", "1"), replica("rs-1", "b", "1")
	tpl.share(first)
	want := second.DeepCopy()
	tpl.share(second)
	if !reflect.DeepEqual(second, want) {
		t.Fatalf("sharing changed the pod:\n got %+v\nwant %+v", second, want)
	}
	for _, part := range []struct {
		name string
		a, b any
	}{
		{"labels", first.Labels, second.Labels},
		{"owners", first.OwnerReferences, second.OwnerReferences},
		{"containers", first.Spec.Containers, second.Spec.Containers},
		{"tolerations", first.Spec.Tolerations, second.Spec.Tolerations},
		{"node selector", first.Spec.NodeSelector, second.Spec.NodeSelector},
	} {
		if !same(part.a, part.b) {
			t.Errorf("%s not shared between two replicas", part.name)
		}
	}
	if same(first.Spec.Volumes, second.Spec.Volumes) {
		t.Error("volumes shared though they differ")
	}

	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"another request", replica("rs-1", "c", "2")},
		{"another ReplicaSet", replica("rs-2", "d", "1")},
		{"no controller", func() *corev1.Pod { p := replica("rs-1", "e", "1"); p.OwnerReferences = nil; return p }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.pod.DeepCopy()
			tpl.share(tc.pod)
			if !reflect.DeepEqual(tc.pod, want) {
				t.Fatalf("sharing changed the pod")
			}
			if same(tc.pod.Spec.Containers, first.Spec.Containers) {
				t.Error("containers shared with a pod they differ from, or of another controller")
			}
		})
	}
}

// TestPodTemplatesStayBounded: past maxPodTemplates controllers the table
// starts again instead of growing.
func TestPodTemplatesStayBounded(t *testing.T) {
	tpl := newPodTemplates()
	for i := range maxPodTemplates + 10 {
		tpl.share(replica(types.UID(fmt.Sprintf("rs-%d", i)), fmt.Sprintf("p-%d", i), "1"))
	}
	if n := len(tpl.byOwner); n > maxPodTemplates {
		t.Fatalf("%d templates kept, want at most %d", n, maxPodTemplates)
	}
}

// BenchmarkPodTemplatesMemory reports the heap 10,000 replicas of one
// ReplicaSet hold, each decoded on its own, with and without sharing.
func BenchmarkPodTemplatesMemory(b *testing.B) {
	const n = 10000
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%t", shared), func(b *testing.B) {
			for range b.N {
				tpl := newPodTemplates()
				before := heapAlloc()
				pods := make([]*corev1.Pod, n)
				for i := range pods {
					pods[i] = replica("rs-1", fmt.Sprintf("web-abc-%05d", i), "1")
					if shared {
						tpl.share(pods[i])
					}
				}
				b.ReportMetric(float64(heapAlloc()-before)/n, "B/pod")
				runtime.KeepAlive(pods)
			}
		})
	}
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
