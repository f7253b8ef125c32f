package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	clusteridentity "github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Defaults of Options.
const (
	// DefaultTerminatedRetention is how long terminated instances stay in
	// the store before they are purged.
	DefaultTerminatedRetention = time.Hour
	// maxLaunchAttempts bounds the offerings one Create tries, as a
	// CreateFleet request bounds its overrides.
	maxLaunchAttempts = 60
)

// Annotations and tags describing the node class an instance was launched
// from, for drift.
const (
	// AnnotationNodeClassHash is set on hydrated NodeClaims and kept as an
	// instance tag: the hash of the node class fields that shape an instance.
	AnnotationNodeClassHash = simv1alpha1.Group + "/simnodeclass-hash"
)

// Drift reasons.
const (
	DriftZone      cloudprovider.DriftReason = "ZoneDrifted"
	DriftImage     cloudprovider.DriftReason = "ImageDrifted"
	DriftNodeClass cloudprovider.DriftReason = "NodeClassDrifted"
)

// ReasonInsufficientFreeAddressesInSubnet is the CreateError reason of a
// launch into a zone whose subnet has no free IP address (EC2's error code).
const ReasonInsufficientFreeAddressesInSubnet = "InsufficientFreeAddressesInSubnet"

// CatalogFunc returns the instance types of the catalog a node class names,
// for its region and zones. Provider filters the result by the node
// class's zones and families and never modifies it.
type CatalogFunc func(nodeClass *simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error)

// Options configure a Provider.
type Options struct {
	// Client reads SimNodeClasses (a manager's cached client is fine).
	Client client.Reader
	// Store is the instance store, shared with the machines runnable and
	// possibly with other processes.
	Store *Store
	// ClusterName is this cluster's identity: written as the
	// sim.joiner.dev/cluster tag on every instance it launches, and the
	// only instances Get, List and Delete act on.
	ClusterName string
	// ClusterID is the cluster's unique identity (see ClusterID and
	// TagClusterID). When set, an instance is this cluster's only if it
	// carries both the name and the id, so two clusters that share a name
	// still never touch each other's instances.
	ClusterID string
	// Catalog resolves a node class's instance catalog; defaults to
	// DefaultCatalog.
	Catalog CatalogFunc
	// Clock defaults to the real clock.
	Clock clock.Clock
	// UnavailableOfferingsTTL defaults to cloudprovider.DefaultUnavailableOfferingsTTL.
	UnavailableOfferingsTTL time.Duration
	// TerminatedRetention defaults to DefaultTerminatedRetention.
	TerminatedRetention time.Duration
	// CallFaults make API calls fail at seeded rates (none by default).
	CallFaults CallFaults
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("Store is required"))
	}
	if err := ValidateClusterName(o.ClusterName); err != nil {
		errs = append(errs, err)
	}
	if o.UnavailableOfferingsTTL < 0 || o.TerminatedRetention < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Catalog == nil {
		o.Catalog = DefaultCatalog
	}
	if o.UnavailableOfferingsTTL == 0 {
		o.UnavailableOfferingsTTL = cloudprovider.DefaultUnavailableOfferingsTTL
	}
	if o.TerminatedRetention == 0 {
		o.TerminatedRetention = DefaultTerminatedRetention
	}
	return errors.Join(errs...)
}

// ValidateClusterName checks a cluster identity: non-empty, at most 63
// characters, no whitespace.
func ValidateClusterName(name string) error {
	if name == "" {
		return errors.New("ClusterName is required: it proves which instances belong to this cluster")
	}
	if len(name) > 63 || strings.ContainsAny(name, " \t\n/") {
		return fmt.Errorf("ClusterName %q must be at most 63 characters without spaces or slashes", name)
	}
	return nil
}

// Provider is the simulated cloud's CloudProvider.
type Provider struct {
	opts        Options
	identity    identity
	namesakes   clusteridentity.Namesakes
	unavailable *unavailableOfferings
	filtered    filteredCatalogs
	// dice is nil unless CallFaults are enabled.
	dice *faultDice
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns a simulated cloud provider acting for opts.ClusterName.
func New(opts Options) (*Provider, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("sim cloud provider options: %w", err)
	}
	p := &Provider{
		opts:        opts,
		identity:    identity{name: opts.ClusterName, id: opts.ClusterID},
		unavailable: newUnavailableOfferings(opts.Clock, opts.UnavailableOfferingsTTL),
	}
	if opts.CallFaults.Enabled() {
		p.dice = newFaultDice(opts.CallFaults)
	}
	return p, nil
}

