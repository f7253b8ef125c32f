package v1

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// kubeletTyped is KubeletConfiguration without its JSON methods, so the
// methods below can use the default encoding for the typed fields.
type kubeletTyped KubeletConfiguration

// kubeletTypedFieldOrder holds the JSON names of the typed fields in
// declaration order, and kubeletTypedFields the same names as a set.
var kubeletTypedFieldOrder, kubeletTypedFields = func() ([]string, map[string]bool) {
	var order []string
	names := map[string]bool{}
	t := reflect.TypeFor[kubeletTyped]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			order = append(order, name)
			names[name] = true
		}
	}
	return order, names
}()

// IsTypedKubeletField reports whether name is the JSON name of a field
// KubeletConfiguration types (and the CRD validates) rather than keeping it
// in Extra.
func IsTypedKubeletField(name string) bool {
	return kubeletTypedFields[name]
}

// UnmarshalJSON decodes the typed fields and keeps every other field in
// Extra, verbatim. Field names match exactly (encoding/json alone would
// let MaxPods fill maxPods).
func (in *KubeletConfiguration) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	typed := make(map[string]json.RawMessage, len(fields))
	var extra map[string]apiextensionsv1.JSON
	for name, value := range fields {
		if kubeletTypedFields[name] {
			typed[name] = value
			continue
		}
		if extra == nil {
			extra = map[string]apiextensionsv1.JSON{}
		}
		extra[name] = apiextensionsv1.JSON{Raw: value}
	}
	tb, err := json.Marshal(typed)
	if err != nil {
		return err
	}
	var out kubeletTyped
	if err := json.Unmarshal(tb, &out); err != nil {
		return err
	}
	*in = KubeletConfiguration(out)
	in.Extra = extra
	return nil
}

// MarshalJSON writes the typed fields and the Extra fields side by side.
// Without Extra the output is exactly the default encoding of the typed
// fields (so drift hashes of existing objects do not change). An Extra
// entry named like a typed field is left out: the typed field wins, and
// EC2NodeClass.Validate reports the clash.
func (in KubeletConfiguration) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(kubeletTyped(in))
	if err != nil || len(in.Extra) == 0 {
		return b, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	for name, value := range in.Extra {
		if kubeletTypedFields[name] {
			continue
		}
		raw := json.RawMessage(value.Raw)
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		fields[name] = raw
	}
	// encoding/json writes map keys sorted: the output is canonical.
	return json.Marshal(fields)
}

// ExtraFieldNames returns the names of the Extra fields, sorted.
func (in *KubeletConfiguration) ExtraFieldNames() []string {
	if in == nil {
		return nil
	}
	names := make([]string, 0, len(in.Extra))
	for name := range in.Extra {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
