package fake

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

func nodeClaim(reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-1", Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec:       v1.NodeClaimSpec{Requirements: reqs},
	}
}

func TestCreateGetListDelete(t *testing.T) {
	ctx := context.Background()
	c := New()
	created, err := c.Create(ctx, nodeClaim(v1.NodeSelectorRequirementWithMinValues{
		Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand},
	}, v1.NodeSelectorRequirementWithMinValues{
		Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels[v1.LabelInstanceType] != "fake.small" || created.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand ||
		created.Status.ProviderID == "" || created.Status.Allocatable.Cpu().IsZero() || created.Labels[v1.LabelNodePool] != "default" {
		t.Fatalf("unexpected hydrated nodeclaim: %+v", created)
	}
	if _, err := c.Get(ctx, created.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.List(ctx); len(l) != 1 {
		t.Fatalf("List returned %d instances, want 1", len(l))
	}
	if err := c.Delete(ctx, created); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second Delete = %v, want not found", err)
	}
	if _, err := c.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after Delete = %v, want not found", err)
	}
}

func TestInjectedFailures(t *testing.T) {
	ctx := context.Background()
	c := New()
	boom := errors.New("boom")
	c.NextCreateError = boom
	if _, err := c.Create(ctx, nodeClaim()); err != boom {
		t.Fatalf("Create = %v, want the injected error", err)
	}
	if _, err := c.Create(ctx, nodeClaim()); err != nil {
		t.Fatalf("NextCreateError was not cleared: %v", err)
	}
	for _, it := range c.InstanceTypes {
		for _, o := range it.Offerings {
			c.InsufficientCapacity[it.Name+"/"+o.Zone+"/"+o.CapacityType] = true
		}
	}
	_, err := c.Create(ctx, nodeClaim())
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Create = %v, want insufficient capacity", err)
	}
	if len(c.CreateCalls) != 3 {
		t.Fatalf("recorded %d Create calls, want 3", len(c.CreateCalls))
	}
}
