package userdata

import (
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// base is what every case starts from: the cluster, the labels and the
// taints a NodeClaim with one startup taint registers with.
func base(family string) Options {
	return Options{
		AMIFamily:       family,
		ClusterName:     "demo",
		ClusterEndpoint: "https://demo.example:6443",
		CABundle:        "Q0FCVU5ETEU=",
		ClusterCIDR:     "10.100.0.0/16",
		Labels: map[string]string{
			"karpenter.sh/nodepool":      "default",
			"karpenter.sh/capacity-type": "spot",
			"team":                       "web",
		},
		Taints: []corev1.Taint{
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute},
		},
		MaxPods: ptr.To[int32](58),
	}
}

func with(o Options, f func(*Options)) Options {
	f(&o)
	return o
}

func kubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		ClusterDNS:                  []string{"10.100.0.10"},
		PodsPerCore:                 ptr.To[int32](4),
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]string{"cpu": "200m", "memory": "512Mi"},
		EvictionHard:                map[string]string{"memory.available": "5%"},
		EvictionSoft:                map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: time.Minute}},
		EvictionMaxPodGracePeriod:   ptr.To[int32](60),
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		CPUCFSQuota:                 ptr.To(false),
	}
}

const userNodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
`

func TestGenerateGolden(t *testing.T) {
	raid0 := ptr.To(awsv1.InstanceStorePolicyRAID0)
	cases := []struct {
		name string
		opts Options
	}{
		{name: "al2", opts: base(awsv1.AMIFamilyAL2)},
		{name: "al2-kubelet-raid0", opts: with(base(awsv1.AMIFamilyAL2), func(o *Options) {
			o.Kubelet = kubelet()
			o.InstanceStorePolicy = raid0
		})},
		{name: "al2-user-shell", opts: with(base(awsv1.AMIFamilyAL2), func(o *Options) {
			o.CustomUserData = ptr.To("#!/bin/bash\necho 'hello from the user'\n")
		})},
		{name: "al2-user-mime", opts: with(base(awsv1.AMIFamilyAL2), func(o *Options) {
			o.CustomUserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho one\n\n--BOUNDARY\nContent-Type: text/cloud-config\n\n#cloud-config\npackages: [jq]\n\n--BOUNDARY--\n")
		})},
		{name: "al2023", opts: base(awsv1.AMIFamilyAL2023)},
		{name: "al2023-kubelet-extra-raid0", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
			o.Kubelet = kubelet()
			o.Kubelet.Extra = map[string]apiextensionsv1.JSON{"cpuManagerPolicy": {Raw: []byte(`"static"`)}}
			o.InstanceStorePolicy = raid0
		})},
		{name: "al2023-user-nodeconfig", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
			o.CustomUserData = ptr.To(userNodeConfig)
		})},
		{name: "al2023-user-mime", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
			o.CustomUserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho pre-nodeadm\n--//\nContent-Type: application/node.eks.aws\n\n" + userNodeConfig + "--//--\n")
		})},
		{name: "bottlerocket", opts: base(awsv1.AMIFamilyBottlerocket)},
		{name: "bottlerocket-user-settings", opts: with(base(awsv1.AMIFamilyBottlerocket), func(o *Options) {
			o.Kubelet = kubelet()
			o.InstanceStorePolicy = raid0
			o.CustomUserData = ptr.To(`[settings.kubernetes]
cluster-name = "someone-else"
max-pods = 10

[settings.kubernetes.node-labels]
team = "platform"
tier = "frontend"

[settings.kubernetes.node-taints]
dedicated = ["web:NoSchedule", "batch:NoExecute"]
gpu = ["true:NoSchedule"]

