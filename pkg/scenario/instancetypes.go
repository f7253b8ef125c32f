package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Well-known label keys the loader keeps consistent with an instance type's
// own fields.
const (
	labelInstanceType = corev1.LabelInstanceTypeStable
	labelArch         = corev1.LabelArchStable
	labelOS           = corev1.LabelOSStable
	labelZone         = corev1.LabelTopologyZone
)

// instanceTypeJSON is one entry of a scenario's instanceTypes list.
type instanceTypeJSON struct {
	Name             string              `json:"name"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []string            `json:"operatingSystems"`
	Capacity         corev1.ResourceList `json:"capacity"`
	Overhead         struct {
		KubeReserved      corev1.ResourceList `json:"kubeReserved"`
		SystemReserved    corev1.ResourceList `json:"systemReserved"`
		EvictionThreshold corev1.ResourceList `json:"evictionThreshold"`
	} `json:"overhead"`
	Allocatable  corev1.ResourceList `json:"allocatable"`
	Requirements map[string][]string `json:"requirements"`
	Offerings    []offeringJSON      `json:"offerings"`
}

type offeringJSON struct {
	Zone                string  `json:"zone"`
	CapacityType        string  `json:"capacityType"`
	Price               float64 `json:"price"`
	Available           bool    `json:"available"`
	ReservationID       string  `json:"reservationID,omitempty"`
	ReservationCapacity int     `json:"reservationCapacity,omitempty"`
}

// LoadInstanceTypes reads an instance-type catalog from a JSON file: either
// a list of instance types in the scenario format, or any object with an
// "instanceTypes" list (a scenario file works too).
func LoadInstanceTypes(path string) ([]*scheduling.InstanceType, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading instance types: %w", err)
	}
	var raws []json.RawMessage
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		var wrapper struct {
			InstanceTypes []json.RawMessage `json:"instanceTypes"`
		}
		if err := json.Unmarshal(data, &wrapper); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if wrapper.InstanceTypes == nil {
			return nil, fmt.Errorf("%s: instanceTypes: missing (want a list, or an object with an instanceTypes list)", path)
		}
		raws = wrapper.InstanceTypes
	}
	its, err := decodeInstanceTypes(raws)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return its, nil
}

func decodeInstanceTypes(raws []json.RawMessage) ([]*scheduling.InstanceType, error) {
	ins := make([]instanceTypeJSON, len(raws))
	for i, raw := range raws {
		if err := decodeStrict(raw, &ins[i]); err != nil {
			return nil, fmt.Errorf("instanceTypes[%d]%s: %w", i, quotedName(raw), err)
		}
	}
	return instanceTypesToSolver(ins)
}

func instanceTypesToSolver(ins []instanceTypeJSON) ([]*scheduling.InstanceType, error) {
	out := make([]*scheduling.InstanceType, 0, len(ins))
	seen := make(map[string]int, len(ins))
	for i := range ins {
		in := &ins[i]
		if j, dup := seen[in.Name]; dup && in.Name != "" {
			return nil, fmt.Errorf("instanceTypes[%d] %q: name: duplicates instanceTypes[%d]", i, in.Name, j)
		}
		seen[in.Name] = i
		it, err := in.toSolver()
		if err != nil {
			if in.Name == "" {
				return nil, fmt.Errorf("instanceTypes[%d]: %w", i, err)
			}
			return nil, fmt.Errorf("instanceTypes[%d] %q: %w", i, in.Name, err)
		}
		out = append(out, it)
	}
	return out, nil
}

func (in *instanceTypeJSON) toSolver() (*scheduling.InstanceType, error) {
	if in.Name == "" {
		return nil, fmt.Errorf("name: must be set")
	}
	if len(in.Capacity) == 0 {
		return nil, fmt.Errorf("capacity: must be set")
	}
	for _, rl := range []struct {
		field string
		list  corev1.ResourceList
	}{
		{"capacity", in.Capacity},
		{"overhead.kubeReserved", in.Overhead.KubeReserved},
		{"overhead.systemReserved", in.Overhead.SystemReserved},
		{"overhead.evictionThreshold", in.Overhead.EvictionThreshold},
		{"allocatable", in.Allocatable},
	} {
		for _, name := range sortedResourceNames(rl.list) {
			if q := rl.list[name]; q.Sign() < 0 {
				return nil, fmt.Errorf("%s.%s: must be >= 0, got %s", rl.field, name, q.String())
			}
		}
	}
	it := &scheduling.InstanceType{
		Name:     in.Name,
		Capacity: in.Capacity,
		Overhead: scheduling.Overhead{
			KubeReserved:      in.Overhead.KubeReserved,
			SystemReserved:    in.Overhead.SystemReserved,
			EvictionThreshold: in.Overhead.EvictionThreshold,
		},
		Requirements: make(map[string][]string, len(in.Requirements)+5),
		Offerings:    make([]scheduling.Offering, 0, len(in.Offerings)),
	}
	if len(in.Allocatable) > 0 {
		computed := it.Allocatable()
		for _, name := range sortedResourceNames(in.Allocatable) {
			want, got := in.Allocatable[name], computed[name]
			if want.Cmp(got) != 0 {
				return nil, fmt.Errorf("allocatable.%s: %s does not equal capacity minus overhead (%s)", name, want.String(), got.String())
			}
		}
	}
	for k, v := range in.Requirements {
		if k == "" {
			return nil, fmt.Errorf("requirements: empty label key")
		}
		it.Requirements[k] = v
	}
	// The type's own fields and its requirements must agree; fill whichever
	// is missing from the other.
	if err := reconcileLabel(it.Requirements, labelInstanceType, []string{in.Name}, "name"); err != nil {
		return nil, err
	}
	if in.Architecture != "" {
		if err := reconcileLabel(it.Requirements, labelArch, []string{in.Architecture}, "architecture"); err != nil {
			return nil, err
		}
	}
	if len(in.OperatingSystems) > 0 {
		if err := reconcileLabel(it.Requirements, labelOS, in.OperatingSystems, "operatingSystems"); err != nil {
			return nil, err
		}
	}
	if len(in.Offerings) == 0 {
		return nil, fmt.Errorf("offerings: must list at least one offering")
	}
	var zones, capacityTypes []string
	for j, o := range in.Offerings {
		switch {
		case o.Zone == "":
			return nil, fmt.Errorf("offerings[%d].zone: must be set", j)
		case o.CapacityType != "spot" && o.CapacityType != "on-demand" && o.CapacityType != "reserved":
			return nil, fmt.Errorf("offerings[%d].capacityType: must be spot, on-demand or reserved, got %q", j, o.CapacityType)
		case math.IsNaN(o.Price) || math.IsInf(o.Price, 0):
			return nil, fmt.Errorf("offerings[%d].price: must be a finite number", j)
		case o.Price < 0:
			return nil, fmt.Errorf("offerings[%d].price: must be >= 0, got %g", j, o.Price)
		case o.ReservationCapacity < 0:
			return nil, fmt.Errorf("offerings[%d].reservationCapacity: must be >= 0, got %d", j, o.ReservationCapacity)
		case o.CapacityType == "reserved" && o.ReservationID == "":
			return nil, fmt.Errorf("offerings[%d].reservationID: must be set for a reserved offering", j)
		}
		if !slices.Contains(zones, o.Zone) {
			zones = append(zones, o.Zone)
		}
		if !slices.Contains(capacityTypes, o.CapacityType) {
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
		it.Offerings = append(it.Offerings, scheduling.Offering{
			Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available,
			ReservationID: o.ReservationID, ReservationCapacity: o.ReservationCapacity,
		})
	}
	for _, lk := range []struct {
		key    string
		values []string
		field  string
	}{{labelZone, zones, "zone"}, {v1.LabelCapacityType, capacityTypes, "capacityType"}} {
		allowed, ok := it.Requirements[lk.key]
		if !ok {
			slices.Sort(lk.values)
			it.Requirements[lk.key] = lk.values
			continue
		}
		for j, o := range in.Offerings {
			v := o.Zone
			if lk.key == v1.LabelCapacityType {
				v = o.CapacityType
			}
			if !slices.Contains(allowed, v) {
				return nil, fmt.Errorf("offerings[%d].%s: %q is not in requirements[%q] %v", j, lk.field, v, lk.key, allowed)
			}
		}
	}
	return it, nil
}

// reconcileLabel sets reqs[key] to want when absent, and otherwise checks
// that it holds exactly the same values.
func reconcileLabel(reqs map[string][]string, key string, want []string, field string) error {
	have, ok := reqs[key]
	if !ok {
		reqs[key] = slices.Clone(want)
		return nil
	}
	a, b := slices.Clone(have), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		return fmt.Errorf("requirements[%q]: %v disagrees with %s %v", key, have, field, want)
	}
	return nil
}

func sortedResourceNames(rl corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// decodeStrict unmarshals one JSON value, rejecting unknown fields so a typo
// is an error rather than a silently missing setting.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the object")
	}
	return nil
}

// quotedName returns ` "name"` (or ` "namespace/name"`) for an object's
// JSON, read leniently so errors can name the object even when strict
// decoding failed; "" when it has no name.
func quotedName(raw []byte) string {
	var probe struct {
		Name     string `json:"name"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return ""
	}
	switch {
	case probe.Name != "":
		return fmt.Sprintf(" %q", probe.Name)
	case probe.Metadata.Name != "" && probe.Metadata.Namespace != "":
		return fmt.Sprintf(" %q", probe.Metadata.Namespace+"/"+probe.Metadata.Name)
	case probe.Metadata.Name != "":
		return fmt.Sprintf(" %q", probe.Metadata.Name)
	}
	return ""
}
