package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// withBuffers is in with the CapacityBuffers' virtual pods bound to the
// existing nodes the provisioner would place them on (one solve of the
// cluster as it is, real pending pods first). A node that holds a buffer's
// room is then not empty, and consolidating it must find the room again
// on the nodes that remain or on its replacements, as Karpenter keeps
// buffer capacity. Virtual pods the cluster has no room for are left out:
// they are the provisioner's to launch, not a candidate's to keep.
func withBuffers(in *Input) (*Input, error) {
	if !slices.ContainsFunc(in.Cluster.Pods, pods.IsVirtual) {
		return in, nil
	}
	solve := in.Options.Solve
	if solve == nil {
		solve = scheduling.Solve
	}
	plan, err := solve(in.Cluster, in.Options.Scheduling)
	if err != nil {
		return nil, fmt.Errorf("placing capacity buffers: %w", err)
	}
	placed := map[string][]*corev1.Pod{}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			if pods.IsVirtual(p) {
				placed[e.Node] = append(placed[e.Node], p)
			}
		}
	}
	out := *in
	snap := *in.Cluster
	snap.Pods = slices.DeleteFunc(slices.Clone(in.Cluster.Pods), pods.IsVirtual)
	snap.Nodes = slices.Clone(in.Cluster.Nodes)
	for i, n := range snap.Nodes {
		if vp := placed[n.Name]; len(vp) > 0 {
			c := *n
			c.Pods = slices.Concat(n.Pods, vp)
			snap.Nodes[i] = &c
		}
	}
	out.Cluster = &snap
	out.Nodes = slices.Clone(in.Nodes)
	for i := range out.Nodes {
		if vp := placed[out.Nodes[i].Name]; len(vp) > 0 {
			out.Nodes[i].Pods = slices.Concat(out.Nodes[i].Pods, vp)
		}
	}
	return &out, nil
}