[settings.host-containers.admin]
enabled = true
`)
		})},
		{name: "windows2022", opts: with(base(awsv1.AMIFamilyWindows2022), func(o *Options) {
			o.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"10.100.0.10"}}
			o.CustomUserData = ptr.To("<powershell>\nWrite-Host 'hello'\n</powershell>\n")
		})},
		{name: "custom", opts: with(base(awsv1.AMIFamilyCustom), func(o *Options) {
			o.CustomUserData = ptr.To("#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args='--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n")
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			encoded, err := Generate(tc.opts)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			raw, err := base64.StdEncoding.DecodeString(encoded)
			if err != nil {
				t.Fatalf("Generate returned invalid base64: %v", err)
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading %s (run go test -update to create it): %v", golden, err)
			}
			if string(want) != string(raw) {
				t.Errorf("user data differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", golden, raw, want)
			}
			again, err := Generate(tc.opts)
			if err != nil || again != encoded {
				t.Errorf("Generate is not deterministic")
			}
		})
	}
}

func TestGenerateRejectsMalformedUserData(t *testing.T) {
	cases := []struct {
		name     string
		opts     Options
		wantUser bool // an *Error about spec.userData
		want     []string
	}{
		{
			name: "mime without boundary",
			opts: with(base(awsv1.AMIFamilyAL2), func(o *Options) {
				o.CustomUserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n--//\n\n#!/bin/bash\n--//--\n")
			}),
			wantUser: true,
			want:     []string{"spec.userData", "no boundary parameter"},
		},
		{
			name: "mime never closed",
			opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
				o.CustomUserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n")
			}),
			wantUser: true,
			want:     []string{"spec.userData", "not a valid MIME multipart archive"},
		},
		{
			name:     "mime that is not multipart",
			opts:     with(base(awsv1.AMIFamilyAL2), func(o *Options) { o.CustomUserData = ptr.To("Content-Type: text/plain\n\nhello\n") }),
			wantUser: true,
			want:     []string{"spec.userData", "want multipart/mixed"},
		},
		{
			name: "nodeconfig part that is not yaml",
			opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
				o.CustomUserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [unclosed\n--//--\n")
			}),
			wantUser: true,
			want:     []string{"spec.userData", "MIME part 1", "not valid YAML"},
		},
		{
			name: "bare nodeconfig of the wrong kind",
			opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) {
				o.CustomUserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfg\nspec: {}\n")
			}),
			wantUser: true,
			want:     []string{"spec.userData", `kind "NodeConfg"`},
		},
		{
			name:     "al2 text that is no script",
			opts:     with(base(awsv1.AMIFamilyAL2), func(o *Options) { o.CustomUserData = ptr.To("echo no shebang\n") }),
			wantUser: true,
			want:     []string{"spec.userData", "unrecognised format", "#!"},
		},
		{
			name:     "bottlerocket toml that does not parse",
			opts:     with(base(awsv1.AMIFamilyBottlerocket), func(o *Options) { o.CustomUserData = ptr.To("[settings.kubernetes\nmax-pods = 10\n") }),
			wantUser: true,
			want:     []string{"spec.userData", "not valid TOML", "line 1"},
		},
		{
			name:     "bottlerocket settings that are not a table",
			opts:     with(base(awsv1.AMIFamilyBottlerocket), func(o *Options) { o.CustomUserData = ptr.To("settings = 3\n") }),
			wantUser: true,
			want:     []string{"spec.userData", `"settings" must be a TOML table`},
		},
		{
			name:     "windows with two powershell blocks",
			opts:     with(base(awsv1.AMIFamilyWindows2019), func(o *Options) { o.CustomUserData = ptr.To("<powershell>a</powershell><powershell>b</powershell>") }),
			wantUser: true,
			want:     []string{"spec.userData", "2 <powershell>"},
		},
		{
			name:     "too large",
			opts:     with(base(awsv1.AMIFamilyAL2), func(o *Options) { o.CustomUserData = ptr.To("#!/bin/bash\n" + strings.Repeat("#", MaxBytes)) }),
			wantUser: true,
			want:     []string{"spec.userData", "EC2 accepts at most 16384"},
		},
		{
			name: "no cluster endpoint",
			opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.ClusterEndpoint = "" }),
			want: []string{"ClusterEndpoint required"},
		},
		{
			name: "unknown family",
			opts: with(base("Ubuntu"), func(o *Options) {}),
			want: []string{`unknown AMI family "Ubuntu"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.opts)
			if err == nil {
				t.Fatal("Generate succeeded, want an error")
			}
			if IsError(err) != tc.wantUser {
				t.Errorf("IsError = %v, want %v (%v)", IsError(err), tc.wantUser, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCustomPassesThroughUntouched(t *testing.T) {
	for _, ud := range []*string{nil, ptr.To(""), ptr.To("not even a script \x00 with bytes")} {
		o := base(awsv1.AMIFamilyCustom)
		o.ClusterEndpoint = "" // Custom needs nothing from joiner
		o.CustomUserData = ud
		got, err := Render(o)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		want := ""
		if ud != nil {
			want = *ud
		}
		if string(got) != want {
			t.Errorf("Render = %q, want %q", got, want)
		}
	}
}
