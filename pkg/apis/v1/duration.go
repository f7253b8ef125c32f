package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the NillableDuration spelling of "no duration at all": a node
// that never expires, consolidation that never happens.
const Never = "Never"

// NillableDuration is a Go duration that may also be "Never" (Duration nil).
//
// The zero value is "unset": fields of this type are tagged omitzero, so a
// NodePool built in Go without them gets the apiserver's default (720h for
// expireAfter, 0s for consolidateAfter) rather than Never. Read back from
// the apiserver a field is never unset; IsNever treats unset as Never. To
// ask for Never in Go, use MustParseNillableDuration(Never).
//
// It remembers the exact string it was decoded from (Raw) and marshals back
// to it, so a manifest applied by a GitOps tool reads back byte for byte as
// written ("30d" is not valid, but "720h" stays "720h" rather than becoming
// "720h0m0s") and the tool sees no diff.
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	// Duration is nil for Never.
	Duration *time.Duration `json:"-"`
	// Raw is the string this value was decoded from, without quotes; empty
	// when it was built in Go.
	Raw string `json:"-"`
}

// MustParseNillableDuration parses a duration or "Never" and panics on error;
// for defaults and tests.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses a Go duration string or "Never".
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{Raw: s}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return NillableDuration{Duration: &d, Raw: s}, nil
}

// NewNillableDuration returns a NillableDuration of d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// IsZero reports whether the value is unset (built in Go, not decoded).
func (d NillableDuration) IsZero() bool { return d.Duration == nil && d.Raw == "" }

// IsNever reports whether the duration is "Never".
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String is the raw string when there is one, else the canonical form.
func (d NillableDuration) String() string {
	if d.Raw != "" {
		return d.Raw
	}
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// MarshalJSON writes the string the value was decoded from, or the canonical
// form when it was built in Go.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON accepts a duration string or "Never". JSON null leaves the
// value unchanged, like the standard library does for other types.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"720h\" or %q: %w", Never, err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured lets the unstructured converter produce the same string as
// MarshalJSON; an unset value becomes null, which the apiserver replaces
// with the field's default.
func (d NillableDuration) ToUnstructured() interface{} {
	if d.IsZero() {
		return nil
	}
	return d.String()
}
