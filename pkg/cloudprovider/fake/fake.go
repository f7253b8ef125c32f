// Package fake is an in-memory CloudProvider for controller tests: Create
// launches instantly into a map, every call is recorded, and failures are
// injected per method. It never talks to an API server and never creates
// Nodes; tests create the Node a launched NodeClaim should register as.
package fake

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// ProviderName is the fake provider's name and provider-ID scheme.
const ProviderName = "fake"

// CloudProvider is a configurable in-memory cloud. The zero value is not
// usable; call New. Exported fields may be set by tests between calls
// (hold no reference across goroutines without Lock/Unlock).
type CloudProvider struct {
	mu sync.Mutex

	// InstanceTypes are returned by GetInstanceTypes and launched by
	// Create. New fills it with DefaultInstanceTypes.
	InstanceTypes []*scheduling.InstanceType
	// InstanceTypesForNodePool, when set for a NodePool name, overrides
	// InstanceTypes for it.
	InstanceTypesForNodePool map[string][]*scheduling.InstanceType

	// Injected failures: each Next*Error is returned once by the next call
	// of its method and then cleared; the *Error fields (without Next) are
	// returned by every call until reset.
	NextCreateError  error
	CreateError      error
	NextDeleteError  error
	DeleteError      error
	NextGetError     error
	ListError        error
	InstanceTypesErr error
	// InsufficientCapacity makes Create skip these offerings as if the
	// cloud had none, keyed "instanceType/zone/capacityType".
	InsufficientCapacity map[string]bool
	// Drifted is returned by IsDrifted for every NodeClaim.
	Drifted cloudprovider.DriftReason

	// Instances are the live instances by provider ID, as Get and List
	// see them. Tests may add instances directly (e.g. orphans).
	Instances map[string]*v1.NodeClaim
	// CreateCalls and DeleteCalls record the arguments, in order.
	CreateCalls []*v1.NodeClaim
	DeleteCalls []*v1.NodeClaim

	seq int
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a fake cloud offering DefaultInstanceTypes.
func New() *CloudProvider {
	c := &CloudProvider{}
	c.Reset()
	return c
}

// Reset restores the state New returns.
func (c *CloudProvider) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.InstanceTypes = DefaultInstanceTypes()
	c.InstanceTypesForNodePool = nil
	c.NextCreateError, c.CreateError = nil, nil
	c.NextDeleteError, c.DeleteError = nil, nil
	c.NextGetError, c.ListError, c.InstanceTypesErr = nil, nil, nil
	c.InsufficientCapacity = map[string]bool{}
	c.Drifted = ""
	c.Instances = map[string]*v1.NodeClaim{}
	c.CreateCalls, c.DeleteCalls = nil, nil
}

// Lock and Unlock guard the exported fields for tests that change them
// while controllers run.
func (c *CloudProvider) Lock()   { c.mu.Lock() }
func (c *CloudProvider) Unlock() { c.mu.Unlock() }

// Zones of DefaultInstanceTypes.
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c"}

// DefaultInstanceTypes are three small types (amd64, arm64 and one with a
// GPU) offered on-demand and spot in every zone of Zones.
func DefaultInstanceTypes() []*scheduling.InstanceType {
	return []*scheduling.InstanceType{
		NewInstanceType("fake.small", "amd64", "2", "4Gi", 0, 0.10),
		NewInstanceType("fake.small-arm", "arm64", "2", "4Gi", 0, 0.08),
		NewInstanceType("fake.large", "amd64", "8", "32Gi", 0, 0.40),
		NewInstanceType("fake.gpu", "amd64", "8", "32Gi", 1, 1.20),
	}
}

// NewInstanceType builds a type offered on-demand at price and spot at
// 40% of it in every zone of Zones, with 110 pods and a small overhead.
func NewInstanceType(name, arch, cpu, memory string, gpus int64, price float64) *scheduling.InstanceType {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(cpu),
		corev1.ResourceMemory:           resource.MustParse(memory),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if gpus > 0 {
		capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	it := &scheduling.InstanceType{
		Name: name,
		Requirements: map[string][]string{
			v1.LabelInstanceType:   {name},
			v1.LabelArch:           {arch},
			v1.LabelOS:             {"linux"},
			v1.LabelTopologyZone:   slices.Clone(Zones),
			v1.LabelCapacityType:   {v1.CapacityTypeOnDemand, v1.CapacityTypeSpot},
			v1.LabelTopologyRegion: {"test-region"},
		},
		Capacity: capacity,
		Overhead: scheduling.Overhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
		},
	}
	for _, z := range Zones {
		it.Offerings = append(it.Offerings,
			scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price * 0.4, Available: true},
		)
	}
	return it
}

// Name implements cloudprovider.CloudProvider.
func (c *CloudProvider) Name() string { return ProviderName }

// GetSupportedNodeClasses implements cloudprovider.CloudProvider: the fake
// accepts SimNodeClass references (it never reads them).
func (c *CloudProvider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&simv1alpha1.SimNodeClass{}}
}

// GetInstanceTypes implements cloudprovider.CloudProvider.
func (c *CloudProvider) GetInstanceTypes(_ context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.InstanceTypesErr != nil {
		return nil, c.InstanceTypesErr
	}
	if its, ok := c.InstanceTypesForNodePool[np.Name]; ok {
		return its, nil
	}
	return c.InstanceTypes, nil
}

