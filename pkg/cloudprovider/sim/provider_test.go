package sim

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

var zones = []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"}

// testCatalog is a tiny catalog: an amd64 and an arm64 type, on-demand and
// spot in every zone; spot is cheapest, zone a cheapest of all.
func testCatalog(*simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) {
	mk := func(name, family, arch string, price float64) *scheduling.InstanceType {
		it := &scheduling.InstanceType{
			Name: name,
			Requirements: map[string][]string{
				v1.LabelInstanceType:        {name},
				v1.LabelArch:                {arch},
				v1.LabelOS:                  {"linux", "windows"},
				v1.LabelAWSInstanceFamily:   {family},
				v1.LabelAWSInstanceCPU:      {"2"},
				v1.LabelAWSInstanceGPUCount: {},
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods:   resource.MustParse("29"),
			},
			Overhead: scheduling.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("70m")}},
		}
		for i, z := range zones {
			it.Offerings = append(it.Offerings,
				scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price + float64(i)/100, Available: true},
				scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price/3 + float64(i)/100, Available: true})
		}
		return it
	}
	return []*scheduling.InstanceType{mk("m5.large", "m5", "amd64", 0.096), mk("m6g.large", "m6g", "arm64", 0.077)}, nil
}

type env struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	client client.Client
	store  *Store
}

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := simv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kwokv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(filepath.Join(t.TempDir(), "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{
		t:      t,
		clock:  clocktesting.NewFakeClock(time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)),
		client: fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
		store:  store,
	}
}

func (e *env) provider(cluster string) *Provider {
	e.t.Helper()
	return e.providerWithID(cluster, "")
}

func (e *env) providerWithID(cluster, id string) *Provider {
	e.t.Helper()
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: cluster, ClusterID: id, Catalog: testCatalog, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) machines(cluster string) *Machines {
	e.t.Helper()
	m, err := NewMachines(MachinesOptions{Client: e.client, Store: e.store, ClusterName: cluster, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func nodeClass(name string, mutate ...func(*simv1alpha1.SimNodeClass)) *simv1alpha1.SimNodeClass {
	nc := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nc.ApplyDefaults()
	nc.Spec.LaunchDelay.Duration = 2 * time.Second
	nc.Spec.RegistrationDelay.Duration = time.Second
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

func withFaults(f simv1alpha1.Faults) func(*simv1alpha1.SimNodeClass) {
	return func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Faults = &f }
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func newNodeClaim(name, nodeClass string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default", "team": "a"}},
		Spec: v1.NodeClaimSpec{
			Requirements:  reqs,
			NodeClassRef:  &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: nodeClass},
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}},
			Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
}

func TestCreateHydratesNodeClaimAndTagsInstance(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	p := e.provider("cluster-a")
	got, err := p.Create(context.Background(), newNodeClaim("nc-1", "default", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)))
	if err != nil {
		t.Fatal(err)
	}
	// Cheapest on-demand: m6g.large in zone a.
	want := map[string]string{
		v1.LabelInstanceType:      "m6g.large",
		v1.LabelTopologyZone:      "sim-east-1a",
		v1.LabelTopologyRegion:    "sim-east-1",
		v1.LabelCapacityType:      v1.CapacityTypeOnDemand,
		v1.LabelArch:              "arm64",
		v1.LabelOS:                "linux",
		v1.LabelAWSInstanceFamily: "m6g",
		v1.LabelNodePool:          "default",
	}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if _, ok := got.Labels[v1.LabelAWSInstanceGPUCount]; ok {
		t.Errorf("label %s set for a type without GPUs", v1.LabelAWSInstanceGPUCount)
	}
	if !strings.HasPrefix(got.Status.ProviderID, "sim:///sim-east-1a/i-") || got.Status.ImageID == "" ||
		got.Status.Capacity.Cpu().String() != "2" || got.Status.Allocatable.Cpu().String() != "1930m" {
		t.Errorf("unexpected status: %+v", got.Status)
	}
	_ = e.store.View(func(st *StoreState) error {
		_, id, _ := ParseProviderID(got.Status.ProviderID)
		inst := st.Instances[id]
		if inst == nil {
			t.Fatalf("instance %s not in store", id)
		}
		if inst.Tags[TagCluster] != "cluster-a" || inst.Tags[TagNodePool] != "default" || inst.Tags[TagNodeClaim] != "nc-1" || inst.State != StatePending {
			t.Errorf("unexpected instance: %+v", inst)
		}
		return nil
	})
	byGet, err := p.Get(context.Background(), got.Status.ProviderID)
	if err != nil || byGet.Name != "nc-1" || byGet.Labels[v1.LabelInstanceType] != "m6g.large" {
		t.Errorf("Get = %+v, %v", byGet, err)
	}
}

func TestCreateHonoursRequirementsAndRequests(t *testing.T) {
	tests := []struct {
		name     string
		reqs     []v1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		wantType string
		wantZone string
		wantOS   string
		wantICE  bool
	}{
		{name: "cheapest overall is spot arm64 in zone a", wantType: "m6g.large", wantZone: "sim-east-1a", wantOS: "linux"},
		{name: "arch amd64", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")}, wantType: "m5.large", wantZone: "sim-east-1a", wantOS: "linux"},
		{name: "zone NotIn a", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "sim-east-1a")}, wantType: "m6g.large", wantZone: "sim-east-1b", wantOS: "linux"},
		{name: "windows", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelOS, corev1.NodeSelectorOpIn, "windows"), req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")}, wantType: "m5.large", wantZone: "sim-east-1a", wantOS: "windows"},
		{name: "numeric Gt", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelAWSInstanceCPU, corev1.NodeSelectorOpGt, "1")}, wantType: "m6g.large", wantZone: "sim-east-1a", wantOS: "linux"},
		{name: "gpu required", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelAWSInstanceGPUCount, corev1.NodeSelectorOpExists)}, wantICE: true},
		{name: "too big", requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, wantICE: true},
		{name: "unknown type", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "x9.huge")}, wantICE: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeClass("default"))
			nc := newNodeClaim("nc", "default", tt.reqs...)
			if tt.requests != nil {
				nc.Spec.Resources.Requests = tt.requests
			}
			got, err := e.provider("c").Create(context.Background(), nc)
			if tt.wantICE {
				if !cloudprovider.IsInsufficientCapacityError(err) {
					t.Fatalf("Create = %v, want insufficient capacity", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels[v1.LabelInstanceType] != tt.wantType || got.Labels[v1.LabelTopologyZone] != tt.wantZone || got.Labels[v1.LabelOS] != tt.wantOS {
				t.Errorf("launched %s in %s (%s), want %s in %s (%s)", got.Labels[v1.LabelInstanceType], got.Labels[v1.LabelTopologyZone],
					got.Labels[v1.LabelOS], tt.wantType, tt.wantZone, tt.wantOS)
			}
		})
	}
}

