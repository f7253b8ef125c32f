package scenario

import (
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Scenario is a loaded scenario file: its description and the Snapshot it
// asks the solver to solve.
type Scenario struct {
	Meta     Meta
	Snapshot *scheduling.Snapshot
}

// Meta describes where a scenario came from.
type Meta struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Seed        int64  `json:"seed,omitempty"`
	Generator   string `json:"generator,omitempty"`
	Upstream    string `json:"upstream,omitempty"`
}

type scenarioJSON struct {
	Meta          Meta              `json:"meta"`
	InstanceTypes []json.RawMessage `json:"instanceTypes"`
	NodePools     []json.RawMessage `json:"nodePools"`
	Pods          []json.RawMessage `json:"pods"`
}

// LoadFile reads a scenario JSON file (see Load).
func LoadFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	s, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Load parses a scenario: one JSON object with meta, instanceTypes (offered
// to every NodePool), nodePools (karpenter.sh/v1 NodePool objects) and pods
// (v1 Pods, all pending). Unknown fields are errors, and every error names
// the object and the field. Snapshot.Now is left zero: scenarios carry no
// clock, so callers that need one set it.
func Load(data []byte) (*Scenario, error) {
	// Fast path: one strict pass over the whole file. Only when it fails do
	// we decode object by object, to say which object and field is wrong.
	var fast scenarioTyped
	if err := decodeStrict(data, &fast); err == nil {
		return fast.build()
	}
	return loadByObject(data)
}

// scenarioTyped is the whole scenario decoded in one pass.
type scenarioTyped struct {
	Meta          Meta               `json:"meta"`
	InstanceTypes []instanceTypeJSON `json:"instanceTypes"`
	NodePools     []json.RawMessage  `json:"nodePools"`
	Pods          []*corev1.Pod      `json:"pods"`
}

func (in *scenarioTyped) build() (*Scenario, error) {
	its, err := instanceTypesToSolver(in.InstanceTypes)
	if err != nil {
		return nil, err
	}
	snap, err := newSnapshot(its, in.NodePools)
	if err != nil {
		return nil, err
	}
	if err := addPods(snap, in.Pods, func(i int) string { return quotedPodName(in.Pods[i]) }); err != nil {
		return nil, err
	}
	return &Scenario{Meta: in.Meta, Snapshot: snap}, nil
}

// loadByObject decodes a scenario one object at a time, so a decoding error
// names the object it is in.
func loadByObject(data []byte) (*Scenario, error) {
	var in scenarioJSON
	if err := decodeStrict(data, &in); err != nil {
		return nil, err
	}
	its, err := decodeInstanceTypes(in.InstanceTypes)
	if err != nil {
		return nil, err
	}
	snap, err := newSnapshot(its, in.NodePools)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(in.Pods))
	for i, raw := range in.Pods {
		pods[i] = &corev1.Pod{}
		if err := decodeStrict(raw, pods[i]); err != nil {
			return nil, fmt.Errorf("pods[%d]%s: %w", i, quotedName(raw), err)
		}
	}
	if err := addPods(snap, pods, func(i int) string { return quotedName(in.Pods[i]) }); err != nil {
		return nil, err
	}
	return &Scenario{Meta: in.Meta, Snapshot: snap}, nil
}

func newSnapshot(its []*scheduling.InstanceType, nodePools []json.RawMessage) (*scheduling.Snapshot, error) {
	if len(its) == 0 {
		return nil, fmt.Errorf("instanceTypes: must list at least one instance type")
	}
	snap := &scheduling.Snapshot{InstanceTypes: map[string][]*scheduling.InstanceType{}}
	seenPools := map[string]int{}
	for i, raw := range nodePools {
		np, err := nodepool.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("nodePools[%d]%s: %w", i, quotedName(raw), err)
		}
		if j, dup := seenPools[np.Name]; dup {
			return nil, fmt.Errorf("nodePools[%d] %q: metadata.name: duplicates nodePools[%d]", i, np.Name, j)
		}
		seenPools[np.Name] = i
		snap.NodePools = append(snap.NodePools, np)
		snap.InstanceTypes[np.Name] = its
	}
	if len(snap.NodePools) == 0 {
		return nil, fmt.Errorf("nodePools: must list at least one NodePool")
	}
	return snap, nil
}

// addPods validates the scenario's pods and adds them to snap; name(i)
// gives ` "namespace/name"` for error messages.
func addPods(snap *scheduling.Snapshot, pods []*corev1.Pod, name func(int) string) error {
	snap.Pods = make([]*corev1.Pod, 0, len(pods))
	seenPods := make(map[string]int, len(pods))
	for i, p := range pods {
		if p == nil {
			return fmt.Errorf("pods[%d]: must be an object, got null", i)
		}
		if err := validatePod(p); err != nil {
			return fmt.Errorf("pods[%d]%s: %w", i, name(i), err)
		}
		if p.Spec.NodeName != "" {
			return fmt.Errorf("pods[%d] %q: spec.nodeName: scenario pods must be pending, got bound to %q", i, podKey(p), p.Spec.NodeName)
		}
		if j, dup := seenPods[podKey(p)]; dup {
			return fmt.Errorf("pods[%d] %q: metadata.name: duplicates pods[%d]", i, podKey(p), j)
		}
		seenPods[podKey(p)] = i
		snap.Pods = append(snap.Pods, p)
	}
	return nil
}

// quotedPodName is ` "namespace/name"`, or "" for a pod without a name.
func quotedPodName(p *corev1.Pod) string {
	if p == nil || p.Name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", podKey(p))
}
