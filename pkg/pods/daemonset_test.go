package pods_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/pods"
)

func TestIsOwnedByDaemonSet(t *testing.T) {
	ref := func(kind string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "uid", Controller: controller}
	}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{name: "no owner"},
		{name: "DaemonSet controller", refs: []metav1.OwnerReference{ref("DaemonSet", ptr.To(true))}, want: true},
		{name: "DaemonSet owner that is not the controller", refs: []metav1.OwnerReference{ref("DaemonSet", nil)}},
		{name: "DaemonSet owner with controller false", refs: []metav1.OwnerReference{ref("DaemonSet", ptr.To(false))}},
		{name: "ReplicaSet controller", refs: []metav1.OwnerReference{ref("ReplicaSet", ptr.To(true))}},
		{name: "ReplicaSet controller beside a DaemonSet owner", refs: []metav1.OwnerReference{ref("DaemonSet", nil), ref("ReplicaSet", ptr.To(true))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: tc.refs}}
			if got := pods.IsOwnedByDaemonSet(p); got != tc.want {
				t.Errorf("IsOwnedByDaemonSet = %v, want %v", got, tc.want)
			}
		})
	}
}
