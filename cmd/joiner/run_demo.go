package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
)

// demo is the scripted part of `joiner run`: apply the example, watch the
// scale-up, scale down, watch joiner give the emptied nodes back.
type demo struct {
	story        *story
	client       client.Client
	replicas     int32
	timeout      time.Duration
	operatorDone chan error
}

func (d *demo) run(ctx context.Context) error {
	for _, obj := range demoObjects(d.replicas) {
		if err := d.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
		}
	}
	d.story.startClock()
	d.story.sayf("applied SimNodeClass/%s, NodePool/%s and Deployment/%s (%d replicas, 1 cpu and 1Gi each)", demoNodeClass, demoNodePool, demoName, d.replicas)

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

// demoObjects are the example SimNodeClass, NodePool and Deployment.
func demoObjects(replicas int32) []client.Object {
	nodeClass := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: demoNodeClass},
	}
	nodePool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: demoNodePool},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				Spec: v1.NodeClaimTemplateSpec{
					NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: demoNodeClass},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
						{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
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
