//go:build kueue

package kueue_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// kueueDir holds the Kueue binary, its CRDs and webhook manifests
// (hack/kueue.sh).
func kueueDir() string {
	if d := os.Getenv("JOINER_KUEUE_BIN"); d != "" {
		return d
	}
	return test.RepoPath("bin/kueue")
}

var joinerBin test.JoinerBinary

func TestMain(m *testing.M) {
	dir := kueueDir()
	if _, err := os.Stat(filepath.Join(dir, "kueue")); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: no Kueue binary in %s (run hack/kueue.sh, or make e2e-kueue): %v\n", dir, err)
		os.Exit(1)
	}
	bin, err := os.MkdirTemp("", "joiner-kueue-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	joinerBin.Dir = bin
	code := test.Run(m, controlplane.Options{
		Scheduler: true, ControllerManager: true, Kwok: true,
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds"), filepath.Join(dir, "crds")},
		Scheme:         test.Scheme(),
	})
	os.RemoveAll(bin)
	os.Exit(code)
}

// TestKueueAdmitsGangOnlyWhenProvisioned: a Job of 6 pods, each needing a
// g4dn.xlarge (one GPU) of its own, queued in Kueue behind a
// ProvisioningRequest admission check (best-effort-atomic-scale-up),
// with joiner on the AWS provider against the local EC2. The local EC2
// has room for 10 g4dn.xlarge. Kueue asks joiner; joiner launches the 6
// instances in one instant fleet with MinTargetCapacity 6; Kueue admits
// the Job only then, and its 6 pods run on those nodes (and no other
// fleet is launched for them). The same Job behind a check-capacity
// admission check fits those nodes and is admitted without a launch.
// Once the Jobs are done the nodes are removed,
// and the same Job again, when only 4 g4dn.xlarge can be had, is never
// admitted: EC2 refuses the fleet whole, no instance runs, and the request
// (and, through Kueue, the Workload) says why.
func TestKueueAdmitsGangOnlyWhenProvisioned(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	cloud := startLocalEC2(t, map[string]int{gpuType: 10})

	nodeClass := cloud.nodeClass(t)
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass.Name},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				{Key: v1.LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"g4dn", "m5"}},
			},
			ExpireAfter: v1.MustParseNillableDuration("720h"),
		}},
		Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("Never")},
	}}
	env.Create(t, nodeClass, nodePool)
	startJoiner(t, cloud)
	startKueue(t)
	queue := applyQueues(t, ns, autoscalingv1.ClassBestEffortAtomicScaleUp)

	// The gang that can be had: one fleet of 6, all or nothing.
	job := gpuJob(ns, "train", queue, nodePool.Name, gpuType)
	env.Create(t, job)
	pr := waitRequest(t, ns, "train")
	provisioned := waitCondition(t, pr, autoscalingv1.Provisioned, metav1.ConditionTrue, "", 3*time.Minute)
	claims := requestClaims(t, pr)
	if len(claims) != 6 {
		t.Fatalf("%d NodeClaims for the request, want 6", len(claims))
	}
	fleets := cloud.proxy.Capacity.Decisions()
	t.Logf("fleets for the gang of 6: %+v", fleets)
	if want := (localec2.FleetDecision{Total: 6, Min: 6, InstanceType: gpuType, Launched: 6}); len(fleets) != 1 || fleets[0] != want {
		t.Errorf("CreateFleet calls %+v, want exactly one: %+v", fleets, want)
	}
	admitted := waitWorkloadAdmitted(t, ns, "train")
	if admitted.Before(provisioned.LastTransitionTime.Time) {
		t.Errorf("the Job was admitted at %s, before its request was provisioned at %s", admitted, provisioned.LastTransitionTime)
	}
	// kwok completes a Job's pods as soon as they run.
	waitRan(t, ns, "train", 6, 3*time.Minute)
	onRequestNodes(t, ns, "train", pr)
	if n := cloud.running(t); n != 6 {
		t.Errorf("%d instances running, want the gang's 6", n)
	}
	if fleets := cloud.proxy.Capacity.Decisions(); len(fleets) != 1 {
		t.Errorf("CreateFleet calls %+v once the Job ran, want only the gang's one: its pods must not be provisioned one by one", fleets)
	}
	if left := cloud.proxy.Capacity.Left(gpuType); left != 4 {
		t.Fatalf("room for %d more %s after the first gang, want 4", left, gpuType)
	}

	// The same Job behind a check-capacity admission check: it fits the
	// gang's 6 nodes, empty now, so Kueue admits it without a launch.
	checkQueue := applyQueues(t, ns, autoscalingv1.ClassCheckCapacity)
	env.Create(t, gpuJob(ns, "check", checkQueue, nodePool.Name, gpuType))
	check := waitRequest(t, ns, "check")
	found := waitCondition(t, check, autoscalingv1.Provisioned, metav1.ConditionTrue, "fit the existing capacity", time.Minute)
	t.Logf("check-capacity answered within %s of the request (API timestamps count seconds): %s", found.LastTransitionTime.Sub(check.CreationTimestamp.Time)+time.Second, found.Message)
	waitWorkloadAdmitted(t, ns, "check")
	waitRan(t, ns, "check", 6, 2*time.Minute)
	onRequestNodes(t, ns, "check", pr)
	if fleets := cloud.proxy.Capacity.Decisions(); len(fleets) != 1 {
		t.Errorf("CreateFleet calls %+v after the check-capacity Job, want only the gang's one", fleets)
	}
	if n := len(requestClaims(t, check)); n != 0 {
		t.Errorf("%d NodeClaims for the check-capacity request, want none", n)
	}

	// The Jobs are done; the nodes go (as consolidation would take them).
	for i := range claims {
		if err := env.Client.Delete(t.Context(), &claims[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if n := cloud.running(t); n != 0 {
			return fmt.Errorf("%d instances still running", n)
		}
		return nil
	})

	// The same Job when only 4 can be had: EC2 refuses the fleet whole,
	// nothing is launched, nothing is admitted.
	env.Create(t, gpuJob(ns, "starved", queue, nodePool.Name, gpuType))
	starved := waitRequest(t, ns, "starved")
	// The request says why: EC2's capacity error for the whole fleet.
	c := waitCondition(t, starved, autoscalingv1.Provisioned, metav1.ConditionFalse, "InsufficientInstanceCapacity", 2*time.Minute)
	t.Logf("unmeetable request: %s: %s", c.Reason, c.Message)
	test.Consistently(t, 30*time.Second, func(ctx context.Context) error {
		for _, nc := range requestClaims(t, starved) {
			if nc.Status.ProviderID != "" {
				return fmt.Errorf("NodeClaim %s of the unmeetable request holds instance %s", nc.Name, nc.Status.ProviderID)
			}
		}
		if n := cloud.running(t); n != 0 {
			return fmt.Errorf("%d instances running, want none", n)
		}
		var j batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "starved"}, &j); err != nil {
			return err
		}
		if !ptr.Deref(j.Spec.Suspend, false) {
			return fmt.Errorf("the unmeetable Job was unsuspended (admitted)")
		}
		return nil
	})
	refused := cloud.proxy.Capacity.Decisions()[1:]
	t.Logf("fleets for the gang of 6 with room for 4: %+v", refused)
	if len(refused) == 0 {
		t.Error("no CreateFleet for the second gang: the refusal was not EC2's")
	}
	for _, d := range refused {
		if d.Launched != 0 || d.Min != 6 {
			t.Errorf("CreateFleet %+v for the second gang, want MinTargetCapacity 6 and nothing launched", d)
		}
	}
	test.Eventually(t, 30*time.Second, func(context.Context) error {
		if msg := workloadCheckMessage(t, ns, "starved"); !strings.Contains(msg, "InsufficientInstanceCapacity") {
			return fmt.Errorf("Kueue's admission check on the starved workload says %q; want joiner's reason passed on", msg)
		}
		return nil
	})
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if n := len(requestClaims(t, starved)); n > 0 {
			return fmt.Errorf("%d NodeClaims of the unmeetable request left", n)
		}
		return nil
	})
}

