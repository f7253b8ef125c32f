package explain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/joiner-dev/joiner/pkg/apis"
	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Snapshot is what explain reads: the cluster's objects as one read saw
// them, and the solver's and the disruption engine's inputs built from the
// same objects.
type Snapshot struct {
	Now         time.Time
	Pods        []*corev1.Pod
	Nodes       []*corev1.Node
	NodeClaims  []*v1.NodeClaim
	NodePools   []*v1.NodePool
	NodeClasses []NodeClass
	Events      []*eventsv1.Event
	PDBs        []*policyv1.PodDisruptionBudget
	Buffers     []*autoscalingv1beta1.CapacityBuffer
	// Scheduling is the solver's input: pending pods, existing Nodes and
	// in-flight NodeClaims, and each NodePool's instance types.
	Scheduling *scheduling.Snapshot
	// Disruption is the disruption engine's input (budgets).
	Disruption *disruption.Input
	// Notes say what the snapshot had to assume.
	Notes []string
	// InstanceTypeSource says where the NodePools' instance types and
	// offerings come from: the running controller's view (the provisioner's
	// own source) or, without one, the built-in catalog.
	InstanceTypeSource string
	// View is the controller view read, nil without one.
	View *controllerview.View
	// views are the controller views read, by namespace/name.
	views map[string]controllerview.View
}

// NodeClass is a node class (SimNodeClass, EC2NodeClass) as explain needs
// it: its readiness.
type NodeClass struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Ready is its Ready condition, nil when it has none yet.
	Ready *metav1.Condition `json:"ready,omitempty"`
}

// SnapshotOptions say how to build a Snapshot.
type SnapshotOptions struct {
	// Now is the snapshot's clock.
	Now time.Time
	// InstanceTypes are offered to every NodePool; nil means joiner's
	// built-in catalog, per NodePool, shaped by its node class (as
	// `joiner simulate` does).
	InstanceTypes []*scheduling.InstanceType
	// Catalog narrows the built-in catalog.
	Catalog catalog.Options
	// Devices plans pods' Dynamic Resource Allocation claims from the
	// input's DeviceClasses, ResourceClaims, templates and ResourceSlices
	// (IGNORE_DRA_REQUESTS=false).
	Devices bool
}

// conditioned is a node class with status conditions.
type conditioned interface {
	runtime.Object
	GetName() string
	GetConditions() []metav1.Condition
}

// Scheme knows every kind explain reads: Kubernetes' and joiner's APIs.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building explain's scheme: %v", err))
		}
	}
	return s
}()

var decoder = serializer.NewCodecFactory(Scheme).UniversalDeserializer()

// FromObjects builds a Snapshot from objects already in memory (a typed
// client's lists, a controller's cache), through the same path as Read.
// Objects of kinds Scheme does not know are an error.
func FromObjects(objs []runtime.Object, opts SnapshotOptions) (*Snapshot, error) {
	var buf bytes.Buffer
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, Scheme)
		if err != nil {
			return nil, err
		}
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		js, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", gvk.Kind, err)
		}
		buf.WriteString("---\n")
		buf.Write(js)
		buf.WriteByte('\n')
	}
	return Read("objects", buf.Bytes(), opts)
}

// Read builds a Snapshot from YAML or JSON: one or more documents, each an
// object or a List (kubectl get -o yaml). Objects of kinds explain does not
// read are skipped.
func Read(source string, data []byte, opts SnapshotOptions) (*Snapshot, error) {
	s := &Snapshot{Now: opts.Now}
	s.views = map[string]controllerview.View{}
	m := &scenario.Manifests{}
	if err := m.Read(source, data); err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if t := string(bytes.TrimSpace(js)); t == "" || t == "null" {
			continue
		}
		if err := s.add(js); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
	}
	sopts := scenario.SnapshotOptions{Now: opts.Now, InstanceTypes: opts.InstanceTypes, Catalog: opts.Catalog, Devices: opts.Devices}
	s.InstanceTypeSource = s.pickView(&sopts)
	in, notes, err := m.DisruptionInput(sopts, disruption.Options{})
	if err != nil {
		return nil, err
	}
	s.Disruption, s.Scheduling, s.Notes = in, in.Cluster, notes
	s.addInFlight()
	return s, nil
}