func TestNodeClassFiltersZonesAndFamilies(t *testing.T) {
	e := newEnv(t, nodeClass("default", func(nc *simv1alpha1.SimNodeClass) {
		nc.Spec.Zones = []string{"sim-east-1b"}
		nc.Spec.Catalog.InstanceFamilies = []string{"m5"}
	}))
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
	its, err := e.provider("c").GetInstanceTypes(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 1 || its[0].Name != "m5.large" || len(its[0].Offerings) != 2 || its[0].Offerings[0].Zone != "sim-east-1b" ||
		!slices.Equal(its[0].Requirements[v1.LabelTopologyZone], []string{"sim-east-1b"}) {
		t.Fatalf("GetInstanceTypes = %+v", its)
	}
}

func TestMissingNodeClassIsNotReady(t *testing.T) {
	e := newEnv(t)
	p := e.provider("c")
	if _, err := p.Create(context.Background(), newNodeClaim("nc", "missing")); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("Create = %v, want node class not ready", err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "missing"}
	if _, err := p.GetInstanceTypes(context.Background(), np); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("GetInstanceTypes = %v, want node class not ready", err)
	}
	notReady := nodeClass("broken", func(nc *simv1alpha1.SimNodeClass) {
		nc.Status.Conditions = []metav1.Condition{{Type: simv1alpha1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "Broken", Message: "broken"}}
	})
	e = newEnv(t, notReady)
	if _, err := e.provider("c").Create(context.Background(), newNodeClaim("nc", "broken")); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("Create with Ready=False = %v, want node class not ready", err)
	}
}

