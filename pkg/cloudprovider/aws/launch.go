package aws

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// maxFleetTypes bounds the instance types of one CreateFleet (Karpenter: 60).
const maxFleetTypes = 60

// AnnotationInstanceProfileName records the instance profile an instance
// was launched with, as Karpenter's NodeClaims do.
const AnnotationInstanceProfileName = awsv1.Group + "/instance-profile-name"

// Reasons of CreateErrors.
const (
	ReasonInsufficientFreeAddressesInSubnet = codeSubnetExhausted
	ReasonLaunchTemplateFailed              = "LaunchTemplateCreationFailed"
	ReasonUserDataFailed                    = "UserDataGenerationFailed"
	ReasonFleetFailed                       = "CreateFleetFailed"
	ReasonPlacementFailed                   = "PlacementGroupResolutionFailed"
)

// Create implements cloudprovider.CloudProvider.
func (p *Provider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if existing, err := p.launchedFor(ctx, nodeClaim); err != nil || existing != nil {
		if err != nil {
			return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
		}
		// The Create that launched it may have failed to tag it; CreateTags
		// is idempotent, and a restarted controller finds it by the tags.
		if id, err := parseProviderID(existing.Status.ProviderID); err == nil {
			if err := p.tagNodeClaim(ctx, id, nodeClaim); err != nil {
				return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
			}
		}
		return existing, nil
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
	}
	cands := offering.Candidates(its, nodeClaim.Spec.Requirements, nodeClaim.Spec.Resources.Requests)
	if len(cands) == 0 {
		return nil, p.noCandidates(nodeClaim, nc, its)
	}
	cands = chooseCapacityType(withoutExotic(offering.Prioritized(cands, nodeClaim), nodeClaim))
	inst, cand, err := p.launch(ctx, nodeClaim, nc, cands)
	if err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
	}
	// Remembered before tagging: a retry after a failed CreateTags gets
	// this instance (and tags it) instead of launching a second one.
	out := p.hydrateLaunch(nodeClaim, nc, inst, cand)
	p.instances.remember(nodeClaim.UID, out)
	if err := p.tagNodeClaim(ctx, inst.ID, nodeClaim); err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", nodeClaim.Name, err)
	}
	return out, nil
}

// noCandidates explains why no offering can launch nodeClaim: subnets out
// of addresses are named with their counts (seed 003); otherwise it is
// insufficient capacity.
func (p *Provider) noCandidates(nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass, its []*scheduling.InstanceType) error {
	var exhausted []string
	ignoring := make([]*scheduling.InstanceType, len(its))
	for i, it := range its {
		c := *it
		c.Offerings = slices.Clone(it.Offerings)
		for j := range c.Offerings {
			o := &c.Offerings[j]
			o.Available = !p.ice.isUnavailable(o.CapacityType, it.Name, o.Zone)
		}
		ignoring[i] = &c
	}
	if len(offering.Candidates(ignoring, nodeClaim.Spec.Requirements, nodeClaim.Spec.Resources.Requests)) > 0 {
		for _, s := range nc.Status.Subnets {
			if n, ok := p.exhausted.isExhausted(s.ID); ok {
				exhausted = append(exhausted, fmt.Sprintf("subnet %s (%s) has %d free addresses", s.ID, s.Zone, n))
			}
		}
	}
	if len(exhausted) > 0 {
		msg := strings.Join(exhausted, "; ") + fmt.Sprintf(": not enough to launch an instance for EC2NodeClass %s; add address space (a secondary CIDR or a larger subnet) or select more subnets in spec.subnetSelectorTerms", nc.Name)
		return cloudprovider.NewCreateError(fmt.Errorf("launching nodeclaim %s: %s: %s", nodeClaim.Name, ReasonInsufficientFreeAddressesInSubnet, msg), ReasonInsufficientFreeAddressesInSubnet, msg)
	}
	return cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
		"launching nodeclaim %s: no available offering of EC2NodeClass %s satisfies its requirements and requests (offerings that failed to launch stay unavailable for %s)", nodeClaim.Name, nc.Name, p.opts.UnavailableOfferingsTTL))
}

