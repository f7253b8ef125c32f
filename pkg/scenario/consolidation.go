package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Cluster is a running cluster rebuilt from a consolidation benchmark file
// (`consolidation/<scenario>.half.cluster.json`) and its scenario: the
// scenario's NodePool and catalog, and the nodes upstream's provisioning
// launched, each initialised, with the pods that were not deleted bound to
// them. Apply plays a disruption command on it, so rounds of Decide can
// run until nothing is left to do.
type Cluster struct {
	// Name is the scenario's name plus ".half".
	Name string
	// NodePool is the scenario's NodePool as the benchmark runs it:
	// consolidationPolicy WhenEmptyOrUnderutilized, consolidateAfter 0s,
	// budget 10%, and pinned to the file's capacity type.
	NodePool      *v1.NodePool
	InstanceTypes []*scheduling.InstanceType
	Nodes         []*ClusterNode
	// Created is when every node was created (their NodeClaims' age).
	Created time.Time

	pool     *scheduling.NodePool
	types    map[string]*scheduling.InstanceType
	launched int
}

// ClusterNode is one node of a Cluster.
type ClusterNode struct {
	Name, InstanceType, Zone, CapacityType string
	Price                                  float64
	// Pods are bound to the node (spec.nodeName set).
	Pods []*corev1.Pod
}

type clusterFileJSON struct {
	Scenario       string            `json:"scenario"`
	Seed           int64             `json:"seed"`
	DeleteFraction float64           `json:"deleteFraction"`
	CapacityType   string            `json:"capacityType"`
	Nodes          []clusterNodeJSON `json:"nodes"`
	DeletedPods    []string          `json:"deletedPods"`
}

type clusterNodeJSON struct {
	Name         string   `json:"name"`
	InstanceType string   `json:"instanceType"`
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        float64  `json:"price"`
	Pods         []string `json:"pods"`
}

// LoadHalfCluster is LoadCluster of the shared half-emptied cluster made
// from scenario name (Dir's consolidation/<name>.half.cluster.json with
// Dir's <name>.json), the input of the consolidation benchmarks and of the
// bounds measured on them.
func LoadHalfCluster(name string) (*Cluster, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	c, err := LoadCluster(filepath.Join(dir, name+".json"), filepath.Join(dir, "consolidation", name+".half.cluster.json"))
	if err != nil {
		return nil, fmt.Errorf("loading the %s consolidation cluster: %w", name, err)
	}
	return c, nil
}

// LoadCluster rebuilds the cluster a consolidation benchmark file describes
// from the scenario it was made from. Every pod of the scenario must be
// either deleted or bound to exactly one node.
func LoadCluster(scenarioPath, clusterPath string) (*Cluster, error) {
	sc, err := LoadFile(scenarioPath)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(scenarioPath)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	var pools struct {
		NodePools []json.RawMessage `json:"nodePools"`
	}
	if err := json.Unmarshal(raw, &pools); err != nil {
		return nil, fmt.Errorf("%s: %w", scenarioPath, err)
	}
	if len(pools.NodePools) != 1 {
		return nil, fmt.Errorf("%s: nodePools: a consolidation cluster needs exactly one NodePool, got %d", scenarioPath, len(pools.NodePools))
	}
	np, err := nodepool.DecodeAPI(pools.NodePools[0])
	if err != nil {
		return nil, fmt.Errorf("%s: nodePools[0]: %w", scenarioPath, err)
	}
	data, err := os.ReadFile(clusterPath)
	if err != nil {
		return nil, fmt.Errorf("reading cluster: %w", err)
	}
	var cf clusterFileJSON
	if err := decodeStrict(data, &cf); err != nil {
		return nil, fmt.Errorf("%s: %w", clusterPath, err)
	}
	c, err := buildCluster(sc, np, &cf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clusterPath, err)
	}
	return c, nil
}