func TestInsufficientCapacityFallsBackAndNamesOfferings(t *testing.T) {
	e := newEnv(t, nodeClass("default", withFaults(simv1alpha1.Faults{InsufficientCapacity: []simv1alpha1.InsufficientCapacityFault{
		{InstanceType: "m6g.large", Zone: "sim-east-1a", CapacityType: v1.CapacityTypeSpot},
	}})))
	p := e.provider("c")
	ctx := context.Background()
	// The cheapest offering has no capacity: the launch falls back to the next.
	got, err := p.Create(ctx, newNodeClaim("nc-1", "default"))
	if err != nil {
		t.Fatal(err)
	}
	if off := got.Labels[v1.LabelInstanceType] + "/" + got.Labels[v1.LabelTopologyZone] + "/" + got.Labels[v1.LabelCapacityType]; off != "m5.large/sim-east-1a/spot" {
		t.Errorf("launched %s, want the next cheapest m5.large/sim-east-1a/spot", off)
	}
	// Pinned to the faulted offering: InsufficientCapacityError naming it.
	_, err = p.Create(ctx, newNodeClaim("nc-2", "default",
		req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m6g.large"),
		req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "sim-east-1a"),
		req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot)))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Create = %v, want insufficient capacity", err)
	}
	if !strings.Contains(err.Error(), "m6g.large/sim-east-1a/spot") {
		t.Errorf("error does not name the offering: %v", err)
	}
	// The offering is now reported unavailable, and only it.
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
	unavailable := func() []string {
		its, err := p.GetInstanceTypes(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range its {
			for _, o := range it.Offerings {
				if !o.Available {
					out = append(out, it.Name+"/"+o.Zone+"/"+o.CapacityType)
				}
			}
		}
		return out
	}
	if got := unavailable(); !slices.Equal(got, []string{"m6g.large/sim-east-1a/spot"}) {
		t.Errorf("unavailable offerings = %v", got)
	}
	e.clock.Step(cloudprovider.DefaultUnavailableOfferingsTTL + time.Second)
	if got := unavailable(); len(got) != 0 {
		t.Errorf("offerings still unavailable after the TTL: %v", got)
	}
}

func TestSubnetOutOfIPs(t *testing.T) {
	e := newEnv(t, nodeClass("default", withFaults(simv1alpha1.Faults{SubnetIPExhaustedZones: []string{"sim-east-1a"}})))
	p := e.provider("c")
	ctx := context.Background()
	pinned := newNodeClaim("nc-1", "default", req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "sim-east-1a"))
	_, err := p.Create(ctx, pinned)
	ce := cloudprovider.AsCreateError(err)
	if ce == nil || ce.ConditionReason != ReasonInsufficientFreeAddressesInSubnet || !strings.Contains(ce.ConditionMessage, "sim-east-1a") {
		t.Fatalf("Create = %v, want CreateError %s naming the zone", err, ReasonInsufficientFreeAddressesInSubnet)
	}
	// The zone is now unavailable: the retry is an insufficient capacity
	// error (so the NodeClaim is replaced), and unpinned launches go elsewhere.
	if _, err := p.Create(ctx, pinned); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("retry = %v, want insufficient capacity", err)
	}
	got, err := p.Create(ctx, newNodeClaim("nc-2", "default"))
	if err != nil {
		t.Fatal(err)
	}
	if z := got.Labels[v1.LabelTopologyZone]; z == "sim-east-1a" {
		t.Errorf("launched into the exhausted zone")
	}
}

// TestSubnetOutOfIPsIsPerNodeClass: a subnet out of addresses is one node
// class's (the AWS provider keys it by subnet): after a launch of "full"
// fails in sim-east-1a, "other" still launches there, and its offerings in
// that zone stay available, while full's are skipped for the TTL.
func TestSubnetOutOfIPsIsPerNodeClass(t *testing.T) {
	e := newEnv(t,
		nodeClass("full", withFaults(simv1alpha1.Faults{SubnetIPExhaustedZones: []string{"sim-east-1a"}})),
		nodeClass("other"))
	p := e.provider("c")
	ctx := context.Background()
	zoneA := req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "sim-east-1a")
	if _, err := p.Create(ctx, newNodeClaim("nc-full", "full", zoneA)); cloudprovider.AsCreateError(err) == nil {
		t.Fatalf("Create in the exhausted subnet = %v, want a CreateError", err)
	}
	availableInA := func(nodeClass string) int {
		t.Helper()
		nc, err := p.nodeClass(ctx, &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: nodeClass})
		if err != nil {
			t.Fatal(err)
		}
		its, err := p.instanceTypes(nc)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range its {
			for _, o := range it.Offerings {
				if o.Zone == "sim-east-1a" && o.Available {
					n++
				}
			}
		}
		return n
	}
	if n := availableInA("full"); n != 0 {
		t.Errorf("%d offerings of the exhausted node class still available in sim-east-1a", n)
	}
	if n := availableInA("other"); n == 0 {
		t.Error("the other node class's offerings in sim-east-1a were made unavailable by the first one's subnet")
	}
	got, err := p.Create(ctx, newNodeClaim("nc-other", "other", zoneA))
	if err != nil {
		t.Fatalf("the other node class's launch into sim-east-1a: %v", err)
	}
	if z := got.Labels[v1.LabelTopologyZone]; z != "sim-east-1a" {
		t.Errorf("launched into %s, want sim-east-1a", z)
	}
}

