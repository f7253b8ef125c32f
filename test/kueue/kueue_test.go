//go:build kueue

package kueue_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"crypto/tls"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/scheduling"
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
// ProvisioningRequest admission check (best-effort-atomic-scale-up). Kueue
// asks joiner; joiner launches the 6 nodes in one group; Kueue admits the
// Job only then, and its 6 pods run on those nodes. A second Job of 6 on a
// type the cloud has no capacity for is never admitted, leaves no
// NodeClaim and no instance, and its request says why.
func TestKueueAdmitsGangOnlyWhenProvisioned(t *testing.T) {
	env := test.Env(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cluster := test.Name(t, "c")
	if len(cluster) > 40 {
		cluster = strings.TrimLeft(cluster[len(cluster)-40:], "-")
	}
	store := filepath.Join(t.TempDir(), "instances.json")

	nodeClass := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")}, Spec: simv1alpha1.SimNodeClassSpec{
		LaunchDelay: metav1.Duration{Duration: 500 * time.Millisecond}, RegistrationDelay: metav1.Duration{Duration: 500 * time.Millisecond},
		// The cloud has no g5.xlarge at all: the second Job's gang cannot be had.
		Faults: &simv1alpha1.Faults{InsufficientCapacity: []simv1alpha1.InsufficientCapacityFault{{InstanceType: "g5.xlarge"}}},
	}}
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: nodeClass.Name},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			ExpireAfter:  v1.MustParseNillableDuration("720h"),
		}},
		Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("Never")},
	}}
	env.Create(t, nodeClass, nodePool)
	test.StartJoiner(t, joinerBin.Path(t), "joiner", []string{"controller",
		"--kubeconfig=" + env.ControlPlane.KubeconfigPath(), "--cluster-name=" + cluster, "--sim-store=" + store,
		"--metrics-port=0", "--health-probe-port=0", "--leader-election-name=" + cluster}, nil)
	startKueue(t)
	queue := applyQueues(t, ns)

	// The gang that can be had.
	job := gpuJob(ns, "train", queue, nodePool.Name, "g4dn.xlarge")
	env.Create(t, job)
	pr := waitRequest(t, ns, "train")
	provisioned := waitCondition(t, pr, autoscalingv1.Provisioned, metav1.ConditionTrue, 3*time.Minute)
	claims := requestClaims(t, pr)
	if len(claims) != 6 {
		t.Fatalf("%d NodeClaims for the request, want 6", len(claims))
	}
	admitted := waitWorkloadAdmitted(t, ns, "train")
	if admitted.Before(provisioned.LastTransitionTime.Time) {
		t.Errorf("the Job was admitted at %s, before its request was provisioned at %s", admitted, provisioned.LastTransitionTime)
	}
	waitRunning(t, ns, "train", 6, 3*time.Minute)
	onRequestNodes(t, ns, "train", claims)

	// The gang that cannot: nothing is launched, nothing is admitted.
	env.Create(t, gpuJob(ns, "starved", queue, nodePool.Name, "g5.xlarge"))
	starved := waitRequest(t, ns, "starved")
	c := waitCondition(t, starved, autoscalingv1.Provisioned, metav1.ConditionFalse, 2*time.Minute)
	t.Logf("unmeetable request: %s: %s", c.Reason, c.Message)
	if !strings.Contains(c.Message, "g5.xlarge") && !strings.Contains(c.Message, "InsufficientInstanceCapacity") {
		t.Errorf("Provisioned=False message %q does not say the cloud had no capacity", c.Message)
	}
	test.Consistently(t, 20*time.Second, func(ctx context.Context) error {
		if n := len(requestClaims(t, starved)); n > 0 {
			return fmt.Errorf("%d NodeClaims of the unmeetable request", n)
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
	if n := countInstances(t, store, cluster); n != 6 {
		t.Errorf("%d instances running, want only the first gang's 6", n)
	}
	_ = ctx
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
// admission check and its config, a ClusterQueue and a LocalQueue in ns,
// and returns the LocalQueue's name.
func applyQueues(t *testing.T, ns string) string {
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
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
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
`, name, ns)
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

func waitCondition(t *testing.T, pr *autoscalingv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	test.Eventually(t, timeout, func(ctx context.Context) error {
		cur := &autoscalingv1.ProvisioningRequest{}
		if err := test.Env(t).Client.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil || c.Status != status {
			return fmt.Errorf("%s is %+v, want %s (all: %+v)", typ, c, status, cur.Status.Conditions)
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

func waitRunning(t *testing.T, ns, app string, n int, timeout time.Duration) {
	t.Helper()
	test.Eventually(t, timeout, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := test.Env(t).Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("%d of %d pods of %s running", running, n, app)
		}
		return nil
	})
}

// onRequestNodes checks every pod of app runs on a node of claims and
// consumes the request.
func onRequestNodes(t *testing.T, ns, app string, claims []v1.NodeClaim) {
	t.Helper()
	nodes := map[string]bool{}
	for _, nc := range claims {
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

func countInstances(t *testing.T, store, cluster string) int {
	t.Helper()
	st, err := sim.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.New(sim.Options{Client: test.Env(t).Client, Store: st, ClusterName: cluster,
		Catalog: func(*simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(out)
}

// startKueue runs Kueue's manager with its webhooks on a loopback port
// (a serving certificate for 127.0.0.1 signed by a CA made here), and
// registers the webhooks of the Job integration and of Kueue's own kinds
// with kube-apiserver by URL.
func startKueue(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	caPEM := writeCerts(t, dir)
	port := freePort(t)
	probe := freePort(t)
	cfg := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
webhook: {port: %d, host: 127.0.0.1, certDir: %q}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
manageJobsWithoutQueueName: false
integrations: {frameworks: ["batch/job"]}
`, probe, port, dir)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := test.Env(t)
	_ = env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}})
	test.StartJoiner(t, filepath.Join(kueueDir(), "kueue"), "kueue",
		[]string{"--config=" + cfgPath, "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=2"},
		[]string{"KUBECONFIG=" + env.ControlPlane.KubeconfigPath()})
	registerWebhooks(t, port, caPEM)
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kueue readyz: %s", resp.Status)
		}
		return nil
	})
}

// registerWebhooks installs Kueue's webhook configurations, keeping only
// the Job integration's and Kueue's own kinds' webhooks (the other
// integrations' paths are not served with only batch/job enabled), with
// each webhook's service replaced by its loopback URL.
func registerWebhooks(t *testing.T, port int, caPEM []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kueueDir(), "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range decodeAll(t, b) {
		hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			m := h.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			if !strings.Contains(path, "kueue-x-k8s-io") && !strings.Contains(path, "batch-v1-job") {
				continue
			}
			m["clientConfig"] = map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d%s", port, path), "caBundle": caPEM}
			kept = append(kept, m)
		}
		if err := unstructured.SetNestedSlice(cfg.Object, kept, "webhooks"); err != nil {
			t.Fatal(err)
		}
		cfg.SetName(test.Name(t, "kueue-"+strings.ToLower(cfg.GetKind())))
		raw, err := yaml.Marshal(cfg.Object)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatal(err)
		}
		env := test.Env(t)
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("registering %s: %v", cfg.GetKind(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// writeCerts writes tls.crt and tls.key for 127.0.0.1 into dir and
// returns the CA's PEM.
func writeCerts(t *testing.T, dir string) []byte {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kueue-e2e-ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for name, b := range map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	return caPEM
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
