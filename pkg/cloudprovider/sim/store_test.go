package sim

import (
	"fmt"
	"os"
	"path/filepath"
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
