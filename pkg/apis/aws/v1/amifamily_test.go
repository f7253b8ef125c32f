package v1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParseAlias(t *testing.T) {
	for _, tc := range []struct {
		name    string
		alias   string
		want    Alias
		wantErr bool
	}{
		{name: "al2023 latest", alias: "al2023@latest", want: Alias{Family: AMIFamilyAL2023, Version: "latest"}},
		{name: "al2023 pinned", alias: "al2023@v20240807", want: Alias{Family: AMIFamilyAL2023, Version: "v20240807"}},
		{name: "al2", alias: "al2@latest", want: Alias{Family: AMIFamilyAL2, Version: "latest"}},
		{name: "bottlerocket with v", alias: "bottlerocket@v1.20.3", want: Alias{Family: AMIFamilyBottlerocket, Version: "v1.20.3"}},
		{name: "bottlerocket without v", alias: "bottlerocket@1.20.3", want: Alias{Family: AMIFamilyBottlerocket, Version: "1.20.3"}},
		{name: "windows2019", alias: "windows2019@latest", want: Alias{Family: AMIFamilyWindows2019, Version: "latest"}},
		{name: "windows2022", alias: "windows2022@latest", want: Alias{Family: AMIFamilyWindows2022, Version: "latest"}},
		{name: "windows2025", alias: "windows2025@latest", want: Alias{Family: AMIFamilyWindows2025, Version: "latest"}},
		{name: "windows pinned", alias: "windows2022@v20240807", wantErr: true},
		{name: "no at", alias: "al2023", wantErr: true},
		{name: "empty version", alias: "al2023@", wantErr: true},
		{name: "empty family", alias: "@latest", wantErr: true},
		{name: "two ats", alias: "al2023@v1@v2", wantErr: true},
		{name: "custom has no alias", alias: "custom@latest", wantErr: true},
		{name: "upper case family", alias: "AL2023@latest", wantErr: true},
		{name: "unknown family", alias: "ubuntu@latest", wantErr: true},
		{name: "version with a slash", alias: "al2023@v1/2", wantErr: true},
		{name: "version starting with a dot", alias: "al2023@.1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAlias(tc.alias)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseAlias(%q) = %+v, want an error", tc.alias, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAlias(%q): %v", tc.alias, err)
			}
			if got != tc.want {
				t.Fatalf("ParseAlias(%q) = %+v, want %+v", tc.alias, got, tc.want)
			}
			if got.String() != tc.alias {
				t.Errorf("String() = %q, want the input %q back", got.String(), tc.alias)
			}
		})
	}
}

