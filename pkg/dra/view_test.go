package dra_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/dra"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func gpuClass(name, expr string) resourcev1.DeviceClass {
	return resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}}}
}

func template(name string, req resourcev1.ExactDeviceRequest) resourcev1.ResourceClaimTemplate {
	return resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &req}}}}}}
}

func claimingPod(name, tmpl string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(tmpl)}}}}
}

// nodeSlice publishes a node's devices as the simulated cloud does.
func nodeSlice(node, instanceType string, its []*scheduling.InstanceType) resourcev1.ResourceSlice {
	for _, it := range its {
		if it.Name != instanceType {
			continue
		}
		p := dra.InstanceTypeDevices(it)[0]
		return resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu"},
			Spec: resourcev1.ResourceSliceSpec{Driver: p.Driver, NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}, Devices: p.Devices}}
	}
	panic("no type " + instanceType)
}

// TestView evaluates DeviceClass and request selectors with Kubernetes'
// CEL library against what each instance type and node publishes.
func TestView(t *testing.T) {
	c, err := catalog.Default(catalog.Options{Zones: []string{"zone-a"}, Families: []string{"g4dn", "g5", "m5"}})
	if err != nil {
		t.Fatal(err)
	}
	its := c.InstanceTypes()
	objs := dra.Objects{
		DeviceClasses: []resourcev1.DeviceClass{gpuClass("nvidia", `device.driver == "gpu.nvidia.com"`)},
		Templates: []resourcev1.ResourceClaimTemplate{
			template("two", resourcev1.ExactDeviceRequest{DeviceClassName: "nvidia", Count: 2}),
			template("two-a10g", resourcev1.ExactDeviceRequest{DeviceClassName: "nvidia", Count: 2, Selectors: []resourcev1.DeviceSelector{
				{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA A10G"`}}}}),
			template("all", resourcev1.ExactDeviceRequest{DeviceClassName: "nvidia", AllocationMode: resourcev1.DeviceAllocationModeAll}),
			template("missing-class", resourcev1.ExactDeviceRequest{DeviceClassName: "amd"}),
		},
		Slices: []resourcev1.ResourceSlice{nodeSlice("node-1", "g4dn.12xlarge", its)},
		// A claim allocated on node-1 that no pod of the snapshot holds.
		Claims: []resourcev1.ResourceClaim{{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default"},
			Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
				Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node-1", Device: "gpu-0"}}}}}}},
	}
	snap := &scheduling.Snapshot{
		InstanceTypes: map[string][]*scheduling.InstanceType{"default": its},
		Pods: []*corev1.Pod{claimingPod("two", "two"), claimingPod("a10g", "two-a10g"), claimingPod("all", "all"), claimingPod("bad", "missing-class"), claimingPod("gone", "nope"),
			// A pod sharing the allocated claim goes where its devices are.
			{ObjectMeta: metav1.ObjectMeta{Name: "sharer", Namespace: "default"},
				Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("orphan")}}}}},
		Nodes: []*scheduling.ExistingNode{{Name: "node-1"}, {Name: "m5-node"}},
	}
	v := dra.View(context.Background(), snap, objs, nil)
	if got := v.InstanceTypes["g4dn.12xlarge"]["gpu.nvidia.com"]; got != 4 {
		t.Errorf("g4dn.12xlarge publishes %d devices, want 4", got)
	}
	if _, ok := v.InstanceTypes["m5.large"]; ok {
		t.Errorf("m5.large publishes devices: %v", v.InstanceTypes["m5.large"])
	}
	if got := v.Nodes["node-1"]["gpu.nvidia.com"]; got != 3 {
		t.Errorf("node-1 has %d free devices, want 3 (one held by a claim no pod accounts for)", got)
	}
	tests := []struct {
		pod         string
		types       []string
		nodes       []string
		unsupported bool
	}{
		{pod: "two", types: []string{"g4dn.12xlarge", "g5.12xlarge", "g5.24xlarge", "g5.48xlarge"}, nodes: []string{"node-1"}},
		{pod: "a10g", types: []string{"g5.12xlarge", "g5.24xlarge", "g5.48xlarge"}},
		{pod: "all", unsupported: true},
		{pod: "bad", unsupported: true},
		{pod: "gone", unsupported: true},
	}
	if rs := v.Pods["default/sharer"]; len(rs) != 1 || rs[0].Count != 0 || !slices.Equal(rs[0].Nodes, []string{"node-1"}) || len(rs[0].InstanceTypes) != 0 {
		t.Errorf("the allocated claim's sharer: requests %+v, want only node-1, no devices counted again", rs)
	}
	for _, tc := range tests {
		t.Run(tc.pod, func(t *testing.T) {
			rs := v.Pods["default/"+tc.pod]
			if len(rs) != 1 {
				t.Fatalf("requests %+v, want one", rs)
			}
			r := rs[0]
			if (r.Unsupported != "") != tc.unsupported {
				t.Fatalf("unsupported %q, want %v", r.Unsupported, tc.unsupported)
			}
			if tc.unsupported {
				return
			}
			if r.Count != 2 || r.Driver != "gpu.nvidia.com" || r.Claim != "gpus" || r.DeviceClass != "nvidia" {
				t.Errorf("request %+v", r)
			}
			if !slices.Equal(r.InstanceTypes, tc.types) || !slices.Equal(r.Nodes, tc.nodes) {
				t.Errorf("types %v nodes %v, want %v %v", r.InstanceTypes, r.Nodes, tc.types, tc.nodes)
			}
		})
	}
}
