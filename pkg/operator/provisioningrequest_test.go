package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// gangPodSpec is a pod that needs a node of its own (3 of a 4-cpu
// type's cpus) on the scenario's NodePool.
func (s *scenario) gangPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{v1.LabelNodePool: s.nodePool.Name, corev1.LabelInstanceTypeStable: "m5.xlarge"},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "train", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
	}
}

// podSpec is a pod of the given cpu on an m5.xlarge of the scenario's
// NodePool.
func (s *scenario) podSpec(cpu string) corev1.PodSpec {
	spec := s.gangPodSpec()
	spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	return spec
}

// provisioningRequest creates a PodTemplate and a request for count of its
// pods (gangPodSpec) in class.
func (s *scenario) provisioningRequest(name, class string, count int32, params map[string]autoscalingv1.Parameter) *autoscalingv1.ProvisioningRequest {
	return s.provisioningRequestOf(name, class, count, params, s.gangPodSpec())
}

// provisioningRequestOf is provisioningRequest for pods of spec.
func (s *scenario) provisioningRequestOf(name, class string, count int32, params map[string]autoscalingv1.Parameter, spec corev1.PodSpec) *autoscalingv1.ProvisioningRequest {
	tmpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec},
	}
	pr := &autoscalingv1.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: autoscalingv1.ProvisioningRequestSpec{
			ProvisioningClassName: class,
			PodSets:               []autoscalingv1.PodSet{{PodTemplateRef: autoscalingv1.Reference{Name: name}, Count: count}},
			Parameters:            params,
		},
	}
	s.env.Create(s.t, tmpl, pr)
	return pr
}

// waitCondition waits until pr's condition t has status, returning it.
func (s *scenario) waitCondition(pr *autoscalingv1.ProvisioningRequest, t string, status metav1.ConditionStatus, timeout time.Duration) metav1.Condition {
	s.t.Helper()
	var got metav1.Condition
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		cur := &autoscalingv1.ProvisioningRequest{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, t)
		if c == nil || c.Status != status {
			return fmt.Errorf("condition %s is %+v, want %s (all: %+v)", t, c, status, cur.Status.Conditions)
		}
		got = *c
		return nil
	})
	return got
}

// requestClaims are the NodeClaims launched for pr.
func (s *scenario) requestClaims(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) ([]v1.NodeClaim, error) {
	cur := &autoscalingv1.ProvisioningRequest{}
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
		return nil, err
	}
	var list v1.NodeClaimList
	err := s.env.Client.List(ctx, &list, client.MatchingLabels{autoscalingv1.LabelProvisioningRequestUID: string(cur.UID)})
	return list.Items, err
}

// TestProvisioningRequestAtomicScaleUp: a best-effort-atomic-scale-up
// request for 3 pods that each need a node is provisioned with 3
// NodeClaims launched in one group call, booked (do-not-disrupt) until the
// request's pods bind to them; the consuming pods are not planned one by one.
func TestProvisioningRequestAtomicScaleUp(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	pr := s.provisioningRequest("gang", autoscalingv1.ClassBestEffortAtomicScaleUp, 3, nil)
	s.waitCondition(pr, autoscalingv1.Accepted, metav1.ConditionTrue, 30*time.Second)
	s.waitCondition(pr, autoscalingv1.Provisioned, metav1.ConditionTrue, 60*time.Second)
	claims, err := s.requestClaims(t.Context(), pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims for the request, want 3", len(claims))
	}
	for _, nc := range claims {
		if nc.Status.ProviderID == "" || nc.Annotations[v1.AnnotationDoNotDisrupt] != "true" || nc.Annotations[autoscalingv1.AnnotationLaunchGroup] != "" {
			t.Errorf("nodeclaim %s: provider id %q, annotations %v; want launched, booked (do-not-disrupt) and released from the group hold", nc.Name, nc.Status.ProviderID, nc.Annotations)
		}
	}
	// The request's pods arrive (as Kueue creates them once admitted):
	// they land on the booked nodes, and no other NodeClaim is made.
	spec := s.gangPodSpec()
	for i := range 3 {
		s.env.Create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: fmt.Sprintf("gang-%d", i), Labels: map[string]string{"app": "gang"},
			Annotations: map[string]string{autoscalingv1.AnnotationConsumeProvisioningRequest: pr.Name, autoscalingv1.AnnotationProvisioningClassName: pr.Spec.ProvisioningClassName}},
			Spec: spec})
	}
	s.waitRunning("gang", 3, 2*time.Minute)
	all, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("%d nodeclaims in the nodepool, want only the request's 3", len(all))
	}
	// Every pod came: the booking ends and the nodes are ordinary again.
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		claims, err := s.requestClaims(ctx, pr)
		if err != nil {
			return err
		}
		for _, nc := range claims {
			if nc.Annotations[v1.AnnotationDoNotDisrupt] != "" {
				return fmt.Errorf("nodeclaim %s still carries %s", nc.Name, v1.AnnotationDoNotDisrupt)
			}
		}
		return nil
	})
}

