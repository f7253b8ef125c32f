package state

import (
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// maxPodTemplates bounds the templates kept: past it the table starts
// again empty (the pods already cached keep what they share).
const maxPodTemplates = 1000

// podTemplates lets the cached pods of one controller (a ReplicaSet's
// replicas, a Job's pods) share the parts they have equal: labels,
// owner references, containers (with their resources), init containers,
// tolerations, affinity, node selector and topology spread. Each replica
// decoded from the API server has its own copy of them all, about half of
// a cached pod: 10,000 replicas of a few Deployments held some 25 MB of
// identical maps and slices.
//
// Sharing is safe because no one changes a cached object (see
// Cluster.Register); a part is shared only when it is exactly equal
// (reflect.DeepEqual, so even a quantity's spelling is kept) to the
// template's, which is the first pod seen of its controller.
type podTemplates struct {
	mu      sync.Mutex
	byOwner map[types.UID]*podTemplate
}

// podTemplate holds the shareable parts of the first pod seen of a
// controller.
type podTemplate struct {
	labels         map[string]string
	owners         []metav1.OwnerReference
	containers     []corev1.Container
	initContainers []corev1.Container
	tolerations    []corev1.Toleration
	affinity       *corev1.Affinity
	nodeSelector   map[string]string
	spread         []corev1.TopologySpreadConstraint
}

func newPodTemplates() *podTemplates {
	return &podTemplates{byOwner: map[types.UID]*podTemplate{}}
}

// share points p's parts that equal its controller's template at the
// template's, or makes p the template of its controller.
func (t *podTemplates) share(p *corev1.Pod) {
	owner := pods.ControllerOf(p)
	if owner == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tpl, ok := t.byOwner[owner.UID]
	if !ok {
		if len(t.byOwner) >= maxPodTemplates {
			clear(t.byOwner)
		}
		t.byOwner[owner.UID] = &podTemplate{
			labels: p.Labels, owners: p.OwnerReferences,
			containers: p.Spec.Containers, initContainers: p.Spec.InitContainers,
			tolerations: p.Spec.Tolerations, affinity: p.Spec.Affinity,
			nodeSelector: p.Spec.NodeSelector, spread: p.Spec.TopologySpreadConstraints,
		}
		return
	}
	shareEqual(&p.Labels, tpl.labels)
	shareEqual(&p.OwnerReferences, tpl.owners)
	shareEqual(&p.Spec.Containers, tpl.containers)
	shareEqual(&p.Spec.InitContainers, tpl.initContainers)
	shareEqual(&p.Spec.Tolerations, tpl.tolerations)
	shareEqual(&p.Spec.Affinity, tpl.affinity)
	shareEqual(&p.Spec.NodeSelector, tpl.nodeSelector)
	shareEqual(&p.Spec.TopologySpreadConstraints, tpl.spread)
}

// shareEqual sets *field to shared when they are exactly equal.
func shareEqual[T any](field *T, shared T) {
	if reflect.DeepEqual(*field, shared) {
		*field = shared
	}
}
