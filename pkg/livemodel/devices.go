package livemodel

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/dra"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=deviceclasses;resourceclaims;resourceclaimtemplates;resourceslices,verbs=get;list;watch

// devices builds the snapshot's Dynamic Resource Allocation view from
// the cache's DeviceClasses, ResourceClaims, their templates and the
// ResourceSlices. A NodeClaim whose Node publishes no slice yet is taken
// to publish what its instance-type options do (the type on its Node's
// label once registered), as its capacity is sized from them.
func (b *Builder) devices(ctx context.Context, snap *scheduling.Snapshot, nodes []*state.StateNode, allTypes map[string][]*scheduling.InstanceType) (*scheduling.Devices, error) {
	var (
		classes   resourcev1.DeviceClassList
		claims    resourcev1.ResourceClaimList
		templates resourcev1.ResourceClaimTemplateList
		slices    resourcev1.ResourceSliceList
	)
	for _, l := range []struct {
		what string
		obj  client.ObjectList
	}{{"deviceclasses", &classes}, {"resourceclaims", &claims}, {"resourceclaimtemplates", &templates}, {"resourceslices", &slices}} {
		if err := b.opts.Client.List(ctx, l.obj); err != nil {
			if meta.IsNoMatchError(err) {
				return nil, fmt.Errorf("listing %s: IGNORE_DRA_REQUESTS=false needs the resource.k8s.io/v1 API (Kubernetes 1.34 or later); upgrade the cluster or set it to true: %w", l.what, err)
			}
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	launching := map[string][]*scheduling.InstanceType{}
	for _, sn := range nodes {
		if sn.NodeClaim == nil {
			continue
		}
		its := optionsOf(sn.NodeClaim, allTypes[sn.NodePool()])
		if sn.Node != nil {
			its = slicesOfType(its, sn.Node.Labels[corev1.LabelInstanceTypeStable])
		}
		launching[sn.Name()] = its
	}
	return dra.View(ctx, snap, dra.Objects{DeviceClasses: classes.Items, Claims: claims.Items, Templates: templates.Items, Slices: slices.Items}, launching), nil
}

// slicesOfType keeps the types named name.
func slicesOfType(its []*scheduling.InstanceType, name string) []*scheduling.InstanceType {
	return slices.DeleteFunc(slices.Clone(its), func(it *scheduling.InstanceType) bool { return it.Name != name })
}