// TestProvisioningRequestAtomicNoCapacity: when the cloud has no capacity
// for the gang, nothing is left running, and the request says why.
func TestProvisioningRequestAtomicNoCapacity(t *testing.T) {
	s := newScenario(t)
	s.nodeClass.Spec.Faults = &simv1alpha1.Faults{InsufficientCapacity: []simv1alpha1.InsufficientCapacityFault{{InstanceType: "m5.xlarge"}}}
	s.apply()
	s.joiner()
	pr := s.provisioningRequest("gang", autoscalingv1.ClassBestEffortAtomicScaleUp, 3, nil)
	c := s.waitCondition(pr, autoscalingv1.Provisioned, metav1.ConditionFalse, 60*time.Second)
	if !strings.Contains(c.Message, "InsufficientInstanceCapacity") && !strings.Contains(c.Message, "fit nowhere") {
		t.Errorf("Provisioned=False message %q does not say the cloud had no capacity", c.Message)
	}
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		claims, err := s.requestClaims(ctx, pr)
		if err != nil {
			return err
		}
		if len(claims) > 0 {
			return fmt.Errorf("%d nodeclaims of the request left", len(claims))
		}
		if n := len(liveInstances(t, s.store, s.clusterName)); n > 0 {
			return fmt.Errorf("%d instances running", n)
		}
		return nil
	})
}

// TestProvisioningRequestCheckCapacity: check-capacity answers from the
// existing capacity alone, within one pass, launching nothing.
func TestProvisioningRequestCheckCapacity(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	start := time.Now()
	pr := s.provisioningRequest("check", autoscalingv1.ClassCheckCapacity, 2, map[string]autoscalingv1.Parameter{autoscalingv1.ParameterNoRetry: "true"})
	c := s.waitCondition(pr, autoscalingv1.Failed, metav1.ConditionTrue, 30*time.Second)
	t.Logf("check-capacity answered after %.1fs: %s", time.Since(start).Seconds(), c.Message)
	if c.Reason != "CapacityIsNotFound" {
		t.Errorf("Failed reason %q, want CapacityIsNotFound", c.Reason)
	}
	claims, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) > 0 {
		t.Errorf("%d nodeclaims created for a check-capacity request, want none", len(claims))
	}
}

// TestProvisioningRequestCheckCapacityFound: check-capacity answers from
// the capacity that exists, in the reconcile that first sees the request
// (well within one batch window), without a NodeClaim; the room it found
// is booked, so a second check that would need the same room is told no.
func TestProvisioningRequestCheckCapacityFound(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	// One m5.xlarge (4 cpu) with a 1-cpu pod on it: room for 2 more cpu.
	s.deployment("base", 1, "1", "1Gi", func(spec *corev1.PodSpec) {
		spec.NodeSelector[corev1.LabelInstanceTypeStable] = "m5.xlarge"
	})
	s.waitRunning("base", 1, 90*time.Second)
	before, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	noRetry := map[string]autoscalingv1.Parameter{autoscalingv1.ParameterNoRetry: "true"}
	start := time.Now()
	fits := s.provisioningRequestOf("fits", autoscalingv1.ClassCheckCapacity, 2, noRetry, s.podSpec("1"))
	c := s.waitCondition(fits, autoscalingv1.Provisioned, metav1.ConditionTrue, 30*time.Second)
	took := time.Since(start)
	t.Logf("check-capacity (fits) answered after %.2fs: %s: %s", took.Seconds(), c.Reason, c.Message)
	if c.Reason != "CapacityIsFound" {
		t.Errorf("Provisioned reason %q, want CapacityIsFound", c.Reason)
	}
	// One batch window (BATCH_MAX_DURATION) is 10 s by default.
	if took > 10*time.Second {
		t.Errorf("check-capacity took %s, more than one batch window (10s)", took)
	}

	// The 2 cpu left are booked for "fits": 2 more pods find no room.
	full := s.provisioningRequestOf("full", autoscalingv1.ClassCheckCapacity, 2, noRetry, s.podSpec("1"))
	c = s.waitCondition(full, autoscalingv1.Failed, metav1.ConditionTrue, 30*time.Second)
	t.Logf("check-capacity (booked room) answered: %s: %s", c.Reason, c.Message)
	if c.Reason != "CapacityIsNotFound" {
		t.Errorf("Failed reason %q for a request needing booked room, want CapacityIsNotFound", c.Reason)
	}
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		after, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(after) != len(before) {
			return fmt.Errorf("%d NodeClaims after the check-capacity requests, want the %d from before: check-capacity launches nothing", len(after), len(before))
		}
		return nil
	})
}

