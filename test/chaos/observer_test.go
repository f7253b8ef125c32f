package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The observer's cloud checks fail when the promises break: a NodeClaim
// with two live instances, and the other cluster's instance terminated or
// retagged.
func TestObserverSeesBrokenCloudPromises(t *testing.T) {
	self := Identity{Name: "c", ID: "uid-a"}
	other := Identity{Name: "c", ID: "uid-b"}
	tags := func(id Identity, claim, uid string) map[string]string {
		return map[string]string{tagCluster: id.Name, tagClusterID: id.ID, tagNodeClaim: claim, tagNodeClaimUID: uid}
	}
	write := func(path string, insts map[string]cloudInstance) {
		b, err := json.Marshal(map[string]any{"instances": insts})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		after map[string]cloudInstance
		want  []string
	}{
		{name: "healthy", after: map[string]cloudInstance{
			"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a", "u1")},
			"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b", "u2")},
			"i-3": {ID: "i-3", State: "terminated", Tags: tags(self, "a", "u1")},
		}},
		{name: "duplicate launch", after: map[string]cloudInstance{
			"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a", "u1")},
			"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b", "u2")},
			"i-4": {ID: "i-4", State: "pending", Tags: tags(self, "a", "u1")},
		}, want: []string{"two live instances for one NodeClaim (uid u1): [i-1 i-4]"}},
		{name: "foreign terminated", after: map[string]cloudInstance{
			"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a", "u1")},
			"i-2": {ID: "i-2", State: "terminated", Tags: tags(other, "b", "u2")},
		}, want: []string{"instance i-2 of the other cluster (c/uid-b) was terminated"}},
		{name: "foreign retagged", after: map[string]cloudInstance{
			"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a", "u1")},
			"i-2": {ID: "i-2", State: "running", Tags: tags(self, "b", "u2")},
		}, want: []string{"instance i-2 of the other cluster had its tags changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "instances.json")
			o := &Observer{opts: ObserverOptions{Store: store, Cluster: self, Foreign: other}, seen: map[string]bool{},
				foreign: map[string]cloudInstance{"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b", "u2")}}}
			write(store, tt.after)
			o.sampleCloud()
			got := o.Violations()
			if len(got) != len(tt.want) {
				t.Fatalf("violations %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("violation %q, want it to contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}
