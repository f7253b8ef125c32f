package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestHash(t *testing.T) {
	base := func() *EC2NodeClass {
		size := resource.MustParse("20Gi")
		return &EC2NodeClass{Spec: EC2NodeClassSpec{
			AMISelectorTerms:           []AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: map[string]string{"a": "b"}}},
			SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{Tags: map[string]string{"a": "b"}}},
			Role:                       "role",
			Tags:                       map[string]string{"team": "a", "env": "prod"},
			BlockDeviceMappings:        []*BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &BlockDevice{VolumeSize: &size}}},
		}}
	}
	want := base().Hash()
	for _, tc := range []struct {
		name    string
		mutate  func(*EC2NodeClass)
		drifted bool
	}{
		{name: "unchanged", mutate: func(*EC2NodeClass) {}},
		{name: "selector terms", mutate: func(nc *EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []SubnetSelectorTerm{{ID: "subnet-1"}}
			nc.Spec.SecurityGroupSelectorTerms = []SecurityGroupSelectorTerm{{ID: "sg-1"}}
			nc.Spec.AMISelectorTerms = []AMISelectorTerm{{Alias: "al2023@v20240807"}}
			nc.Spec.CapacityReservationSelectorTerms = []CapacityReservationSelectorTerm{{ID: "cr-1"}}
		}},
		{name: "ipPrefixCount", mutate: func(nc *EC2NodeClass) { nc.Spec.IPPrefixCount = ptr.To[int32](2) }},
		{name: "amiFamily spelled out", mutate: func(nc *EC2NodeClass) { nc.Spec.AMIFamily = ptr.To(AMIFamilyAL2023) }},
		{name: "tags in another order", mutate: func(nc *EC2NodeClass) { nc.Spec.Tags = map[string]string{"env": "prod", "team": "a"} }},
		{name: "status", mutate: func(nc *EC2NodeClass) { nc.Status.InstanceProfile = "p" }},
		{name: "amiFamily to Custom", mutate: func(nc *EC2NodeClass) { nc.Spec.AMIFamily = ptr.To(AMIFamilyCustom) }, drifted: true},
		{name: "alias family", mutate: func(nc *EC2NodeClass) { nc.Spec.AMISelectorTerms[0].Alias = "bottlerocket@latest" }, drifted: true},
		{name: "role", mutate: func(nc *EC2NodeClass) { nc.Spec.Role = "other" }, drifted: true},
		{name: "tag value", mutate: func(nc *EC2NodeClass) { nc.Spec.Tags["env"] = "dev" }, drifted: true},
		{name: "user data", mutate: func(nc *EC2NodeClass) { nc.Spec.UserData = ptr.To("#!/bin/bash") }, drifted: true},
		{name: "volume size", mutate: func(nc *EC2NodeClass) {
			q := resource.MustParse("30Gi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		}, drifted: true},
		{name: "kubelet", mutate: func(nc *EC2NodeClass) { nc.Spec.Kubelet = &KubeletConfiguration{MaxPods: ptr.To[int32](10)} }, drifted: true},
		{name: "metadata options", mutate: func(nc *EC2NodeClass) {
			nc.Spec.MetadataOptions = &MetadataOptions{HTTPTokens: ptr.To("optional")}
		}, drifted: true},
		{name: "placement group", mutate: func(nc *EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &PlacementGroupSelector{Name: "pg"}
		}, drifted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := base()
			tc.mutate(nc)
			if got := nc.Hash(); (got != want) != tc.drifted {
				t.Fatalf("Hash() = %s, base %s: drifted %v, want %v", got, want, got != want, tc.drifted)
			}
		})
	}
}