// TestProvisioningRequestBookingSurvivesRestart: a gang's booking (room on
// capacity that existed, and its own NodeClaims) is kept in the request's
// status, so a joiner killed and started again holds the same room. An
// m5.xlarge still registering (in flight) carries a 1-cpu pod; a request
// of 3 pods of 2 cpu is planned with one pod on it and two new NodeClaims.
// joiner is killed, and a 2-cpu pod arrives that would fit on any of the
// three were nothing booked: the restarted joiner launches a new node for
// it, and the request stays Provisioned with the same NodeClaims.
func TestProvisioningRequestBookingSurvivesRestart(t *testing.T) {
	s := newScenario(t)
	// Nodes never register during the test: every NodeClaim stays in
	// flight, where only joiner's plan (not kube-scheduler) places pods.
	s.nodeClass.Spec.RegistrationDelay = metav1.Duration{Duration: 10 * time.Minute}
	s.apply()
	first := s.joiner("--disable-leader-election")
	m5 := func(spec *corev1.PodSpec) { spec.NodeSelector[corev1.LabelInstanceTypeStable] = "m5.xlarge" }
	s.deployment("base", 1, "1", "1Gi", m5)
	var base string
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) != 1 || claims[0].Status.ProviderID == "" {
			return fmt.Errorf("%d NodeClaims, want 1 launched", len(claims))
		}
		base = claims[0].Name
		return nil
	})

	pr := s.provisioningRequestOf("gang", autoscalingv1.ClassBestEffortAtomicScaleUp, 3, nil, s.podSpec("2"))
	s.waitCondition(pr, autoscalingv1.Provisioned, metav1.ConditionTrue, 60*time.Second)
	booked := &autoscalingv1.ProvisioningRequest{}
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pr), booked); err != nil {
		t.Fatal(err)
	}
	t.Logf("booked: %v", booked.Status.ProvisioningClassDetails)
	if got := string(booked.Status.ProvisioningClassDetails["existingNodes"]); !strings.Contains(got, base) {
		t.Fatalf("existingNodes %q does not name NodeClaim %s: the gang was not planned partly on existing capacity", got, base)
	}
	if names := strings.Split(string(booked.Status.ProvisioningClassDetails["nodeClaims"]), ","); len(names) != 2 {
		t.Fatalf("nodeClaims %v, want the 2 launched for the gang", names)
	}

	first.kill()
	s.deployment("other", 1, "2", "1Gi", m5)
	s.joiner("--disable-leader-election")
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) != 4 {
			return fmt.Errorf("%d NodeClaims, want 4: the base, the gang's 2 and one for the new pod, which booked room must not take", len(claims))
		}
		return nil
	})
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		cur := &autoscalingv1.ProvisioningRequest{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cur.Status.Conditions, autoscalingv1.Provisioned) ||
			cur.Status.ProvisioningClassDetails["nodeClaims"] != booked.Status.ProvisioningClassDetails["nodeClaims"] {
			return fmt.Errorf("request after the restart: %v, %v; want still Provisioned with NodeClaims %s", cur.Status.Conditions, cur.Status.ProvisioningClassDetails, booked.Status.ProvisioningClassDetails["nodeClaims"])
		}
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) != 4 {
			return fmt.Errorf("%d NodeClaims, want 4", len(claims))
		}
		return nil
	})
}
