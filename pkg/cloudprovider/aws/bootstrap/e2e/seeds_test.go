package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

const startupTaint = "example.com/agent-not-ready"

// seed002UserData is the custom AL2 user data of seed 002: the kubelet
// flags are glued to --kubelet-extra-args with '=', which bootstrap.sh does
// not recognise, so the node registers without any taint.
const seed002UserData = `#!/bin/bash
set -e
B64_CLUSTER_CA=Q0E=
API_SERVER_URL=` + endpoint + `
/etc/eks/bootstrap.sh ` + clusterName + ` --b64-cluster-ca $B64_CLUSTER_CA --apiserver-endpoint $API_SERVER_URL \
  --kubelet-extra-args='--register-with-taints="karpenter.sh/unregistered:NoExecute,` + startupTaint + `:NoExecute" --node-labels=` + kwokLabel + `=true'
`

// joinerUserData is what joiner generates for nc on family.
func joinerUserData(t *testing.T, family string, nc *v1.NodeClaim) []byte {
	taints := append([]corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}}, nc.Spec.Taints...)
	taints = append(taints, nc.Spec.StartupTaints...)
	ud, err := userdata.Render(userdata.Options{
		AMIFamily: family, ClusterName: clusterName, ClusterEndpoint: endpoint, CABundle: "Q0E=", ClusterCIDR: localec2.DefaultServiceCIDR,
		Labels: map[string]string{kwokLabel: "true", v1.LabelNodePool: nc.Labels[v1.LabelNodePool]}, Taints: taints,
	})
	if err != nil {
		t.Error(err)
	}
	return ud
}

// TestSeedFailuresAreDiagnosed reproduces seeds 000, 001 and 002 on the
// local EC2 and checks that joiner's registration diagnosis names the
// cause: the emulated machine fails exactly as the real one did, and the
// NodeClaim's events say what to check.
func TestSeedFailuresAreDiagnosed(t *testing.T) {
	mapNodeRole(t)
	cases := []struct {
		name string
		plan func(t *testing.T, nc *v1.NodeClaim) launch
		// outcome is part of the emulated console log of the instance
		// ("" when it registers).
		outcome string
		// reason and mentions: the event joiner publishes and what it must
		// say.
		reason   string
		mentions []string
	}{
		{
			name: "000 amd64 image on a Graviton type never registers",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "t4g.small", profile: local.mappedProfile,
					userData: joinerUserData(t, awsv1.AMIFamilyAL2023, nc)}
			},
			outcome:  "is built for x86_64 but instance type t4g.small runs arm64",
			reason:   events.RegistrationTimeout,
			mentions: []string{"no Node with that providerID registered", "AMI architecture matches the instance type", "arm64 images for Graviton"},
		},
		{
			name: "001 node role missing from aws-auth never registers",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.unmappedProfile,
					userData: joinerUserData(t, awsv1.AMIFamilyAL2, nc)}
			},
			outcome:  "is not in the mapRoles of kube-system/aws-auth",
			reason:   events.RegistrationTimeout,
			mentions: []string{"node IAM role (not the controller's role) is mapped in the aws-auth ConfigMap", "system:nodes"},
		},
		{
			name: "002 custom userData that drops the taints registers without them",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.mappedProfile,
					userData: []byte(seed002UserData)}
			},
			reason:   events.UnregisteredTaintMissing,
			mentions: []string{"registered without the karpenter.sh/unregistered:NoExecute taint", "without '=' or inner quotes"},
		},
		{
			name: "002 custom userData also loses the startup taint",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.mappedProfile,
					userData: []byte(seed002UserData)}
			},
			reason:   events.StartupTaintsMissing,
			mentions: []string{startupTaint, "userData"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := test.Env(t).Client
			cloud := newLauncher()
			nodes := emulator(t)
			// The shared manager registers the field indexes the lifecycle
			// controller lists by (a Node by its providerID).
			mgr := test.Env(t).NewManager(t)
			// The cases that never register wait out a short TTL; the ones
			// that register get a long one, so a slow boot on a loaded
			// machine is not deleted as a registration timeout before its
			// own event.
			registrationTTL := 4 * time.Second
			if tc.outcome == "" {
				registrationTTL = within
			}
			recorder, err := events.ForManager(mgr, nil)
			if err != nil {
				t.Fatal(err)
			}
			lc, err := lifecycle.NewController(lifecycle.Options{
				Client: mgr.GetClient(), CloudProvider: cloud, Recorder: recorder,
				RegistrationTTL: registrationTTL,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := lc.Register(mgr); err != nil {
				t.Fatal(err)
			}
			if err := mgr.Add(nodes); err != nil {
				t.Fatal(err)
			}
			test.StartManager(t, mgr)

			nc := &v1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: "seeds", kwokLabel: "true"}},
				Spec: v1.NodeClaimSpec{
					NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
					},
					StartupTaints: []corev1.Taint{{Key: startupTaint, Effect: corev1.TaintEffectNoExecute}},
					Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				},
			}
			cloud.plan(nc.Name, func(nc *v1.NodeClaim) launch { return tc.plan(t, nc) })
			test.Env(t).Create(t, nc)
			t.Cleanup(func() { cleanupNodes(kube, nc.Name) })

			note := eventAbout(t, nc.Name, tc.reason)
			for _, m := range tc.mentions {
				if !strings.Contains(note, m) {
					t.Errorf("%s event %q does not mention %q", tc.reason, note, m)
				}
			}
			if tc.outcome != "" {
				outcomes := nodes.Outcomes()
				found := false
				for _, o := range outcomes {
					if strings.Contains(o.Reason, tc.outcome) {
						found = true
					}
				}
				if !found {
					t.Errorf("no emulated instance failed with %q; outcomes: %+v", tc.outcome, outcomes)
				}
			}
		})
	}
}

// eventAbout waits for an event with reason about the object named
// regarding and returns its note.
func eventAbout(t *testing.T, regarding, reason string) string {
	t.Helper()
	var note string
	test.Eventually(t, within, func(ctx context.Context) error {
		list := &eventsv1.EventList{}
		if err := test.Env(t).Client.List(ctx, list); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name != regarding {
				continue
			}
			if e.Reason == reason {
				note = e.Note
				return nil
			}
			seen = append(seen, e.Reason)
		}
		return fmt.Errorf("no %s event about %s yet (seen %v)", reason, regarding, seen)
	})
	return note
}

// cleanupNodes removes the NodeClaim and its Node with their finalizers
// (no termination controller runs here).
func cleanupNodes(kube client.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return
	}
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node) == nil {
			node.Finalizers = nil
			_ = kube.Update(ctx, node)
			_ = kube.Delete(ctx, node)
		}
	}
	nc.Finalizers = nil
	_ = kube.Update(ctx, nc)
	_ = kube.Delete(ctx, nc)
}
