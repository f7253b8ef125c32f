package sim

import "testing"

func TestIdentityOwnership(t *testing.T) {
	inst := func(tags map[string]string) *Instance { return &Instance{ID: "i-1", Tags: tags} }
	tests := []struct {
		name         string
		self         identity
		inst         *Instance
		wantOwns     bool
		wantNamesake bool
	}{
		{name: "name only, same name", self: identity{name: "c"}, inst: inst(map[string]string{TagCluster: "c"}), wantOwns: true},
		{name: "name only, other name", self: identity{name: "c"}, inst: inst(map[string]string{TagCluster: "d"})},
		{name: "name only ignores ids", self: identity{name: "c"}, inst: inst(map[string]string{TagCluster: "c", TagClusterID: "x"}), wantOwns: true},
		{name: "name and id match", self: identity{name: "c", id: "u1"}, inst: inst(map[string]string{TagCluster: "c", TagClusterID: "u1"}), wantOwns: true},
		{name: "same name, other cluster id", self: identity{name: "c", id: "u1"}, inst: inst(map[string]string{TagCluster: "c", TagClusterID: "u2"}), wantNamesake: true},
		{name: "same name, no id: not provably ours", self: identity{name: "c", id: "u1"}, inst: inst(map[string]string{TagCluster: "c"})},
		{name: "other name, other id", self: identity{name: "c", id: "u1"}, inst: inst(map[string]string{TagCluster: "d", TagClusterID: "u2"})},
		{name: "untagged", self: identity{name: "c", id: "u1"}, inst: inst(nil)},
		{name: "nil instance", self: identity{name: "c"}, inst: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.self.owns(tt.inst); got != tt.wantOwns {
				t.Errorf("owns = %v, want %v", got, tt.wantOwns)
			}
			if got := tt.self.namesake(tt.inst); got != tt.wantNamesake {
				t.Errorf("namesake = %v, want %v", got, tt.wantNamesake)
			}
		})
	}
}

func TestIdentityTagsRoundTrip(t *testing.T) {
	for _, self := range []identity{{name: "c"}, {name: "c", id: "u1"}} {
		tags := map[string]string{}
		self.tag(tags)
		if !self.owns(&Instance{Tags: tags}) {
			t.Errorf("%+v does not own an instance it tagged: %v", self, tags)
		}
	}
}