// withoutExotic drops GPU, accelerator and bare-metal types unless the
// NodeClaim asks for them (an extended resource or a requirement on their
// labels) or nothing else is left, as Karpenter's exotic filter does:
// price-capacity-optimized may otherwise pick a GPU box for a web pod when
// spot prices are close.
func withoutExotic(cands []offering.Candidate, nodeClaim *v1.NodeClaim) []offering.Candidate {
	for name := range nodeClaim.Spec.Resources.Requests {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourcePods && name != corev1.ResourceEphemeralStorage {
			return cands
		}
	}
	for _, r := range nodeClaim.Spec.Requirements {
		switch r.Key {
		case v1.LabelAWSInstanceGPUName, v1.LabelAWSInstanceGPUManufacturer, v1.LabelAWSInstanceGPUCount, v1.LabelAWSInstanceGPUMemory,
			v1.LabelAWSInstanceAcceleratorName, v1.LabelAWSInstanceAcceleratorManufacturer, v1.LabelAWSInstanceAcceleratorCount:
			return cands
		}
	}
	var out []offering.Candidate
	for _, c := range cands {
		req := c.InstanceType.Requirements
		exotic := len(req[v1.LabelAWSInstanceGPUCount]) > 0 || len(req[v1.LabelAWSInstanceAcceleratorCount]) > 0 ||
			slices.Contains(req[v1.LabelAWSInstanceSize], "metal")
		if !exotic {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cands
	}
	return out
}

// chooseCapacityType keeps the capacity reservations' candidates when the
// NodeClaim may use any (they are paid for already), else spot candidates
// when there are any (they are cheaper and the NodeClaim allows them),
// else on-demand, as Karpenter orders them; spot offerings pricier than
// the cheapest on-demand one are dropped.
func chooseCapacityType(cands []offering.Candidate) []offering.Candidate {
	var reserved []offering.Candidate
	for _, c := range cands {
		if c.Offering.CapacityType == v1.CapacityTypeReserved && c.Offering.ReservationID != "" {
			reserved = append(reserved, c)
		}
	}
	if len(reserved) > 0 {
		return reserved
	}
	cheapestOD := -1.0
	for _, c := range cands {
		if c.Offering.CapacityType == v1.CapacityTypeOnDemand && (cheapestOD < 0 || c.Offering.Price < cheapestOD) {
			cheapestOD = c.Offering.Price
		}
	}
	var spot, od []offering.Candidate
	for _, c := range cands {
		switch c.Offering.CapacityType {
		case v1.CapacityTypeSpot:
			if cheapestOD < 0 || c.Offering.Price <= cheapestOD {
				spot = append(spot, c)
			}
		case v1.CapacityTypeOnDemand:
			od = append(od, c)
		}
	}
	if len(spot) > 0 {
		return spot
	}
	return od
}

// templateGroup is the instance types that share one launch template:
// same AMI (architecture) and same kubelet max-pods.
type templateGroup struct {
	ami     string
	maxPods int32
	// efa is the number of EFA interfaces attached: every one the type
	// supports when the NodeClaim requests vpc.amazonaws.com/efa, as
	// Karpenter does, else none.
	efa int32
	// reservation is the capacity reservation the group's launches target.
	reservation string
	types       []*scheduling.InstanceType
}

// launch builds launch templates and one CreateFleet request for the
// candidates (one capacity type) and launches through the batcher.
func (p *Provider) launch(ctx context.Context, nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass, cands []offering.Candidate) (*fleetInstance, offering.Candidate, error) {
	capacityType := cands[0].Offering.CapacityType
	// NodeOverlay prices the cloud does not know: launch in the
	// NodeClaim's order (Karpenter switches to the prioritized strategies).
	prioritized := nodeClaim.Annotations[v1alpha1.AnnotationPriceOverlayApplied] == "true"
	// Cheapest first; at most maxFleetTypes types.
	// A reserved candidate launches into its own reservation, so it is
	// keyed by type and reservation.
	var typeOrder []string
	byType := map[string]*scheduling.InstanceType{}
	zonesOf := map[string][]string{}
	reservationOf := map[string]string{}
	for _, c := range cands {
		name := c.InstanceType.Name
		if c.Offering.ReservationID != "" {
			name += "@" + c.Offering.ReservationID
			reservationOf[name] = c.Offering.ReservationID
		}
		if _, ok := byType[name]; !ok {
			if len(typeOrder) == maxFleetTypes {
				continue
			}
			typeOrder = append(typeOrder, name)
			byType[name] = c.InstanceType
		}
		zonesOf[name] = append(zonesOf[name], c.Offering.Zone)
	}
	subnets, err := p.subnets(ctx, nc, false)
	if err != nil {
		return nil, offering.Candidate{}, fmt.Errorf("resolving subnets: %w", err)
	}
	bestSubnet := p.bestSubnets(subnets)
	groups := map[string]*templateGroup{}
	var groupOrder []string
	efaRequest := nodeClaim.Spec.Resources.Requests[ResourceEFA]
	requestsEFA := !efaRequest.IsZero()
	for _, name := range typeOrder {
		it := byType[name]
		ami := amiFor(nc, it)
		if ami == "" {
			continue
		}
		maxPods := int32(it.Capacity.Pods().Value())
		var efa int32
		if requestsEFA {
			q := it.Capacity[ResourceEFA]
			efa = int32(q.Value())
		}
		key := fmt.Sprintf("%s/%d/%d/%s", ami, maxPods, efa, reservationOf[name])
		g, ok := groups[key]
		if !ok {
			g = &templateGroup{ami: ami, maxPods: maxPods, efa: efa, reservation: reservationOf[name]}
			groups[key] = g
			groupOrder = append(groupOrder, key)
		}
		g.types = append(g.types, it)
	}
	if len(groups) == 0 {
		return nil, offering.Candidate{}, cloudprovider.NewCreateError(errors.New("no AMI in status.amis matches the architecture of any allowed instance type"), "NoCompatibleAMI",
			fmt.Sprintf("EC2NodeClass %s resolves no AMI for the architectures of the instance types this NodeClaim allows; select images for them in spec.amiSelectorTerms", nc.Name))
	}
	tags := p.resourceTags(nc, nodeClaim)
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	templateReservation := map[string]string{}
	for _, key := range groupOrder {
		g := groups[key]
		lt, err := p.ensureTemplate(ctx, nodeClaim, nc, g, tags)
		if err != nil {
			return nil, offering.Candidate{}, err
		}
		templateReservation[lt] = g.reservation
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
		}
		type ov struct {
			typ string
			s   subnetInfo
		}
		var ovs []ov
		for _, it := range g.types {
			key := it.Name
			if g.reservation != "" {
				key += "@" + g.reservation
			}
			for _, zone := range zonesOf[key] {
				if s, ok := bestSubnet[zone]; ok {
					ovs = append(ovs, ov{key, s})
				}
			}
		}
		// Subnets with the most free addresses first.
		slices.SortStableFunc(ovs, func(a, b ov) int { return cmp.Compare(b.s.AvailableIPs, a.s.AvailableIPs) })
		for _, o := range ovs {
			ovr := ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(byType[o.typ].Name), SubnetId: aws.String(o.s.ID),
			}
			if prioritized {
				// Lower is tried first: the NodeClaim's (overlaid) order.
				ovr.Priority = aws.Float64(float64(slices.Index(typeOrder, o.typ)))
			}
			cfg.Overrides = append(cfg.Overrides, ovr)
		}
		if len(cfg.Overrides) > 0 {
			configs = append(configs, cfg)
		}
	}
	if len(configs) == 0 {
		return nil, offering.Candidate{}, p.noCandidates(nodeClaim, nc, nil)
	}
	// EC2 knows reserved instances as on-demand ones launched into a
	// reservation (the launch template's target).
	fleetCapacityType := ec2types.DefaultTargetCapacityType(capacityType)
	if capacityType == v1.CapacityTypeReserved {
		fleetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: fleetCapacityType,
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2Tags(tags)},
		},
		Context: nc.Spec.Context,
	}
	switch {
	case capacityType == v1.CapacityTypeSpot && prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case capacityType == v1.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	res := p.fleet.launch(ctx, in)
	if res.err != nil {
		code := errorCode(res.err)
		if code == "" {
			code = ReasonFleetFailed
		}
		return nil, offering.Candidate{}, cloudprovider.NewCreateError(res.err, code, fmt.Sprintf("CreateFleet failed: %v", res.err))
	}
	if res.instance == nil {
		return nil, offering.Candidate{}, p.fleetErrors(ctx, nc, capacityType, res.errors, subnets)
	}
	inst := res.instance
	zone := ""
	for _, s := range subnets {
		if s.ID == inst.SubnetID {
			zone = s.Zone
		}
	}
	reservation := templateReservation[inst.LaunchTemplate]
	if reservation != "" {
		p.reserved.launched(reservation)
	}
	if pg, err := p.placementGroup(ctx, nc); err == nil && pg != nil {
		inst.PlacementGroupID = pg.ID
	}
	for _, c := range cands {
		if c.InstanceType.Name == inst.InstanceType && (zone == "" || c.Offering.Zone == zone) && c.Offering.ReservationID == reservation {
			return inst, c, nil
		}
	}
	return inst, offering.Candidate{InstanceType: byType[inst.InstanceType], Offering: scheduling.Offering{Zone: zone, CapacityType: capacityType, ReservationID: reservation}}, nil
}