// Name implements cloudprovider.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// GetSupportedNodeClasses implements cloudprovider.CloudProvider.
func (p *Provider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&simv1alpha1.SimNodeClass{}, &kwokv1alpha1.KWOKNodeClass{}}
}

// nodeClass fetches and defaults the node class a reference names. A
// missing or Ready=False node class is a NodeClassNotReadyError.
func (p *Provider) nodeClass(ctx context.Context, ref *v1.NodeClassReference) (*simv1alpha1.SimNodeClass, error) {
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	if ref.Group == kwokv1alpha1.Group && ref.Kind == kwokv1alpha1.KindKWOKNodeClass {
		return p.kwokNodeClass(ctx, ref)
	}
	if ref.Group != simv1alpha1.Group || ref.Kind != "SimNodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s %s is not a %s SimNodeClass nor a %s KWOKNodeClass", ref.Group, ref.Kind, ref.Name, simv1alpha1.Group, kwokv1alpha1.Group))
	}
	nc := &simv1alpha1.SimNodeClass{}
	if err := p.opts.Client.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("SimNodeClass %q not found; create it or fix the nodeClassRef", ref.Name))
		}
		return nil, fmt.Errorf("getting SimNodeClass %s: %w", ref.Name, err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("SimNodeClass %q is being deleted", ref.Name))
	}
	// No controller is required to mark a SimNodeClass Ready; only an
	// explicit Ready=False stops launches.
	if c := meta.FindStatusCondition(nc.Status.Conditions, simv1alpha1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionFalse {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("SimNodeClass %q is not ready: %s", ref.Name, c.Message))
	}
	nc = nc.DeepCopy()
	nc.ApplyDefaults()
	return nc, nil
}

// instanceTypes returns the node class's instance types with current
// availability. The offerings are the caller's to modify; the rest of each
// type is shared (as with the AWS provider) and must not be changed.
func (p *Provider) instanceTypes(nc *simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) {
	catalog, err := p.opts.Catalog(nc)
	if err != nil {
		return nil, fmt.Errorf("resolving catalog %q of SimNodeClass %s: %w", nc.Spec.Catalog.Name, nc.Name, err)
	}
	its := withOwnOfferings(p.filtered.get(catalog, nc))
	p.unavailable.apply(nc.Name, its)
	return its, nil
}

// GetInstanceTypes implements cloudprovider.CloudProvider.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error) {
	nc, err := p.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	return p.instanceTypes(nc)
}

// Create implements cloudprovider.CloudProvider.
func (p *Provider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	if err := p.dice.callError(); err != nil {
		return nil, err
	}
	if d := p.dice.slow(); d > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.opts.Clock.After(d):
		}
	}
	// The launch already made for the NodeClaim answers a retry (EC2's
	// client token); the planted bug forgets it.
	if existing, err := p.launchedFor(nodeClaim); (err != nil || existing != nil) && !plantedbug.Active(plantedbug.LaunchWithoutToken) {
		if err != nil {
			return nil, err
		}
		return existing, nil
	}
	catalog, err := p.opts.Catalog(nc)
	if err != nil {
		return nil, fmt.Errorf("resolving catalog %q of SimNodeClass %s: %w", nc.Spec.Catalog.Name, nc.Name, err)
	}
	var cands, recentlyFailed []offering.Candidate
	for _, c := range offering.Prioritized(offering.Candidates(p.filtered.get(catalog, nc), nodeClaim.Spec.Requirements, nodeClaim.Spec.Resources.Requests), nodeClaim) {
		if p.unavailable.isUnavailable(nc.Name, c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType) {
			recentlyFailed = append(recentlyFailed, c)
			continue
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		if len(recentlyFailed) > 0 {
			return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
				"every offering it allows failed to launch in the last %s", p.opts.UnavailableOfferingsTTL),
				offering.Describe(recentlyFailed)...)
		}
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
			"no offering of SimNodeClass %s satisfies its requirements and requests", nc.Name))
	}
	if len(cands) > maxLaunchAttempts {
		cands = cands[:maxLaunchAttempts]
	}
	var iced, exhausted []offering.Candidate
	for _, c := range cands {
		if refused, subnet := p.faultRefuses(nc, c); refused {
			if subnet {
				exhausted = append(exhausted, c)
			} else {
				iced = append(iced, c)
			}
			continue
		}
		if err := p.dice.capacityError(c.String()); err != nil {
			p.unavailable.markOffering(c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType)
			return nil, err
		}
		inst, err := p.launch(nodeClaim, nc, c)
		if err != nil {
			return nil, fmt.Errorf("launching %s: %w", c, err)
		}
		if p.dice.ghost() {
			// The instance runs; the response is lost.
			return nil, fmt.Errorf("launching %s: InternalError: status code 500, the response was lost (simulated fault)", c)
		}
		return p.hydrate(inst), nil
	}
	if len(iced) == 0 {
		zones := offeringValues(offeringsOf(exhausted), func(o scheduling.Offering) string { return o.Zone })
		msg := fmt.Sprintf("there are not enough free addresses in the subnet of zone %s to launch an instance "+
			"(SimNodeClass %s, spec.faults.subnetIPExhaustedZones); add address space to the subnet (a secondary CIDR) "+
			"or allow other zones in the NodePool; joiner skips this node class's subnet in the zone for %s (other node classes still launch there)",
			strings.Join(zones, ", "), nc.Name, p.opts.UnavailableOfferingsTTL)
		return nil, cloudprovider.NewCreateError(
			fmt.Errorf("%s: %s", ReasonInsufficientFreeAddressesInSubnet, msg),
			ReasonInsufficientFreeAddressesInSubnet, msg)
	}
	failed := append(iced, exhausted...)
	return nil, cloudprovider.NewInsufficientCapacityError(
		fmt.Errorf("InsufficientInstanceCapacity: the cloud has no capacity for the offerings it allows "+
			"(SimNodeClass %s, spec.faults.insufficientCapacity); they are skipped for %s so another type, zone or capacity type is chosen",
			nc.Name, p.opts.UnavailableOfferingsTTL), offering.Describe(failed)...)
}

