package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/test"
)

func describeInstance(t *testing.T, providerID string) ec2types.Instance {
	t.Helper()
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	out, err := ec2.NewFromConfig(local.server.Config()).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Reservations[0].Instances[0]
}

func tagsOf(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, tg := range tags {
		out[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return out
}

// A launch goes through a launch template and CreateFleet; the instance,
// its volumes and the template carry the cluster's tags, and the template's
// userData is the AL2023 bootstrap of the NodeClaim.
func TestLaunchThroughCreateFleet(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	claim := nodeClaim(t, nc)
	claim.Spec.Requirements[0].Values = []string{"m5.large"}
	claim.Spec.Taints = []corev1.Taint{{Key: "team", Value: "e2e", Effect: corev1.TaintEffectNoSchedule}}
	got, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Status.ProviderID, "aws:///us-east-1") || got.Status.ImageID == "" {
		t.Fatalf("hydrated status = %+v, want an aws:/// provider id and an image", got.Status)
	}
	if got.Labels[v1.LabelInstanceType] != "m5.large" || got.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || got.Labels[v1.LabelArch] != "amd64" {
		t.Errorf("labels = %v, want the cheapest allowed type (m5.large, on-demand, amd64)", got.Labels)
	}
	if got.Status.Allocatable.Cpu().Cmp(*got.Status.Capacity.Cpu()) >= 0 {
		t.Errorf("allocatable %v is not below capacity %v", got.Status.Allocatable, got.Status.Capacity)
	}
	inst := describeInstance(t, got.Status.ProviderID)
	tags := tagsOf(inst.Tags)
	for k, v := range map[string]string{
		awsv1.TagEKSClusterName:                clusterName,
		"kubernetes.io/cluster/" + clusterName: "owned",
		"joiner.dev/cluster-id":                "cluster-a",
		v1.LabelNodePool:                       "default",
		v1.LabelAWSEC2NodeClass:                nc.Name,
		awsv1.TagNodeClaim:                     claim.Name,
		"team":                                 "e2e",
	} {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
		}
	}
	if aws.ToString(inst.ImageId) != local.cluster.AMI("AL2023", "x86_64").ID {
		t.Errorf("instance image = %s, want the AL2023 x86_64 image", aws.ToString(inst.ImageId))
	}
	e := ec2.NewFromConfig(local.server.Config())
	lts, err := e.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + v1.LabelAWSEC2NodeClass), Values: []string{nc.Name}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lts.LaunchTemplates) != 1 || !strings.HasPrefix(aws.ToString(lts.LaunchTemplates[0].LaunchTemplateName), "karpenter.k8s.aws/") {
		t.Fatalf("launch templates of the node class = %+v, want one karpenter.k8s.aws/<hash>", lts.LaunchTemplates)
	}
	if lt := tagsOf(lts.LaunchTemplates[0].Tags); lt[awsv1.TagEKSClusterName] != clusterName {
		t.Errorf("launch template tags = %v, want eks:eks-cluster-name", lt)
	}
	ver, err := e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lts.LaunchTemplates[0].LaunchTemplateId})
	if err != nil {
		t.Fatal(err)
	}
	data := ver.LaunchTemplateVersions[0].LaunchTemplateData
	ud, _ := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
	for _, want := range []string{"NodeConfig", "name: " + clusterName, "key: karpenter.sh/unregistered", "value: e2e", "maxPods: 29", "karpenter.k8s.aws/ec2nodeclass=" + nc.Name} {
		if !strings.Contains(string(ud), want) {
			t.Errorf("launch template userData lacks %q:\n%s", want, ud)
		}
	}
	if got := testutil.ToFloat64(metrics.EC2NodeClassUserDataBytes.WithLabelValues(nc.Name)); got != float64(len(ud)) {
		t.Errorf("karpenter_ec2nodeclasses_userdata_bytes{nodeclass=%q} = %v, want the launch template's %d bytes", nc.Name, got, len(ud))
	}
	if data.MetadataOptions == nil || data.MetadataOptions.HttpTokens != ec2types.LaunchTemplateHttpTokensStateRequired || aws.ToInt32(data.MetadataOptions.HttpPutResponseHopLimit) != 1 {
		t.Errorf("metadata options = %+v, want tokens required and hop limit 1", data.MetadataOptions)
	}
	// moto's CreateFleet does not copy the template's groups onto the
	// instance, so they are checked on the template.
	if len(data.SecurityGroupIds) != 1 || data.SecurityGroupIds[0] != local.cluster.SecurityGroupID {
		t.Errorf("launch template security groups = %v, want %s", data.SecurityGroupIds, local.cluster.SecurityGroupID)
	}
	if data.IamInstanceProfile == nil || aws.ToString(data.IamInstanceProfile.Name) != nc.Status.InstanceProfile {
		t.Errorf("launch template instance profile = %+v, want %s", data.IamInstanceProfile, nc.Status.InstanceProfile)
	}

	// The same NodeClaim (same UID) does not launch twice, even from a
	// restarted provider.
	again, err := newProvider(t, "cluster-a").Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != got.Status.ProviderID {
		t.Errorf("second Create of the same NodeClaim launched %s, want %s again", again.Status.ProviderID, got.Status.ProviderID)
	}

	// Get and IsDrifted see the instance; a stale hash is NodeClassDrift
	// (AMIDrift and SubnetDrift: TestAMIAndSubnetDrift).
	if _, err := p.Get(ctx, got.Status.ProviderID); err != nil {
		t.Errorf("Get: %v", err)
	}
	claim.Status = got.Status
	claim.Annotations = got.Annotations
	if reason, err := p.IsDrifted(ctx, claim); err != nil || reason != "" {
		t.Errorf("IsDrifted of a fresh instance = %q, %v; want not drifted", reason, err)
	}
	claim.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "stale", awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion}
	if reason, _ := p.IsDrifted(ctx, claim); reason != "NodeClassDrift" {
		t.Errorf("IsDrifted with a stale hash = %q, want NodeClassDrift", reason)
	}
}