func buildCluster(sc *Scenario, np *v1.NodePool, cf *clusterFileJSON) (*Cluster, error) {
	if cf.Scenario != "" && cf.Scenario != sc.Meta.Name {
		return nil, fmt.Errorf("scenario: the file was made from %q, not %q", cf.Scenario, sc.Meta.Name)
	}
	// The anchor's settings: every node on-demand (the pool pinned to the
	// file's capacity type) and consolidation as eager as it gets.
	if cf.CapacityType != "" {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{cf.CapacityType},
		})
	}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		Budgets:             []v1.Budget{{Nodes: "10%"}},
	}
	c := &Cluster{
		Name: sc.Meta.Name + ".half", NodePool: np, pool: nodepool.FromNodePool(np),
		InstanceTypes: sc.Snapshot.InstanceTypes[np.Name], types: map[string]*scheduling.InstanceType{},
		Created: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, it := range c.InstanceTypes {
		c.types[it.Name] = it
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range sc.Snapshot.Pods {
		if _, dup := byName[p.Name]; dup {
			return nil, fmt.Errorf("pods: name %q is used in two namespaces; the cluster file names pods without a namespace", p.Name)
		}
		byName[p.Name] = p
	}
	placed := map[string]string{}
	for _, key := range cf.DeletedPods {
		ns, name := splitKey(key)
		p := byName[name]
		if p == nil || p.Namespace != ns {
			return nil, fmt.Errorf("deletedPods: pod %q is not in the scenario", key)
		}
		placed[name] = "deleted"
	}
	for i, n := range cf.Nodes {
		it := c.types[n.InstanceType]
		if it == nil {
			return nil, fmt.Errorf("nodes[%d] %q: instanceType: %q is not in the scenario's catalog", i, n.Name, n.InstanceType)
		}
		node := &ClusterNode{Name: n.Name, InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Price: n.Price}
		for _, name := range n.Pods {
			p := byName[name]
			switch {
			case p == nil:
				return nil, fmt.Errorf("nodes[%d] %q: pods: %q is not in the scenario", i, n.Name, name)
			case placed[name] != "":
				return nil, fmt.Errorf("nodes[%d] %q: pods: %q is already %s", i, n.Name, name, placed[name])
			}
			placed[name] = "bound to " + n.Name
			node.Pods = append(node.Pods, bind(p, n.Name))
		}
		c.Nodes = append(c.Nodes, node)
	}
	for _, p := range sc.Snapshot.Pods {
		if placed[p.Name] == "" {
			return nil, fmt.Errorf("pods: %q is neither deleted nor bound to a node", podKey(p))
		}
	}
	return c, nil
}

func splitKey(key string) (string, string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return metav1.NamespaceDefault, key
}

// bind is p running on node.
func bind(p *corev1.Pod, node string) *corev1.Pod {
	b := *p
	b.Spec.NodeName = node
	b.Status.Phase = corev1.PodRunning
	return &b
}

// Cost is the cluster's $/h.
func (c *Cluster) Cost() float64 {
	total := 0.0
	for _, n := range c.Nodes {
		total += n.Price
	}
	return total
}

// Pods are every pod still running.
func (c *Cluster) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range c.Nodes {
		out = append(out, n.Pods...)
	}
	return out
}

// Snapshot is the provisioner's view of the cluster: its nodes, no pending
// pods, the NodePool with what its nodes use.
func (c *Cluster) Snapshot(now time.Time) *scheduling.Snapshot {
	pool := *c.pool
	pool.InUse = corev1.ResourceList{}
	snap := &scheduling.Snapshot{Now: now, NodePools: []*scheduling.NodePool{&pool}, InstanceTypes: map[string][]*scheduling.InstanceType{pool.Name: c.InstanceTypes}}
	for _, n := range c.Nodes {
		it := c.types[n.InstanceType]
		for name, q := range it.Capacity {
			sum := pool.InUse[name]
			sum.Add(q)
			pool.InUse[name] = sum
		}
		snap.Nodes = append(snap.Nodes, &scheduling.ExistingNode{
			Name: n.Name, NodeClaim: n.Name, NodePool: pool.Name, Labels: c.labels(n, it),
			Initialized: true, Allocatable: it.Allocatable(), Pods: n.Pods,
		})
	}
	return snap
}

// PendingSnapshot is Snapshot with every pod still running pending again
// and no nodes: what provisioning the cluster's pods from scratch faces,
// the input of the lower bounds its consolidation is measured against.
func (c *Cluster) PendingSnapshot(now time.Time) *scheduling.Snapshot {
	snap := c.Snapshot(now)
	snap.Nodes = nil
	for _, p := range c.Pods() {
		q := *p
		q.Spec.NodeName = ""
		q.Status.Phase = corev1.PodPending
		snap.Pods = append(snap.Pods, &q)
	}
	return snap
}

