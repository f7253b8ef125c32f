package nodeclaims

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// NodeClaimName is the deterministic name of the NodeClaim that carries
// pods for nodePool: the NodePool's name and a short hash of the sorted
// pod UIDs. A retried batch or a second replica planning the same node
// computes the same name, so the API server refuses the duplicate.
func NodeClaimName(nodePool string, pods []*corev1.Pod) string {
	return NodeClaimNameAttempt(nodePool, pods, 0)
}

// NodeClaimNameAttempt is the attempt-th name in the deterministic
// sequence for these pods (attempt 0 is NodeClaimName); a later attempt is
// used when the earlier names belong to NodeClaims being deleted.
func NodeClaimNameAttempt(nodePool string, pods []*corev1.Pod, attempt int) string {
	return RelaunchName(nodePool, 0, pods, attempt)
}

// RelaunchName is NodeClaimNameAttempt for a NodePool that has had
// failures launch failures (its launch health record's count): a NodeClaim
// relaunched after one failed to register or initialise is a new object
// with its own name, events and history, while a retried batch, a second
// replica or a restart between create and the informer's sync still
// computes the same name for the same pods and failure count, so the API
// server refuses the duplicate. failures 0 is the plain sequence.
func RelaunchName(nodePool string, failures int64, pods []*corev1.Pod, attempt int) string {
	key := podKey(pods)
	if attempt > 0 {
		key += "#" + strconv.Itoa(attempt)
	}
	if failures > 0 {
		key += "@" + strconv.FormatInt(failures, 10)
	}
	return hashedName(nodePool, key)
}

// ReplacementName is the attempt-th name of a NodeClaim a disruption
// command launches to replace the NodeClaims whose UIDs are replaces,
// planned for pods. It is derived from the candidates, not from the pods
// alone: the pods are bound ones, and kube-scheduler may have bound a pod
// to another node than the provisioner planned it for, so a name of the
// pods alone can be the name of the NodeClaim first launched for them,
// one that exists (another candidate) or was just deleted (the last
// command's candidate); a replacement taking it would read as that
// NodeClaim come back (upstream's drift spec waits for the originals'
// names to be gone). A UID is never reused, so a replacement's name can
// only be another replacement's of the same candidates and the same pods:
// the same decision, which a restart mid-command or a lost leadership
// makes again and which must then find its own NodeClaim rather than
// launch a second one (the API server refuses the duplicate, as for
// provisioning). The same decision made again after a rollback deleted its
// replacement is kept off the old name by the cluster state's record of
// retired names (see Creator). The key space is apart from
// RelaunchName's ("replaces" can never be a pod UID list's start).
func ReplacementName(nodePool string, replaces []types.UID, pods []*corev1.Pod, attempt int) string {
	uids := make([]string, 0, len(replaces))
	for _, uid := range replaces {
		uids = append(uids, string(uid))
	}
	slices.Sort(uids)
	key := "replaces " + strings.Join(uids, ",") + " for " + podKey(pods)
	if attempt > 0 {
		key += "#" + strconv.Itoa(attempt)
	}
	return hashedName(nodePool, key)
}

