package lifecycle

import (
	"maps"
	"testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestHydrateLabels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		own   map[string]string
		cloud map[string]string
		want  map[string]string
	}{
		{
			name:  "the cloud's labels fill keys the NodeClaim lacks",
			own:   map[string]string{v1.LabelNodePool: "default"},
			cloud: map[string]string{v1.LabelInstanceType: "m5.large", "example.com/cloud": "x"},
			want:  map[string]string{v1.LabelNodePool: "default", v1.LabelInstanceType: "m5.large", "example.com/cloud": "x"},
		},
		{
			name:  "the NodeClaim's own label wins over the cloud's",
			own:   map[string]string{"team": "web", v1.LabelNodePool: "default"},
			cloud: map[string]string{"team": "cloud-default", v1.LabelNodePool: "other"},
			want:  map[string]string{"team": "web", v1.LabelNodePool: "default"},
		},
		{
			name: "well-known machine labels come from the cloud",
			own: map[string]string{
				v1.LabelInstanceType: "m5.xlarge", v1.LabelTopologyZone: "zone-b", v1.LabelCapacityType: v1.CapacityTypeOnDemand,
				v1.LabelArch: "arm64", v1.LabelOS: "windows", v1.LabelTopologyRegion: "region-2",
			},
			cloud: map[string]string{
				v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "zone-a", v1.LabelCapacityType: v1.CapacityTypeSpot,
				v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelTopologyRegion: "region-1",
			},
			want: map[string]string{
				v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "zone-a", v1.LabelCapacityType: v1.CapacityTypeSpot,
				v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelTopologyRegion: "region-1",
			},
		},
		{
			name:  "a NodeClaim without labels takes the cloud's",
			cloud: map[string]string{v1.LabelArch: "amd64"},
			want:  map[string]string{v1.LabelArch: "amd64"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := testNodeClaim("hydrate")
			nc.Labels = maps.Clone(tc.own)
			created := testNodeClaim("hydrate")
			created.Labels = tc.cloud
			hydrate(nc, created)
			if !maps.Equal(nc.Labels, tc.want) {
				t.Errorf("labels = %v, want %v", nc.Labels, tc.want)
			}
		})
	}
}