// gpuJob is a Job of 6 pods, each asking one GPU on typ, queued in queue.
func gpuJob(ns, name, queue, nodePool, typ string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": queue}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](6), Completions: ptr.To[int32](6), Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					NodeSelector:                  map[string]string{v1.LabelNodePool: nodePool, corev1.LabelInstanceTypeStable: typ},
					Tolerations:                   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "train", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), "nvidia.com/gpu": resource.MustParse("1")},
						Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
					}}},
				},
			},
		},
	}
}

// applyQueues creates the ResourceFlavor, the ProvisioningRequest
// admission check and its config (requests of class), a ClusterQueue and a LocalQueue in ns,
// and returns the LocalQueue's name.
func applyQueues(t *testing.T, ns, class string) string {
	t.Helper()
	name := test.Name(t, "q")
	docs := fmt.Sprintf(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: %[1]s}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: %[1]s}
spec:
  provisioningClassName: %[3]s
  managedResources: [nvidia.com/gpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: %[1]s}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: %[1]s}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: %[1]s}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: %[1]s
      resources:
      - {name: cpu, nominalQuota: "1000"}
      - {name: memory, nominalQuota: 10000Gi}
      - {name: nvidia.com/gpu, nominalQuota: "100"}
  admissionChecksStrategy:
    admissionChecks:
    - name: %[1]s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: %[1]s, namespace: %[2]s}