// faultRefuses reports whether nc's injected faults refuse a launch of c,
// and whether for its subnet (out of addresses) rather than for capacity;
// what failed is marked unavailable, as a cloud provider's ICE cache does.
// Create and CreateGroup both ask it.
func (p *Provider) faultRefuses(nc *simv1alpha1.SimNodeClass, c offering.Candidate) (refused, subnet bool) {
	switch {
	case nc.SubnetIPExhausted(c.Offering.Zone):
		p.unavailable.markSubnet(nc.Name, c.Offering.Zone)
		return true, true
	case nc.InsufficientCapacity(c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType):
		p.unavailable.markOffering(c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType)
		return true, false
	}
	return false, false
}

func offeringsOf(cs []offering.Candidate) []scheduling.Offering {
	out := make([]scheduling.Offering, len(cs))
	for i, c := range cs {
		out[i] = c.Offering
	}
	return out
}

// launch records a new instance of c for nodeClaim in the store, with the
// Node its machine will register as.
func (p *Provider) launch(nodeClaim *v1.NodeClaim, nc *simv1alpha1.SimNodeClass, c offering.Candidate) (*Instance, error) {
	now := p.opts.Clock.Now().UTC().Truncate(time.Second)
	faults := nc.FaultsOrEmpty()
	labels := offering.InstanceLabels(c.InstanceType, c.Offering, nc.Spec.Region, nodeClaim.Spec.Requirements)
	arch := labels[v1.LabelArch]
	os := labels[v1.LabelOS]
	tags := map[string]string{}
	maps.Copy(tags, nc.Spec.Tags)
	p.identity.tag(tags)
	tags[TagNodeClass] = nc.Name
	tags[AnnotationNodeClassHash] = nodeClassHash(nc)
	if np := nodeClaim.Labels[v1.LabelNodePool]; np != "" {
		tags[TagNodePool] = np
	}
	if nodeClaim.Name != "" {
		tags[TagNodeClaim] = nodeClaim.Name
	}

	// What the kubelet registers, like the user data a real launch bakes in.
	nodeLabels := maps.Clone(nodeClaim.Labels)
	if nodeLabels == nil {
		nodeLabels = map[string]string{}
	}
	maps.Copy(nodeLabels, labels) // the instance's own labels are facts
	var taints []corev1.Taint
	if !faults.UnregisteredTaintMissing {
		taints = append(taints, v1.UnregisteredNoExecuteTaint)
	}
	taints = append(taints, nodeClaim.Spec.Taints...)
	if !faults.DropStartupTaints {
		taints = append(taints, nodeClaim.Spec.StartupTaints...)
	}
	if faults.WrongArchitecture {
		arch = otherArch(arch)
		nodeLabels[v1.LabelArch] = arch
	}

	if nodeClaim.UID != "" {
		tags[TagNodeClaimUID] = string(nodeClaim.UID)
	}
	var inst *Instance
	err := p.opts.Store.Update(func(st *StoreState) error {
		p.purge(st, now)
		if existing := p.instanceOf(st, nodeClaim); existing != nil && !plantedbug.Active(plantedbug.LaunchWithoutToken) {
			own := *existing // a concurrent Create for the same NodeClaim won
			inst = &own
			return nil
		}
		st.Sequence++
		if st.IDPrefix == "" {
			st.IDPrefix = randomHex(4)
		}
		// Like EC2: i-<17 hex digits>, and a resource-name hostname.
		id := fmt.Sprintf("i-%s%09x", st.IDPrefix, st.Sequence)
		nodeName := fmt.Sprintf("%s.%s.compute.internal", id, nc.Spec.Region)
		regLabels := maps.Clone(nodeLabels)
		regLabels[v1.LabelHostname] = nodeName
		inst = &Instance{
			ID:           id,
			Type:         c.InstanceType.Name,
			Zone:         c.Offering.Zone,
			Region:       nc.Spec.Region,
			CapacityType: c.Offering.CapacityType,
			Price:        c.Offering.Price,
			ImageID:      imageID(nc, labels[v1.LabelArch]),
			State:        StatePending,
			LaunchTime:   now,
			Tags:         tags,
			Labels:       labels,
			RunningAt:    now.Add(nc.Spec.LaunchDelay.Duration),
			Registration: Registration{
				NodeName:     nodeName,
				Labels:       regLabels,
				Taints:       taints,
				Architecture: arch,
				OS:           os,
				Capacity:     c.InstanceType.Capacity.DeepCopy(),
				Allocatable:  c.InstanceType.Allocatable(),
				After:        now.Add(nc.Spec.LaunchDelay.Duration + nc.Spec.RegistrationDelay.Duration),
				Never:        faults.NeverRegister,
				// The device plugin that would advertise them never runs.
				WithoutExtendedResources: faults.ExtendedResourcesMissing,
			},
		}
		st.Instances[id] = inst
		// The store keeps the instance in its state, which later Updates
		// change: the caller gets a copy (the maps never change after
		// launch).
		own := *inst
		inst = &own
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recording instance: %w", err)
	}
	return inst, nil
}

// instanceOf returns this cluster's live instance launched for
// nodeClaim's UID, or nil.
func (p *Provider) instanceOf(st *StoreState, nodeClaim *v1.NodeClaim) *Instance {
	if nodeClaim.UID == "" {
		return nil
	}
	for _, inst := range st.Instances {
		if p.owned(inst) && inst.State != StateTerminated && inst.Tags[TagNodeClaimUID] == string(nodeClaim.UID) {
			return inst
		}
	}
	return nil
}

// launchedFor returns the hydrated instance already launched for
// nodeClaim, or nil.
func (p *Provider) launchedFor(nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	var out *v1.NodeClaim
	err := p.opts.Store.View(func(st *StoreState) error {
		if inst := p.instanceOf(st, nodeClaim); inst != nil {
			out = p.hydrate(inst)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("looking up earlier launches: %w", err)
	}
	return out, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func otherArch(arch string) string {
	if arch == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// imageID is the image an instance of arch launched from nc boots: one per
// region, catalog, architecture and, when the node class pins one, image
// version. IsDrifted compares it with the image a launch would use now.
func imageID(nc *simv1alpha1.SimNodeClass, arch string) string {
	id := fmt.Sprintf("sim-image-%s-%s-%s", nc.Spec.Region, nc.Spec.Catalog.Name, arch)
	if v := nc.Spec.ImageVersion; v != "" {
		id += "-" + v
	}
	return id
}

// nodeClassHash hashes what shapes an instance launched from nc (region,
// catalog, tags). Zones, delays and faults are not part of it: zones have
// their own drift reason, the others only affect launches.
func nodeClassHash(nc *simv1alpha1.SimNodeClass) string {
	data, _ := json.Marshal(struct {
		Region  string
		Catalog simv1alpha1.Catalog
		Tags    map[string]string
	}{nc.Spec.Region, nc.Spec.Catalog, nc.Spec.Tags})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// purge drops terminated instances past their retention.
func (p *Provider) purge(st *StoreState, now time.Time) {
	for id, inst := range st.Instances {
		if inst.State == StateTerminated && inst.TerminatedAt != nil && now.Sub(*inst.TerminatedAt) > p.opts.TerminatedRetention {
			delete(st.Instances, id)
		}
	}
}

// owned reports whether inst belongs to this cluster.
func (p *Provider) owned(inst *Instance) bool {
	return p.identity.owns(inst)
}

// hydrate turns an instance into the NodeClaim the interface promises.
func (p *Provider) hydrate(inst *Instance) *v1.NodeClaim {
	labels := maps.Clone(inst.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              inst.Tags[TagNodeClaim],
			UID:               types.UID(inst.Tags[TagNodeClaimUID]),
			Labels:            labels,
			Annotations:       map[string]string{AnnotationNodeClassHash: inst.Tags[AnnotationNodeClassHash]},
			CreationTimestamp: metav1.NewTime(inst.LaunchTime),
		},
		Status: v1.NodeClaimStatus{
			ProviderID:  inst.ProviderID(),
			ImageID:     inst.ImageID,
			Capacity:    inst.Registration.Capacity.DeepCopy(),
			Allocatable: inst.Registration.Allocatable.DeepCopy(),
		},
	}
	if np := inst.Tags[TagNodePool]; np != "" {
		nc.Labels[v1.LabelNodePool] = np
	}
	return nc
}

// lookup returns this cluster's live instance for providerID, a
// NodeClaimNotFoundError when there is none, or a NodeClaimNotOwnedError
// when a live instance exists but is not provably this cluster's.
func (p *Provider) lookup(st *StoreState, pid string) (*Instance, error) {
	_, id, err := ParseProviderID(pid)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst := st.Instances[id]
	if inst == nil || inst.State == StateTerminated {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	if !p.owned(inst) {
		return nil, cloudprovider.NewNodeClaimNotOwnedError(fmt.Errorf("instance %s lacks this cluster's identity tags %s=%s %s=%s (it has %s=%q %s=%q)",
			id, TagCluster, p.identity.name, TagClusterID, p.identity.id, TagCluster, inst.Tags[TagCluster], TagClusterID, inst.Tags[TagClusterID]))
	}
	return inst, nil
}

// Get implements cloudprovider.CloudProvider.
func (p *Provider) Get(_ context.Context, pid string) (*v1.NodeClaim, error) {
	if err := p.dice.callError(); err != nil {
		return nil, err
	}
	var out *v1.NodeClaim
	err := p.opts.Store.View(func(st *StoreState) error {
		inst, err := p.lookup(st, pid)
		if err != nil {
			return err
		}
		out = p.hydrate(inst)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// List implements cloudprovider.CloudProvider.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	if err := p.dice.callError(); err != nil {
		return nil, err
	}
	var out []*v1.NodeClaim
	var namesakes []*Instance
	err := p.opts.Store.View(func(st *StoreState) error {
		ids := slices.Sorted(maps.Keys(st.Instances))
		for _, id := range ids {
			inst := st.Instances[id]
			if inst.State == StateTerminated {
				continue
			}
			if p.owned(inst) {
				out = append(out, p.hydrate(inst))
			} else if p.identity.namesake(inst) {
				namesakes = append(namesakes, inst)
			}
		}
		return nil
	})
	p.identity.reportNamesakes(ctx, &p.namesakes, namesakes)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	return out, nil
}

// Delete implements cloudprovider.CloudProvider. Termination is immediate:
// the first call terminates the instance and returns nil, later calls
// return NodeClaimNotFoundError.
func (p *Provider) Delete(_ context.Context, nodeClaim *v1.NodeClaim) error {
	if err := p.dice.callError(); err != nil {
		return err
	}
	pid := nodeClaim.Status.ProviderID
	err := p.opts.Store.Update(func(st *StoreState) error {
		now := p.opts.Clock.Now().UTC()
		p.purge(st, now)
		inst, err := p.lookup(st, pid)
		if err != nil {
			return err
		}
		inst.State = StateTerminated
		inst.TerminatedAt = &now
		return nil
	})
	return err
}

// RepairPolicies implements cloudprovider.RepairPolicyProvider with the
// policy every Kubernetes node has: a Node whose Ready condition is False
// or Unknown for 30 minutes is replaced (AWS's default, without its
// accelerator and storage agents' conditions, which simulated nodes never
// report).
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
	}
}

// IsDrifted implements cloudprovider.CloudProvider: an instance drifts
// when its zone left the node class's zones, when it booted another image
// than a launch would use now (spec.imageVersion changed, as an AMI does on
// AWS), or when the node class's region, catalog or tags changed since
// launch.
func (p *Provider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	var inst *Instance
	err = p.opts.Store.View(func(st *StoreState) error {
		i, err := p.lookup(st, nodeClaim.Status.ProviderID)
		if err != nil {
			return err
		}
		c := *i
		inst = &c
		return nil
	})
	if err != nil {
		return "", err
	}
	if !slices.Contains(nc.Spec.Zones, inst.Zone) {
		return DriftZone, nil
	}
	if inst.ImageID != imageID(nc, inst.Labels[v1.LabelArch]) {
		return DriftImage, nil
	}
	if inst.Tags[AnnotationNodeClassHash] != nodeClassHash(nc) {
		return DriftNodeClass, nil
	}
	return "", nil
}