// fleetErrors turns a fleet that launched nothing into the typed error:
// ICE codes mark offerings unavailable (InsufficientCapacityError), a
// subnet without free addresses is marked exhausted and named.
func (p *Provider) fleetErrors(ctx context.Context, nc *awsv1.EC2NodeClass, capacityType string, errs []ec2types.CreateFleetError, subnets []subnetInfo) error {
	for _, e := range errs {
		if aws.ToString(e.ErrorCode) == codeSubnetExhausted {
			// Name the real count, not the cached one.
			if fresh, err := p.subnets(ctx, nc, true); err == nil {
				subnets = fresh
			}
			break
		}
	}
	zoneOf := map[string]subnetInfo{}
	for _, s := range subnets {
		zoneOf[s.ID] = s
	}
	var iced, exhausted, other []string
	var otherCode string
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		var typ, subnet string
		if o := e.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			typ, subnet = string(o.Overrides.InstanceType), aws.ToString(o.Overrides.SubnetId)
		}
		s := zoneOf[subnet]
		switch {
		case code == codeSubnetExhausted:
			p.exhausted.mark(subnet, s.AvailableIPs)
			exhausted = append(exhausted, fmt.Sprintf("subnet %s (%s) has %d free addresses", subnet, s.Zone, s.AvailableIPs))
		case iceCodes[code]:
			p.ice.mark(capacityType, typ, s.Zone)
			iced = append(iced, fmt.Sprintf("%s/%s/%s", typ, s.Zone, capacityType))
		case strings.Contains(code, "LaunchTemplate") && strings.Contains(code, "NotFound"):
			p.templates.mu.Lock()
			p.templates.names = map[string]string{}
			p.templates.mu.Unlock()
			fallthrough
		default:
			otherCode = code
			other = append(other, fmt.Sprintf("%s: %s", code, aws.ToString(e.ErrorMessage)))
		}
	}
	slices.Sort(exhausted)
	exhausted = slices.Compact(exhausted)
	switch {
	case len(exhausted) > 0 && len(other) == 0:
		msg := strings.Join(exhausted, "; ") + fmt.Sprintf(": not enough to launch an instance for EC2NodeClass %s; add address space (a secondary CIDR or a larger subnet) or select more subnets in spec.subnetSelectorTerms", nc.Name)
		return cloudprovider.NewCreateError(fmt.Errorf("%s: %s", ReasonInsufficientFreeAddressesInSubnet, msg), ReasonInsufficientFreeAddressesInSubnet, msg)
	case len(other) == 0 && len(iced) > 0:
		return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("CreateFleet found no capacity; these offerings are skipped for %s", p.ice.ttl), iced...)
	case len(other) > 0:
		msg := strings.Join(other, "; ")
		return cloudprovider.NewCreateError(fmt.Errorf("creating fleet: %s", msg), otherCode, msg)
	}
	return cloudprovider.NewCreateError(errors.New("creating fleet: no instance and no error"), ReasonFleetFailed, "CreateFleet launched no instance and reported no error")
}

