package v1

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// The base object sets none of the fields added after joiner-v1 was
	// defined; its hash must stay what it was, or every node launched
	// before the upgrade would drift.
	if want != "9391386469853989209" {
		t.Fatalf("Hash() of the base object = %s, want 9391386469853989209 as before networkInterfaces, connectionTracking, cpuOptions and kubelet extras existed", want)
	}
	withKubelet := base()
	withKubelet.Spec.Kubelet = &KubeletConfiguration{
		MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.0.10"},
		EvictionSoft:            map[string]string{"memory.available": "5%"},
		EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 60e9}},
	}
	if got := withKubelet.Hash(); got != "12985094410608732510" {
		t.Fatalf("Hash() with typed kubelet fields = %s, want 12985094410608732510 as before kubelet extras existed", got)
	}
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
		{name: "network interfaces", mutate: func(nc *EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []NetworkInterface{
				{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: NetworkInterfaceTypeInterface},
				{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: NetworkInterfaceTypeEFAOnly},
			}
		}, drifted: true},
		{name: "connection tracking", mutate: func(nc *EC2NodeClass) {
			nc.Spec.ConnectionTracking = &ConnectionTracking{UDPTimeout: ptr.To[int32](45)}
		}, drifted: true},
		{name: "cpu options", mutate: func(nc *EC2NodeClass) {
			nc.Spec.CPUOptions = &CPUOptions{NestedVirtualization: ptr.To(NestedVirtualizationEnabled)}
		}, drifted: true},
		{name: "kubelet extra field", mutate: func(nc *EC2NodeClass) {
			nc.Spec.Kubelet = &KubeletConfiguration{Extra: map[string]apiextensionsv1.JSON{"cpuManagerPolicy": {Raw: []byte(`"static"`)}}}
		}, drifted: true},
		{name: "kubelet extra field that is not JSON", mutate: func(nc *EC2NodeClass) {
			nc.Spec.Kubelet = &KubeletConfiguration{Extra: map[string]apiextensionsv1.JSON{"cpuManagerPolicy": {Raw: []byte(`static`)}}}
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

func TestHashNetworkInterfaceOrderMatters(t *testing.T) {
	primary := NetworkInterface{InterfaceType: NetworkInterfaceTypeInterface}
	efa := NetworkInterface{NetworkCardIndex: 1, InterfaceType: NetworkInterfaceTypeEFAOnly}
	a := &EC2NodeClass{Spec: EC2NodeClassSpec{NetworkInterfaces: []NetworkInterface{primary, efa}}}
	b := &EC2NodeClass{Spec: EC2NodeClassSpec{NetworkInterfaces: []NetworkInterface{efa, primary}}}
	if a.Hash() == b.Hash() {
		t.Fatal("reordering networkInterfaces kept the hash; lists are hashed in order")
	}
}

func TestHashKubeletExtraIsCanonical(t *testing.T) {
	var x, y KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"maxPods":10,"cpuManagerPolicy":"static","featureGates":{"A":true,"B":false}}`), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"featureGates":{"B":false,"A":true}, "cpuManagerPolicy":"static","maxPods":10}`), &y); err != nil {
		t.Fatal(err)
	}
	a := &EC2NodeClass{Spec: EC2NodeClassSpec{Kubelet: &x}}
	b := &EC2NodeClass{Spec: EC2NodeClassSpec{Kubelet: &y}}
	if a.Hash() != b.Hash() {
		t.Fatal("the same kubelet configuration written in another key order changed the hash")
	}
}