func TestOwnershipAcrossClustersSharingOneStore(t *testing.T) {
	tests := []struct {
		name         string
		nameA, nameB string
		idA, idB     string
	}{
		{name: "distinct cluster names", nameA: "cluster-a", nameB: "cluster-b"},
		// Two clusters deployed with the same --cluster-name: the cluster id
		// (kube-system's UID) still keeps them apart.
		{name: "one name, distinct cluster ids", nameA: "prod", nameB: "prod", idA: "uid-a", idB: "uid-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeClass("default"))
			testOwnership(t, e.providerWithID(tt.nameA, tt.idA), e.providerWithID(tt.nameB, tt.idB))
		})
	}
}

func testOwnership(t *testing.T, a, b *Provider) {
	ctx := context.Background()
	ncA, err := a.Create(ctx, newNodeClaim("shared-name", "default"))
	if err != nil {
		t.Fatal(err)
	}
	ncB, err := b.Create(ctx, newNodeClaim("shared-name", "default"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    *Provider
		own  *v1.NodeClaim
		peer *v1.NodeClaim
	}{{a, ncA, ncB}, {b, ncB, ncA}} {
		list, err := tc.p.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Status.ProviderID != tc.own.Status.ProviderID {
			t.Errorf("%s lists %d instances, want only its own", tc.p.opts.ClusterName, len(list))
		}
		// The other cluster's instance exists: not found would tell
		// garbage collection it is gone; it is only not ours.
		if _, err := tc.p.Get(ctx, tc.peer.Status.ProviderID); !cloudprovider.IsNodeClaimNotOwned(err) || cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("%s Get of the other cluster's instance = %v, want not owned", tc.p.opts.ClusterName, err)
		}
		if err := tc.p.Delete(ctx, tc.peer); !cloudprovider.IsNodeClaimNotOwned(err) {
			t.Errorf("%s Delete of the other cluster's instance = %v, want not owned", tc.p.opts.ClusterName, err)
		}
	}
	if _, err := b.Get(ctx, ncB.Status.ProviderID); err != nil {
		t.Errorf("cluster-b's instance was harmed by cluster-a: %v", err)
	}
	if err := a.Delete(ctx, ncA); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, ncA); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete = %v, want not found", err)
	}
	if list, _ := a.List(ctx); len(list) != 0 {
		t.Errorf("terminated instance still listed")
	}
}

func TestInstancesSurviveProviderRestart(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	ctx := context.Background()
	created, err := e.provider("c").Create(ctx, newNodeClaim("nc", "default"))
	if err != nil {
		t.Fatal(err)
	}
	reopened, err := OpenStore(e.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Client: e.client, Store: reopened, ClusterName: "c", Catalog: testCatalog, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	list, err := p.List(ctx)
	if err != nil || len(list) != 1 || list[0].Status.ProviderID != created.Status.ProviderID || list[0].Name != "nc" {
		t.Fatalf("after restart List = %+v, %v", list, err)
	}
}

func TestIsDrifted(t *testing.T) {
	nc := nodeClass("default")
	e := newEnv(t, nc)
	p := e.provider("c")
	ctx := context.Background()
	created, err := p.Create(ctx, newNodeClaim("nc", "default", req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "sim-east-1a")))
	if err != nil {
		t.Fatal(err)
	}
	claim := newNodeClaim("nc", "default")
	claim.Status = created.Status
	if r, err := p.IsDrifted(ctx, claim); err != nil || r != "" {
		t.Fatalf("fresh instance drifted: %q, %v", r, err)
	}
	update := func(f func(*simv1alpha1.SimNodeClass)) {
		cur := &simv1alpha1.SimNodeClass{}
		if err := e.client.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			t.Fatal(err)
		}
		f(cur)
		if err := e.client.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	update(func(nc *simv1alpha1.SimNodeClass) { nc.Spec.ImageVersion = "v2" })
	if r, _ := p.IsDrifted(ctx, claim); r != DriftImage {
		t.Errorf("after an image version change drift = %q, want %q", r, DriftImage)
	}
	update(func(nc *simv1alpha1.SimNodeClass) { nc.Spec.ImageVersion = "" })
	if r, _ := p.IsDrifted(ctx, claim); r != "" {
		t.Errorf("after rolling the image back drift = %q, want none", r)
	}
	update(func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Tags = map[string]string{"team": "b"} })
	if r, _ := p.IsDrifted(ctx, claim); r != DriftNodeClass {
		t.Errorf("after a tag change drift = %q, want %q", r, DriftNodeClass)
	}
	update(func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Zones = []string{"sim-east-1b"} })
	if r, _ := p.IsDrifted(ctx, claim); r != DriftZone {
		t.Errorf("after removing the zone drift = %q, want %q", r, DriftZone)
	}
}

