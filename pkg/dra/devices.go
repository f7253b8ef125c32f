package dra

import (
	"fmt"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// GPU drivers by GPU manufacturer (the karpenter.k8s.aws/instance-gpu-manufacturer
// label): the names the vendors' DRA drivers publish their devices under.
var gpuDrivers = map[string]string{
	"nvidia": "gpu.nvidia.com",
	"amd":    "gpu.amd.com",
}

// Published is what one node publishes for one driver: the devices of one
// resource pool.
type Published struct {
	Driver  string
	Devices []resourcev1.Device
}

// NodeDevices are the devices a node with these labels publishes: its
// GPUs, named gpu-0 … gpu-N-1 under the manufacturer's DRA driver, with the
// attributes such drivers publish (type, productName, index) and their
// memory as capacity. A node without GPU labels, or with a GPU maker no
// driver is known for, publishes nothing. This is the one definition of an
// instance type's devices: the solver's view of a new node and the
// simulated cloud's ResourceSlices both come from it.
func NodeDevices(labels map[string]string) []Published {
	maker := labels[v1.LabelAWSInstanceGPUManufacturer]
	driver, ok := gpuDrivers[maker]
	if !ok {
		return nil
	}
	count, err := strconv.Atoi(labels[v1.LabelAWSInstanceGPUCount])
	if err != nil || count <= 0 {
		return nil
	}
	name := labels[v1.LabelAWSInstanceGPUName]
	product := strings.ToUpper(maker) + " " + strings.ToUpper(name)
	capacity := map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{}
	if mib, err := strconv.ParseInt(labels[v1.LabelAWSInstanceGPUMemory], 10, 64); err == nil && mib > 0 {
		capacity["memory"] = resourcev1.DeviceCapacity{Value: *resource.NewQuantity(mib<<20, resource.BinarySI)}
	}
	devs := make([]resourcev1.Device, count)
	for i := range devs {
		devs[i] = resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type":        {StringValue: ptr.To("gpu")},
				"productName": {StringValue: ptr.To(product)},
				"index":       {IntValue: ptr.To(int64(i))},
			},
			Capacity: capacity,
		}
	}
	return []Published{{Driver: driver, Devices: devs}}
}

// InstanceTypeDevices are the devices a node of it publishes: NodeDevices
// of the labels its requirements fix to one value.
func InstanceTypeDevices(it *scheduling.InstanceType) []Published {
	labels := map[string]string{}
	for k, vs := range it.Requirements {
		if len(vs) == 1 {
			labels[k] = vs[0]
		}
	}
	return NodeDevices(labels)
}
