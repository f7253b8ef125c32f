package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

func TestStoreSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud", "instances.json")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	launched := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.Update(func(st *StoreState) error {
		st.Sequence++
		st.Instances["i-1"] = &Instance{ID: "i-1", Type: "m5.large", Zone: "us-east-1a", State: StateRunning,
			LaunchTime: launched, Tags: map[string]string{TagCluster: "a"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	reopened, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := reopened.View(func(st *StoreState) error {
		i := st.Instances["i-1"]
		switch {
		case i == nil:
			return fmt.Errorf("instance i-1 lost across reopen")
		case i.Type != "m5.large" || i.Tags[TagCluster] != "a" || !i.LaunchTime.Equal(launched) || st.Sequence != 1:
			return fmt.Errorf("instance changed across reopen: %+v (sequence %d)", i, st.Sequence)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestStoreFailedUpdateWritesNothing(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	boom := fmt.Errorf("boom")
	if err := s.Update(func(st *StoreState) error {
		st.Instances["i-1"] = &Instance{ID: "i-1"}
		return boom
	}); err != boom {
		t.Fatalf("Update returned %v, want %v", err, boom)
	}
	_ = s.View(func(st *StoreState) error {
		if len(st.Instances) != 0 {
			t.Errorf("failed update was written: %v", st.Instances)
		}
		return nil
	})
}

// Two Stores on one file stand for two processes: every increment must
// survive, which only holds if the flock serializes read-modify-write.
func TestStoreConcurrentStoresOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "instances.json")
	a, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	const perWorker = 50
	var wg sync.WaitGroup
	for w, s := range []*Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perWorker {
				err := s.Update(func(st *StoreState) error {
					st.Sequence++
					id := fmt.Sprintf("i-%d-%d", w, n)
					st.Instances[id] = &Instance{ID: id}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	_ = b.View(func(st *StoreState) error {
		if st.Sequence != 4*perWorker || len(st.Instances) != 4*perWorker {
			t.Errorf("lost updates: sequence %d, %d instances, want %d", st.Sequence, len(st.Instances), 4*perWorker)
		}
		return nil
	})
}

func TestStoreRejectsCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "instances.json")
	if err := writeFile(path, "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(path); err == nil {
		t.Fatal("OpenStore accepted a corrupt file")
	}
}

func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o644)
}

// Updates queued while another goroutine holds the store are committed
// together; one that fails returns its error to its caller alone, and
// whatever it changed before failing is not written with the others.
func TestStoreCommitsQueuedUpdatesTogether(t *testing.T) {
	tests := []struct {
		name string
		fail []bool // per queued Update
	}{
		{name: "all succeed", fail: []bool{false, false, false, false}},
		{name: "one fails among others", fail: []bool{false, true, false, false}},
		{name: "all fail", fail: []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "instances.json")
			s, err := OpenStore(path)
			if err != nil {
				t.Fatal(err)
			}
			boom := fmt.Errorf("boom")
			// Hold the store, as a commit in progress would, until every
			// Update is queued.
			s.mu.Lock()
			errs := make([]error, len(tt.fail))
			var wg sync.WaitGroup
			for i, fail := range tt.fail {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.Update(func(st *StoreState) error {
						id := fmt.Sprintf("i-%d", i)
						st.Instances[id] = &Instance{ID: id}
						st.Sequence++
						if fail {
							return boom
						}
						return nil
					})
				}()
			}
			for queued := 0; queued < len(tt.fail); {
				s.queueMu.Lock()
				queued = len(s.queue)
				s.queueMu.Unlock()
				time.Sleep(time.Millisecond)
			}
			s.mu.Unlock()
			wg.Wait()

			want := 0
			for i, fail := range tt.fail {
				if fail != (errs[i] == boom) || (!fail && errs[i] != nil) {
					t.Errorf("update %d (fails: %v) returned %v", i, fail, errs[i])
				}
				if !fail {
					want++
				}
			}
			// A fresh Store reads the file, not a cache.
			fresh, err := OpenStore(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range []*Store{s, fresh} {
				_ = st.View(func(st *StoreState) error {
					if int(st.Sequence) != want || len(st.Instances) != want {
						t.Errorf("sequence %d, %d instances, want %d (the successful updates only)", st.Sequence, len(st.Instances), want)
					}
					for i, fail := range tt.fail {
						if _, ok := st.Instances[fmt.Sprintf("i-%d", i)]; ok == fail {
							t.Errorf("instance of update %d (fails: %v) present: %v", i, fail, ok)
						}
					}
					return nil
				})
			}
		})
	}
}

// TestStoreWriteDoesNotCopyTheWholeState: a write encodes the state into
// the file without a buffer the size of the whole store (json.Marshal's
// result was one per write, megabytes per launch at a thousand
// instances): it allocates no more than encoding the state anywhere does
// (sorted map keys, times), plus less than half the store's size. The GC
// is off and one P runs, so encoding's pooled buffer is neither dropped nor
// left in another P's pool between writes.
func TestStoreWriteDoesNotCopyTheWholeState(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	path := filepath.Join(t.TempDir(), "instances.json")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	grow := func(n int) {
		t.Helper()
		if err := s.Update(func(st *StoreState) error {
			for range n {
				st.Sequence++
				id := fmt.Sprintf("i-%d", st.Sequence)
				st.Instances[id] = &Instance{ID: id, Type: "m5.large", Zone: "us-east-1a", State: StateRunning,
					Tags: map[string]string{TagCluster: "a", TagNodeClaim: "nodeclaim-" + id}}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// allocated is what fn allocates per call, over a few calls.
	allocated := func(fn func()) uint64 {
		const calls = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range calls {
			fn()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / calls
	}
	// A thousand instances, then a few writes so encoding's pooled buffer
	// has grown to the store's size before anything is measured.
	grow(1000)
	grow(1)
	grow(1)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	encoding := allocated(func() {
		if err := s.View(func(st *StoreState) error { return json.NewEncoder(io.Discard).Encode(st) }); err != nil {
			t.Fatal(err)
		}
	})
	if write := allocated(func() { grow(1) }); write > encoding+uint64(fi.Size())/2 {
		t.Errorf("a write of a %d-byte store allocated %d bytes; encoding it allocates %d", fi.Size(), write, encoding)
	}
}
