package chaos

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The replace judge fails a replace whose candidate went before any
// NodeClaim launched since the decision initialised, and passes the
// orders a correct controller produces.
func TestObserverJudgesReplaceBeforeInitialised(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	claim := func(name string, created time.Time, conds ...[2]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim"}}
		u.SetName(name)
		u.SetUID(types.UID(name + "-uid"))
		u.SetCreationTimestamp(metav1.NewTime(created))
		var cs []any
		for _, c := range conds {
			cs = append(cs, map[string]any{"type": c[0], "status": "True", "lastTransitionTime": c[1].(time.Time).Format(time.RFC3339)})
		}
		_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
		return u
	}
	deleting := func(u *unstructured.Unstructured, at time.Time) *unstructured.Unstructured {
		d := u.DeepCopy()
		ts := metav1.NewTime(at)
		d.SetDeletionTimestamp(&ts)
		return d
	}
	candidate := claim("old", t0.Add(-time.Hour), [2]any{conditionInitialized, t0.Add(-time.Hour)}, [2]any{conditionDisruptionReason, t0})
	event := func(name, msg string) *corev1.Event {
		return &corev1.Event{Reason: reasonDisruptionTerminate, Message: msg, InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: name, UID: types.UID(name + "-uid")}}
	}
	// A later NodeClaim given the candidate's name: its own replace event.
	namesake := event("old", "Disrupting Node: Drifted/Replace")
	namesake.InvolvedObject.UID = "old-reborn-uid"
	tests := []struct {
		name   string
		others []*unstructured.Unstructured
		event  *corev1.Event
		// eventFirst delivers the event before the deletion.
		eventFirst bool
		want       string
	}{
		{
			name:   "replacement initialised first",
			others: []*unstructured.Unstructured{claim("new", t0.Add(time.Second), [2]any{conditionInitialized, t0.Add(20 * time.Second)})},
			event:  event("old", "Disrupting Node: Drifted/Replace"),
		},
		{
			name:   "replacement still launching",
			others: []*unstructured.Unstructured{claim("new", t0.Add(time.Second))},
			event:  event("old", "Disrupting Node: Drifted/Replace"),
			want:   "NodeClaim old was deleted for a replace decision",
		},
		{
			name:       "replacement still launching, event seen first",
			others:     []*unstructured.Unstructured{claim("new", t0)},
			event:      event("old", "Disrupting Node: Underutilized/Replace"),
			eventFirst: true,
			want:       "NodeClaims launched since the decision: new (not initialised)",
		},
		{
			name:   "only older NodeClaims initialised",
			others: []*unstructured.Unstructured{claim("older", t0.Add(-time.Minute), [2]any{conditionInitialized, t0.Add(-30 * time.Second)})},
			event:  event("old", "Disrupting Node: Drifted/Replace"),
			want:   "launched since the decision: none",
		},
		{
			name:  "a delete decision needs no replacement",
			event: event("old", "Disrupting Node: Underutilized/Delete"),
		},
		{
			name:   "a later NodeClaim of the same name replaced (its own UID)",
			others: []*unstructured.Unstructured{claim("new", t0.Add(time.Second))},
			event:  namesake,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			o := &Observer{seen: map[string]bool{}, nodeClaims: idx, replaced: map[types.UID]replaceRecord{}, replaceDecisions: map[types.UID]string{}}
			for _, u := range append([]*unstructured.Unstructured{candidate}, tt.others...) {
				if err := idx.Add(u); err != nil {
					t.Fatal(err)
				}
			}
			if tt.eventFirst {
				o.onDisruptionEvent(tt.event)
			}
			o.onNodeClaim(candidate, deleting(candidate, t0.Add(30*time.Second)))
			if !tt.eventFirst {
				o.onDisruptionEvent(tt.event)
			}
			expectAmong(t, "violation", o.Violations(), tt.want)
		})
	}
}