// TestExtendedResourcesMissingFault: the registered Node lacks the GPU the
// instance type has, while the NodeClaim's capacity still promises it.
func TestExtendedResourcesMissingFault(t *testing.T) {
	nc := nodeClass("gpu")
	nc.Spec.Catalog.InstanceFamilies = []string{"g5"}
	nc.Spec.Faults = &simv1alpha1.Faults{ExtendedResourcesMissing: true}
	e := newEnv(t, nc)
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Catalog: DefaultCatalog, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	created, err := p.Create(context.Background(), newNodeClaim("nc", "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if q := created.Status.Capacity["nvidia.com/gpu"]; q.IsZero() {
		t.Fatalf("the NodeClaim's capacity should promise a GPU: %v", created.Status.Capacity)
	}
	var inst *Instance
	_ = e.store.View(func(st *StoreState) error {
		for _, i := range st.Instances {
			inst = i
		}
		return nil
	})
	node := inst.Node()
	for _, rl := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		if _, ok := rl["nvidia.com/gpu"]; ok {
			t.Errorf("the Node advertises nvidia.com/gpu: %v", rl)
		}
		if _, ok := rl[corev1.ResourceCPU]; !ok {
			t.Errorf("the Node lost its cpu: %v", rl)
		}
	}
}

func TestProviderIDRoundTrip(t *testing.T) {
	zone, id, err := ParseProviderID(providerID("sim-east-1a", "i-1"))
	if err != nil || zone != "sim-east-1a" || id != "i-1" {
		t.Fatalf("ParseProviderID = %q, %q, %v", zone, id, err)
	}
	for _, bad := range []string{"", "aws:///us-east-1a/i-1", "sim:///zone", "sim:///zone/", "sim:///a/b/c"} {
		if _, _, err := ParseProviderID(bad); err == nil {
			t.Errorf("ParseProviderID(%q) accepted", bad)
		}
	}
}

func TestOptionsAreValidated(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New accepted empty options")
	}
	if _, err := NewMachines(MachinesOptions{}); err == nil {
		t.Error("NewMachines accepted empty options")
	}
}

