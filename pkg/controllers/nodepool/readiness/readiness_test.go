package readiness

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// nodePool uses the node class kind of that name: a SimNodeClass, or a kind
// no provider serves.
func nodePool(name, kind, class string) *v1.NodePool {
	return test.NodePool(test.NodePoolOptions{Name: name, NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: kind, Name: class}})
}

func simClass(name string, ready *metav1.Condition) *simv1alpha1.SimNodeClass {
	c := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ready != nil {
		c.Status.Conditions = []metav1.Condition{*ready}
	}
	return c
}

func run(t *testing.T, np *v1.NodePool, objs ...client.Object) *v1.NodePool {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, np)...).WithStatusSubresource(&v1.NodePool{}).Build()
	c, err := NewController(Options{Client: kube, NodeClasses: []client.Object{&simv1alpha1.SimNodeClass{}, &awsv1.EC2NodeClass{}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: np.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: np.Name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func cond(np *v1.NodePool, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(np.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestNodePoolReadiness(t *testing.T) {
	readyTrue := &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}
	readyFalse := &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "SubnetsNotFound", Message: "no subnet matches", LastTransitionTime: metav1.Now()}
	invalid := nodePool("invalid", "SimNodeClass", "default")
	invalid.Spec.Template.ObjectMeta.Labels = map[string]string{v1.LabelNodePool: "x"}

	cases := []struct {
		name            string
		np              *v1.NodePool
		objs            []client.Object
		nodeClassStatus metav1.ConditionStatus
		nodeClassReason string
		validation      metav1.ConditionStatus
		ready           metav1.ConditionStatus
	}{
		{name: "ready node class", np: nodePool("ok", "SimNodeClass", "default"), objs: []client.Object{simClass("default", readyTrue)},
			nodeClassStatus: metav1.ConditionTrue, validation: metav1.ConditionTrue, ready: metav1.ConditionTrue},
		{name: "missing node class", np: nodePool("missing", "SimNodeClass", "nope"),
			nodeClassStatus: metav1.ConditionFalse, nodeClassReason: ReasonNodeClassNotFound, validation: metav1.ConditionTrue, ready: metav1.ConditionFalse},
		{name: "node class without readiness", np: nodePool("pending", "SimNodeClass", "default"), objs: []client.Object{simClass("default", nil)},
			nodeClassStatus: metav1.ConditionUnknown, nodeClassReason: ReasonNodeClassReadinessUnknown, validation: metav1.ConditionTrue, ready: metav1.ConditionUnknown},
		{name: "node class not ready", np: nodePool("notready", "SimNodeClass", "default"), objs: []client.Object{simClass("default", readyFalse)},
			nodeClassStatus: metav1.ConditionFalse, nodeClassReason: "SubnetsNotFound", validation: metav1.ConditionTrue, ready: metav1.ConditionFalse},
		{name: "unsupported kind", np: nodePool("foreign", "OtherNodeClass", "x"),
			nodeClassStatus: metav1.ConditionFalse, nodeClassReason: ReasonNodeClassKindNotSupported, validation: metav1.ConditionTrue, ready: metav1.ConditionFalse},
		{name: "invalid template", np: invalid, objs: []client.Object{simClass("default", readyTrue)},
			nodeClassStatus: metav1.ConditionTrue, validation: metav1.ConditionFalse, ready: metav1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, tc.np, tc.objs...)
			nc := cond(got, v1.ConditionTypeNodeClassReady)
			if nc.Status != tc.nodeClassStatus || (tc.nodeClassReason != "" && nc.Reason != tc.nodeClassReason) {
				t.Errorf("NodeClassReady = %s/%s (%s), want %s/%s", nc.Status, nc.Reason, nc.Message, tc.nodeClassStatus, tc.nodeClassReason)
			}
			if v := cond(got, v1.ConditionTypeValidationSucceeded); v.Status != tc.validation {
				t.Errorf("ValidationSucceeded = %s (%s), want %s", v.Status, v.Message, tc.validation)
			}
			if r := cond(got, v1.ConditionTypeReady); r.Status != tc.ready {
				t.Errorf("Ready = %s (%s), want %s", r.Status, r.Message, tc.ready)
			}
		})
	}
}
