package chaos

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The observer's cloud checks fail when the promises break: a NodeClaim
// with two live instances, and the other cluster's instance terminated or
// retagged; for each cloud's tags and gone states.
func TestObserverSeesBrokenCloudPromises(t *testing.T) {
	self := Identity{Name: "c", ID: "uid-a"}
	other := Identity{Name: "c", ID: "uid-b"}
	for _, cloud := range []struct {
		name  string
		cloud func(insts map[string]CloudInstance) Cloud
		gone  string
	}{
		{name: "sim", gone: "terminated", cloud: func(insts map[string]CloudInstance) Cloud {
			store := filepath.Join(t.TempDir(), "instances.json")
			b, err := json.Marshal(map[string]any{"instances": insts})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(store, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return SimCloud(store)
		}},
		{name: "aws", gone: "shutting-down", cloud: func(insts map[string]CloudInstance) Cloud {
			c := EC2Cloud(aws.Config{Region: "us-east-1"})
			c.Instances = func(context.Context) (map[string]CloudInstance, error) { return insts, nil }
			return c
		}},
	} {
		probe := cloud.cloud(nil)
		tags := func(id Identity, claim string) map[string]string {
			return map[string]string{probe.ClusterTag: id.Name, probe.ClusterIDTag: id.ID, probe.NodeClaimTag: claim}
		}
		foreign := map[string]CloudInstance{"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b")}}
		tests := []struct {
			name  string
			after map[string]CloudInstance
			want  []string
		}{
			{name: "healthy", after: map[string]CloudInstance{
				"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a")},
				"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b")},
				"i-3": {ID: "i-3", State: cloud.gone, Tags: tags(self, "a")},
			}},
			{name: "duplicate launch", after: map[string]CloudInstance{
				"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a")},
				"i-2": {ID: "i-2", State: "running", Tags: tags(other, "b")},
				"i-4": {ID: "i-4", State: "pending", Tags: tags(self, "a")},
			}, want: []string{"two live instances for one NodeClaim (" + probe.NodeClaimTag + "=a): [i-1 i-4]"}},
			{name: "foreign terminated", after: map[string]CloudInstance{
				"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a")},
				"i-2": {ID: "i-2", State: cloud.gone, Tags: tags(other, "b")},
			}, want: []string{"instance i-2 of the other cluster (c/uid-b) was terminated"}},
			{name: "foreign retagged", after: map[string]CloudInstance{
				"i-1": {ID: "i-1", State: "running", Tags: tags(self, "a")},
				"i-2": {ID: "i-2", State: "running", Tags: tags(self, "b")},
			}, want: []string{"instance i-2 of the other cluster had its tags changed"}},
		}
		for _, tt := range tests {
			t.Run(cloud.name+"/"+tt.name, func(t *testing.T) {
				o := &Observer{opts: ObserverOptions{Cloud: cloud.cloud(tt.after), Cluster: self, Foreign: other}, seen: map[string]bool{}, foreign: foreign}
				o.sampleCloud(t.Context())
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
}
