package plantedbug

import (
	"strings"
	"testing"
)

// A build without the chaosbugs tag plants nothing, whatever the
// environment says.
func TestNothingPlantedWithoutTheBuildTag(t *testing.T) {
	all := []Bug{GCNamesake, DrainIgnoresPDB, LaunchWithoutToken, DeleteBeforeReplacement}
	var names []string
	for _, b := range all {
		names = append(names, string(b))
	}
	t.Setenv(EnvVar, strings.Join(names, ","))
	for _, b := range all {
		if Active(b) {
			t.Errorf("%s is active in a build without -tags chaosbugs", b)
		}
	}
}