spec: {clusterQueue: %[1]s}
`, name, ns, class)
	for _, obj := range decodeAll(t, []byte(docs)) {
		test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			return client.IgnoreAlreadyExists(test.Env(t).Client.Create(ctx, obj.DeepCopy()))
		})
	}
	return name
}

func decodeAll(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("decoding manifests: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// waitRequest waits for the ProvisioningRequest Kueue made for the Job's
// workload (its name starts with the workload's, which starts with
// "job-<name>-").
func waitRequest(t *testing.T, ns, job string) *autoscalingv1.ProvisioningRequest {
	t.Helper()
	var out *autoscalingv1.ProvisioningRequest
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var list autoscalingv1.ProvisioningRequestList
		if err := test.Env(t).Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			if strings.HasPrefix(list.Items[i].Name, "job-"+job+"-") {
				out = &list.Items[i]
				return nil
			}
		}
		return fmt.Errorf("no ProvisioningRequest for job %s among %d", job, len(list.Items))
	})
	return out
}

// waitCondition waits until pr's condition typ has status and a message
// containing contains.
func waitCondition(t *testing.T, pr *autoscalingv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, contains string, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	test.Eventually(t, timeout, func(ctx context.Context) error {
		cur := &autoscalingv1.ProvisioningRequest{}
		if err := test.Env(t).Client.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil || c.Status != status || !strings.Contains(c.Message, contains) {
			return fmt.Errorf("%s is %+v, want %s saying %q (all: %+v)", typ, c, status, contains, cur.Status.Conditions)
		}
		got = *c
		return nil
	})
	return got
}

func requestClaims(t *testing.T, pr *autoscalingv1.ProvisioningRequest) []v1.NodeClaim {
	t.Helper()
	cur := &autoscalingv1.ProvisioningRequest{}
	if err := test.Env(t).Client.Get(t.Context(), client.ObjectKeyFromObject(pr), cur); err != nil {
		t.Fatal(err)
	}
	var list v1.NodeClaimList
	if err := test.Env(t).Client.List(t.Context(), &list, client.MatchingLabels{autoscalingv1.LabelProvisioningRequestUID: string(cur.UID)}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitWorkloadAdmitted waits until the Job's Workload is Admitted and
// returns when.
func waitWorkloadAdmitted(t *testing.T, ns, job string) time.Time {
	t.Helper()
	var at time.Time
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		list.SetKind("WorkloadList")
		if err := test.Env(t).Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, wl := range list.Items {
			if !strings.HasPrefix(wl.GetName(), "job-"+job+"-") {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Admitted" && m["status"] == "True" {
					ts, _ := m["lastTransitionTime"].(string)
					parsed, err := time.Parse(time.RFC3339, ts)
					if err != nil {
						return err
					}
					at = parsed
					return nil
				}
			}
			return fmt.Errorf("workload %s not admitted: %v", wl.GetName(), conds)
		}
		return fmt.Errorf("no workload for job %s", job)
	})
	return at
}

// workloadCheckMessage is the message of the Job's Workload's admission
// check (Kueue copies the request's Provisioned message there).
func workloadCheckMessage(t *testing.T, ns, job string) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	list.SetKind("WorkloadList")
	if err := test.Env(t).Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, wl := range list.Items {
		if !strings.HasPrefix(wl.GetName(), "job-"+job+"-") {
			continue
		}
		checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
		var msgs []string
		for _, c := range checks {
			m, _ := c.(map[string]any)
			msg, _ := m["message"].(string)
			msgs = append(msgs, msg)
		}
		return strings.Join(msgs, "; ")
	}
	return ""
}

// waitRan waits until n pods of app run or ran to completion.
func waitRan(t *testing.T, ns, app string, n int, timeout time.Duration) {
	t.Helper()
	test.Eventually(t, timeout, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := test.Env(t).Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		running := 0
		var states []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
				running++
			}
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					why = c.Message
				}
			}
			states = append(states, fmt.Sprintf("%s %s on %q %s", p.Name, p.Status.Phase, p.Spec.NodeName, why))
		}
		if running != n {
			var nodes corev1.NodeList
			if err := test.Env(t).Client.List(ctx, &nodes); err != nil {
				return err
			}
			var ready []string
			for _, node := range nodes.Items {
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady {
						ready = append(ready, fmt.Sprintf("%s Ready=%s gpu=%s taints=%v", node.Name, c.Status, node.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI), node.Spec.Taints))
					}
				}
			}
			return fmt.Errorf("%d of %d pods of %s ran: %v; nodes: %v", running, n, app, states, ready)
		}
		return nil
	})
}

// onRequestNodes checks every pod of app ran on a node launched for pr
// and consumes the request.
func onRequestNodes(t *testing.T, ns, app string, pr *autoscalingv1.ProvisioningRequest) {
	t.Helper()
	nodes := map[string]bool{}
	// Read now: a NodeClaim names its Node once the Node registered.
	for _, nc := range requestClaims(t, pr) {
		nodes[nc.Status.NodeName] = true
	}
	var pods corev1.PodList
	if err := test.Env(t).Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !nodes[p.Spec.NodeName] || p.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest] == "" {
			t.Errorf("pod %s on %s (annotations %v): want a node launched for the request, and Kueue's consume annotation", p.Name, p.Spec.NodeName, p.Annotations)
		}
	}
}