// podKey is the pods' sorted UIDs, joined.
func podKey(pods []*corev1.Pod) string {
	uids := make([]string, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	return strings.Join(uids, ",")
}

// hashedName is the NodePool's name and the first 10 hex digits of key's
// SHA-256.
func hashedName(nodePool, key string) string {
	sum := sha256.Sum256([]byte(key))
	return nodePool + "-" + hex.EncodeToString(sum[:])[:10]
}

// NodeClassLabelKey is the label that names a node's node class, e.g.
// karpenter.k8s.aws/ec2nodeclass or sim.joiner.dev/simnodeclass.
func NodeClassLabelKey(ref *v1.NodeClassReference) string {
	return ref.Group + "/" + strings.ToLower(ref.Kind)
}

// NewNodeClaim builds the NodeClaim that launches planned for nodePool:
// the termination finalizer, template labels and annotations, the NodePool's drift hash, the NodePool
// and node class labels, an
// owner reference to the NodePool, the template's taints, startup taints,
// expiry, termination grace period and node class, the plan's narrowed
// requirements with its instance types (cheapest first, as many as the
// solver kept) and the plan's resource requests.
func NewNodeClaim(nodePool *v1.NodePool, planned *scheduling.NewNodeClaim) *v1.NodeClaim {
	tmpl := nodePool.Spec.Template
	labels := maps.Clone(tmpl.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1.LabelNodePool] = nodePool.Name
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		labels[NodeClassLabelKey(ref)] = ref.Name
	}
	annotations := maps.Clone(tmpl.ObjectMeta.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	// The hash of the template this NodeClaim is built from, computed here
	// rather than copied from the NodePool's annotation, which the hash
	// controller may not have refreshed yet after a template change.
	annotations[v1.AnnotationNodePoolHash] = nodePool.Hash()
	annotations[v1.AnnotationNodePoolHashVersion] = v1.NodePoolHashVersion
	if planned.MinValuesRelaxed {
		annotations[v1.AnnotationNodeClaimMinValuesRelaxed] = "true"
	}
	// Karpenter's: a NodeOverlay changed the price or capacity of one of
	// its launch options (the cloud then launches in the listed order).
	if slices.ContainsFunc(planned.InstanceTypes, func(it *scheduling.InstanceType) bool { return it.PriceOverlaid }) {
		annotations[v1alpha1.AnnotationPriceOverlayApplied] = "true"
	}
	if slices.ContainsFunc(planned.InstanceTypes, func(it *scheduling.InstanceType) bool { return it.CapacityOverlaid }) {
		annotations[v1alpha1.AnnotationCapacityOverlayApplied] = "true"
	}

	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeClaimName(nodePool.Name, planned.Pods),
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               nodePool.Name,
				UID:                nodePool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
			// Created with the termination finalizer, which the lifecycle
			// controller would otherwise add in a patch of its own before
			// launching: in a scale-up of hundreds of NodeClaims that is
			// hundreds of writes the API server validates (the CRD's CEL
			// rules included) while the launches wait for them.
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{
			Taints:                 slices.Clone(tmpl.Spec.Taints),
			StartupTaints:          slices.Clone(tmpl.Spec.StartupTaints),
			Requirements:           requirements(planned.Requirements, planned.InstanceTypes),
			Resources:              v1.ResourceRequirements{Requests: planned.Requests.DeepCopy()},
			ExpireAfter:            tmpl.Spec.ExpireAfter,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
		},
	}
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		nc.Spec.NodeClassRef = ref.DeepCopy()
	}
	return nc
}

// requirements turns the plan's narrowed requirements into the NodeClaim's,
// replacing the instance-type requirement by the launch options, in price
// order. minValues on the instance-type key survive the narrowing.
func requirements(planned []scheduling.Requirement, instanceTypes []*scheduling.InstanceType) []v1.NodeSelectorRequirementWithMinValues {
	out := make([]v1.NodeSelectorRequirementWithMinValues, 0, len(planned)+1)
	var instanceTypeMinValues *int
	for _, r := range planned {
		if r.Key == v1.LabelInstanceType {
			instanceTypeMinValues = r.MinValues
			continue
		}
		// A restricted label (kubernetes.io/hostname) is the kubelet's to
		// set, and the NodeClaim CRD refuses it as a requirement: a pod's
		// "hostname NotIn [existing nodes]" is met by any new node, and the
		// solver never plans a pod that needs an existing hostname onto
		// one. Copying it made the API server refuse the NodeClaim on every
		// batch, and the pod was never provisioned.
		if v1.RestrictedLabels.Has(r.Key) {
			continue
		}
		out = append(out, v1.NodeSelectorRequirementWithMinValues{
			Key:       r.Key,
			Operator:  r.Operator,
			Values:    slices.Clone(r.Values),
			MinValues: r.MinValues,
		})
	}
	names := make([]string, 0, len(instanceTypes))
	for _, it := range instanceTypes {
		names = append(names, it.Name)
	}
	out = append(out, v1.NodeSelectorRequirementWithMinValues{
		Key:       v1.LabelInstanceType,
		Operator:  corev1.NodeSelectorOpIn,
		Values:    names,
		MinValues: instanceTypeMinValues,
	})
	return out
}
