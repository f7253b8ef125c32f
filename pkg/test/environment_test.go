package test_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{
		Scheduler:         true,
		ControllerManager: true,
		Kwok:              true,
		CRDDirectories:    []string{test.RepoPath("pkg/controlplane/testdata/crds")},
	})
}

func TestServerVersion(t *testing.T) {
	env := test.Env(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.36.3" || v.Major != "1" || v.Minor != "36" {
		t.Errorf("server version = %s (major %q, minor %q), want v1.36.3", v.GitVersion, v.Major, v.Minor)
	}
}

func TestNamespace(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	var got corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &got); err != nil {
		t.Fatalf("getting namespace %s: %v", ns, err)
	}
	if other := env.Namespace(t); other == ns {
		t.Errorf("two namespaces of one test share the name %s", ns)
	}
}

func TestKubeconfig(t *testing.T) {
	env := test.Env(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.ControlPlane.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.NamespaceList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatalf("listing namespaces with the kubeconfig: %v", err)
	}
}

func widget(ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.joiner.sh/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"size": size}
	return u
}

func TestCRDFromDirectory(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	env.Create(t, widget(ns, test.Name(t, "widget"), 3))

	err := env.Client.Create(t.Context(), widget(ns, test.Name(t, "widget"), 0))
	if !apierrors.IsInvalid(err) {
		t.Errorf("creating a widget of size 0: got %v, want the schema to reject it", err)
	}
}

func TestInstallCRDsAtRuntime(t *testing.T) {
	env := test.Env(t)
	gadgets := []byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.joiner.sh
spec:
  group: test.joiner.sh
  scope: Cluster
  names: {kind: Gadget, plural: gadgets, listKind: GadgetList, singular: gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`)
	if err := env.ControlPlane.InstallCRDs(t.Context(), nil, gadgets); err != nil {
		t.Fatal(err)
	}
	// Installing again updates in place.
	if err := env.ControlPlane.InstallCRDs(t.Context(), nil, gadgets); err != nil {
		t.Fatalf("installing again: %v", err)
	}
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("test.joiner.sh/v1")
	g.SetKind("Gadget")
	g.SetName(test.Name(t, "gadget"))
	env.Create(t, g)
}

// TestKwokRunsDeployment creates a fake Node, waits for kwok to make it
// Ready, and checks that a Deployment's pods are scheduled onto it and run.
func TestKwokRunsDeployment(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	nodeName := test.Name(t, "node")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{
			corev1.LabelHostname: nodeName, "joiner.sh/test": "kwok",
		}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("20"),
		}},
	}
	env.Create(t, node)

	test.Eventually(t, 0, func(ctx context.Context) error {
		var got corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, &got); err != nil {
			return err
		}
		if !nodeReady(&got) {
			return fmt.Errorf("node %s is not Ready: %v", nodeName, got.Status.Conditions)
		}
		if cpu := got.Status.Allocatable.Cpu(); cpu.Cmp(resource.MustParse("4")) != 0 {
			return fmt.Errorf("node %s allocatable cpu = %s, want the capacity it was created with", nodeName, cpu)
		}
		return nil
	})

	replicas := int32(3)
	labels := map[string]string{"app": test.Name(t, "app")}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: test.Name(t, "deploy")},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: nodeName},
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "registry.invalid/app:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1"),
						}},
					}},
				},
			},
		},
	}
	env.Create(t, deploy)

	test.Eventually(t, 0, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(pods.Items) != int(replicas) {
			return fmt.Errorf("%d pods, want %d", len(pods.Items), replicas)
		}
		var errs []error
		for _, p := range pods.Items {
			if p.Spec.NodeName != nodeName || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				errs = append(errs, fmt.Errorf("pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase))
			}
		}
		return errors.Join(errs...)
	})

	var got appsv1.Deployment
	test.Eventually(t, 0, func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), &got); err != nil {
			return err
		}
		if got.Status.AvailableReplicas != replicas {
			return fmt.Errorf("deployment has %d available replicas, want %d", got.Status.AvailableReplicas, replicas)
		}
		return nil
	})

	// Scaling down deletes pods; kwok removes them from the node at once.
	if err := env.Client.Patch(t.Context(), &got, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`))); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods left, want 1", len(pods.Items))
		}
		return nil
	})
}

// TestKwokCompletesJobs checks that a Job's pod on a kwok node succeeds and
// the Job completes.
func TestKwokCompletesJobs(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	nodeName := test.Name(t, "node")
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName}}})
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: test.Name(t, "job")},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{corev1.LabelHostname: nodeName},
			Containers:    []corev1.Container{{Name: "work", Image: "registry.invalid/work:1"}},
		}}},
	}
	env.Create(t, job)
	test.Eventually(t, 0, func(ctx context.Context) error {
		var got batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &got); err != nil {
			return err
		}
		if got.Status.Succeeded != 1 {
			return fmt.Errorf("job %s: %d succeeded, %d active, %d failed", got.Name, got.Status.Succeeded, got.Status.Active, got.Status.Failed)
		}
		return nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestComponentMetrics reads kube-scheduler's and
// kube-controller-manager's /metrics through the control plane, as the
// latency benchmark does, and refuses a component without one.
func TestComponentMetrics(t *testing.T) {
	env := test.Env(t)
	for component, want := range map[string]string{
		"kube-scheduler":          "scheduler_pending_pods",
		"kube-controller-manager": "workqueue_depth",
	} {
		b, err := env.ControlPlane.Metrics(t.Context(), component)
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s metrics lack %s", component, want)
		}
	}
	if _, err := env.ControlPlane.Metrics(t.Context(), "etcd"); err == nil {
		t.Error("etcd has no metrics through Metrics, want an error")
	}
}
