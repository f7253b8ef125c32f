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
		{"networkInterfaces", []any{map[string]any{"networkCardIndex": int64(0), "deviceIndex": int64(0), "interfaceType": "interface"}}},
		{"ipPrefixCount", int64(2)},
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

// TestPlacementFieldsAccepted: capacity reservation selector terms and the
// placement group selector are implemented, so a well-formed spec with
// them is admitted; a malformed term is still refused naming the field.
func TestPlacementFieldsAccepted(t *testing.T) {
	v := ec2NodeClassCEL(t)
	for _, tc := range []struct {
		name, field string
		value       any
		wantErr     string
	}{
		{"reservation by id", "capacityReservationSelectorTerms", []any{map[string]any{"id": "cr-0123456789abcdef0"}}, ""},
		{"reservations by tags and owner", "capacityReservationSelectorTerms", []any{map[string]any{"tags": map[string]any{"team": "ml"}, "ownerID": "123456789012"}}, ""},
		{"owner without tags", "capacityReservationSelectorTerms", []any{map[string]any{"ownerID": "123456789012"}}, "spec.capacityReservationSelectorTerms[]"},
		{"group by name", "placementGroupSelector", map[string]any{"name": "training"}, ""},
		{"connection tracking", "connectionTracking", map[string]any{"udpTimeout": int64(45)}, ""},
		{"connection tracking without a timeout", "connectionTracking", map[string]any{}, "spec.connectionTracking: set at least one of"},
		{"group by name and id", "placementGroupSelector", map[string]any{"name": "training", "id": "pg-0123456789abcdef0"}, "spec.placementGroupSelector: set exactly one of name or id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := specWith("al2023@latest", nil)
			spec[tc.field] = tc.value
			errs := celErrors(v, spec)
			if tc.wantErr == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), tc.wantErr) {
					return
				}
			}
			t.Fatalf("CEL errors = %v, want one containing %q", errs, tc.wantErr)
		})
	}
}