// amiFor returns the node class's image for an instance type: the first
// of status.amis whose requirements (architecture, accelerator variant)
// the type meets, so a GPU type gets the NVIDIA variant of an alias.
func amiFor(nc *awsv1.EC2NodeClass, it *scheduling.InstanceType) string {
	for _, ami := range nc.Status.AMIs {
		if amiAdmits(ami, it.Requirements) {
			return ami.ID
		}
	}
	return ""
}

// ensureTemplate generates userData for a group and returns its launch
// template's name.
func (p *Provider) ensureTemplate(ctx context.Context, nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass, g *templateGroup, tags map[string]string) (string, error) {
	family := nc.AMIFamily()
	labels := maps.Clone(nodeClaim.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, r := range nodeClaim.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && !v1.WellKnownLabels.Has(v1.NormalizeLabel(r.Key)) && !strings.HasPrefix(r.Key, v1.AWSLabelDomain+"/instance") {
			labels[r.Key] = r.Values[0]
		}
	}
	labels[v1.LabelAWSEC2NodeClass] = nc.Name
	if family != awsv1.AMIFamilyCustom {
		labels[v1.LabelDoNotSyncTaints] = "true"
	}
	taints := append([]corev1.Taint{v1.UnregisteredNoExecuteTaint}, nodeClaim.Spec.Taints...)
	taints = append(taints, nodeClaim.Spec.StartupTaints...)
	maxPods := g.maxPods
	ud, err := p.opts.UserData(UserDataOptions{
		AMIFamily:           family,
		ClusterName:         p.opts.ClusterName,
		ClusterEndpoint:     p.opts.ClusterEndpoint,
		CABundle:            p.opts.CABundle,
		ClusterCIDR:         p.opts.ClusterCIDR,
		Labels:              labels,
		Taints:              taints,
		MaxPods:             &maxPods,
		Kubelet:             nc.Spec.Kubelet,
		CustomUserData:      nc.Spec.UserData,
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
	})
	if err != nil {
		return "", cloudprovider.NewCreateError(fmt.Errorf("generating userData: %w", err), ReasonUserDataFailed,
			fmt.Sprintf("generating userData for EC2NodeClass %s failed: %v; fix spec.userData", nc.Name, err))
	}
	if raw, err := base64.StdEncoding.DecodeString(ud); err == nil {
		metrics.EC2NodeClassUserDataBytes.WithLabelValues(nc.Name).Set(float64(len(raw)))
	}
	sgs := make([]string, len(nc.Status.SecurityGroups))
	for i, sg := range nc.Status.SecurityGroups {
		sgs[i] = sg.ID
	}
	spec := &templateSpec{
		AMI:            g.ami,
		UserData:       ud,
		SecurityGroups: sgs,
		Profile:        nc.Status.InstanceProfile,
		Metadata:       metadataOptions(nc.Spec.MetadataOptions),
		BlockDevices:   blockDevices(nc, family),
		Monitoring:     aws.ToBool(nc.Spec.DetailedMonitoring),
		PublicIP:       nc.Spec.AssociatePublicIPAddress,
		EFAInterfaces:  g.efa,
		Tags:           tags,
	}
	if ct := nc.Spec.ConnectionTracking; ct != nil {
		spec.ConnectionTracking = &ec2types.ConnectionTrackingSpecificationRequest{
			TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
		}
	}
	if err := p.placeTemplate(ctx, spec, nc, g.reservation); err != nil {
		return "", cloudprovider.NewCreateError(err, ReasonPlacementFailed, err.Error())
	}
	name, err := p.templates.ensure(ctx, spec, nc)
	if err != nil {
		return "", cloudprovider.NewCreateError(err, cmp.Or(errorCode(err), ReasonLaunchTemplateFailed), err.Error())
	}
	return name, nil
}

