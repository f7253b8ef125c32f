package explain

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
)

// CapacityBufferVerdict is where a CapacityBuffer stands, from the status
// the capacitybuffer controller writes: the chunks it resolved to and its
// ReadyForProvisioning, Provisioning and LimitedByQuotas conditions.
type CapacityBufferVerdict struct {
	Summary string `json:"summary"`
	Buffer  string `json:"buffer"`
	// Source is what the chunk is made of: "PodTemplate NAME" or the
	// scalableRef's kind and name.
	Source string `json:"source"`
	// Replicas is status.replicas, the chunks joiner plans (nil while the
	// buffer is not resolved).
	Replicas             *int32           `json:"replicas,omitempty"`
	ReadyForProvisioning ConditionSummary `json:"readyForProvisioning"`
	Provisioning         ConditionSummary `json:"provisioning"`
	LimitedByQuotas      ConditionSummary `json:"limitedByQuotas"`
	// Room is where the buffer holds its room, as the controller published
	// it (its view); nil without one.
	Room *capacitybuffer.Room `json:"room,omitempty"`
}

// CapacityBuffer explains the buffer namespace/name.
func CapacityBuffer(s *Snapshot, namespace, name string) (*CapacityBufferVerdict, error) {
	var cb *autoscalingv1beta1.CapacityBuffer
	for _, b := range s.Buffers {
		if b.Namespace == namespace && b.Name == name {
			cb = b
		}
	}
	if cb == nil {
		return nil, fmt.Errorf("capacitybuffer %s/%s not found", namespace, name)
	}
	conds := cb.Status.Conditions
	v := &CapacityBufferVerdict{
		Buffer:               namespace + "/" + name,
		Replicas:             cb.Status.Replicas,
		ReadyForProvisioning: summarize(apimeta.FindStatusCondition(conds, autoscalingv1beta1.ConditionReadyForProvisioning)),
		Provisioning:         summarize(apimeta.FindStatusCondition(conds, autoscalingv1beta1.ConditionProvisioning)),
		LimitedByQuotas:      summarize(apimeta.FindStatusCondition(conds, autoscalingv1beta1.ConditionLimitedByQuotas)),
	}
	if s.View != nil {
		for _, r := range s.View.Buffers {
			if r.Buffer == v.Buffer {
				v.Room = &r
			}
		}
	}
	switch {
	case cb.Spec.PodTemplateRef != nil:
		v.Source = "PodTemplate " + cb.Spec.PodTemplateRef.Name
	case cb.Spec.ScalableRef != nil:
		v.Source = cb.Spec.ScalableRef.Kind + " " + cb.Spec.ScalableRef.Name
	}
	switch {
	case !v.ReadyForProvisioning.Found:
		v.Summary = "not resolved yet: no ReadyForProvisioning condition (is joiner running with --feature-gates=CapacityBuffer=true?)"
	case v.ReadyForProvisioning.Status != "True":
		v.Summary = fmt.Sprintf("not planned: %s (%s)", v.ReadyForProvisioning.Message, v.ReadyForProvisioning.Reason)
	case v.Provisioning.Status == "True":
		v.Summary = fmt.Sprintf("%d chunk(s) of room held on existing capacity", ptr.Deref(v.Replicas, 0))
	case v.Provisioning.Found:
		v.Summary = fmt.Sprintf("%d chunk(s) planned, room not all there: %s (%s)", ptr.Deref(v.Replicas, 0), v.Provisioning.Message, v.Provisioning.Reason)
	default:
		v.Summary = fmt.Sprintf("%d chunk(s) planned; no provisioning pass has reported yet", ptr.Deref(v.Replicas, 0))
	}
	return v, nil
}

func (p *printer) buffer(v *CapacityBufferVerdict) {
	p.line("", "CapacityBuffer %s: %s", v.Buffer, v.Summary)
	if v.Source != "" {
		p.line("  ", "chunk:    %s", v.Source)
	}
	if v.Replicas != nil {
		p.line("  ", "replicas: %d", *v.Replicas)
	}
	if v.Room != nil {
		p.line("  ", "room:     %s", v.Room.Summary())
	}
	for _, c := range []struct {
		name string
		c    ConditionSummary
	}{{"ReadyForProvisioning", v.ReadyForProvisioning}, {"Provisioning", v.Provisioning}, {"LimitedByQuotas", v.LimitedByQuotas}} {
		if c.c.Found {
			p.line("  ", "%s=%s %s: %s", c.name, c.c.Status, c.c.Reason, c.c.Message)
		}
	}
}
