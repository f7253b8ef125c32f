package aws

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestIDBatcherMergesConcurrentCalls(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ids       []string
		maxItems  int
		wantCalls int
	}{
		{name: "one call for distinct ids", ids: []string{"i-1", "i-2", "i-3", "i-4"}, maxItems: 500, wantCalls: 1},
		{name: "a repeated id is asked once", ids: []string{"i-1", "i-1", "i-2"}, maxItems: 500, wantCalls: 1},
		{name: "a full batch closes at once", ids: []string{"i-1", "i-2", "i-3", "i-4"}, maxItems: 2, wantCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In a synctest bubble the idle timer only fires once every
			// caller is blocked, so a loaded machine cannot split the batch.
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var calls [][]string
				b := newIDBatcher("test", 200*time.Millisecond, 2*time.Second, tc.maxItems, func(_ context.Context, ids []string) (map[string]string, error) {
					mu.Lock()
					calls = append(calls, ids)
					mu.Unlock()
					out := map[string]string{}
					for _, id := range ids {
						if id != "i-4" { // i-4 does not exist
							out[id] = "state-of-" + id
						}
					}
					return out, nil
				})
				var wg sync.WaitGroup
				for _, id := range tc.ids {
					wg.Add(1)
					go func() {
						defer wg.Done()
						v, found, err := b.do(context.Background(), id)
						switch {
						case err != nil:
							t.Errorf("%s: %v", id, err)
						case id == "i-4" && found:
							t.Errorf("%s found, want not found", id)
						case id != "i-4" && v != "state-of-"+id:
							t.Errorf("%s = %q, want its own answer", id, v)
						}
					}()
				}
				wg.Wait()
				seen := 0
				for _, c := range calls {
					seen += len(c)
				}
				if len(calls) != tc.wantCalls {
					t.Errorf("calls = %v, want %d", calls, tc.wantCalls)
				}
				if distinct := len(unique(tc.ids)); seen != distinct {
					t.Errorf("calls asked about %d ids, want the %d distinct ones (%s)", seen, distinct, fmt.Sprint(calls))
				}
			})
		})
	}
}

func unique(ids []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}