// tagNodeClaim names the instance's NodeClaim on it: the tagging Karpenter
// does after registration, done at launch so a restarted controller finds
// the instance of a NodeClaim UID (Create's idempotency).
func (p *Provider) tagNodeClaim(ctx context.Context, id string, nodeClaim *v1.NodeClaim) error {
	tags := map[string]string{}
	if nodeClaim.Name != "" {
		tags[awsv1.TagNodeClaim] = nodeClaim.Name
	}
	if nodeClaim.UID != "" {
		tags[TagNodeClaimUID] = string(nodeClaim.UID)
	}
	if len(tags) == 0 {
		return nil
	}
	if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(tags)}); err != nil {
		return fmt.Errorf("tagging instance %s with its nodeclaim: %w", id, err)
	}
	return nil
}

// hydrateLaunch is the NodeClaim Create returns.
func (p *Provider) hydrateLaunch(nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass, inst *fleetInstance, c offering.Candidate) *v1.NodeClaim {
	labels := map[string]string{}
	if c.InstanceType != nil {
		labels = offering.InstanceLabels(c.InstanceType, c.Offering, p.opts.Region, nodeClaim.Spec.Requirements)
	}
	labels[v1.LabelAWSEC2NodeClass] = nc.Name
	if np := nodeClaim.Labels[v1.LabelNodePool]; np != "" {
		labels[v1.LabelNodePool] = np
	}
	if inst.Lifecycle == "spot" {
		labels[v1.LabelCapacityType] = v1.CapacityTypeSpot
	}
	reservationLabels(labels, nc, c.Offering.ReservationID)
	if inst.PlacementGroupID != "" {
		labels[v1.LabelAWSPlacementGroupID] = inst.PlacementGroupID
	}
	out := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              nodeClaim.Name,
			UID:               nodeClaim.UID,
			Labels:            labels,
			CreationTimestamp: metav1.NewTime(p.clock.Now()),
			Annotations: map[string]string{
				awsv1.AnnotationEC2NodeClassHash:        nc.Hash(),
				awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion,
				AnnotationInstanceProfileName:           nc.Status.InstanceProfile,
			},
		},
		Status: v1.NodeClaimStatus{
			ProviderID: providerID(c.Offering.Zone, inst.ID),
			ImageID:    imageOf(nc, c.InstanceType),
		},
	}
	if c.InstanceType != nil {
		out.Status.Capacity = c.InstanceType.Capacity.DeepCopy()
		out.Status.Allocatable = c.InstanceType.Allocatable()
	}
	return out
}

func imageOf(nc *awsv1.EC2NodeClass, it *scheduling.InstanceType) string {
	if it == nil {
		return ""
	}
	return amiFor(nc, it)
}

// errorCode is the AWS error code in err's chain, or "".
func errorCode(err error) string {
	var apiErr interface{ ErrorCode() string }
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
