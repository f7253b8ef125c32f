package v1

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestKubeletJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		wantTyped KubeletConfiguration
		wantExtra []string
	}{
		{
			name:      "typed only",
			in:        `{"maxPods":110,"clusterDNS":["10.0.0.10"]}`,
			wantTyped: KubeletConfiguration{MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.0.10"}},
		},
		{
			name: "typed and extra",
			in: `{"maxPods":110,"cpuManagerPolicy":"static","cpuCFSQuotaPeriod":"100ms","registryPullQPS":10,` +
				`"allowedUnsafeSysctls":["net.core.somaxconn"],"featureGates":{"InPlacePodVerticalScaling":true},"containerLogMaxSize":"50Mi"}`,
			wantTyped: KubeletConfiguration{MaxPods: ptr.To[int32](110)},
			wantExtra: []string{"allowedUnsafeSysctls", "containerLogMaxSize", "cpuCFSQuotaPeriod", "cpuManagerPolicy", "featureGates", "registryPullQPS"},
		},
		{
			name:      "field names match exactly",
			in:        `{"MaxPods":5}`,
			wantExtra: []string{"MaxPods"},
		},
		{
			name:      "large integers stay exact",
			in:        `{"containerLogMaxFiles":9007199254740993}`,
			wantExtra: []string{"containerLogMaxFiles"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k KubeletConfiguration
			if err := json.Unmarshal([]byte(tc.in), &k); err != nil {
				t.Fatal(err)
			}
			if got := k.ExtraFieldNames(); !reflect.DeepEqual(got, tc.wantExtra) && (len(got) != 0 || len(tc.wantExtra) != 0) {
				t.Errorf("Extra fields = %v, want %v", got, tc.wantExtra)
			}
			typed := k
			typed.Extra = nil
			if !reflect.DeepEqual(typed, tc.wantTyped) {
				t.Errorf("typed fields = %+v, want %+v", typed, tc.wantTyped)
			}
			out, err := json.Marshal(&k)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the object:\n in  %s\n out %s", tc.in, out)
			}
			if tc.name == "large integers stay exact" && string(out) != tc.in {
				t.Errorf("out %s, want %s verbatim", out, tc.in)
			}
		})
	}
}

func TestKubeletMarshalWithoutExtraIsTheDefaultEncoding(t *testing.T) {
	k := KubeletConfiguration{MaxPods: ptr.To[int32](110), SystemReserved: map[string]string{"cpu": "100m"}, CPUCFSQuota: ptr.To(true)}
	got, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(kubeletTyped(k))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("MarshalJSON = %s, want the default encoding %s", got, want)
	}
}

func TestKubeletMarshalTypedFieldWins(t *testing.T) {
	k := KubeletConfiguration{
		MaxPods: ptr.To[int32](110),
		Extra: map[string]apiextensionsv1.JSON{
			"maxPods":          {Raw: []byte(`5`)},
			"cpuManagerPolicy": {Raw: []byte(`"static"`)},
		},
	}
	got, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cpuManagerPolicy":"static","maxPods":110}`; string(got) != want {
		t.Fatalf("MarshalJSON = %s, want %s", got, want)
	}
}

func TestKubeletDeepCopyCopiesExtra(t *testing.T) {
	k := &KubeletConfiguration{Extra: map[string]apiextensionsv1.JSON{"cpuManagerPolicy": {Raw: []byte(`"static"`)}}}
	c := k.DeepCopy()
	c.Extra["cpuManagerPolicy"].Raw[1] = 'X'
	if string(k.Extra["cpuManagerPolicy"].Raw) != `"static"` {
		t.Fatalf("DeepCopy shares Extra's bytes: original now %s", k.Extra["cpuManagerPolicy"].Raw)
	}
}
