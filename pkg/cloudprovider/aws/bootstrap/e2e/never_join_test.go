package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestInstancesThatNeverJoin: each way a real node fails to join leaves
// the instance running without a Node, and the emulated console log says
// why.
func TestInstancesThatNeverJoin(t *testing.T) {
	mapNodeRole(t)
	// The bootstrapper-only role is mapped, but without system:nodes.
	patchAWSAuth(t, "- rolearn: "+withoutPath(local.bootstrapperOnlyRoleARN)+"\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers]\n")
	noCIDR, err := userdata.Render(userdata.Options{AMIFamily: awsv1.AMIFamilyAL2023, ClusterName: clusterName, ClusterEndpoint: endpoint, CABundle: "Q0E=",
		Labels: map[string]string{kwokLabel: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	joiner := func(family string) []byte {
		ud, err := userdata.Render(userdata.Options{AMIFamily: family, ClusterName: clusterName, ClusterEndpoint: endpoint, CABundle: "Q0E=", ClusterCIDR: localec2.DefaultServiceCIDR,
			Labels: map[string]string{kwokLabel: "true"}})
		if err != nil {
			t.Fatal(err)
		}
		return ud
	}
	cases := []struct {
		name string
		l    launch
		want string
	}{
		{name: "arm64 image on an amd64 type",
			l:    launch{family: awsv1.AMIFamilyAL2023, arch: "arm64", instanceType: "m5.large", profile: local.mappedProfile, userData: joiner(awsv1.AMIFamilyAL2023)},
			want: "is built for arm64 but instance type m5.large runs x86_64"},
		{name: "no instance profile",
			l:    launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "m5.large", userData: joiner(awsv1.AMIFamilyAL2023)},
			want: "no IAM instance profile"},
		{name: "role mapped without system:nodes",
			l:    launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "m5.large", profile: local.bootstrapperOnlyProfile, userData: joiner(awsv1.AMIFamilyAL2023)},
			want: "without the group system:nodes"},
		{name: "AL2 bootstrap script on an AL2023 image",
			l:    launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "m5.large", profile: local.mappedProfile, userData: joiner(awsv1.AMIFamilyAL2)},
			want: "nodeadm init refuses the user data (loading the configuration): Could not find NodeConfig within UserData"},
		{name: "AL2023 NodeConfig without the cluster CIDR",
			l:    launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "m5.large", profile: local.mappedProfile, userData: noCIDR},
			want: "nodeadm init refuses the user data (validating the configuration): CIDR is missing in cluster configuration"},
		{name: "user data naming another cluster",
			l: launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "m5.large", profile: local.mappedProfile,
				userData: []byte("#!/bin/bash\n/etc/eks/bootstrap.sh other-cluster --apiserver-endpoint " + endpoint + "\n")},
			want: `joins cluster "other-cluster"`},
		{name: "kubelet flag the kubelet rejects",
			l: launch{family: awsv1.AMIFamilyAL2, arch: "x86_64", instanceType: "m5.large", profile: local.mappedProfile,
				userData: []byte("#!/bin/bash\n/etc/eks/bootstrap.sh " + clusterName + " --kubelet-extra-args '--node-labels=node-role.kubernetes.io/worker=true'\n")},
			want: "unknown 'kubernetes.io' or 'k8s.io' label"},
	}
	nodes := emulator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inst := runInstance(t, tc.l)
			if err := nodes.Step(t.Context()); err != nil {
				t.Fatal(err)
			}
			out, ok := nodes.Outcome(aws.ToString(inst.InstanceId))
			if !ok || out.NodeName != "" || !strings.Contains(out.Reason, tc.want) {
				t.Fatalf("outcome = %+v (seen %v), want no Node and a reason containing %q", out, ok, tc.want)
			}
			list := &corev1.NodeList{}
			if err := test.Env(t).Client.List(t.Context(), list); err != nil {
				t.Fatal(err)
			}
			for _, n := range list.Items {
				if n.Spec.ProviderID == bootstrap.ProviderID(&inst) {
					t.Errorf("instance %s registered node %s", aws.ToString(inst.InstanceId), n.Name)
				}
			}
		})
	}
}

// patchAWSAuth appends entries to aws-auth's mapRoles and removes them when
// t ends.
func patchAWSAuth(t *testing.T, entries string) {
	t.Helper()
	kube := test.Env(t).Client
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: bootstrap.AWSAuthNamespace, Name: bootstrap.AWSAuthName}
	if err := kube.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	before := cm.Data["mapRoles"]
	set := func(ctx context.Context, v string) error {
		return kube.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"mapRoles":`+quote(v)+`}}`)))
	}
	if err := set(t.Context(), before+entries); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set(context.Background(), before) })
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func withoutPath(arn string) string {
	prefix, rest, _ := strings.Cut(arn, ":role/")
	return prefix + ":role/" + rest[strings.LastIndex(rest, "/")+1:]
}

// TestAccessEntryLetsAnUnmappedRoleJoin: a node role with an (emulated)
// EKS access entry joins without an aws-auth mapping.
func TestAccessEntryLetsAnUnmappedRoleJoin(t *testing.T) {
	role, err := local.iam.GetRole(t.Context(), &iam.GetRoleInput{RoleName: aws.String("ControllerRole-" + clusterName)})
	if err != nil {
		t.Fatal(err)
	}
	ud, err := userdata.Render(userdata.Options{AMIFamily: awsv1.AMIFamilyAL2023, ClusterName: clusterName, ClusterEndpoint: endpoint, CABundle: "Q0E=", ClusterCIDR: localec2.DefaultServiceCIDR,
		Labels: map[string]string{kwokLabel: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := runInstance(t, launch{family: awsv1.AMIFamilyAL2023, arch: "x86_64", instanceType: "m5.large", profile: local.unmappedProfile, userData: ud})
	nodes, err := bootstrap.New(bootstrap.Options{
		Client: test.Env(t).Client, EC2: local.ec2, IAM: local.iam, ClusterName: clusterName,
		AccessEntries: []string{aws.ToString(role.Role.Arn)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes.Step(t.Context()); err != nil {
		t.Fatal(err)
	}
	out, _ := nodes.Outcome(aws.ToString(inst.InstanceId))
	if out.NodeName == "" {
		t.Fatalf("instance with an access entry did not register: %+v", out)
	}
	t.Cleanup(func() {
		_ = test.Env(t).Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: out.NodeName}})
	})
}
