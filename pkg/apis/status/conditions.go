package status

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// ConditionReady is the default root condition type.
const ConditionReady = "Ready"

// Reasons used by the helpers themselves. Condition reasons must be
// non-empty CamelCase (metav1.Condition validation), so Set* functions that
// take no reason use these.
const (
	// ReasonAwaitingReconciliation is the reason of a condition that has not
	// been evaluated yet.
	ReasonAwaitingReconciliation = "AwaitingReconciliation"
	// ReasonReady is the reason of a root condition whose dependents are all
	// True.
	ReasonReady = "Ready"
)

// Object is a Kubernetes object whose status holds conditions.
type Object interface {
	GetGeneration() int64
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// ConditionSet reads and writes the conditions of one object. The root
// condition is True when every dependent is True, False when any dependent
// is False (carrying that dependent's reason), and Unknown otherwise.
type ConditionSet struct {
	obj        Object
	root       string
	dependents []string
	clock      clock.PassiveClock
}

// For returns a ConditionSet over obj with the given root condition type and
// the dependents it is rolled up from. Time comes from the real clock; use
// WithClock in tests.
func For(obj Object, root string, dependents ...string) ConditionSet {
	return ConditionSet{obj: obj, root: root, dependents: dependents, clock: clock.RealClock{}}
}

// WithClock returns a copy that stamps transitions with c.
func (s ConditionSet) WithClock(c clock.PassiveClock) ConditionSet {
	s.clock = c
	return s
}

// At returns a copy that stamps transitions with the fixed time now: a
// controller that decides on one snapshot's time stamps every condition it
// writes from that decision with the same instant.
func (s ConditionSet) At(now time.Time) ConditionSet {
	s.clock = instant(now)
	return s
}

// instant is a clock stopped at one time.
type instant time.Time

func (i instant) Now() time.Time                  { return time.Time(i) }
func (i instant) Since(t time.Time) time.Duration { return time.Time(i).Sub(t) }

// Root returns the root condition type.
func (s ConditionSet) Root() string { return s.root }

// Dependents returns the condition types the root is rolled up from.
func (s ConditionSet) Dependents() []string { return append([]string(nil), s.dependents...) }

// Initialize sets every dependent that is missing to Unknown and recomputes
// the root, so a freshly created object shows what it is waiting for.
func (s ConditionSet) Initialize() {
	conds := s.obj.GetConditions()
	for _, t := range s.dependents {
		if meta.FindStatusCondition(conds, t) == nil {
			s.set(&conds, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: ReasonAwaitingReconciliation})
		}
	}
	s.rollUp(&conds)
	s.obj.SetConditions(conds)
}

// Get returns the condition of type t, or nil.
func (s ConditionSet) Get(t string) *metav1.Condition {
	return meta.FindStatusCondition(s.obj.GetConditions(), t)
}

// IsTrue reports whether every condition in types is present and True.
func (s ConditionSet) IsTrue(types ...string) bool {
	for _, t := range types {
		if c := s.Get(t); c == nil || c.Status != metav1.ConditionTrue {
			return false
		}
	}
	return true
}

// IsFalse reports whether the condition of type t is present and False.
func (s ConditionSet) IsFalse(t string) bool {
	c := s.Get(t)
	return c != nil && c.Status == metav1.ConditionFalse
}

// IsUnknown reports whether the condition of type t is missing or Unknown.
func (s ConditionSet) IsUnknown(t string) bool {
	c := s.Get(t)
	return c == nil || c.Status == metav1.ConditionUnknown
}

// SetTrue sets t to True with reason t (Karpenter's convention).
func (s ConditionSet) SetTrue(t string) bool {
	return s.SetTrueWithReason(t, t, "")
}

// SetTrueWithReason sets t to True.
func (s ConditionSet) SetTrueWithReason(t, reason, message string) bool {
	return s.Set(metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

// SetFalse sets t to False; a reason is required.
func (s ConditionSet) SetFalse(t, reason, message string) bool {
	return s.Set(metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// SetUnknown sets t to Unknown with ReasonAwaitingReconciliation.
func (s ConditionSet) SetUnknown(t string) bool {
	return s.SetUnknownWithReason(t, ReasonAwaitingReconciliation, "")
}

// SetUnknownWithReason sets t to Unknown.
func (s ConditionSet) SetUnknownWithReason(t, reason, message string) bool {
	return s.Set(metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: message})
}

// Set writes c (its LastTransitionTime and ObservedGeneration are filled
// in), recomputes the root unless c is the root, and reports whether the
// conditions changed. The transition time only moves when the status
// changes. An empty reason becomes the condition type.
func (s ConditionSet) Set(c metav1.Condition) bool {
	conds := s.obj.GetConditions()
	before := append([]metav1.Condition(nil), conds...)
	s.set(&conds, c)
	if c.Type != s.root {
		s.rollUp(&conds)
	}
	s.obj.SetConditions(conds)
	return !reflect.DeepEqual(before, conds)
}

// Clear removes the condition of type t and recomputes the root. Clearing a
// dependent leaves the root Unknown.
func (s ConditionSet) Clear(t string) bool {
	conds := s.obj.GetConditions()
	if !meta.RemoveStatusCondition(&conds, t) {
		return false
	}
	if t != s.root {
		s.rollUp(&conds)
	}
	s.obj.SetConditions(conds)
	return true
}

// set upserts c into conds without touching the root.
func (s ConditionSet) set(conds *[]metav1.Condition, c metav1.Condition) {
	if c.Reason == "" {
		c.Reason = c.Type
	}
	c.ObservedGeneration = s.obj.GetGeneration()
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(s.now())
	}
	// meta.SetStatusCondition keeps the old transition time when the status
	// does not change, and updates reason, message and generation.
	meta.SetStatusCondition(conds, c)
}

func (s ConditionSet) rollUp(conds *[]metav1.Condition) {
	if s.root == "" {
		return
	}
	root := metav1.Condition{Type: s.root, Status: metav1.ConditionTrue, Reason: ReasonReady}
	var unknown *metav1.Condition
	for _, t := range s.dependents {
		c := meta.FindStatusCondition(*conds, t)
		switch {
		case c == nil:
			if unknown == nil {
				unknown = &metav1.Condition{Type: s.root, Status: metav1.ConditionUnknown, Reason: ReasonAwaitingReconciliation,
					Message: fmt.Sprintf("condition %s has not been evaluated", t)}
			}
		case c.Status == metav1.ConditionFalse:
			s.set(conds, metav1.Condition{Type: s.root, Status: metav1.ConditionFalse, Reason: c.Reason,
				Message: dependentMessage(c)})
			return
		case c.Status == metav1.ConditionUnknown:
			if unknown == nil {
				unknown = &metav1.Condition{Type: s.root, Status: metav1.ConditionUnknown, Reason: c.Reason,
					Message: dependentMessage(c)}
			}
		}
	}
	if unknown != nil {
		root = *unknown
	}
	s.set(conds, root)
}

func dependentMessage(c *metav1.Condition) string {
	if c.Message == "" {
		return fmt.Sprintf("%s=%s", c.Type, c.Status)
	}
	return fmt.Sprintf("%s=%s: %s", c.Type, c.Status, c.Message)
}

func (s ConditionSet) now() time.Time {
	if s.clock == nil {
		return clock.RealClock{}.Now()
	}
	return s.clock.Now()
}
