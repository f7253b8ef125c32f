package scheduling_test

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

func TestNodePrice(t *testing.T) {
	burst := &scheduling.InstanceType{Name: "t4g.small", VolumePrice: 0.002, Burst: &scheduling.Burst{BaselineMilliCPU: 400, SurplusPerVCPUHour: 0.04}}
	plain := &scheduling.InstanceType{Name: "c6g.large", VolumePrice: 0.002}
	for _, tc := range []struct {
		name     string
		it       *scheduling.InstanceType
		cpu      int64
		listOnly bool
		want     scheduling.Price
	}{
		{name: "within the baseline: no credits", it: burst, cpu: 400, want: scheduling.Price{List: 0.0168, Volumes: 0.002}},
		{name: "above the baseline: credits per vCPU-hour", it: burst, cpu: 1400, want: scheduling.Price{List: 0.0168, Credits: 0.04, Volumes: 0.002}},
		{name: "not burstable: volumes only", it: plain, cpu: 2000, want: scheduling.Price{List: 0.0168, Volumes: 0.002}},
		{name: "list prices: the list alone", it: burst, cpu: 1400, listOnly: true, want: scheduling.Price{List: 0.0168}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scheduling.NodePrice(tc.it, 0.0168, tc.cpu, tc.listOnly)
			if math.Abs(got.List-tc.want.List) > 1e-12 || math.Abs(got.Credits-tc.want.Credits) > 1e-12 || math.Abs(got.Volumes-tc.want.Volumes) > 1e-12 {
				t.Errorf("NodePrice = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCreditLine: the linear form a linear program prices credits with is
// the credits NodePrice charges, wherever they are charged: its positive
// part is NodePrice's credits, and it moves by CreditRate per millicore.
func TestCreditLine(t *testing.T) {
	b := &scheduling.Burst{BaselineMilliCPU: 400, SurplusPerVCPUHour: 0.04}
	it := &scheduling.InstanceType{Name: "t4g.small", Burst: b}
	for _, tc := range []struct {
		name string
		cpu  int64
		line float64
	}{
		{name: "idle: the whole baseline unused", cpu: 0, line: -0.016},
		{name: "below the baseline", cpu: 150, line: -0.01},
		{name: "at the baseline", cpu: 400, line: 0},
		{name: "one vCPU above", cpu: 1400, line: 0.04},
		{name: "a millicore above", cpu: 401, line: 0.00004},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.CreditLine(tc.cpu); math.Abs(got-tc.line) > 1e-12 {
				t.Errorf("CreditLine(%d) = %v, want %v", tc.cpu, got, tc.line)
			}
			if got, want := scheduling.NodePrice(it, 0.0168, tc.cpu, false).Credits, max(0, b.CreditLine(tc.cpu)); math.Abs(got-want) > 1e-12 {
				t.Errorf("NodePrice's credits at %d = %v, CreditLine's positive part %v", tc.cpu, got, want)
			}
			if got, want := b.CreditLine(tc.cpu+250)-b.CreditLine(tc.cpu), 250*b.CreditRate(); math.Abs(got-want) > 1e-12 {
				t.Errorf("CreditLine moves %v over 250 millicores from %d, 250·CreditRate = %v", got, tc.cpu, want)
			}
		})
	}
	var none *scheduling.Burst
	if none.CreditLine(5000) != 0 || none.CreditRate() != 0 {
		t.Errorf("a type that is not burstable pays credits: line %v, rate %v", none.CreditLine(5000), none.CreditRate())
	}
}

// burstCatalog is a burstable 2-core type with a 10% baseline per core,
// cheap by list price, beside 2- and 8-core types priced 0.03 $/core-hour;
// every node's volumes cost 0.002 $/h.
func burstCatalog() []*scheduling.InstanceType {
	small := instanceType("t4g.nano", 2)
	for i := range small.Offerings {
		small.Offerings[i].Price = 0.0042
	}
	small.Burst = &scheduling.Burst{BaselineMilliCPU: 200, SurplusPerVCPUHour: 0.04}
	its := []*scheduling.InstanceType{small}
	for _, c := range []int64{2, 8} {
		it := instanceType("c6g."+string(rune('0'+c))+"x", c)
		for i := range it.Offerings {
			it.Offerings[i].Price = float64(c) * 0.03
		}
		its = append(its, it)
	}
	for _, it := range its {
		it.VolumePrice = 0.002
	}
	return its
}

// TestBilledPrices: at list prices pods of one core fill nodes of the
// burstable type two by two; at billed prices its surplus credits make
// that dearer than sharing a larger node, so the plan has fewer nodes, the
// plan is priced with the credits and volumes, and its cost never exceeds
// what the list-price plan really costs.
func TestBilledPrices(t *testing.T) {
	pool := nodePool("default", poolReq("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "on-demand"))
	s := snapshot([]*scheduling.NodePool{pool}, burstCatalog(), pods(8, "p", "1", "1Gi"))
	billed, err := scheduling.Solve(s, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, s, billed)
	list, err := scheduling.Solve(s, scheduling.Options{ListPrices: true})
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, s, list)
	if len(list.NewNodeClaims) != 4 || list.NewNodeClaims[0].InstanceTypes[0].Name != "t4g.nano" {
		t.Fatalf("list prices: want 4 t4g.nano nodes, got %d, first %s", len(list.NewNodeClaims), list.NewNodeClaims[0].InstanceTypes[0].Name)
	}
	if len(billed.NewNodeClaims) >= 2 {
		t.Errorf("billed prices: want one node, got %d:\n%s", len(billed.NewNodeClaims), planText(billed))
	}
	billedCost, err := lowerbound.PlanCost(billed)
	if err != nil {
		t.Fatal(err)
	}
	// What the list-price plan really costs: each of its nodes at billed
	// prices.
	listReally := 0.0
	for _, nc := range list.NewNodeClaims {
		price, ok := lowerbound.NodeCost(nc, false)
		if !ok {
			t.Fatal("list plan node without a price")
		}
		listReally += price
	}
	if billedCost > listReally+1e-9 {
		t.Errorf("billed plan costs %.4f, more than the list plan really does (%.4f)", billedCost, listReally)
	}
	for _, nc := range billed.NewNodeClaims {
		if nc.PriceParts.Volumes != 0.002 || math.Abs(nc.PriceParts.Total()-nc.Price) > 1e-12 {
			t.Errorf("node price %v, parts %+v", nc.Price, nc.PriceParts)
		}
		// No option the cloud would launch first (lowest list price) may
		// cost more than the plan says.
		for _, it := range nc.InstanceTypes {
			if it.Burst != nil && it.Offerings[0].Price < nc.PriceParts.List &&
				scheduling.NodePrice(it, it.Offerings[0].Price, nc.Requests.Cpu().MilliValue(), false).Total() > nc.Price+1e-9 {
				t.Errorf("option %s: cheaper by list price, dearer billed than the node's %.4f", it.Name, nc.Price)
			}
		}
	}
	bound, err := lowerbound.Compute(s, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.LP > billedCost+1e-9 {
		t.Errorf("billed LP bound %.4f above the plan's %.4f", bound.LP, billedCost)
	}
	listBound, err := lowerbound.Compute(s, scheduling.Options{ListPrices: true})
	if err != nil {
		t.Fatal(err)
	}
	if listBound.LP >= bound.LP {
		t.Errorf("list-price bound %.4f not below the billed one %.4f", listBound.LP, bound.LP)
	}
}
