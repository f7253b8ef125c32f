package simulate

import (
	"bufio"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Buffer is a CapacityBuffer's room in the plan, as the capacitybuffer
// controller would report it.
type Buffer struct {
	// Buffer is namespace/name.
	Buffer string `json:"buffer"`
	// Chunks is how many chunks it resolved to (its status.replicas).
	Chunks int32 `json:"chunks"`
	// LimitedByQuotas names the ResourceQuotas that cut Chunks.
	LimitedByQuotas string `json:"limitedByQuotas,omitempty"`
	// NotReady is why nothing is planned for it (its ReadyForProvisioning
	// reason and message), "" when it resolved.
	NotReady string `json:"notReady,omitempty"`
	// Provisioning is the Provisioning condition the plan gives it:
	// "True" or "False", the reason and the message.
	Provisioning        string `json:"provisioning,omitempty"`
	ProvisioningReason  string `json:"provisioningReason,omitempty"`
	ProvisioningMessage string `json:"provisioningMessage,omitempty"`
	// OnExistingNodes, OnNewNodes and Unschedulable count its chunks.
	OnExistingNodes int `json:"onExistingNodes"`
	OnNewNodes      int `json:"onNewNodes"`
	Unschedulable   int `json:"unschedulable"`
	// Nodes are where its room is: existing nodes by name, new nodes as
	// "new #i" (their index in nodes, from 1).
	Nodes []string `json:"nodes,omitempty"`
}

// buffers reports every resolved buffer: its count, and where the plan
// put its virtual pods (capacitybuffer.Outcomes, as the provisioner counts
// them).
func buffers(resolved []capacitybuffer.Resolution, snap *scheduling.Snapshot, plan *scheduling.Plan) []Buffer {
	if len(resolved) == 0 {
		return nil
	}
	outcomes := capacitybuffer.Outcomes(snap, plan, nil, describe)
	out := make([]Buffer, 0, len(resolved))
	for _, res := range resolved {
		b := Buffer{Buffer: res.Buffer.String(), Chunks: res.Count.Chunks, LimitedByQuotas: res.Count.Quota}
		switch o := outcomes[res.Buffer]; {
		case res.NotReady != "":
			b.NotReady = res.NotReady + ": " + res.Message
		case o != nil:
			b.OnExistingNodes, b.OnNewNodes, b.Unschedulable = o.Existing, o.New, o.Failed
			status, reason, msg := o.Condition()
			b.Provisioning, b.ProvisioningReason, b.ProvisioningMessage = string(status), reason, msg
			for _, p := range o.Places {
				if p.New {
					b.Nodes = append(b.Nodes, "new #"+strconv.Itoa(p.Index))
				} else {
					b.Nodes = append(b.Nodes, p.Node)
				}
			}
		}
		out = append(out, b)
	}
	return out
}

// describe words why a virtual pod fits nowhere: each NodePool's reason,
// in name order, then the existing nodes'.
func describe(pe scheduling.PodError) string {
	var parts []string
	for _, pool := range slices.Sorted(maps.Keys(pe.NodePools)) {
		parts = append(parts, "NodePool "+pool+": "+scheduling.Message(pe.NodePools[pool]))
	}
	if pe.Existing != nil {
		parts = append(parts, "existing nodes: "+scheduling.Message(pe.Existing))
	}
	if len(parts) == 0 {
		return "no NodePool could be tried"
	}
	return strings.Join(parts, "; ")
}

// virtual counts the buffers' virtual pods among pods.
func virtual(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if _, ok := capacitybuffer.BufferOf(p); ok {
			n++
		}
	}
	return n
}

func (r *Report) writeBuffers(w *bufio.Writer) {
	if len(r.Buffers) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCapacityBuffers: %s\n", plural(len(r.Buffers), "buffer"))
	for _, b := range r.Buffers {
		switch {
		case b.NotReady != "":
			fmt.Fprintf(w, "  %s  not ready, nothing planned: %s\n", b.Buffer, b.NotReady)
			continue
		case b.Chunks == 0:
			fmt.Fprintf(w, "  %s  0 chunks: nothing planned\n", b.Buffer)
		default:
			fmt.Fprintf(w, "  %s  %s: %d on existing nodes, %d on new nodes, %d unschedulable",
				b.Buffer, plural(int(b.Chunks), "chunk"), b.OnExistingNodes, b.OnNewNodes, b.Unschedulable)
			if len(b.Nodes) > 0 {
				fmt.Fprintf(w, "; room on %s", listPods(b.Nodes, 0))
			}
			fmt.Fprintf(w, "\n    Provisioning=%s %s: %s\n", b.Provisioning, b.ProvisioningReason, b.ProvisioningMessage)
		}
		if b.LimitedByQuotas != "" {
			fmt.Fprintf(w, "    LimitedByQuotas: %s\n", b.LimitedByQuotas)
		}
	}
}