// pickView chooses the controller view the instance types come from: the
// most recently read one that names every NodePool (one controller serves
// a cluster; two views are two controllers, such as two joiners on one
// control plane). An explicit catalog (--instance-types) wins. It returns
// the sentence that says which source was used.
func (s *Snapshot) pickView(opts *scenario.SnapshotOptions) string {
	if opts.InstanceTypes != nil {
		return "the catalog given with --instance-types, not the controller's: the verdict may differ from the controller's"
	}
	var best *controllerview.View
	bestName := ""
	for _, name := range slices.Sorted(maps.Keys(s.views)) {
		v := s.views[name]
		covers := true
		for _, np := range s.NodePools {
			if _, ok := v.NodePools[np.Name]; !ok {
				covers = false
			}
		}
		if covers && (best == nil || v.Read.After(best.Read.Time)) {
			best, bestName = &v, name
		}
	}
	if best == nil {
		if len(s.views) > 0 {
			return "joiner's built-in catalog: no controller view (ConfigMap labelled " + controllerview.LabelView + ") names every NodePool yet, so the verdict may differ from the controller's"
		}
		return "joiner's built-in catalog: no controller view (ConfigMap labelled " + controllerview.LabelView + ") was found, so the verdict may differ from the controller's"
	}
	s.View = best
	opts.PoolInstanceTypes = map[string][]*scheduling.InstanceType{}
	for name, t := range best.NodePools {
		opts.PoolInstanceTypes[name] = t.InstanceTypes
	}
	return fmt.Sprintf("the controller's own: the instance types, offerings and unavailable offerings the provider gave the provisioner of cluster %s (ConfigMap %s, read %s before this snapshot); back-offs from each NodePool's %s annotation, as the provisioner reads them",
		best.ClusterName, bestName, best.Age(s.Now).Round(time.Second), v1.AnnotationLaunchHealth)
}

// add decodes one object or list.
func (s *Snapshot) add(js []byte) error {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return err
	}
	if u.IsList() {
		list, err := u.ToList()
		if err != nil {
			return err
		}
		for i := range list.Items {
			item, err := list.Items[i].MarshalJSON()
			if err != nil {
				return err
			}
			if err := s.add(item); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	}
	obj, _, err := decoder.Decode(js, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		s.Pods = append(s.Pods, o)
	case *corev1.Node:
		s.Nodes = append(s.Nodes, o)
	case *v1.NodeClaim:
		s.NodeClaims = append(s.NodeClaims, o)
	case *v1.NodePool:
		s.NodePools = append(s.NodePools, o)
	case *eventsv1.Event:
		s.Events = append(s.Events, o)
	case *policyv1.PodDisruptionBudget:
		s.PDBs = append(s.PDBs, o)
	case *autoscalingv1beta1.CapacityBuffer:
		s.Buffers = append(s.Buffers, o)
	case *corev1.ConfigMap:
		v, ok, err := controllerview.Decode(o)
		if ok && err != nil {
			return err
		}
		if ok {
			s.views[o.Namespace+"/"+o.Name] = v
		}
	case conditioned:
		if kind := u.GetKind(); kind == "SimNodeClass" || kind == "EC2NodeClass" {
			nc := NodeClass{Kind: kind, Name: o.GetName()}
			for _, c := range o.GetConditions() {
				if c.Type == v1.ConditionTypeReady {
					nc.Ready = c.DeepCopy()
				}
			}
			s.NodeClasses = append(s.NodeClasses, nc)
		}
	}
	return nil
}

// addInFlight gives the solver the NodeClaims that have no Node yet, as
// the provisioner's cluster state does, so a pending pod the provisioner
// planned onto one is seen waiting for it rather than needing a new node.
func (s *Snapshot) addInFlight() {
	have := map[string]bool{}
	for _, n := range s.Scheduling.Nodes {
		have[n.Name] = true
		have[n.NodeClaim] = true
	}
	for _, nc := range s.NodeClaims {
		if have[nc.Name] || (nc.Status.NodeName != "" && have[nc.Status.NodeName]) {
			continue
		}
		sn := &state.StateNode{NodeClaim: nc, MarkedForDeletion: nc.DeletionTimestamp != nil}
		s.Scheduling.Nodes = append(s.Scheduling.Nodes, sn.ExistingNode())
	}
}

// nodeClaim finds a NodeClaim by name.
func (s *Snapshot) nodeClaim(name string) *v1.NodeClaim {
	for _, nc := range s.NodeClaims {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// node finds a Node by name.
func (s *Snapshot) node(name string) *corev1.Node {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// claimOf is the NodeClaim of node: by status.nodeName, then provider ID.
func (s *Snapshot) claimOf(node *corev1.Node) *v1.NodeClaim {
	for _, nc := range s.NodeClaims {
		if nc.Status.NodeName == node.Name || (node.Spec.ProviderID != "" && nc.Status.ProviderID == node.Spec.ProviderID) {
			return nc
		}
	}
	return nil
}

// nodeOf is the Node of nc, nil before it registers.
func (s *Snapshot) nodeOf(nc *v1.NodeClaim) *corev1.Node {
	for _, n := range s.Nodes {
		if (nc.Status.NodeName != "" && n.Name == nc.Status.NodeName) || (nc.Status.ProviderID != "" && n.Spec.ProviderID == nc.Status.ProviderID) {
			return n
		}
	}
	return nil
}

func (s *Snapshot) nodePool(name string) *v1.NodePool {
	for _, np := range s.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

func (s *Snapshot) nodeClass(ref *v1.NodeClassReference) *NodeClass {
	if ref == nil {
		return nil
	}
	for i := range s.NodeClasses {
		if s.NodeClasses[i].Kind == ref.Kind && s.NodeClasses[i].Name == ref.Name {
			return &s.NodeClasses[i]
		}
	}
	return nil
}
