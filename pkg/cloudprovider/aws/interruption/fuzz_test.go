package interruption

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary SQS bodies to Parse: it never panics, a
// rejected body gets an error saying what it is not, and an accepted one
// is a known kind naming well-formed instance ids (a message that asks for
// action always names at least one). Seeds: testdata/fuzz/FuzzParse and
// the bodies of TestParse.
func FuzzParse(f *testing.F) {
	for _, body := range []string{spotBody, rebalanceBody, crBody,
		strings.Replace(stateBody, "%s", "stopping", 1), strings.Replace(stateBody, "%s", "running", 1),
		strings.Replace(healthBody, "%s", "scheduledChange", 1), strings.Replace(healthBody, "%s", "issue", 1),
		`{}`, `[]`, `null`, `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":null}`,
	} {
		f.Add(body)
	}
	known := map[Kind]bool{KindSpotInterruption: true, KindRebalanceRecommendation: true, KindScheduledChange: true,
		KindInstanceStopped: true, KindInstanceTerminated: true, KindCapacityReservationInterupt: true, KindNoOp: true}
	f.Fuzz(func(t *testing.T, body string) {
		m, err := Parse(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !known[m.Kind] {
			t.Fatalf("unknown kind %q", m.Kind)
		}
		if m.Kind != KindNoOp && len(m.InstanceIDs) == 0 {
			t.Fatalf("kind %s names no instance", m.Kind)
		}
		seen := map[string]bool{}
		for _, id := range m.InstanceIDs {
			if !validInstanceID(id) {
				t.Fatalf("instance id %q is not an EC2 instance id", id)
			}
			if seen[id] {
				t.Fatalf("instance id %q listed twice", id)
			}
			seen[id] = true
		}
	})
}
