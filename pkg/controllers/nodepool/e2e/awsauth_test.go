package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/awsauth"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/test"
)

type recorded struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorded) Publish(es ...events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, es...)
}

// TestAWSAuthChangeEndsRegistrationBackoff: a NodePool backing off for an
// hour after its nodes never registered (seed 001's unmapped node role)
// launches again as soon as kube-system/aws-auth changes: the registration
// back-off is gone from its record, the provisioner is woken for a batch,
// and the NodePool hears why. Its initialisation back-off, which aws-auth
// cannot cause, stays.
func TestAWSAuthChangeEndsRegistrationBackoff(t *testing.T) {
	env := test.Env(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "unmapped"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
		}}},
	}
	launchhealth.Set(np, launchhealth.Record{Backoffs: []launchhealth.Backoff{
		{Scope: launchhealth.Scope{NodeClass: "unmapped"}, NodePoolHash: np.Hash(), Failures: 3, Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound",
			Wait: metav1.Duration{Duration: time.Hour}, RetryAfter: metav1.NewTime(now.Add(time.Hour))},
		{Scope: launchhealth.Scope{NodeClass: "unmapped", InstanceType: "g5.xlarge"}, NodePoolHash: np.Hash(), Failures: 1, Phase: launchhealth.PhaseInitialization, Reason: "ResourceNotRegistered",
			Wait: metav1.Duration{Duration: time.Hour}, RetryAfter: metav1.NewTime(now.Add(time.Hour))},
	}})
	env.Create(t, np)

	var triggered []types.UID
	rec := &recorded{}
	c, err := awsauth.NewController(awsauth.Options{
		Client: env.Client, APIReader: env.Client, Recorder: rec, Clock: clocktesting.NewFakeClock(now),
		Trigger: func(uid types.UID) { triggered = append(triggered, uid) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The first read only learns aws-auth's content (whatever an earlier
	// test left); it resets nothing.
	if err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(triggered) != 0 {
		t.Fatalf("first read triggered %v", triggered)
	}
	// Someone maps the node role.
	mapping := "- rolearn: arn:aws:iam::111122223333:role/" + np.Name + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups:\n  - system:bootstrappers\n  - system:nodes\n"
	cm := &corev1.ConfigMap{}
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: awsauth.Namespace, Name: awsauth.Name}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: awsauth.Namespace, Name: awsauth.Name}, Data: map[string]string{"mapRoles": mapping}}
		env.Create(t, cm)
	case err != nil:
		t.Fatal(err)
	default:
		stored := cm.DeepCopy()
		cm.Data["mapRoles"] += mapping
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			fresh := &corev1.ConfigMap{}
			if env.Client.Get(context.Background(), client.ObjectKeyFromObject(stored), fresh) == nil {
				fresh.Data = stored.Data
				_ = env.Client.Update(context.Background(), fresh)
			}
		})
	}
	if err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	r, err := launchhealth.Get(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Backoffs) != 1 || r.Backoffs[0].Phase != launchhealth.PhaseInitialization {
		t.Errorf("back-offs after the aws-auth change: %+v, want only the initialisation one", r.Backoffs)
	}
	if len(r.Backoffs) == 1 && (r.Backoffs[0].InstanceType != "g5.xlarge" || !r.Backoffs[0].RetryAfter.After(now)) {
		t.Errorf("back-off %+v, want g5.xlarge's, still waiting", r.Backoffs[0])
	}
	if len(triggered) != 1 {
		t.Errorf("provisioner triggered %d times, want once", len(triggered))
	}
	found := false
	for _, e := range rec.events {
		found = found || (e.Reason == events.LaunchBackoffReset && strings.Contains(e.Message, "kube-system/aws-auth changed"))
	}
	if !found {
		t.Errorf("no %s event on the NodePool: %+v", events.LaunchBackoffReset, rec.events)
	}
	// Nothing changed since: the next read resets nothing more.
	triggered = nil
	if err := c.Poll(ctx); err != nil || len(triggered) != 0 {
		t.Errorf("an unchanged aws-auth reset again (err %v, triggered %v)", err, triggered)
	}
}

// TestAccessEntryChangeEndsRegistrationBackoff: on a cluster that maps
// node roles with EKS access entries (authenticationMode API), creating
// the missing entry ends a NodePool's registration back-off as an aws-auth
// change does. The digest is read only while a back-off waits, and its
// first reading resets nothing. (The AWS provider's digest itself, from
// EKS through the local EC2's front, is tested in
// cloudprovider/aws/e2e: TestWhyNotRegisteredReadsAccessEntries.)
func TestAccessEntryChangeEndsRegistrationBackoff(t *testing.T) {
	env := test.Env(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	var triggered []types.UID
	rec := &recorded{}
	digest, reads := "entries: none", 0
	c, err := awsauth.NewController(awsauth.Options{
		Client: env.Client, APIReader: env.Client, Recorder: rec, Clock: clocktesting.NewFakeClock(now),
		Trigger: func(uid types.UID) { triggered = append(triggered, uid) },
		Access:  func(context.Context) (string, error) { reads++; return digest, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// No NodePool waits: EKS is not asked.
	if err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Errorf("access read %d times with no registration back-off, want 0", reads)
	}
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "unmapped"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
		}}},
	}
	launchhealth.Set(np, launchhealth.Record{Backoffs: []launchhealth.Backoff{
		{Scope: launchhealth.Scope{NodeClass: "unmapped"}, NodePoolHash: np.Hash(), Failures: 2, Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound",
			Wait: metav1.Duration{Duration: time.Hour}, RetryAfter: metav1.NewTime(now.Add(time.Hour))},
	}})
	env.Create(t, np)
	// The first reading while it waits only learns the digest.
	if err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if reads != 1 || len(triggered) != 0 {
		t.Fatalf("first reading: %d reads, triggered %v; want 1 read, nothing reset", reads, triggered)
	}
	digest = "entries: the node role"
	if err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	if r, err := launchhealth.Get(got); err != nil || len(r.Backoffs) != 0 {
		t.Errorf("back-offs after the access entry: %+v (err %v), want none", r.Backoffs, err)
	}
	if len(triggered) != 1 {
		t.Errorf("provisioner triggered %d times, want once", len(triggered))
	}
	found := false
	for _, e := range rec.events {
		found = found || (e.Reason == events.LaunchBackoffReset && strings.Contains(e.Message, "EKS access entries") && strings.Contains(e.Message, np.Name))
	}
	if !found {
		t.Errorf("no %s event naming the access entries: %+v", events.LaunchBackoffReset, rec.events)
	}
}
