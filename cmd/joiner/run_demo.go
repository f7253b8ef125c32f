package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// The example the demo applies.
const (
	demoName      = "inflate"
	demoNamespace = "default"
	demoNodePool  = "default"
	demoNodeClass = "default"
	// demoConsolidateAfter is short so the demo shows consolidation
	// without a long wait (Karpenter's examples use 30s to minutes).
	demoConsolidateAfter = "10s"
	// demoFaultPool and demoFaultNodeClass are --fault-nodeclass's
	// NodePool (heavier than the default, so tried first) and its
	// never-registering SimNodeClass.
	demoFaultPool            = "never-registers"
	demoFaultNodeClass       = "never-registers"
	demoFaultRegistrationTTL = 20 * time.Second
)

// demo is the scripted part of `joiner run`: apply the example, watch the
// scale-up, scale down, watch joiner give the emptied nodes back.
type demo struct {
	story        *story
	client       client.Client
	replicas     int32
	nodeClass    client.Object
	nodeClassRef *v1.NodeClassReference
	// interrupt, when set, sends an interruption warning for the
	// NodeClaim's instance; the demo then watches it being replaced.
	interrupt func(ctx context.Context, nc *v1.NodeClaim) (string, error)
	// capacityTypes are the NodePool's capacity types (nil: spot and
	// on-demand).
	capacityTypes []string
	// faultPool also applies demoFaultObjects.
	faultPool    bool
	timeout      time.Duration
	operatorDone chan error
}

func (d *demo) run(ctx context.Context) error {
	objs := demoObjects(d.replicas, d.nodeClass, d.nodeClassRef, d.capacityTypes...)
	if d.faultPool {
		objs = append(demoFaultObjects(), objs...)
	}
	for _, obj := range objs {
		if err := d.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
		}
	}
	d.story.startClock()
	if d.faultPool {
		d.story.sayf("applied SimNodeClass/%s (faults.neverRegister: its nodes never join) and NodePool/%s on it, weight 10: joiner tries it first", demoFaultNodeClass, demoFaultPool)
	}
	d.story.sayf("applied %s/%s, NodePool/%s and Deployment/%s (%d replicas, 1 cpu and 1Gi each)", d.nodeClassRef.Kind, demoNodeClass, demoNodePool, demoName, d.replicas)

	start := time.Now()
	var firstClaims time.Duration
	if err := d.waitFor(ctx, "all pods running", func(o *observation) bool {
		if firstClaims == 0 && o.claims > 0 {
			firstClaims = time.Since(start)
		}
		return o.pods == int(d.replicas) && o.running == int(d.replicas)
	}); err != nil {
		return err
	}
	obs, err := d.story.observe(ctx, d.client)
	if err != nil {
		return err
	}
	d.story.sayf("all %d pods running on %d node(s), %.1fs after the Deployment was applied (first NodeClaim after %.1fs)",
		d.replicas, obs.nodes, time.Since(start).Seconds(), firstClaims.Seconds())

	if d.interrupt != nil {
		if err := d.interruptOne(ctx); err != nil {
			return err
		}
	}

	// Scale down.
	deploy := &appsv1.Deployment{}
	if err := d.client.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: demoName}, deploy); err != nil {
		return fmt.Errorf("getting deployment: %w", err)
	}
	patch := client.MergeFrom(deploy.DeepCopy())
	deploy.Spec.Replicas = ptr.To[int32](0)
	if err := d.client.Patch(ctx, deploy, patch); err != nil {
		return fmt.Errorf("scaling deployment to 0: %w", err)
	}
	d.story.sayf("scaled Deployment/%s to 0", demoName)
	if err := d.waitFor(ctx, "all pods gone", func(o *observation) bool { return o.pods == 0 }); err != nil {
		return err
	}

	// Nothing more to do: consolidation notices the empty nodes once they
	// have been quiet for the NodePool's consolidateAfter, and the story
	// prints the reason joiner recorded on each NodeClaim it deletes.
	d.story.sayf("waiting for joiner to give the empty nodes back (consolidateAfter %s, then a 15s validation)", demoConsolidateAfter)
	if err := d.waitFor(ctx, "every NodeClaim and node gone", func(o *observation) bool { return o.claims == 0 && o.nodes == 0 }); err != nil {
		return err
	}
	d.story.sayf("scale-down done: no NodeClaim and no node left")
	return nil
}

