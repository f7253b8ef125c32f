package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestNillableDurationRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		never bool
		want  time.Duration
	}{
		{name: "hours kept as written", in: `"720h"`, want: 720 * time.Hour},
		{name: "compound kept as written", in: `"1h30m"`, want: 90 * time.Minute},
		{name: "zero seconds", in: `"0s"`, want: 0},
		{name: "never", in: `"Never"`, never: true},
		{name: "unnormalised", in: `"90m"`, want: 90 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d NillableDuration
			if err := json.Unmarshal([]byte(tc.in), &d); err != nil {
				t.Fatal(err)
			}
			if d.IsNever() != tc.never {
				t.Fatalf("IsNever() = %v, want %v", d.IsNever(), tc.never)
			}
			if !tc.never && *d.Duration != tc.want {
				t.Fatalf("Duration = %v, want %v", *d.Duration, tc.want)
			}
			out, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.in {
				t.Fatalf("marshalled %s, want %s as written", out, tc.in)
			}
			u := runtime.DefaultUnstructuredConverter
			m, err := u.ToUnstructured(&struct {
				D NillableDuration `json:"d"`
			}{d})
			if err != nil {
				t.Fatal(err)
			}
			if got := `"` + m["d"].(string) + `"`; got != tc.in {
				t.Fatalf("unstructured %s, want %s", got, tc.in)
			}
		})
	}
}

func TestNillableDurationErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{name: "days are not Go durations", in: `"30d"`},
		{name: "number", in: `720`},
		{name: "lower-case never", in: `"never"`},
		{name: "empty", in: `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d NillableDuration
			if err := json.Unmarshal([]byte(tc.in), &d); err == nil {
				t.Fatalf("decoded %s without error: %v", tc.in, d)
			}
		})
	}
}

func TestNillableDurationBuiltInGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    NillableDuration
		want string
	}{
		{name: "duration", d: NewNillableDuration(2 * time.Hour), want: `"2h0m0s"`},
		{name: "never", d: NillableDuration{}, want: `"Never"`},
		{name: "parsed", d: MustParseNillableDuration("15m"), want: `"15m"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got %s, want %s", out, tc.want)
			}
		})
	}
}

func TestNillableDurationInSpecRoundTrip(t *testing.T) {
	in := `{"consolidateAfter":"30s","consolidationPolicy":"WhenEmpty"}`
	var d Disruption
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	cp := d.DeepCopy()
	out, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("got %s, want %s", out, in)
	}
}

func TestUnsetDurationsAreOmitted(t *testing.T) {
	np := NodePool{Spec: NodePoolSpec{Template: NodeClaimTemplate{Spec: NodeClaimTemplateSpec{}}}}
	b, err := json.Marshal(np.Spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"expireAfter", "consolidateAfter"} {
		if strings.Contains(string(b), field) {
			t.Errorf("unset %s was marshalled (the apiserver default would not apply): %s", field, b)
		}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&np)
	if err != nil {
		t.Fatal(err)
	}
	if v, found := u["spec"].(map[string]any)["disruption"].(map[string]any)["consolidateAfter"]; found {
		t.Errorf("unstructured consolidateAfter = %v, want it omitted", v)
	}
	never := MustParseNillableDuration(Never)
	if never.IsZero() || !never.IsNever() {
		t.Errorf("parsed Never: IsZero=%v IsNever=%v", never.IsZero(), never.IsNever())
	}
}
