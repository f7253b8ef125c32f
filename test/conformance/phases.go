package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Phase is one performance report of upstream's performance suite: a
// scale-out, consolidation or drift phase of a spec, as the suite writes
// it to OUTPUT_DIR (<prefix>_performance_report.json). A phase that timed
// out writes none; the spec's failure message says how far it got.
type Phase struct {
	Name      string        `json:"test_name"`
	Type      string        `json:"test_type"`
	Pods      int           `json:"total_pods"`
	Nodes     int           `json:"total_nodes"`
	Time      time.Duration `json:"total_time"`
	CPUUtil   float64       `json:"total_reserved_cpu_utilization"`
	MemUtil   float64       `json:"total_reserved_memory_utilization"`
	Rounds    int           `json:"rounds"`
	Timestamp time.Time     `json:"timestamp"`
	// Joiner is what joiner's process spent during the phase (the window
	// ending at Timestamp, Time long), which upstream bounds for Karpenter.
	Joiner Usage `json:"-"`
}

// readPhases reads the performance reports in dir, oldest first.
func readPhases(dir string) ([]Phase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_performance_report.json"))
	if err != nil {
		return nil, fmt.Errorf("listing performance reports: %w", err)
	}
	var out []Phase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading performance report: %w", err)
		}
		var p Phase
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("parsing performance report %s: %w", f, err)
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out, nil
}