// interruptOne sends an interruption warning for one NodeClaim's instance
// and waits until the NodeClaim is gone and every pod runs again.
func (d *demo) interruptOne(ctx context.Context) error {
	var claims v1.NodeClaimList
	if err := d.client.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: demoNodePool}); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	if len(claims.Items) == 0 {
		return fmt.Errorf("no nodeclaim to interrupt")
	}
	// A spot node if there is one: the warning EC2 sends spot instances.
	victim := &claims.Items[0]
	for i := range claims.Items {
		if claims.Items[i].Labels[v1.LabelCapacityType] == v1.CapacityTypeSpot {
			victim = &claims.Items[i]
			break
		}
	}
	what, err := d.interrupt(ctx, victim)
	if err != nil {
		return err
	}
	start := time.Now()
	d.story.sayf("sent %s for NodeClaim %s to the interruption queue", what, victim.Name)
	if err := d.waitFor(ctx, "the interrupted NodeClaim replaced and all pods running", func(o *observation) bool {
		err := d.client.Get(ctx, client.ObjectKeyFromObject(victim), &v1.NodeClaim{})
		return apierrors.IsNotFound(err) && o.pods == int(d.replicas) && o.running == int(d.replicas)
	}); err != nil {
		return err
	}
	d.story.sayf("interruption handled %.1fs after the warning (EC2 gives two minutes): NodeClaim %s cordoned, drained and deleted, its pods running on a replacement",
		time.Since(start).Seconds(), victim.Name)
	return nil
}

// waitFor observes the cluster until done says so, the step times out,
// joiner stops or ctx ends.
func (d *demo) waitFor(ctx context.Context, what string, done func(*observation) bool) error {
	deadline := time.Now().Add(d.timeout)
	for {
		obs, err := d.story.observe(ctx, d.client)
		if err == nil && done(obs) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out after %s (last error: %v)", what, d.timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case opErr := <-d.operatorDone:
			d.operatorDone <- opErr
			return fmt.Errorf("waiting for %s: joiner stopped: %v", what, opErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// demoSimNodeClass is the example node class of the simulated cloud.
func demoSimNodeClass() (client.Object, *v1.NodeClassReference) {
	return &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: demoNodeClass}},
		&v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: demoNodeClass}
}

// demoFaultObjects are --fault-nodeclass's SimNodeClass, whose nodes never
// register (the seeds' wrong AMI, unmapped node role or broken userData),
// and a NodePool on it that outweighs the default one.
func demoFaultObjects() []client.Object {
	nodeClass := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: demoFaultNodeClass},
		Spec:       simv1alpha1.SimNodeClassSpec{Faults: &simv1alpha1.Faults{NeverRegister: true}},
	}
	ref := &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: demoFaultNodeClass}
	nodePool := demoObjects(0, nodeClass, ref)[1].(*v1.NodePool)
	nodePool.Name = demoFaultPool
	nodePool.Spec.Weight = ptr.To[int32](10)
	return []client.Object{nodeClass, nodePool}
}

// demoObjects are the example node class, NodePool and Deployment; the
// NodePool takes capacityTypes (none given: spot and on-demand).
func demoObjects(replicas int32, nodeClass client.Object, nodeClassRef *v1.NodeClassReference, capacityTypes ...string) []client.Object {
	if len(capacityTypes) == 0 {
		capacityTypes = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}
	}
	nodePool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: demoNodePool},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				Spec: v1.NodeClaimTemplateSpec{
					NodeClassRef: nodeClassRef,
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
						{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
					},
					ExpireAfter: v1.MustParseNillableDuration("720h"),
				},
			},
			Disruption: v1.Disruption{
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    v1.MustParseNillableDuration(demoConsolidateAfter),
				// Every empty node may go at once (the default budget,
				// 10%, would let them go one command at a time).
				Budgets: []v1.Budget{{Nodes: "100%"}},
			},
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("1000")},
		},
	}
	labels := map[string]string{"app": demoName}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoName, Namespace: demoNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name:  "inflate",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("1"),
							corev1.ResourceMemory: resource.MustParse("1Gi"),
						}},
					}},
				},
			},
		},
	}
	return []client.Object{nodeClass, nodePool, deploy}
}
