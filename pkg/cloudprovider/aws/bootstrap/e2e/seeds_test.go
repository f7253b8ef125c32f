package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/explain"
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
		// diagnosed: the NodeClaim's class is an EC2NodeClass whose
		// instance profile holds the unmapped role, and the AWS provider
		// diagnoses registration (the controller names the cause before
		// the TTL).
		diagnosed bool
		// explained: `joiner explain` of the NodeClaim, its events left
		// out, names the same cause as the controller's event.
		explained string
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
			name: "001 node role missing from aws-auth is named by the controller before the TTL",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.unmappedProfile,
					userData: joinerUserData(t, awsv1.AMIFamilyAL2, nc)}
			},
			outcome:   "is not in the mapRoles of kube-system/aws-auth",
			reason:    events.RegistrationBlocked,
			diagnosed: true,
			mentions:  []string{":role/ControllerRole-" + clusterName + " of EC2NodeClass ", "is not mapped in kube-system/aws-auth (mapped: " + local.mappedRoleARN + ")"},
			explained: "is not mapped in kube-system/aws-auth (mapped: " + local.mappedRoleARN + ")",
		},
		{
			name: "002 custom userData that drops the taints registers without them",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.mappedProfile,
					userData: []byte(seed002UserData)}
			},
			reason:    events.UnregisteredTaintMissing,
			mentions:  []string{"registered without the karpenter.sh/unregistered:NoExecute taint", "without '=' or inner quotes"},
			explained: "registered without the karpenter.sh/unregistered:NoExecute taint",
		},
		{
			name: "002 custom userData also loses the startup taint",
			plan: func(t *testing.T, nc *v1.NodeClaim) launch {
				return launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "t3.medium", profile: local.mappedProfile,
					userData: []byte(seed002UserData)}
			},
			reason:    events.StartupTaintsMissing,
			mentions:  []string{startupTaint, "userData"},
			explained: startupTaint,
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
			if tc.outcome == "" || tc.diagnosed {
				registrationTTL = within
			}
			classRef := &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
			if tc.diagnosed {
				classRef.Name = unmappedClass(t)
				cloud.diagnoser = awsDiagnoser(t)
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
					NodeClassRef: classRef,
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
			if tc.explained != "" {
				explainAgrees(t, nc.Name, tc.explained)
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

// unmappedClass creates an EC2NodeClass whose instance profile holds the
// role nobody mapped in aws-auth, and returns its name.
func unmappedClass(t *testing.T) string {
	t.Helper()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "unmapped")},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			InstanceProfile:            ptr.To(local.unmappedProfile),
		},
	}
	test.Env(t).Create(t, nc)
	return nc.Name
}

// awsDiagnoser is the AWS provider, for its registration diagnosis only:
// it reads kube-system/aws-auth and the node class's role as the
// controller does.
func awsDiagnoser(t *testing.T) cloudprovider.RegistrationDiagnoser {
	t.Helper()
	env := test.Env(t)
	p, err := awsprovider.New(awsprovider.Options{
		EC2: local.ec2, IAM: local.iam, SSM: ssm.NewFromConfig(local.cfg),
		Client: env.Client, APIReader: env.Client, Region: local.cfg.Region, ClusterName: clusterName,
		ClusterEndpoint: endpoint, CABundle: "Q0E=", ClusterCIDR: localec2.DefaultServiceCIDR, KubernetesVersion: "1.36",
		SSMParameterRoot: localec2.DefaultParameterRoot, UserData: awsprovider.GenerateUserData,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// explainAgrees runs `joiner explain nodeclaim` on the NodeClaim as the
// API holds it now (with its Node and every event), and checks that its
// verdict, the events section left out, names the cause the controller's
// event names.
func explainAgrees(t *testing.T, name, cause string) {
	t.Helper()
	// The controller publishes its event before its status write lands, so
	// explain (which reads the stored NodeClaim) is asked until the write
	// shows or 15 s pass.
	kube := test.Env(t).Client
	var last string
	err := test.Poll(t.Context(), 15*time.Second, func(ctx context.Context) error {
		out, err := explainNodeClaim(ctx, kube, name)
		if err != nil {
			return err
		}
		last = out
		if !strings.Contains(out, cause) {
			return fmt.Errorf("explain does not name the cause yet")
		}
		return nil
	})
	if err != nil {
		t.Errorf("explain's verdict does not name the controller's cause %q (%v):\n%s", cause, err, last)
	} else if testing.Verbose() {
		t.Logf("explain:\n%s", last)
	}
}

// explainNodeClaim is `joiner explain nodeclaim NAME` over what the API
// server stores now (the NodeClaim, its Node, every event), events left out.
func explainNodeClaim(ctx context.Context, kube client.Client, name string) (string, error) {
	nc := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return "", err
	}
	objs := []runtime.Object{nc}
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err == nil {
			objs = append(objs, node)
		}
	}
	list := &eventsv1.EventList{}
	if err := kube.List(ctx, list); err != nil {
		return "", err
	}
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	return explain.Text(objs, time.Now(), explain.Query{Kind: explain.KindNodeClaim, Name: name, NoEvents: true})
}
