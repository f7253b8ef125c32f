package chaos

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/test"
)

// simCloud is the simulated cloud shared through one store file; its call
// faults are injected inside it (--sim-call-faults).
type simCloud struct {
	store string
}

func (c *simCloud) name() string { return "sim" }

func (c *simCloud) start(t *testing.T, _ *world) {
	c.store = filepath.Join(t.TempDir(), "instances.json")
}

func (c *simCloud) nodeClass(t *testing.T, _ *world) (client.Object, *v1.NodeClassReference) {
	nc := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: time.Second},
			RegistrationDelay: metav1.Duration{Duration: time.Second},
		},
	}
	return nc, &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: nc.Name}
}

func (c *simCloud) requirements() []v1.NodeSelectorRequirementWithMinValues {
	// Small nodes, so a round has several to launch and consolidate.
	return []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelAWSInstanceCPU, Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "4"}}}
}

func (c *simCloud) replica(_ *testing.T, _ *world, f sim.CallFaults) ([]string, []string, string) {
	args := []string{"--sim-store=" + c.store}
	if f.Enabled() {
		args = append(args, "--sim-call-faults="+f.String())
	}
	return args, nil, f.String()
}

// namesake's Nodes register in its own API server, never Ready (no
// kwok): enough to own instances. Its NodeClaims keep their finalizers
// until its API server goes.
func (c *simCloud) namesake(t *testing.T, w *world) Identity {
	b := w.startNamesake(t, w.nodeClass.DeepCopyObject().(client.Object), nil, func(b *test.Environment) []string {
		return w.joinerArgs(b.ControlPlane.KubeconfigPath(), true, "--sim-store="+c.store)
	}, nil)
	return w.namesakeIdentity(t, b)
}

func (c *simCloud) observed() Cloud { return SimCloud(c.store) }

// simFaultKinds are the simulated cloud's fault messages (faults.go), by
// the kind the summary names.
var simFaultKinds = []struct{ kind, message string }{
	{"throttle", "RequestLimitExceeded: request rate exceeded (simulated fault)"},
	{"5xx", "InternalError: status code 500, an internal error occurred (simulated fault)"},
	{"ghost", "InternalError: status code 500, the response was lost (simulated fault)"},
	{"capacity", "InsufficientInstanceCapacity: no capacity for the offering (simulated fault)"},
}

func (c *simCloud) faultsMet(replicas []*replica) string {
	n, kinds := 0, make([]int, len(simFaultKinds))
	for _, r := range replicas {
		b := r.readLogs()
		n += strings.Count(b, "(simulated fault)")
		for i, k := range simFaultKinds {
			kinds[i] += strings.Count(b, k.message)
		}
	}
	parts := make([]string, len(kinds))
	for i, k := range simFaultKinds {
		parts[i] = k.kind + "=" + strconv.Itoa(kinds[i])
	}
	return strconv.Itoa(n) + " failed cloud calls logged (" + strings.Join(parts, " ") + ")"
}
