package e2e

import (
	"context"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/test"
)

// Setup wires the whole simulated cloud into a manager: the SimNodeClass
// status controller marks node classes Ready (or not, saying why) and the
// machines register launched instances.
func TestSetupWiresTheCloudIntoAManager(t *testing.T) {
	env := test.Env(t)
	mgr := env.NewManager(t)
	storePath := filepath.Join(t.TempDir(), "instances.json")
	provider, err := sim.Setup(mgr, sim.SetupOptions{
		StorePath:   storePath,
		ClusterName: test.Name(t, "cluster"),
	})
	if err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)

	good := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "good")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: 50 * time.Millisecond},
			RegistrationDelay: metav1.Duration{Duration: 50 * time.Millisecond},
		},
	}
	bad := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "bad")},
		Spec:       simv1alpha1.SimNodeClassSpec{Catalog: simv1alpha1.Catalog{InstanceFamilies: []string{"zz9"}}},
	}
	env.Create(t, good, bad)
	for obj, want := range map[*simv1alpha1.SimNodeClass]metav1.ConditionStatus{good: metav1.ConditionTrue, bad: metav1.ConditionFalse} {
		test.Eventually(t, 0, func(ctx context.Context) error {
			got := &simv1alpha1.SimNodeClass{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				return err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, simv1alpha1.ConditionTypeReady)
			if c == nil || c.Status != want {
				return fmt.Errorf("simnodeclass %s Ready = %+v, want %s", obj.Name, c, want)
			}
			return nil
		})
	}

	c := &cloud{provider: provider, nodeClass: good.Name}
	claim := c.launch(t, "amd64")
	readyNode(t, claim.Status.ProviderID)

	// Setup identified the cluster by its kube-system namespace, so the
	// instance is provably this cluster's even if another one shares the name.
	kubeSystem := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: metav1.NamespaceSystem}, kubeSystem); err != nil {
		t.Fatal(err)
	}
	store, err := sim.OpenStore(storePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.View(func(st *sim.StoreState) error {
		for id, inst := range st.Instances {
			if got := inst.Tags[sim.TagClusterID]; got != string(kubeSystem.UID) {
				t.Errorf("instance %s has %s=%q, want the kube-system UID %q", id, sim.TagClusterID, got, kubeSystem.UID)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