func TestAMIFamily(t *testing.T) {
	for _, tc := range []struct {
		name      string
		amiFamily *string
		terms     []AMISelectorTerm
		want      string
		wantAlias *Alias
	}{
		{
			name:      "from alias",
			terms:     []AMISelectorTerm{{Alias: "al2023@latest"}},
			want:      AMIFamilyAL2023,
			wantAlias: &Alias{Family: AMIFamilyAL2023, Version: "latest"},
		},
		{
			name:      "bottlerocket alias",
			terms:     []AMISelectorTerm{{Alias: "bottlerocket@v1.20.3"}},
			want:      AMIFamilyBottlerocket,
			wantAlias: &Alias{Family: AMIFamilyBottlerocket, Version: "v1.20.3"},
		},
		{
			name:      "windows alias",
			terms:     []AMISelectorTerm{{Alias: "windows2022@latest"}},
			want:      AMIFamilyWindows2022,
			wantAlias: &Alias{Family: AMIFamilyWindows2022, Version: "latest"},
		},
		{
			name:      "explicit family agrees with alias",
			amiFamily: ptr.To(AMIFamilyAL2),
			terms:     []AMISelectorTerm{{Alias: "al2@latest"}},
			want:      AMIFamilyAL2,
			wantAlias: &Alias{Family: AMIFamilyAL2, Version: "latest"},
		},
		{
			name:      "Custom overrides the alias family, the alias still picks the image",
			amiFamily: ptr.To(AMIFamilyCustom),
			terms:     []AMISelectorTerm{{Alias: "al2023@latest"}},
			want:      AMIFamilyCustom,
			wantAlias: &Alias{Family: AMIFamilyAL2023, Version: "latest"},
		},
		{
			name:      "explicit family with id terms",
			amiFamily: ptr.To(AMIFamilyAL2),
			terms:     []AMISelectorTerm{{ID: "ami-0123456789abcdef0"}, {Name: "my-ami-*", Owner: "self"}},
			want:      AMIFamilyAL2,
		},
		{
			name:  "neither family nor alias resolves to Custom",
			terms: []AMISelectorTerm{{ID: "ami-0123456789abcdef0"}},
			want:  AMIFamilyCustom,
		},
		{
			name:      "empty family string is unset",
			amiFamily: ptr.To(""),
			terms:     []AMISelectorTerm{{Alias: "al2@latest"}},
			want:      AMIFamilyAL2,
			wantAlias: &Alias{Family: AMIFamilyAL2, Version: "latest"},
		},
		{
			name:  "malformed alias is ignored",
			terms: []AMISelectorTerm{{Alias: "al2023"}},
			want:  AMIFamilyCustom,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &EC2NodeClass{
				ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec:       EC2NodeClassSpec{AMIFamily: tc.amiFamily, AMISelectorTerms: tc.terms},
			}
			if got := nc.AMIFamily(); got != tc.want {
				t.Errorf("AMIFamily() = %q, want %q", got, tc.want)
			}
			got := nc.Alias()
			switch {
			case tc.wantAlias == nil && got != nil:
				t.Errorf("Alias() = %+v, want nil", *got)
			case tc.wantAlias != nil && (got == nil || *got != *tc.wantAlias):
				t.Errorf("Alias() = %v, want %+v", got, *tc.wantAlias)
			}
		})
	}
}

func TestIsWindows(t *testing.T) {
	for _, f := range AMIFamilies {
		want := f == AMIFamilyWindows2019 || f == AMIFamilyWindows2022 || f == AMIFamilyWindows2025
		if got := IsWindows(f); got != want {
			t.Errorf("IsWindows(%q) = %v, want %v", f, got, want)
		}
	}
}

func TestValidateTagKey(t *testing.T) {
	for _, tc := range []struct {
		key     string
		wantErr bool
	}{
		{key: "team"},
		{key: "karpenter.sh/discovery"},
		{key: "kubernetes.io/role"},
		{key: "", wantErr: true},
		{key: "kubernetes.io/cluster/prod", wantErr: true},
		{key: "eks:eks-cluster-name", wantErr: true},
		{key: "karpenter.sh/nodepool", wantErr: true},
		{key: "karpenter.sh/nodeclaim", wantErr: true},
		{key: "karpenter.k8s.aws/ec2nodeclass", wantErr: true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			err := ValidateTagKey(tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ValidateTagKey(%q) = %v, want error %v", tc.key, err, tc.wantErr)
			}
		})
	}
}

func TestStatusConditionsRollUp(t *testing.T) {
	nc := &EC2NodeClass{Spec: EC2NodeClassSpec{PlacementGroupSelector: &PlacementGroupSelector{Name: "pg"}}}
	cs := nc.StatusConditions()
	cs.Initialize()
	if nc.IsReady() {
		t.Fatal("a fresh EC2NodeClass must not be Ready")
	}
	for _, c := range nc.StatusConditionTypes() {
		cs.SetTrue(c)
	}
	if nc.IsReady() {
		t.Fatal("Ready before PlacementGroupReady, although a placement group is selected")
	}
	cs.SetTrue(ConditionTypePlacementGroupReady)
	if !nc.IsReady() {
		t.Fatalf("not Ready with every dependent True: %+v", nc.Status.Conditions)
	}
}
