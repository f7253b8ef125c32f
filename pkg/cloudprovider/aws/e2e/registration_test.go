package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/explain"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestWhyNotRegisteredNamesTheUnmappedRole is seed 001 on the controller's
// side: while a NodeClaim waits for its Node, the provider reads
// kube-system/aws-auth and the node class's role and names the role aws-auth
// does not map, with the roles it does map. Without aws-auth (nodes mapped
// by EKS access entries) and once the role is mapped, it names nothing.
func TestWhyNotRegisteredNamesTheUnmappedRole(t *testing.T) {
	env := test.Env(t)
	nc := nodeClass(t)
	env.Create(t, nc)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "claim")}, Spec: v1.NodeClaimSpec{NodeClassRef: ref(nc)}}
	why := func() string { return whyNotRegistered(t, claim, nil) }
	if got := why(); got != "" {
		t.Fatalf("without aws-auth: %q, want no cause (access entries may map the role)", got)
	}
	other := "arn:aws:iam::123456789012:role/KarpenterControllerRole"
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-auth"},
		Data:       map[string]string{"mapRoles": "- rolearn: " + other + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n"},
	}
	env.Create(t, cm)
	got := why()
	for _, want := range []string{"node role arn:aws:iam::", ":role/" + local.cluster.RoleName, "of EC2NodeClass " + nc.Name, "is not mapped in kube-system/aws-auth (mapped: " + other + ")"} {
		if !strings.Contains(got, want) {
			t.Errorf("cause %q does not say %q", got, want)
		}
	}
	arn := got[len("node role "):strings.Index(got, " of EC2NodeClass")]
	cm.Data["mapRoles"] += "- rolearn: " + arn + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n"
	if err := env.Client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if got := why(); got != "" {
		t.Errorf("with the role mapped: %q, want no cause", got)
	}
}

// TestAmd64ImagesOnAGravitonPoolNameTheImages is seed 000 on the
// controller's side: a node class whose images are all amd64 under a
// NodePool that allows only arm64 (t4g). The provider lists the arm64 types
// with every offering unavailable for want of an image, naming the images,
// and the solver's reason for the pod says so instead of "no instance type
// has an available offering".
func TestAmd64ImagesOnAGravitonPoolNameTheImages(t *testing.T) {
	p := newProvider(t, "")
	amd64 := local.cluster.AMI("AL2023", "x86_64")
	nc := readyNodeClass(t, p, nodeClass(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: amd64.ID}}
		nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2023)
	}))
	np := nodePool(nc)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
		{Key: v1.LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"t4g"}},
	}
	its, err := p.GetInstanceTypes(t.Context(), np)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range its {
		if it.Name != "t4g.small" {
			continue
		}
		found = true
		for _, o := range it.Offerings {
			if o.Available || o.Unavailable != scheduling.UnavailableNoImage || !strings.Contains(o.UnavailableDetail, amd64.ID) {
				t.Errorf("t4g.small offering %+v: want unavailable for want of an arm64 image, naming %s", o, amd64.ID)
			}
		}
	}
	if !found {
		t.Fatal("t4g.small is not listed: the pod would hear no cause")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "armapp", UID: "armapp"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{v1.LabelNodePool: np.Name},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	plan, err := scheduling.Solve(&scheduling.Snapshot{
		NodePools:     []*scheduling.NodePool{nodepool.FromNodePool(np)},
		InstanceTypes: map[string][]*scheduling.InstanceType{np.Name: its},
		Pods:          []*corev1.Pod{pod},
	}, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 1 {
		t.Fatalf("want the pod unschedulable, got %d new nodes", len(plan.NewNodeClaims))
	}
	msg := scheduling.Message(plan.Unschedulable[0].NodePools[np.Name])
	for _, want := range []string{"no image built for their architecture", "every image EC2NodeClass " + nc.Name + " selects is built for another architecture than arm64", amd64.ID} {
		if !strings.Contains(msg, want) {
			t.Errorf("reason %q does not say %q", msg, want)
		}
	}

	// explain, reading the view the controller publishes, gives the
	// same verdict in the same words as the controller's event.
	data, err := controllerview.Encode(controllerview.View{ClusterName: "e2e", Read: metav1.Now(),
		NodePools: map[string]controllerview.NodePoolTypes{np.Name: {InstanceTypes: its}}})
	if err != nil {
		t.Fatal(err)
	}
	view := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: controllerview.Name("e2e"), Labels: map[string]string{controllerview.LabelView: "true"}}, BinaryData: data}
	pod.Status.Phase = corev1.PodPending
	snap, err := explain.FromObjects([]runtime.Object{np, pod, view}, explain.SnapshotOptions{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	verdict, err := explain.Pod(snap, "default", "armapp", nil, explain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if verdict.NewNode != nil || len(verdict.Rejections) != 1 || verdict.Rejections[0].Message != msg {
		t.Errorf("explain says %+v (would launch %v), the controller says %q", verdict.Rejections, verdict.NewNode, msg)
	}
}

// recorded keeps the events a provider publishes.
type recorded struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorded) Publish(es ...events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, es...)
}

