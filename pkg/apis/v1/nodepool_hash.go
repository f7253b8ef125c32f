package v1

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hashedTemplate is the part of a NodePool that Hash covers: what is stamped
// into a NodeClaim at launch and cannot change on a running node. Left out:
// requirements (drift is judged by whether the node still satisfies them),
// and the behavioural fields (disruption, limits, weight), which apply to
// existing nodes as they are.
type hashedTemplate struct {
	Labels                 map[string]string   `json:"labels,omitempty"`
	Annotations            map[string]string   `json:"annotations,omitempty"`
	Taints                 []corev1.Taint      `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint      `json:"startupTaints,omitempty"`
	NodeClassRef           *NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfter            string              `json:"expireAfter"`
	TerminationGracePeriod *metav1.Duration    `json:"terminationGracePeriod,omitempty"`
}

// Hash returns the static drift hash of the NodePool's template (see
// AnnotationNodePoolHash): FNV-64a over the canonical JSON of the hashed
// fields. Map order never matters; list order does. Durations are hashed by
// value, so rewriting "720h" as "720h0m0s" is not drift.
func (in *NodePool) Hash() string {
	t := in.Spec.Template
	expireAfter := Never
	if d := t.Spec.ExpireAfter; !d.IsZero() && !d.IsNever() {
		expireAfter = d.Duration.String()
	}
	b, err := json.Marshal(hashedTemplate{
		Labels:                 t.ObjectMeta.Labels,
		Annotations:            t.ObjectMeta.Annotations,
		Taints:                 t.Spec.Taints,
		StartupTaints:          t.Spec.StartupTaints,
		NodeClassRef:           t.Spec.NodeClassRef,
		ExpireAfter:            expireAfter,
		TerminationGracePeriod: t.Spec.TerminationGracePeriod,
	})
	if err != nil {
		// Every field is a plain value, map or pointer: Marshal cannot fail.
		panic(err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}
