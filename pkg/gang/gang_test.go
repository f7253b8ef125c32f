package gang_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	"github.com/joiner-dev/joiner/pkg/gang"
)

func TestPodsForTemplates(t *testing.T) {
	pr := &autoscalingv1.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gang", UID: "u1"},
		Spec: autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: autoscalingv1.ClassBestEffortAtomicScaleUp, PodSets: []autoscalingv1.PodSet{
			{PodTemplateRef: autoscalingv1.Reference{Name: "workers"}, Count: 3},
			{PodTemplateRef: autoscalingv1.Reference{Name: "driver"}, Count: 1},
		}},
	}
	tmpl := func(name, cpu string) *corev1.PodTemplate {
		return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}}
	}
	pods, err := gang.Pods(pr, map[string]*corev1.PodTemplate{"workers": tmpl("workers", "2"), "driver": tmpl("driver", "1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	uids := map[types.UID]bool{}
	for _, p := range pods {
		uids[p.UID] = true
		if p.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest] != "gang" || p.Namespace != "ml" {
			t.Errorf("pod %s: annotations %v, namespace %s", p.Name, p.Annotations, p.Namespace)
		}
	}
	if len(uids) != 4 {
		t.Errorf("%d distinct UIDs, want 4", len(uids))
	}
	again, _ := gang.Pods(pr, map[string]*corev1.PodTemplate{"workers": tmpl("workers", "2"), "driver": tmpl("driver", "1")})
	if again[0].UID != pods[0].UID {
		t.Error("a request's pod UIDs change between plans; its NodeClaim names would too")
	}
	if _, err := gang.Pods(pr, map[string]*corev1.PodTemplate{"workers": tmpl("workers", "2")}); err == nil {
		t.Error("a missing PodTemplate is not reported")
	}
}