// has reports an event of reason about the object named name whose message
// mentions text.
func (r *recorded) has(reason, name, text string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if o, ok := e.Regarding.(metav1.Object); ok && e.Reason == reason && o.GetName() == name && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// TestWhyNotRegisteredReadsAccessEntries is seed 001 on a cluster that maps
// nodes with EKS access entries: the provider reads the cluster's
// authenticationMode and access entries (served by the local EC2's front;
// moto has none) beside aws-auth, and names a role mapped by neither; under
// authenticationMode API an aws-auth mapping does not count, as on EKS.
func TestWhyNotRegisteredReadsAccessEntries(t *testing.T) {
	env := test.Env(t)
	nc := nodeClass(t)
	env.Create(t, nc)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "claim")}, Spec: v1.NodeClaimSpec{NodeClassRef: ref(nc)}}
	cfg := local.server.Config()
	cfg.HTTPClient = &http.Client{Transport: localec2.NewFront(nil, localec2.FrontOptions{})}
	eksAPI := eks.NewFromConfig(cfg)
	role, err := iam.NewFromConfig(cfg).GetRole(t.Context(), &iam.GetRoleInput{RoleName: aws.String(local.cluster.RoleName)})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(role.Role.Arn)
	why := func() string { return whyNotRegistered(t, claim, eksAPI) }
	says := func(step, got string, wants ...string) {
		t.Helper()
		if len(wants) == 0 && got != "" {
			t.Errorf("%s: cause %q, want none", step, got)
		}
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("%s: cause %q does not say %q", step, got, want)
			}
		}
	}
	entry := func(create bool) {
		t.Helper()
		var err error
		if create {
			_, err = eksAPI.CreateAccessEntry(t.Context(), &eks.CreateAccessEntryInput{ClusterName: aws.String(clusterName), PrincipalArn: aws.String(arn), Type: aws.String("EC2_LINUX")})
		} else {
			_, err = eksAPI.DeleteAccessEntry(t.Context(), &eks.DeleteAccessEntryInput{ClusterName: aws.String(clusterName), PrincipalArn: aws.String(arn)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-auth"}}); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}

	says("no aws-auth, no access entry", why(),
		"node role "+arn+" of EC2NodeClass "+nc.Name+" is mapped neither in kube-system/aws-auth (mapped: none: the ConfigMap does not exist) nor by an EKS access entry of cluster "+clusterName+" (entries: none)",
		"aws eks create-access-entry --cluster-name "+clusterName+" --principal-arn "+arn+" --type EC2_LINUX")
	before := accessDigest(t, eksAPI)
	entry(true)
	says("an EC2_LINUX access entry", why())
	// The access digest the back-off reset compares changes with the
	// entry (a registration back-off then ends at once, as with aws-auth).
	if after := accessDigest(t, eksAPI); before == "" || after == before {
		t.Errorf("access digest %q before the access entry, %q after: want two different digests", before, after)
	}

	if _, err := eksAPI.UpdateClusterConfig(t.Context(), &eks.UpdateClusterConfigInput{Name: aws.String(clusterName),
		AccessConfig: &ekstypes.UpdateAccessConfigRequest{AuthenticationMode: ekstypes.AuthenticationModeApi}}); err != nil {
		t.Fatal(err)
	}
	entry(false)
	env.Create(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-auth"},
		Data:       map[string]string{"mapRoles": "- rolearn: " + arn + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n"},
	})
	says("authenticationMode API, mapped in aws-auth only", why(),
		"node role "+arn+" of EC2NodeClass "+nc.Name+" has no EKS access entry in cluster "+clusterName+" (authenticationMode API; entries: none)",
		"so EKS does not read kube-system/aws-auth")
	entry(true)
	says("authenticationMode API with the access entry", why())
}

// tee publishes to every recorder.
type tee []events.Recorder

func (t tee) Publish(es ...events.Event) {
	for _, r := range t {
		r.Publish(es...)
	}
}

// apiRecorder writes events to the test's API server as the controller's
// recorder does, until t ends.
func apiRecorder(t *testing.T) events.Recorder {
	t.Helper()
	w, err := events.NewWriter(test.Env(t).Config, test.Scheme(), "joiner")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Start(t.Context()) }()
	return events.NewRecorder(w, nil)
}

// explainShowsNamesake is seed 004 compared: `joiner explain nodepool` of
// a NodePool using nc shows the ClusterNamesake event the controller wrote
// on nc, word for word.
func explainShowsNamesake(t *testing.T, np *v1.NodePool, nc *awsv1.EC2NodeClass) {
	t.Helper()
	var note string
	var objs []runtime.Object
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		list := &eventsv1.EventList{}
		if err := test.Env(t).Client.List(ctx, list); err != nil {
			return err
		}
		objs = []runtime.Object{np, nc}
		note = ""
		for i := range list.Items {
			e := &list.Items[i]
			objs = append(objs, e)
			if e.Reason == events.ClusterNamesake && e.Regarding.Name == nc.Name {
				note = e.Note
			}
		}
		if note == "" {
			return fmt.Errorf("no %s event about EC2NodeClass %s in the API", events.ClusterNamesake, nc.Name)
		}
		return nil
	})
	out, err := explain.Text(objs, time.Now(), explain.Query{Kind: explain.KindNodePool, Name: np.Name})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, events.ClusterNamesake+": "+note) {
		t.Errorf("explain nodepool %s does not show the controller's %s event %q:\n%s", np.Name, events.ClusterNamesake, note, out)
	}
}

// freshProvider is an AWS provider with nothing cached, reading aws-auth
// from the test's API server and, when eksAPI is set, the cluster's access
// entries.
func freshProvider(t *testing.T, eksAPI awsprovider.EKSAccessAPI) *awsprovider.Provider {
	t.Helper()
	opts := providerOptions(t, "")
	opts.APIReader, opts.EKS = test.Env(t).Client, eksAPI
	p, err := awsprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// accessDigest is a fresh provider's AccessDigest.
func accessDigest(t *testing.T, eksAPI awsprovider.EKSAccessAPI) string {
	t.Helper()
	got, err := cloudprovider.AccessDigest(t.Context(), freshProvider(t, eksAPI))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// whyNotRegistered is a fresh provider's diagnosis of claim (no cached
// aws-auth or access entries).
func whyNotRegistered(t *testing.T, claim *v1.NodeClaim, eksAPI awsprovider.EKSAccessAPI) string {
	t.Helper()
	got, err := freshProvider(t, eksAPI).WhyNotRegistered(t.Context(), claim)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
