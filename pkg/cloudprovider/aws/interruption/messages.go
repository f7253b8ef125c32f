package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what a message says happened, named like Karpenter's message
// kinds (the message_type metric label).
type Kind string

// Message kinds.
const (
	KindSpotInterruption            Kind = "spot_interrupted"
	KindRebalanceRecommendation     Kind = "rebalance_recommendation"
	KindScheduledChange             Kind = "scheduled_change"
	KindInstanceStopped             Kind = "instance_stopped"
	KindInstanceTerminated          Kind = "instance_terminated"
	KindCapacityReservationInterupt Kind = "capacity_reservation_interrupted"
	// KindNoOp is a well-formed message that asks for nothing (an instance
	// entering pending or running, a Health event of another category).
	KindNoOp Kind = "no_op"
)

// Message is one parsed EventBridge event.
type Message struct {
	Kind Kind
	// InstanceIDs are the instances the event is about.
	InstanceIDs []string
	// State is the new instance state of a state-change notification.
	State string
	// CapacityReservationID names the reservation of a capacity
	// reservation interruption, when the event carries it.
	CapacityReservationID string
	// Time is when EventBridge received the event.
	Time time.Time
}

// event is the EventBridge envelope.
type event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID            string   `json:"instance-id"`
	InstanceIDs           []string `json:"instance-ids"`
	State                 string   `json:"state"`
	CapacityReservationID string   `json:"capacity-reservation-id"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse parses an SQS message body. An error means the message can never
// be handled and should be deleted.
func Parse(body string) (Message, error) {
	var e event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Message{}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if e.Source == "" || e.DetailType == "" {
		return Message{}, errors.New("not an EventBridge event: no source or detail-type")
	}
	m := Message{Time: e.Time}
	switch e.Source {
	case "aws.ec2":
		var d ec2Detail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return Message{}, fmt.Errorf("%s %q: detail: %w", e.Source, e.DetailType, err)
		}
		m.InstanceIDs = instanceIDs(d, e.Resources)
		switch e.DetailType {
		case "EC2 Spot Instance Interruption Warning":
			m.Kind = KindSpotInterruption
		case "EC2 Instance Rebalance Recommendation":
			m.Kind = KindRebalanceRecommendation
		case "EC2 Instance State-change Notification":
			m.State = d.State
			switch d.State {
			case "stopping", "stopped":
				m.Kind = KindInstanceStopped
			case "shutting-down", "terminated":
				m.Kind = KindInstanceTerminated
			default:
				m.Kind = KindNoOp
			}
		case "EC2 Capacity Reservation Instance Interruption Warning":
			m.Kind = KindCapacityReservationInterupt
			m.CapacityReservationID = d.CapacityReservationID
		default:
			return Message{}, fmt.Errorf("unknown aws.ec2 event %q", e.DetailType)
		}
	case "aws.health":
		if e.DetailType != "AWS Health Event" {
			return Message{}, fmt.Errorf("unknown aws.health event %q", e.DetailType)
		}
		var d healthDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return Message{}, fmt.Errorf("%s %q: detail: %w", e.Source, e.DetailType, err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			m.Kind = KindNoOp
			return m, nil
		}
		m.Kind = KindScheduledChange
		for _, a := range d.AffectedEntities {
			if validInstanceID(a.EntityValue) {
				m.InstanceIDs = append(m.InstanceIDs, a.EntityValue)
			}
		}
	default:
		return Message{}, fmt.Errorf("unknown event source %q", e.Source)
	}
	if m.Kind != KindNoOp && len(m.InstanceIDs) == 0 {
		return Message{}, fmt.Errorf("%s %q names no instance", e.Source, e.DetailType)
	}
	return m, nil
}

// instanceIDs collects the instance ids of an EC2 event: the detail's, or
// the instance ARNs among its resources.
func instanceIDs(d ec2Detail, resources []string) []string {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if validInstanceID(id) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	add(d.InstanceID)
	for _, id := range d.InstanceIDs {
		add(id)
	}
	for _, r := range resources {
		if _, id, ok := strings.Cut(r, ":instance/"); ok {
			add(id)
		}
	}
	return ids
}

// validInstanceID reports whether id looks like an EC2 instance id: "i-"
// and lower-case letters or digits. Anything else in an event (a bare
// "i-", an ARN fragment with a path, stray whitespace) names no instance
// joiner could have launched.
func validInstanceID(id string) bool {
	rest, ok := strings.CutPrefix(id, "i-")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
