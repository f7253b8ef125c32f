package termination

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// An instance that is not this cluster's is never terminated, and
// termination does not pass it off silently as gone: it finishes with a
// FailedTermination event telling the user the instance keeps running.
func TestTerminateInstance(t *testing.T) {
	const pid = "fake:///a/i-1"
	tests := []struct {
		name      string
		deleteErr error
		wantGone  bool
		wantEvent bool
	}{
		{name: "deleted, still terminating", wantGone: false},
		{name: "gone", deleteErr: cloudprovider.NewNodeClaimNotFoundError(errors.New("instance i-1 not found")), wantGone: true},
		{name: "not owned", deleteErr: cloudprovider.NewNodeClaimNotOwnedError(errors.New("instance i-1 lacks this cluster's identity tags")), wantGone: true, wantEvent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud := fake.New()
			nc := test.NodeClaim(test.NodeClaimOptions{Name: "nc", ProviderID: pid})
			cloud.Instances = map[string]*v1.NodeClaim{pid: nc.DeepCopy()}
			cloud.NextDeleteError = tt.deleteErr
			rec := &events.Buffer{}
			gone, err := TerminateInstance(context.Background(), cloud, rec, nc, nc)
			if err != nil || gone != tt.wantGone {
				t.Fatalf("TerminateInstance = %v, %v; want %v, nil", gone, err, tt.wantGone)
			}
			evts := rec.Events()
			if !tt.wantEvent {
				if len(evts) != 0 {
					t.Errorf("events = %v, want none", rec.Reasons())
				}
				return
			}
			if len(evts) != 1 || evts[0].Reason != events.FailedTermination {
				t.Fatalf("events = %v, want one %s", rec.Reasons(), events.FailedTermination)
			}
			for _, want := range []string{pid, "not this cluster's", "delete it by hand"} {
				if !strings.Contains(evts[0].Message, want) {
					t.Errorf("event message %q does not mention %q", evts[0].Message, want)
				}
			}
		})
	}
}
