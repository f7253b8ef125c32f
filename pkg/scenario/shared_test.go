package scenario

import (
	"os"
	"path/filepath"
)

// sharedScenario is the path of one of the shared scenario files; the
// directory can be moved with JOINER_SCENARIOS.
func sharedScenario(name string) string {
	dir := os.Getenv("JOINER_SCENARIOS")
	if dir == "" {
		dir = "/work/shared/scenarios"
	}
	return filepath.Join(dir, name+".json")
}
