package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// placementProvider is a provider whose EC2 calls pass the local EC2's
// placement front (capacity reservations and placement groups, which moto
// lacks) before the fault injector and moto.
func placementProvider(t *testing.T) (*awsprovider.Provider, *localec2.PlacementFront, *ec2.Client) {
	t.Helper()
	front := localec2.NewPlacementFront(local.faults)
	cfg := awsConfig()
	cfg.HTTPClient = &http.Client{Transport: front}
	api := ec2.NewFromConfig(cfg)
	opts := providerOptions(t, "")
	opts.EC2 = api
	p, err := awsprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, front, api
}

// An EC2NodeClass selecting a capacity reservation (by tag) and a placement
// group becomes Ready with the reservation in its status; the solver plans
// the reservation's room first (capacity type reserved, pinned to its zone)
// and on-demand for the rest; the launches land in the reservation and the
// placement group on the local EC2, and once the reservation is used up a
// NodeClaim that only takes reserved capacity is refused.
func TestCapacityReservationAndPlacementGroup(t *testing.T) {
	ctx := t.Context()
	p, front, api := placementProvider(t)
	zone := local.cluster.Subnets[0].Zone
	team := test.Name(t, "team")
	res, err := api.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(zone), InstanceCount: aws.Int32(2), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String(team)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	crID := aws.ToString(res.CapacityReservation.CapacityReservationId)
	group := test.Name(t, "pg")
	if _, err := api.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String(group), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}

	nc := readyNodeClass(t, p, nodeClass(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": team}}}
		nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: group}
	}))
	for _, c := range []string{awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypePlacementGroupReady} {
		if !nc.StatusConditions().IsTrue(c) {
			t.Errorf("%s is not True: %+v", c, nc.StatusConditions().Get(c))
		}
	}
	if got := nc.Status.CapacityReservations; len(got) != 1 || got[0].ID != crID || got[0].InstanceType != "m5.large" || got[0].AvailabilityZone != zone ||
		got[0].OwnerID == "" || got[0].InstanceMatchCriteria != "targeted" || got[0].ReservationType != awsv1.CapacityReservationTypeDefault || got[0].State != awsv1.CapacityReservationStateActive {
		t.Fatalf("status.capacityReservations = %+v, want %s (m5.large in %s, targeted, default, active)", got, crID, zone)
	}

	np := nodePool(nc)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}},
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
	}
	its, err := p.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	var m5 *scheduling.InstanceType
	for _, it := range its {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5 == nil {
		t.Fatal("m5.large is not offered")
	}
	var reserved, onDemand *scheduling.Offering
	for i, o := range m5.Offerings {
		switch {
		case o.CapacityType == v1.CapacityTypeReserved:
			reserved = &m5.Offerings[i]
		case o.CapacityType == v1.CapacityTypeOnDemand && o.Zone == zone:
			onDemand = &m5.Offerings[i]
		}
	}
	if reserved == nil || onDemand == nil {
		t.Fatalf("m5.large offerings %+v, want a reserved one and an on-demand one in %s", m5.Offerings, zone)
	}
	if reserved.ReservationID != crID || reserved.ReservationCapacity != 2 || reserved.Zone != zone || !reserved.Available {
		t.Errorf("reserved offering %+v, want reservation %s with 2 left in %s", *reserved, crID, zone)
	}
	if want := onDemand.Price / 10_000_000; reserved.Price != want {
		t.Errorf("reserved price %g, want the on-demand price over ten million (%g), as Karpenter prices it", reserved.Price, want)
	}

	// Four pods that each fill an m5.large: the solver plans the
	// reservation's two first, then on-demand.
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("%s-pod-%d", team, i))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}}}},
		})
	}
	plan, err := scheduling.Solve(&scheduling.Snapshot{
		NodePools: []*scheduling.NodePool{{
			Name: np.Name, NodeClassRef: scheduling.NodeClassRef{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name},
			Requirements: []scheduling.Requirement{
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}},
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
			},
		}},
		InstanceTypes: map[string][]*scheduling.InstanceType{np.Name: its},
		Pods:          pods,
	}, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodeClaims) != 4 {
		t.Fatalf("planned %d NodeClaims, want 4 (one pod each)", len(plan.NewNodeClaims))
	}
	counts := map[string]int{}
	var launched []*v1.NodeClaim
	for i, planned := range plan.NewNodeClaims {
		claim := nodeclaims.NewNodeClaim(np, planned)
		claim.Name = fmt.Sprintf("%s-%d", test.Name(t, "claim"), i)
		claim.UID = types.UID("uid-" + claim.Name)
		got, err := p.Create(ctx, claim)
		if err != nil {
			t.Fatalf("launching planned NodeClaim %d (%v): %v", i, claim.Spec.Requirements, err)
		}
		ct := got.Labels[v1.LabelCapacityType]
		counts[ct]++
		if i < 2 && ct != v1.CapacityTypeReserved {
			t.Errorf("NodeClaim %d launched as %s; the reservation's room comes first", i, ct)
		}
		if ct == v1.CapacityTypeReserved && (got.Labels[v1.LabelAWSCapacityReservationID] != crID || got.Labels[v1.LabelAWSCapacityReservationType] != "default") {
			t.Errorf("reserved NodeClaim labels %v, want reservation %s of type default", got.Labels, crID)
		}
		launched = append(launched, got)
	}
	if counts[v1.CapacityTypeReserved] != 2 || counts[v1.CapacityTypeOnDemand] != 2 {
		t.Errorf("launched %v, want 2 reserved then 2 on-demand", counts)
	}
	if n := front.ReservationUse(crID); n != 2 {
		t.Errorf("the local EC2 runs %d instances in %s, want 2", n, crID)
	}
	for _, c := range launched {
		id := c.Status.ProviderID[strings.LastIndex(c.Status.ProviderID, "/")+1:]
		out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		inst := out.Reservations[0].Instances[0]
		inReservation := aws.ToString(inst.CapacityReservationId) == crID
		if inReservation != (c.Labels[v1.LabelCapacityType] == v1.CapacityTypeReserved) {
			t.Errorf("instance %s: in reservation %v, labelled %s", aws.ToString(inst.InstanceId), inReservation, c.Labels[v1.LabelCapacityType])
		}
		if aws.ToString(inst.Placement.GroupName) != group || aws.ToInt32(inst.Placement.PartitionNumber) == 0 {
			t.Errorf("instance %s placed in group %q partition %d, want %s", aws.ToString(inst.InstanceId), aws.ToString(inst.Placement.GroupName), aws.ToInt32(inst.Placement.PartitionNumber), group)
		}
		got, err := p.Get(ctx, c.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels[v1.LabelCapacityType] != c.Labels[v1.LabelCapacityType] || got.Labels[v1.LabelAWSPlacementGroupPartition] == "" {
			t.Errorf("Get of %s: labels %v, want capacity type %s and a placement group partition", c.Name, got.Labels, c.Labels[v1.LabelCapacityType])
		}
	}

	// The reservation is used up: it is offered no more, and a NodeClaim
	// that takes only reserved capacity cannot launch.
	only := nodeClaim(t, nc)
	only.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeReserved}},
	}
	if _, err := p.Create(ctx, only); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a reserved-only NodeClaim with the reservation full: %v, want an insufficient capacity error", err)
	}

	// Deleting a reserved node gives the room back.
	for _, c := range launched {
		if c.Labels[v1.LabelCapacityType] == v1.CapacityTypeReserved {
			if err := p.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if n := front.ReservationUse(crID); n != 1 {
		t.Errorf("after deleting a reserved node the local EC2 runs %d instances in %s, want 1", n, crID)
	}
	its, err = p.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.ReservationID == crID && (o.ReservationCapacity != 1 || !o.Available) {
				t.Errorf("after a deletion the reserved offering is %+v, want 1 left and available", o)
			}
		}
	}
	for _, c := range launched {
		_ = p.Delete(ctx, c)
	}
}

// A selector that matches nothing that exists keeps the node class from
// Ready, naming the field: an unknown reservation id, an unknown placement
// group.
func TestPlacementSelectorsNotFound(t *testing.T) {
	p, _, _ := placementProvider(t)
	for _, tc := range []struct {
		name   string
		mutate func(*awsv1.EC2NodeClass)
		cond   string
		want   string
	}{
		{"unknown reservation", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0000000000000dead"}}
		}, awsv1.ConditionTypeCapacityReservationsReady, "spec.capacityReservationSelectorTerms[0].id: capacity reservation cr-0000000000000dead does not exist"},
		{"unknown placement group", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "no-such-group"}
		}, awsv1.ConditionTypePlacementGroupReady, "spec.placementGroupSelector: no placement group with name no-such-group exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := nodeClass(t, tc.mutate)
			test.Env(t).Create(t, nc)
			got := reconcileNodeClass(t, p, nc.Name)
			if got.IsReady() {
				t.Fatal("Ready, although its selector matches nothing")
			}
			c := got.StatusConditions().Get(tc.cond)
			if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, tc.want) {
				t.Errorf("%s = %+v, want False with a message containing %q", tc.cond, c, tc.want)
			}
		})
	}
}
