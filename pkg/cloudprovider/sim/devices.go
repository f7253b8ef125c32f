package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/dra"
)

// The simulated machines run a device driver as well as a kubelet: once a
// machine's Node registers, its driver publishes the machine's devices
// (dra.NodeDevices: the GPUs its instance type has) in ResourceSlices, one
// per driver, a pool named after the Node, owned by the Node, as a DRA
// driver's kubelet plugin does. kube-scheduler's DRA plugin allocates
// claims from them. A machine whose fault hides its extended resources
// publishes no devices either: its driver never came up.
//
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=create;delete

// deviceSlices are the ResourceSlices node's driver publishes.
func deviceSlices(node *corev1.Node) []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, p := range dra.NodeDevices(node.Labels) {
		out = append(out, &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: sliceName(node.Name, p.Driver),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
					Controller: ptr.To(true)}},
			},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   p.Driver,
				Pool:     resourcev1.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
				NodeName: ptr.To(node.Name),
				Devices:  p.Devices,
			},
		})
	}
	return out
}

func sliceName(node, driver string) string { return node + "-" + driver }

// publishDevices creates node's ResourceSlices (those already there are
// left alone: the driver published them on an earlier pass).
func (m *Machines) publishDevices(ctx context.Context, node *corev1.Node) error {
	for _, s := range deviceSlices(node) {
		if err := m.opts.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("publishing devices of node %s: %w", node.Name, err)
		}
	}
	return nil
}

// withdrawDevices deletes the ResourceSlices of a node that is going away
// (the garbage collector would, through their owner, if it runs).
func (m *Machines) withdrawDevices(ctx context.Context, node *corev1.Node) error {
	for _, s := range deviceSlices(node) {
		if err := m.opts.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("withdrawing devices of node %s: %w", node.Name, err)
		}
	}
	return nil
}
