package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The promise judged here is Karpenter's for a replace decision: a node
// disrupted to be replaced (drift, or consolidation onto a cheaper node) is
// deleted only once the NodeClaims launched for the decision have
// initialised, so its pods have somewhere to go. The observer reads
// Karpenter's published names only: the NodeClaim conditions
// DisruptionReason (the decision, set when it is taken) and Initialized, and
// the DisruptionTerminating event whose message ends in "/Replace"
// (Karpenter's "Disrupting Node: <Reason>/<Decision>").
//
// At the moment a NodeClaim marked with DisruptionReason is deleted, some
// NodeClaim created since the decision must be initialised: its own
// replacement, when the decision waited for it. The event, published just
// after the deletion, says whether the decision was a replace; deletions
// (no replacement) are not judged. The one watch of NodeClaims delivers the
// replacement's initialisation before the candidate's deletion, in the
// order the API server wrote them, so a correct controller never trips it.

const (
	conditionDisruptionReason = "DisruptionReason"
	conditionInitialized      = "Initialized"
	reasonDisruptionTerminate = "DisruptionTerminating"
)

// replaceRecord is what the observer saw when a disrupted NodeClaim's
// deletion began: "" when a NodeClaim launched since the decision had
// initialised, else what it found instead.
type replaceRecord struct {
	early string
}

// onNodeClaim judges a NodeClaim's update: the moment its deletion begins.
func (o *Observer) onNodeClaim(old, cur *unstructured.Unstructured) {
	if cur.GetDeletionTimestamp() == nil || (old != nil && old.GetDeletionTimestamp() != nil) {
		return
	}
	decided, ok := conditionSince(cur, conditionDisruptionReason)
	if !ok {
		return // not a disruption: a user's delete, expiry, garbage collection
	}
	var since []string
	ready := false
	for _, obj := range o.nodeClaims.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetName() == cur.GetName() || u.GetCreationTimestamp().Time.Before(decided) {
			continue
		}
		if _, init := conditionSince(u, conditionInitialized); init {
			ready = true
			break
		}
		since = append(since, u.GetName()+" (not initialised)")
	}
	rec := replaceRecord{}
	if !ready {
		sort.Strings(since)
		if len(since) == 0 {
			since = []string{"none"}
		}
		rec.early = fmt.Sprintf("decided %s, deletion began %s; NodeClaims launched since the decision: %s",
			decided.UTC().Format(time.RFC3339), cur.GetDeletionTimestamp().UTC().Format(time.RFC3339), strings.Join(since, ", "))
	}
	o.mu.Lock()
	o.replaced[cur.GetUID()] = rec
	o.mu.Unlock()
	o.judgeReplace(cur.GetUID(), cur.GetName())
}

// onDisruptionEvent notes a replace decision carried out on a NodeClaim.
func (o *Observer) onDisruptionEvent(e *corev1.Event) {
	if e.Reason != reasonDisruptionTerminate || e.InvolvedObject.Kind != "NodeClaim" || !strings.HasSuffix(e.Message, "/Replace") {
		return
	}
	o.mu.Lock()
	o.replaceDecisions[e.InvolvedObject.UID] = e.Message
	o.mu.Unlock()
	o.judgeReplace(e.InvolvedObject.UID, e.InvolvedObject.Name)
}

// judgeReplace reports a replace whose candidate went before any
// replacement initialised, once both the deletion and the decision's
// event are seen (in either order: they come through separate watches).
// Both are keyed by the NodeClaim's UID: joiner may give a new NodeClaim
// the name of one deleted seconds before (a big sim round, seed 2006, met
// a drift replacement named as the NodeClaim it replaced), and the judge
// must not join one's deletion to the other's decision.
func (o *Observer) judgeReplace(uid types.UID, name string) {
	o.mu.Lock()
	rec, deleted := o.replaced[uid]
	msg, replace := o.replaceDecisions[uid]
	o.mu.Unlock()
	if !deleted || !replace || rec.early == "" {
		return
	}
	o.violate("replace/"+name, "NodeClaim %s was deleted for a replace decision (%q) before any replacement had initialised: %s", name, msg, rec.early)
}

// conditionSince reports whether obj's condition of type t is True, and
// since when.
func conditionSince(obj *unstructured.Unstructured, t string) (time.Time, bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t || m["status"] != string(metav1.ConditionTrue) {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, false
		}
		return at, true
	}
	return time.Time{}, false
}

// nodeClaimHandler feeds onNodeClaim from the NodeClaim informer.
func (o *Observer) nodeClaimHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, obj any) {
			old, _ := oldObj.(*unstructured.Unstructured)
			if cur, ok := obj.(*unstructured.Unstructured); ok {
				o.onNodeClaim(old, cur)
			}
		},
	}
}
