package bootstrap

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
)

var (
	labels = map[string]string{"karpenter.sh/nodepool": "default", "team": "web"}
	taints = []corev1.Taint{
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
	}
)

func opts(family string, user *string) userdata.Options {
	return userdata.Options{
		AMIFamily: family, ClusterName: "demo", ClusterEndpoint: "https://demo.example:6443", CABundle: "Q0E=", ClusterCIDR: "10.100.0.0/16",
		Labels: labels, Taints: taints, MaxPods: ptr.To[int32](29), CustomUserData: user,
		Kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "70m", "memory": "574Mi"}},
	}
}

// TestParseInvertsUserdata: what joiner generates for each family is what
// the emulated image's kubelet registers with, with and without user parts.
func TestParseInvertsUserdata(t *testing.T) {
	cases := []struct {
		name string
		opts userdata.Options
	}{
		{name: "al2", opts: opts(awsv1.AMIFamilyAL2, nil)},
		{name: "al2 after a user script", opts: opts(awsv1.AMIFamilyAL2, ptr.To("#!/bin/bash\nCLUSTER=other\necho $CLUSTER\n"))},
		{name: "al2023", opts: opts(awsv1.AMIFamilyAL2023, nil)},
		{name: "al2023 after a user NodeConfig", opts: opts(awsv1.AMIFamilyAL2023, ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: other\n  kubelet:\n    config:\n      maxPods: 7\n"))},
		{name: "bottlerocket", opts: opts(awsv1.AMIFamilyBottlerocket, nil)},
		{name: "windows", opts: opts(awsv1.AMIFamilyWindows2022, ptr.To("<powershell>\nWrite-Host 'it''s me'\n</powershell>"))},
		{name: "bottlerocket over user settings", opts: opts(awsv1.AMIFamilyBottlerocket, ptr.To("[settings.kubernetes]\ncluster-name = \"other\"\n"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := userdata.Render(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			k, err := Parse(tc.opts.AMIFamily, raw)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, raw)
			}
			if k.ClusterName != "demo" || k.APIServerEndpoint != "https://demo.example:6443" {
				t.Errorf("cluster = %q at %q, want demo at https://demo.example:6443", k.ClusterName, k.APIServerEndpoint)
			}
			if !reflect.DeepEqual(k.Labels, labels) {
				t.Errorf("labels = %v, want %v", k.Labels, labels)
			}
			if !sameTaints(k.Taints, taints) {
				t.Errorf("taints = %v, want %v", k.Taints, taints)
			}
			if k.MaxPods == nil || *k.MaxPods != 29 {
				t.Errorf("max pods = %v, want 29", k.MaxPods)
			}
			if k.KubeReserved["memory"] != "574Mi" {
				t.Errorf("kube-reserved = %v, want memory 574Mi", k.KubeReserved)
			}
		})
	}
}

func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, t := range a {
		seen[taintString(t)] = true
	}
	for _, t := range b {
		if !seen[taintString(t)] {
			return false
		}
	}
	return true
}

// TestParseCustomUserData covers user data written by hand, as in the
// seeds: what the kubelet ends up with, or why it never starts.
func TestParseCustomUserData(t *testing.T) {
	cases := []struct {
		name       string
		family     string
		userData   string
		wantTaints []string
		wantLabels map[string]string
		wantErr    string
	}{
		{
			// Seed 002: '=' after --kubelet-extra-args makes bootstrap.sh
			// treat the whole word as a positional argument: no taint.
			name:   "seed 002: --kubelet-extra-args= is dropped",
			family: awsv1.AMIFamilyAL2,
			userData: `#!/bin/bash
set -e
B64_CLUSTER_CA=Q0E=
API_SERVER_URL=https://demo.example:6443
/etc/eks/bootstrap.sh demo --b64-cluster-ca $B64_CLUSTER_CA --apiserver-endpoint $API_SERVER_URL \
  --kubelet-extra-args='--register-with-taints="karpenter.sh/unregistered:NoExecute"'
`,
			wantTaints: nil,
		},
		{
			name:   "seed 002 fixed: separate word, inner quotes removed",
			family: awsv1.AMIFamilyAL2,
			userData: `#!/bin/bash
CLUSTER=demo
/etc/eks/bootstrap.sh "${CLUSTER}" --apiserver-endpoint https://demo.example:6443 \
  --kubelet-extra-args '--register-with-taints "karpenter.sh/unregistered:NoExecute" --node-labels=team=web'
`,
			wantTaints: []string{"karpenter.sh/unregistered:NoExecute"},
			wantLabels: map[string]string{"team": "web"},
		},
		{
			name:     "no bootstrap call",
			family:   awsv1.AMIFamilyAL2,
			userData: "#!/bin/bash\necho hello\n",
			wantErr:  "never configured",
		},
		{
			name:     "bootstrap without cluster name",
			family:   awsv1.AMIFamilyAL2,
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh --apiserver-endpoint https://x\n",
			wantErr:  "cluster name",
		},
		{
			name:     "malformed taint stops the kubelet",
			family:   awsv1.AMIFamilyAL2,
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecut'\n",
			wantErr:  "kubelet exits at start",
		},
		{
			name:     "restricted kubernetes.io label stops the kubelet",
			family:   awsv1.AMIFamilyAL2,
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--node-labels=kubernetes.io/role=worker'\n",
			wantErr:  "unknown 'kubernetes.io'",
		},
		{
			name:     "al2023 shell script only",
			family:   awsv1.AMIFamilyAL2023,
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh demo\n",
			wantErr:  "no NodeConfig",
		},
		{
			name:     "al2023 cloud-config only",
			family:   awsv1.AMIFamilyAL2023,
			userData: "#cloud-config\npackages: [jq]\n",
			wantErr:  "no NodeConfig",
		},
		{
			name:     "al2023 nodeconfig without endpoint",
			family:   awsv1.AMIFamilyAL2023,
			userData: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n",
			wantErr:  "Apiserver endpoint is missing in cluster configuration",
		},
		{
			name:     "al2023 nodeconfig without cidr",
			family:   awsv1.AMIFamilyAL2023,
			userData: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: demo\n    apiServerEndpoint: https://x\n    certificateAuthority: Q0E=\n",
			wantErr:  "CIDR is missing in cluster configuration",
		},
		{
			name:     "windows without a powershell block",
			family:   awsv1.AMIFamilyWindows2019,
			userData: "& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSClusterName demo\n",
			wantErr:  "no <powershell>",
		},
		{
			name:       "windows calling the script by path",
			family:     awsv1.AMIFamilyWindows2019,
			userData:   "<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSClusterName demo -KubeletExtraArgs '--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n</powershell>\n",
			wantTaints: []string{"karpenter.sh/unregistered:NoExecute"},
		},
		{
			name:     "bottlerocket that is not toml",
			family:   awsv1.AMIFamilyBottlerocket,
			userData: "[settings.kubernetes\n",
			wantErr:  "not TOML",
		},
		{
			name:       "bottlerocket taints",
			family:     awsv1.AMIFamilyBottlerocket,
			userData:   "[settings.kubernetes]\ncluster-name = \"demo\"\napi-server = \"https://x\"\n[settings.kubernetes.node-taints]\n\"karpenter.sh/unregistered\" = [\":NoExecute\"]\ndedicated = [\"web:NoSchedule\"]\n",
			wantTaints: []string{"dedicated=web:NoSchedule", "karpenter.sh/unregistered:NoExecute"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.family, []byte(tc.userData))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, t := range k.Taints {
				got = append(got, taintString(t))
			}
			if !reflect.DeepEqual(got, tc.wantTaints) {
				t.Errorf("taints = %v, want %v", got, tc.wantTaints)
			}
			if tc.wantLabels != nil && !reflect.DeepEqual(k.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", k.Labels, tc.wantLabels)
			}
		})
	}
}
