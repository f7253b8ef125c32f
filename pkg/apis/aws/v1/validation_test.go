package v1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	extra := map[string]apiextensionsv1.JSON{
		"topologyManagerPolicy": {Raw: []byte(`"single-numa-node"`)},
		"cpuManagerPolicy":      {Raw: []byte(`"static"`)},
	}
	for _, tc := range []struct {
		name      string
		alias     string
		amiFamily *string
		kubelet   *KubeletConfiguration
		want      []string // substrings of the error; none means valid
	}{
		{name: "no kubelet", alias: "al2@latest"},
		{name: "typed fields on Bottlerocket", alias: "bottlerocket@latest", kubelet: &KubeletConfiguration{MaxPods: ptr.To[int32](10)}},
		{name: "extra fields on AL2023 alias", alias: "al2023@latest", kubelet: &KubeletConfiguration{Extra: extra}},
		{name: "extra fields on amiFamily AL2023", alias: "", amiFamily: ptr.To(AMIFamilyAL2023), kubelet: &KubeletConfiguration{Extra: extra}},
		{
			name: "extra fields on AL2", alias: "al2@latest", kubelet: &KubeletConfiguration{Extra: extra},
			want: []string{"spec.kubelet: cpuManagerPolicy, topologyManagerPolicy can only be passed to the kubelet on AL2023", "amiFamily AL2", "maxPods"},
		},
		{
			name: "extra fields on Custom with an AL2023 alias", alias: "al2023@latest", amiFamily: ptr.To(AMIFamilyCustom),
			kubelet: &KubeletConfiguration{Extra: extra},
			want:    []string{"amiFamily Custom"},
		},
		{
			name: "registerWithTaints", alias: "al2023@latest",
			kubelet: &KubeletConfiguration{RegisterWithTaints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}},
			want:    []string{"spec.kubelet.registerWithTaints: joiner sets the taints nodes register with", "startupTaints"},
		},
		{
			name: "Extra names a typed field", alias: "al2023@latest",
			kubelet: &KubeletConfiguration{Extra: map[string]apiextensionsv1.JSON{"maxPods": {Raw: []byte(`5`)}}},
			want:    []string{"Extra holds maxPods, which KubeletConfiguration types"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &EC2NodeClass{Spec: EC2NodeClassSpec{AMIFamily: tc.amiFamily, Kubelet: tc.kubelet}}
			if tc.alias != "" {
				nc.Spec.AMISelectorTerms = []AMISelectorTerm{{Alias: tc.alias}}
			}
			err := nc.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to mention %q", err, w)
				}
			}
		})
	}
}