func TestDefaultCatalog(t *testing.T) {
	nc := nodeClass("default", func(nc *simv1alpha1.SimNodeClass) {
		nc.Spec.Zones = []string{"sim-east-1a", "sim-east-1b"}
		nc.Spec.Catalog.InstanceFamilies = []string{"m5", "t4g"}
	})
	e := newEnv(t, nc)
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
	its, err := p.GetInstanceTypes(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	arches := map[string]bool{}
	for _, it := range its {
		if f := familyOf(it); f != "m5" && f != "t4g" {
			t.Errorf("type %s of family %s offered", it.Name, f)
		}
		arches[it.Requirements[v1.LabelArch][0]] = true
		for _, o := range it.Offerings {
			if o.Zone == "sim-east-1c" {
				t.Errorf("offering in zone %s outside the node class", o.Zone)
			}
		}
	}
	if len(its) == 0 || !arches["amd64"] || !arches["arm64"] {
		t.Errorf("got %d types with arches %v, want m5 (amd64) and t4g (arm64) types", len(its), arches)
	}
	created, err := p.Create(context.Background(), newNodeClaim("nc", "default", req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64")))
	if err != nil {
		t.Fatal(err)
	}
	if familyOf(&scheduling.InstanceType{Name: created.Labels[v1.LabelInstanceType]}) != "t4g" {
		t.Errorf("launched %s, want a t4g", created.Labels[v1.LabelInstanceType])
	}

	bad := nodeClass("bad", func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Catalog.InstanceFamilies = []string{"zz9"} })
	if _, err := DefaultCatalog(bad); err == nil || !strings.Contains(err.Error(), "zz9") {
		t.Errorf("unknown family: %v", err)
	}
}

// Seed 004: another cluster's controller must never see this cluster's
// instances as drifted (or as anything at all).
func TestIsDriftedOfAnotherClustersInstanceIsNotOwned(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	ctx := context.Background()
	created, err := e.provider("cluster-a").Create(ctx, newNodeClaim("nc", "default"))
	if err != nil {
		t.Fatal(err)
	}
	claim := newNodeClaim("nc", "default")
	claim.Status = created.Status
	reason, err := e.provider("cluster-b").IsDrifted(ctx, claim)
	if reason != "" || !cloudprovider.IsNodeClaimNotOwned(err) {
		t.Errorf("IsDrifted from another cluster = %q, %v; want no reason and not owned", reason, err)
	}
}

// An instance that exists without this cluster's identity (launched
// before a migration with no id tag, or before a restore gave kube-system
// a new UID) is not owned, never not found; a terminated one is not found.
func TestGetOfUnownedInstanceIsNotOwned(t *testing.T) {
	tests := []struct {
		name      string
		launcher  [2]string // cluster name, id
		wantInMsg string
	}{
		{name: "launched before the id tag existed", launcher: [2]string{"prod", ""}, wantInMsg: TagClusterID + "=uid-new"},
		{name: "kube-system UID changed by a restore", launcher: [2]string{"prod", "uid-old"}, wantInMsg: `"uid-old"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeClass("default"))
			ctx := context.Background()
			created, err := e.providerWithID(tt.launcher[0], tt.launcher[1]).Create(ctx, newNodeClaim("nc", "default"))
			if err != nil {
				t.Fatal(err)
			}
			self := e.providerWithID("prod", "uid-new")
			_, err = self.Get(ctx, created.Status.ProviderID)
			if !cloudprovider.IsNodeClaimNotOwned(err) || cloudprovider.IsNodeClaimNotFoundError(err) {
				t.Fatalf("Get = %v, want not owned", err)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("error %q does not name %s", err, tt.wantInMsg)
			}
			if list, err := self.List(ctx); err != nil || len(list) != 0 {
				t.Errorf("List = %d instances, %v; want none (not ours)", len(list), err)
			}
			if err := self.Delete(ctx, created); !cloudprovider.IsNodeClaimNotOwned(err) {
				t.Errorf("Delete = %v, want not owned", err)
			}
			if err := e.providerWithID(tt.launcher[0], tt.launcher[1]).Delete(ctx, created); err != nil {
				t.Fatalf("the launcher could not delete its instance (was it harmed?): %v", err)
			}
			if _, err := self.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
				t.Errorf("Get of the terminated instance = %v, want not found", err)
			}
		})
	}
}

// A controller that restarts between Create and recording the provider ID
// calls Create again: the NodeClaim's UID is a client token.
func TestCreateIsIdempotentPerNodeClaimUID(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	ctx := context.Background()
	claim := newNodeClaim("nc", "default")
	claim.UID = "uid-1"
	first, err := e.provider("c").Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.provider("c").Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID || again.UID != "uid-1" || again.Name != "nc" {
		t.Errorf("second Create launched %s (uid %q), want the first instance %s", again.Status.ProviderID, again.UID, first.Status.ProviderID)
	}
	// Another cluster with the same UID (impossible in practice) launches its own.
	other, err := e.provider("other").Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if other.Status.ProviderID == first.Status.ProviderID {
		t.Errorf("another cluster adopted this cluster's instance")
	}
	// Once terminated, a new Create launches a new instance.
	if err := e.provider("c").Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	fresh, err := e.provider("c").Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Status.ProviderID == first.Status.ProviderID {
		t.Errorf("Create returned a terminated instance")
	}
	if list, _ := e.provider("c").List(ctx); len(list) != 1 {
		t.Errorf("cluster c has %d live instances, want 1", len(list))
	}
}

// The provider's errors say what went wrong inside the cloud, never what
// its caller was doing: the lifecycle controller wraps a Create error with
// "launching nodeclaim <name>" and node termination a Delete error with
// "terminating instance <id>", once each.
func TestErrorsDoNotRepeatTheCallersContext(t *testing.T) {
	e := newEnv(t, nodeClass("default", withFaults(simv1alpha1.Faults{SubnetIPExhaustedZones: []string{"sim-east-1a"}})))
	p := e.provider("c")
	ctx := context.Background()
	var errs []error
	_, err := p.Create(ctx, newNodeClaim("nc-missing", "missing"))
	errs = append(errs, err)
	_, err = p.Create(ctx, newNodeClaim("nc-pinned", "default", req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "sim-east-1a")))
	errs = append(errs, err)
	_, err = p.Create(ctx, newNodeClaim("nc-nothing", "default", req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "no-such-type")))
	errs = append(errs, err)
	gone := newNodeClaim("nc-gone", "default")
	gone.Status.ProviderID = "sim://c/i-0000000000"
	errs = append(errs, p.Delete(ctx, gone))
	_, err = p.Get(ctx, gone.Status.ProviderID)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error", i)
			continue
		}
		for _, callers := range []string{"launching nodeclaim", "nc-", "terminating instance", "getting instance"} {
			if strings.Contains(err.Error(), callers) {
				t.Errorf("call %d: error %q repeats its caller's context %q", i, err, callers)
			}
		}
	}
}

// TestInstanceTypesFilteredOncePerCatalog: GetInstanceTypes filters the
// catalog for a node class once, not per call (it runs per batch, poll,
// launch and drift check), while each call still gets offerings of its own
// with the availability of the moment; a new catalog is filtered afresh.
func TestInstanceTypesFilteredOncePerCatalog(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	first, err := testCatalog(nil)
	if err != nil {
		t.Fatal(err)
	}
	catalog := first
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Clock: e.clock,
		Catalog: func(*simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) { return catalog, nil }})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
	get := func() []*scheduling.InstanceType {
		t.Helper()
		its, err := p.GetInstanceTypes(context.Background(), np)
		if err != nil {
			t.Fatal(err)
		}
		return its
	}
	// requirements identifies the filtered copy a result was built from.
	requirements := func(its []*scheduling.InstanceType) uintptr {
		return reflect.ValueOf(its[0].Requirements).Pointer()
	}

	a := get()
	a[0].Offerings[0].Available = false
	b := get()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"the second call reuses the filtered catalog", requirements(a) == requirements(b)},
		{"each call has offerings of its own", b[0].Offerings[0].Available},
		{"the catalog itself is not changed", first[0].Offerings[0].Available && len(first[0].Requirements[v1.LabelTopologyZone]) == 0},
	} {
		if !tc.ok {
			t.Errorf("%s: it is not", tc.name)
		}
	}
	catalog, _ = testCatalog(nil)
	if c := get(); requirements(c) == requirements(b) {
		t.Errorf("a new catalog was not filtered again")
	}
}

// The unavailable-offerings TTL is the provider's option (joiner's
// --unavailable-offerings-ttl): an offering that failed to launch is
// skipped for that long, not Karpenter's fixed 3 minutes.
func TestUnavailableOfferingsTTLIsConfigurable(t *testing.T) {
	e := newEnv(t, nodeClass("default", withFaults(simv1alpha1.Faults{InsufficientCapacity: []simv1alpha1.InsufficientCapacityFault{
		{InstanceType: "m6g.large", Zone: "sim-east-1a", CapacityType: v1.CapacityTypeSpot},
	}})))
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Catalog: testCatalog, Clock: e.clock, UnavailableOfferingsTTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Create(ctx, newNodeClaim("nc-1", "default")); err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
	available := func() bool {
		its, err := p.GetInstanceTypes(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				if it.Name == "m6g.large" && o.Zone == "sim-east-1a" && o.CapacityType == v1.CapacityTypeSpot {
					return o.Available
				}
			}
		}
		t.Fatal("no offering m6g.large/sim-east-1a/spot")
		return false
	}
	var elapsed time.Duration
	for _, step := range []struct {
		after time.Duration
		want  bool
	}{{0, false}, {29 * time.Second, false}, {2 * time.Second, true}} {
		e.clock.Step(step.after)
		elapsed += step.after
		if got := available(); got != step.want {
			t.Errorf("%s after the failed launch: available = %v, want %v", elapsed, got, step.want)
		}
	}
}
