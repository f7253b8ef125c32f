package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/nodeadm"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/test"
)

// emulator boots instances with the AL2023 image's real nodeadm judging
// their user data.
func emulator(t *testing.T) *bootstrap.Nodes {
	t.Helper()
	bin, err := nodeadm.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n, err := bootstrap.New(bootstrap.Options{
		Client: test.Env(t).Client, EC2: local.ec2, IAM: local.iam, ClusterName: clusterName,
		Region: localec2.Region, ExtraLabels: map[string]string{kwokLabel: "true"}, Nodeadm: bin,
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mapNodeRole(t *testing.T) {
	t.Helper()
	if err := bootstrap.MapNodeRole(t.Context(), test.Env(t).Client, local.mappedRoleARN); err != nil {
		t.Fatal(err)
	}
}

// TestInstancesRegisterWhatTheirUserDataSays: for each family, an instance
// launched with joiner's user data registers a kwok Node with the
// providerID, labels, taints and max-pods the user data carries, and loses
// it when the instance terminates.
func TestInstancesRegisterWhatTheirUserDataSays(t *testing.T) {
	mapNodeRole(t)
	taints := []corev1.Taint{
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
	}
	for _, tc := range []struct {
		family, arch, instanceType string
	}{
		{awsv1.AMIFamilyAL2023, "x86_64", "m5.large"},
		{awsv1.AMIFamilyAL2, "arm64", "m6g.large"},
		{awsv1.AMIFamilyBottlerocket, "x86_64", "c5.xlarge"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			ud, err := userdata.Render(userdata.Options{
				AMIFamily: tc.family, ClusterName: clusterName, ClusterEndpoint: endpoint, CABundle: "Q0E=", ClusterCIDR: localec2.DefaultServiceCIDR,
				Labels: map[string]string{"karpenter.sh/nodepool": "web", "team": tc.family}, Taints: taints,
				MaxPods: ptr.To[int32](17),
			})
			if err != nil {
				t.Fatal(err)
			}
			inst := runInstance(t, launch{family: tc.family, arch: tc.arch, instanceType: tc.instanceType, userData: ud, profile: local.mappedProfile})
			nodes := emulator(t)
			if err := nodes.Step(t.Context()); err != nil {
				t.Fatal(err)
			}
			id := aws.ToString(inst.InstanceId)
			out, ok := nodes.Outcome(id)
			if !ok || out.NodeName == "" {
				t.Fatalf("instance %s did not register: %+v", id, out)
			}
			kube := test.Env(t).Client
			node := &corev1.Node{}
			if err := kube.Get(t.Context(), client.ObjectKey{Name: out.NodeName}, node); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kube.Delete(context.Background(), node) })
			if want := bootstrap.ProviderID(&inst); node.Spec.ProviderID != want {
				t.Errorf("providerID = %s, want %s", node.Spec.ProviderID, want)
			}
			if node.Labels["team"] != tc.family || node.Labels[corev1.LabelInstanceTypeStable] != tc.instanceType || node.Labels[kwokLabel] != "true" {
				t.Errorf("labels = %v", node.Labels)
			}
			if got := withoutNotReady(node.Spec.Taints); !reflect.DeepEqual(got, withoutNotReady(taints)) {
				t.Errorf("taints = %v, want %v", got, taints)
			}
			if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Value() != 17 {
				t.Errorf("pods capacity = %s, want 17", pods.String())
			}
			if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.MilliValue() <= 0 || cpu.MilliValue() >= node.Status.Capacity.Cpu().MilliValue() {
				t.Errorf("allocatable cpu %s must be positive and below capacity %s", cpu.String(), node.Status.Capacity.Cpu().String())
			}

			// The instance terminates: its Node goes away.
			if _, err := local.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
				t.Fatal(err)
			}
			if err := nodes.Step(t.Context()); err != nil {
				t.Fatal(err)
			}
			test.Eventually(t, within, func(ctx context.Context) error {
				n := &corev1.Node{}
				err := kube.Get(ctx, client.ObjectKey{Name: out.NodeName}, n)
				if err == nil && n.DeletionTimestamp == nil {
					return fmt.Errorf("node %s still there", n.Name)
				}
				return client.IgnoreNotFound(err)
			})
		})
	}
}

// withoutNotReady drops the taint the API server adds to every new Node
// until it is Ready, and sorts the rest (Bottlerocket keeps taints in a
// TOML table, without order).
func withoutNotReady(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key != corev1.TaintNodeNotReady {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Taint) int { return strings.Compare(a.Key, b.Key) })
	return out
}