// Concurrent launches of one NodePool share a launch template and are
// batched into one CreateFleet: the EC2 calls per launched node.
func TestLaunchBatchesAndReusesTemplates(t *testing.T) {
	ctx := context.Background()
	// Windows wider than Karpenter's, so the merge does not depend on how
	// fast this shared machine starts goroutines.
	opts := providerOptions(t, "cluster-a")
	opts.CreateFleetBatchIdle, opts.CreateFleetBatchMax = 500*time.Millisecond, 5*time.Second
	opts.InstanceBatchIdle, opts.InstanceBatchMax = 500*time.Millisecond, 5*time.Second
	p, err := awsprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	nc := readyNodeClass(t, p, nodeClass(t))
	warm := nodeClaim(t, nc)
	if _, err := p.Create(ctx, warm); err != nil { // primes the instance index and types
		t.Fatal(err)
	}
	const n = 10
	local.calls.reset()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	ids := make(chan string, n)
	launched := make(chan *v1.NodeClaim, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim := nodeClaim(t, nc)
			claim.Name = fmt.Sprintf("%s-%d", claim.Name, i)
			claim.UID = types.UID(fmt.Sprintf("%s-%d", claim.UID, i))
			got, err := p.Create(ctx, claim)
			if err != nil {
				errs <- err
				return
			}
			ids <- got.Status.ProviderID
			launched <- got
		}()
	}
	wg.Wait()
	close(errs)
	close(ids)
	close(launched)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("two NodeClaims got instance %s", id)
		}
		seen[id] = true
	}
	counts := local.calls.reset()
	ec2Calls := total(counts, "EC2")
	t.Logf("EC2 calls for %d concurrent launches: %d (%.1f per node): %s", n, ec2Calls, float64(ec2Calls)/n, describe(counts))
	if counts["EC2:CreateFleet"] != 1 {
		t.Errorf("CreateFleet calls = %d, want 1 (identical launches batched)", counts["EC2:CreateFleet"])
	}
	if counts["EC2:CreateLaunchTemplate"] != 0 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 0 (the template of the first launch is reused)", counts["EC2:CreateLaunchTemplate"])
	}
	if len(seen) != n {
		t.Errorf("launched %d distinct instances, want %d", len(seen), n)
	}

	// Concurrent Gets share one DescribeInstances; concurrent Deletes one
	// DescribeInstances and one TerminateInstances.
	var claims []*v1.NodeClaim
	for c := range launched {
		claims = append(claims, c)
	}
	for _, op := range []struct {
		name string
		do   func(*v1.NodeClaim) error
		want map[string]int
	}{
		{name: "Get", do: func(c *v1.NodeClaim) error { _, err := p.Get(ctx, c.Status.ProviderID); return err }, want: map[string]int{"EC2:DescribeInstances": 1}},
		{name: "Delete", do: func(c *v1.NodeClaim) error { return p.Delete(ctx, c) }, want: map[string]int{"EC2:DescribeInstances": 1, "EC2:TerminateInstances": 1}},
	} {
		local.calls.reset()
		var wg sync.WaitGroup
		for _, c := range claims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := op.do(c); err != nil {
					t.Errorf("%s %s: %v", op.name, c.Status.ProviderID, err)
				}
			}()
		}
		wg.Wait()
		counts := local.calls.reset()
		t.Logf("EC2 calls for %d concurrent %s calls: %s", len(claims), op.name, describe(counts))
		for k, v := range op.want {
			if counts[k] != v {
				t.Errorf("%d concurrent %s calls made %d %s calls, want %d (batched)", len(claims), op.name, counts[k], k, v)
			}
		}
	}
	for _, c := range claims {
		if st := describeInstance(t, c.Status.ProviderID).State.Name; st != ec2types.InstanceStateNameShuttingDown && st != ec2types.InstanceStateNameTerminated {
			t.Errorf("%s is %s after Delete", c.Status.ProviderID, st)
		}
	}
}

