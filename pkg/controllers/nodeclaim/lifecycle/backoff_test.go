package lifecycle

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestRecordSuccessReadsTheAPIServerOnlyToChangeTheRecord: a success that
// changes nothing on a healthy NodePool costs no read from the API server
// (one per initialised node in a scale-up otherwise); one that ends a
// back-off reads the NodePool fresh and writes.
func TestRecordSuccessReadsTheAPIServerOnlyToChangeTheRecord(t *testing.T) {
	healthy := launchhealth.Record{}
	for range launchhealth.Outcomes {
		healthy.Succeeded("default", "m5.large")
	}
	backedOff := healthy
	backedOff.Backoffs = []launchhealth.Backoff{{Scope: launchhealth.Scope{NodeClass: "default"}}}
	for _, tc := range []struct {
		name     string
		record   launchhealth.Record
		apiReads int
	}{
		{name: "healthy", record: healthy, apiReads: 0},
		{name: "backed off", record: backedOff, apiReads: 1},
		{name: "no record yet", record: launchhealth.Record{}, apiReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			launchhealth.Set(np, tc.record)
			u := newUnit(t, np)
			reader := &countingReader{Reader: u.kube}
			u.ctrl.opts.APIReader = reader

			nc := testNodeClaim("ok")
			nc.Labels[v1.LabelInstanceType] = "m5.large"
			u.ctrl.recordSuccess(u.ctx, nc)

			if reader.gets != tc.apiReads {
				t.Errorf("%d reads from the API server, want %d", reader.gets, tc.apiReads)
			}
			got := &v1.NodePool{}
			if err := u.kube.Get(u.ctx, client.ObjectKey{Name: "default"}, got); err != nil {
				t.Fatal(err)
			}
			r, err := launchhealth.Get(got)
			if err != nil || len(r.Backoffs) != 0 || !r.Outcomes[len(r.Outcomes)-1] {
				t.Errorf("record %+v (%v), want the success recorded and no back-off", r, err)
			}
		})
	}
}