// Create implements cloudprovider.CloudProvider (idempotent per NodeClaim
// UID, like sim): it launches the cheapest
// offering whose instance type, zone and capacity type the NodeClaim's In
// and NotIn requirements allow and whose allocatable fits the requests.
func (c *CloudProvider) Create(_ context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.CreateCalls = append(c.CreateCalls, nodeClaim.DeepCopy())
	if err := c.NextCreateError; err != nil {
		c.NextCreateError = nil
		return nil, err
	}
	if c.CreateError != nil {
		return nil, c.CreateError
	}
	if nodeClaim.UID != "" {
		for _, inst := range c.Instances {
			if inst.UID == nodeClaim.UID {
				return inst.DeepCopy(), nil // the UID is a client token
			}
		}
	}
	its := c.InstanceTypes
	if np, ok := c.InstanceTypesForNodePool[nodeClaim.Labels[v1.LabelNodePool]]; ok {
		its = np
	}
	type choice struct {
		it *scheduling.InstanceType
		o  scheduling.Offering
	}
	var choices []choice
	var iced []string
	for _, it := range its {
		if !allowed(nodeClaim, v1.LabelInstanceType, it.Name) || !allowedType(nodeClaim, it) || !fits(it.Allocatable(), nodeClaim.Spec.Resources.Requests) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !allowed(nodeClaim, v1.LabelTopologyZone, o.Zone) || !allowed(nodeClaim, v1.LabelCapacityType, o.CapacityType) {
				continue
			}
			if key := it.Name + "/" + o.Zone + "/" + o.CapacityType; c.InsufficientCapacity[key] {
				iced = append(iced, key)
				continue
			}
			choices = append(choices, choice{it, o})
		}
	}
	if len(choices) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no offering for nodeclaim %s", nodeClaim.Name), iced...)
	}
	best := slices.MinFunc(choices, func(a, b choice) int {
		return cmp.Or(cmp.Compare(a.o.Price, b.o.Price), cmp.Compare(a.it.Name, b.it.Name), cmp.Compare(a.o.Zone, b.o.Zone))
	})
	c.seq++
	labels := map[string]string{}
	for k, v := range best.it.Requirements {
		if len(v) == 1 {
			labels[k] = v[0]
		}
	}
	labels[v1.LabelInstanceType] = best.it.Name
	labels[v1.LabelTopologyZone] = best.o.Zone
	labels[v1.LabelCapacityType] = best.o.CapacityType
	if np := nodeClaim.Labels[v1.LabelNodePool]; np != "" {
		labels[v1.LabelNodePool] = np
	}
	created := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              nodeClaim.Name,
			UID:               nodeClaim.UID,
			Labels:            labels,
			CreationTimestamp: metav1.Now(),
		},
		Spec: *nodeClaim.Spec.DeepCopy(),
		Status: v1.NodeClaimStatus{
			ProviderID:  fmt.Sprintf("%s:///%s/%s-%d", ProviderName, best.o.Zone, cmp.Or(nodeClaim.Name, "instance"), c.seq),
			ImageID:     "fake-image",
			Capacity:    best.it.Capacity.DeepCopy(),
			Allocatable: best.it.Allocatable(),
		},
	}
	c.Instances[created.Status.ProviderID] = created
	return created.DeepCopy(), nil
}

// allowed reports whether every requirement of nc on key admits value.
func allowed(nc *v1.NodeClaim, key, value string) bool {
	for _, r := range nc.Spec.Requirements {
		if v1.NormalizeLabel(r.Key) == key && !v1.RequirementAdmits(r.Operator, r.Values, value, true) {
			return false
		}
	}
	return true
}

// allowedType checks the requirements on the type's single-valued labels
// (arch, os, ...).
func allowedType(nc *v1.NodeClaim, it *scheduling.InstanceType) bool {
	for k, v := range it.Requirements {
		if len(v) == 1 && k != v1.LabelTopologyZone && k != v1.LabelCapacityType && !allowed(nc, k, v[0]) {
			return false
		}
	}
	return true
}

func fits(allocatable, requests corev1.ResourceList) bool {
	for name, want := range requests {
		have := allocatable[name]
		if have.Cmp(want) < 0 {
			return false
		}
	}
	return true
}

// Delete implements cloudprovider.CloudProvider: the first call removes
// the instance, later calls return NodeClaimNotFoundError.
func (c *CloudProvider) Delete(_ context.Context, nodeClaim *v1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.DeleteCalls = append(c.DeleteCalls, nodeClaim.DeepCopy())
	if err := c.NextDeleteError; err != nil {
		c.NextDeleteError = nil
		return err
	}
	if c.DeleteError != nil {
		return c.DeleteError
	}
	if _, ok := c.Instances[nodeClaim.Status.ProviderID]; !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q not found", nodeClaim.Status.ProviderID))
	}
	delete(c.Instances, nodeClaim.Status.ProviderID)
	return nil
}

// Get implements cloudprovider.CloudProvider.
func (c *CloudProvider) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.NextGetError; err != nil {
		c.NextGetError = nil
		return nil, err
	}
	nc, ok := c.Instances[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q not found", providerID))
	}
	return nc.DeepCopy(), nil
}

// List implements cloudprovider.CloudProvider, sorted by provider ID.
func (c *CloudProvider) List(_ context.Context) ([]*v1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ListError != nil {
		return nil, c.ListError
	}
	var out []*v1.NodeClaim
	for _, pid := range slices.Sorted(maps.Keys(c.Instances)) {
		out = append(out, c.Instances[pid].DeepCopy())
	}
	return out, nil
}

// IsDrifted implements cloudprovider.CloudProvider.
func (c *CloudProvider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Drifted, nil
}