// Get, List and Delete act only on this cluster's instances: another
// cluster with the same name is left alone (seed 004).
func TestIdentityKeepsNamesakesApart(t *testing.T) {
	ctx := context.Background()
	rec := &recorded{}
	opts := providerOptions(t, "cluster-a")
	opts.Recorder = tee{rec, apiRecorder(t)}
	a, err := awsprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b := newProvider(t, "cluster-b")
	nc := readyNodeClass(t, a, nodeClass(t))
	mine, err := a.Create(ctx, nodeClaim(t, nc))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := b.Create(ctx, nodeClaim(t, nc))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range listed {
		found[c.Status.ProviderID] = true
	}
	if !found[mine.Status.ProviderID] || found[theirs.Status.ProviderID] {
		t.Errorf("cluster a lists %v; want its own %s and not the namesake's %s", found, mine.Status.ProviderID, theirs.Status.ProviderID)
	}
	// Seed 004 is said where users look: an event on the node class, not
	// only an error log line.
	if !rec.has(events.ClusterNamesake, nc.Name, "cluster-b") {
		t.Errorf("no %s event on EC2NodeClass %s naming cluster-b: %+v", events.ClusterNamesake, nc.Name, rec.events)
	}
	// explain of a NodePool of that class shows the controller's event.
	explainShowsNamesake(t, nodePool(nc), nc)
	// The namesake's instance exists: not found would tell garbage
	// collection it is gone; it is only not this cluster's.
	if _, err := a.Get(ctx, theirs.Status.ProviderID); !cloudprovider.IsNodeClaimNotOwned(err) || cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of the namesake's instance = %v, want NodeClaimNotOwnedError", err)
	}
	if err := a.Delete(ctx, theirs); !cloudprovider.IsNodeClaimNotOwned(err) {
		t.Errorf("Delete of the namesake's instance = %v, want NodeClaimNotOwnedError", err)
	}
	if st := describeInstance(t, theirs.Status.ProviderID).State.Name; st != ec2types.InstanceStateNameRunning {
		t.Errorf("the namesake's instance is %s after cluster a's Delete, want running", st)
	}
	if err := a.Delete(ctx, mine); err != nil {
		t.Fatalf("Delete of its own instance: %v", err)
	}
	if st := describeInstance(t, mine.Status.ProviderID).State.Name; st != ec2types.InstanceStateNameShuttingDown && st != ec2types.InstanceStateNameTerminated {
		t.Errorf("own instance is %s after Delete, want terminating", st)
	}
	if err := a.Delete(ctx, mine); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete of a terminated instance = %v, want NodeClaimNotFoundError", err)
	}
}

// A provider taking over from another (a new leader) that gets concurrent
// Creates for NodeClaims the old one launched returns their instances and
// launches none. Its instance index counted as primed as soon as List had
// described the instances, before it remembered them (hydrating waits
// for the cold instance type catalog), so the other Creates found it empty
// and launched again: chaos round aws/1 saw three NodeClaims with two
// instances each after a kill -9 of the leader.
func TestNewLeaderFindsEarlierLaunchesUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	const n = 3
	claims := make([]*v1.NodeClaim, n)
	want := map[string]string{}
	for i := range claims {
		claim := nodeClaim(t, nc)
		claim.Name = fmt.Sprintf("%s-%d", claim.Name, i)
		claim.UID = types.UID(fmt.Sprintf("%s-%d", claim.UID, i))
		got, err := p.Create(ctx, claim)
		if err != nil {
			t.Fatal(err)
		}
		claims[i], want[claim.Name] = claim, got.Status.ProviderID
	}
	// The new provider's catalog is cold: its first DescribeInstanceTypes
	// page is slow. The first Create's List reaches it while hydrating; the
	// others start then.
	t.Cleanup(local.faults.clear)
	local.faults.inject("DescribeInstanceTypes", localec2.FaultSlow)
	next := newProvider(t, "cluster-a")
	local.calls.reset()
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i, claim := range claims {
		if i == 1 {
			test.Eventually(t, 30*time.Second, func(context.Context) error {
				if local.faults.injected("DescribeInstanceTypes") == 0 {
					return fmt.Errorf("the first Create has not reached the instance type catalog")
				}
				return nil
			})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := next.Create(ctx, claim)
			if err == nil {
				got[i] = out.Status.ProviderID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, claim := range claims {
		if errs[i] != nil {
			t.Errorf("Create of %s on the new provider: %v", claim.Name, errs[i])
		} else if got[i] != want[claim.Name] {
			t.Errorf("Create of %s on the new provider = %s, want the earlier launch %s", claim.Name, got[i], want[claim.Name])
		}
	}
	if launches := local.calls.reset()["EC2:CreateFleet"]; launches != 0 {
		t.Errorf("the new provider called CreateFleet %d times, want 0", launches)
	}
}
