package interruption

import (
	"reflect"
	"strings"
	"testing"
)

// Message bodies in the shapes EventBridge forwards to SQS.
const (
	spotBody      = `{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0abc"],"detail":{"instance-id":"i-0abc","instance-action":"terminate"}}`
	rebalanceBody = `{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0abc"],"detail":{"instance-id":"i-0abc"}}`
	stateBody     = `{"version":"0","id":"3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"detail":{"instance-id":"i-0abc","state":"%s"}}`
	healthBody    = `{"version":"0","id":"4","detail-type":"AWS Health Event","source":"aws.health","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["i-0abc"],"detail":{"service":"EC2","eventTypeCategory":"%s","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[{"entityValue":"i-0abc"},{"entityValue":"i-0def"}]}}`
	crBody        = `{"version":"0","id":"5","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"detail":{"capacity-reservation-id":"cr-0123","instance-id":"i-0abc"}}`
)

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		kind    Kind
		ids     []string
		wantErr string
	}{
		{name: "spot interruption", body: spotBody, kind: KindSpotInterruption, ids: []string{"i-0abc"}},
		{name: "rebalance", body: rebalanceBody, kind: KindRebalanceRecommendation, ids: []string{"i-0abc"}},
		{name: "stopping", body: strings.Replace(stateBody, "%s", "stopping", 1), kind: KindInstanceStopped, ids: []string{"i-0abc"}},
		{name: "stopped", body: strings.Replace(stateBody, "%s", "stopped", 1), kind: KindInstanceStopped, ids: []string{"i-0abc"}},
		{name: "shutting-down", body: strings.Replace(stateBody, "%s", "shutting-down", 1), kind: KindInstanceTerminated, ids: []string{"i-0abc"}},
		{name: "terminated", body: strings.Replace(stateBody, "%s", "terminated", 1), kind: KindInstanceTerminated, ids: []string{"i-0abc"}},
		{name: "running is no action", body: strings.Replace(stateBody, "%s", "running", 1), kind: KindNoOp, ids: []string{"i-0abc"}},
		{name: "scheduled change", body: strings.Replace(healthBody, "%s", "scheduledChange", 1), kind: KindScheduledChange, ids: []string{"i-0abc", "i-0def"}},
		{name: "health issue is no action", body: strings.Replace(healthBody, "%s", "issue", 1), kind: KindNoOp},
		{name: "capacity reservation", body: crBody, kind: KindCapacityReservationInterupt, ids: []string{"i-0abc"}},
		{name: "not json", body: "hello", wantErr: "not an EventBridge event"},
		{name: "no source", body: `{"detail":{}}`, wantErr: "no source"},
		{name: "unknown detail type", body: `{"source":"aws.ec2","detail-type":"EC2 AMI State Change","detail":{}}`, wantErr: "unknown aws.ec2 event"},
		{name: "unknown source", body: `{"source":"aws.s3","detail-type":"Object Created","detail":{}}`, wantErr: "unknown event source"},
		{name: "no instance", body: `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`, wantErr: "names no instance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.body)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m.Kind != tc.kind || !reflect.DeepEqual(m.InstanceIDs, tc.ids) {
				t.Errorf("Parse = %s %v, want %s %v", m.Kind, m.InstanceIDs, tc.kind, tc.ids)
			}
		})
	}
}
