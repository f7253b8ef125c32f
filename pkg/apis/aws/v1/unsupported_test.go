package v1_test

import (
	"strings"
	"testing"
)

// TestUnsupportedFieldsRefused: every EC2NodeClass field joiner does not
// implement yet is refused at admission by the CRD's own CEL rules, with a
// message naming the field; the same spec without it is accepted.
func TestUnsupportedFieldsRefused(t *testing.T) {
	v := ec2NodeClassCEL(t)
	if errs := celErrors(v, specWith("al2023@latest", nil)); len(errs) != 0 {
		t.Fatalf("the base spec is refused: %v", errs)
	}
	cases := []struct {
		field string
		value any
	}{
		{"capacityReservationSelectorTerms", []any{map[string]any{"id": "cr-0123456789abcdef0"}}},
		{"placementGroupSelector", map[string]any{"name": "training"}},
		{"networkInterfaces", []any{map[string]any{"networkCardIndex": int64(0), "deviceIndex": int64(0), "interfaceType": "interface"}}},
		{"ipPrefixCount", int64(2)},
		{"connectionTracking", map[string]any{"udpTimeout": int64(45)}},
		{"cpuOptions", map[string]any{"nestedVirtualization": "enabled"}},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			spec := specWith("al2023@latest", nil)
			spec[tc.field] = tc.value
			errs := celErrors(v, spec)
			want := "spec." + tc.field + ": joiner does not support"
			for _, e := range errs {
				if strings.Contains(e.Error(), want) {
					return
				}
			}
			t.Fatalf("CEL errors = %v, want one containing %q", errs, want)
		})
	}
}
