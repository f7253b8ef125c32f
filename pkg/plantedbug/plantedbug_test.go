package plantedbug

import "testing"

// A build without the chaosbugs tag plants nothing, whatever the
// environment says.
func TestNothingPlantedWithoutTheBuildTag(t *testing.T) {
	t.Setenv(EnvVar, string(GCNamesake)+","+string(DrainIgnoresPDB)+","+string(LaunchWithoutToken))
	for _, b := range []Bug{GCNamesake, DrainIgnoresPDB, LaunchWithoutToken} {
		if Active(b) {
			t.Errorf("%s is active in a build without -tags chaosbugs", b)
		}
	}
}