// labels are what the node would carry: one value per label of its type
// that the NodePool allows, its zone, capacity type, hostname and pool.
func (c *Cluster) labels(n *ClusterNode, it *scheduling.InstanceType) map[string]string {
	l := map[string]string{}
	for k, v := range c.pool.Labels {
		l[k] = v
	}
	keys := make([]string, 0, len(it.Requirements))
	for k := range it.Requirements {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range it.Requirements[k] {
			if poolAllows(c.pool.Requirements, k, v) {
				l[k] = v
				break
			}
		}
	}
	l[v1.LabelInstanceType] = it.Name
	l[v1.LabelTopologyZone] = n.Zone
	l[v1.LabelCapacityType] = n.CapacityType
	l[v1.LabelHostname] = n.Name
	l[v1.LabelNodePool] = c.pool.Name
	l[v1.LabelNodeRegistered] = "true"
	l[v1.LabelNodeInitialized] = "true"
	return l
}

func poolAllows(reqs []scheduling.Requirement, key, value string) bool {
	for _, r := range reqs {
		if r.Key != key {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			found := false
			for _, v := range r.Values {
				found = found || v == value
			}
			if !found {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			for _, v := range r.Values {
				if v == value {
					return false
				}
			}
		}
	}
	return true
}

// Input is what the disruption controller would hand the engine at now:
// every node managed, initialised, Ready and Consolidatable, its NodeClaim
// created at Created and never expiring.
func (c *Cluster) Input(now time.Time, opts disruption.Options) *disruption.Input {
	snap := c.Snapshot(now)
	in := &disruption.Input{Now: now, Cluster: snap, NodePools: map[string]*v1.NodePool{c.NodePool.Name: c.NodePool}, Options: opts}
	for i, n := range c.Nodes {
		labels := snap.Nodes[i].Labels
		meta := metav1.ObjectMeta{Name: n.Name, Labels: labels, CreationTimestamp: metav1.NewTime(c.Created)}
		it := c.types[n.InstanceType]
		nc := &v1.NodeClaim{ObjectMeta: meta}
		nc.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
		nc.Status.NodeName, nc.Status.Capacity, nc.Status.Allocatable = n.Name, it.Capacity, it.Allocatable()
		for _, t := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeConsolidatable, v1.ConditionTypeReady} {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.NewTime(c.Created)})
		}
		node := &corev1.Node{ObjectMeta: meta, Status: corev1.NodeStatus{
			Capacity: it.Capacity, Allocatable: it.Allocatable(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}
		in.Nodes = append(in.Nodes, disruption.Node{
			Name: n.Name, Node: node, NodeClaim: nc, NodePool: c.NodePool.Name, Pods: n.Pods,
			InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Price: n.Price,
			Initialized: true,
		})
	}
	return in
}

// Apply plays a command as if it had run to completion at once: the
// replacements launch as their cheapest option and initialise, every
// evicted pod lands where the command's simulation put it, and the
// candidates go.
func (c *Cluster) Apply(cmd *disruption.Command) error {
	gone := map[string]*ClusterNode{}
	for _, name := range cmd.Candidates {
		gone[name] = nil
	}
	kept := c.Nodes[:0:0]
	for _, n := range c.Nodes {
		if _, ok := gone[n.Name]; ok {
			gone[n.Name] = n
			continue
		}
		kept = append(kept, n)
	}
	for name, n := range gone {
		if n == nil {
			return fmt.Errorf("command candidate %q is not a node of the cluster", name)
		}
	}
	added := make([]*ClusterNode, len(cmd.Replacements))
	for i, nc := range cmd.Replacements {
		it, o, ok := disruption.Launch(nc)
		if !ok {
			return fmt.Errorf("replacement %d has no offering to launch", i)
		}
		c.launched++
		added[i] = &ClusterNode{Name: fmt.Sprintf("replacement-%05d", c.launched), InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price}
	}
	byName := map[string]*ClusterNode{}
	for _, n := range kept {
		byName[n.Name] = n
	}
	moved := map[*corev1.Pod]bool{}
	for _, m := range cmd.Moves {
		to := byName[m.To]
		if m.To == "" && m.Replacement >= 0 && m.Replacement < len(added) {
			to = added[m.Replacement]
		}
		if to == nil {
			return fmt.Errorf("pod %q moves to %q, which is not a node that stays", podKey(m.Pod), m.To)
		}
		moved[m.Pod] = true
		to.Pods = append(to.Pods, bind(m.Pod, to.Name))
	}
	for _, n := range gone {
		for _, p := range n.Pods {
			if !moved[p] {
				return fmt.Errorf("pod %q of candidate %q has nowhere to go", podKey(p), n.Name)
			}
		}
	}
	c.Nodes = append(kept, added...)
	return nil
}
