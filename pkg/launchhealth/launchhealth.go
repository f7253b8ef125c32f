// Package launchhealth is joiner's memory of how a NodePool's launches
// ended: the last outcomes behind Karpenter's NodeRegistrationHealthy
// condition, and the back-off that keeps a launch that fails the same way
// from looping. The record lives in one annotation on the NodePool
// (v1.AnnotationLaunchHealth), so it survives a restart and `kubectl get
// nodepool -o yaml` shows it.
//
// A failure is a NodeClaim deleted because its Node never registered
// (RegistrationTTL) or never initialised (InitializationTTL). Consecutive
// failures of the same scope double the wait before the next launch, from
// the TTL that expired up to a maximum. The scope of a registration
// failure is the NodePool's node class, every instance type: a Node that
// never joins is a bootstrap, role, network or image problem the instance
// types share (narrower scopes, such as the image of one architecture, let
// a node class broken everywhere loop through its other instance types,
// and keep its pods from falling back to other NodePools). The scope of an
// initialisation failure is the instance type and image: a missing device
// plugin or a wrong architecture is specific to the type. A success, a
// change of the NodePool's template (its hash) or of its node class ends
// the back-off.
//
// The package is pure: it reads and writes the record on a NodePool value,
// the controllers do the API calls.
package launchhealth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Phase is where a failed launch stopped.
type Phase string

// Phases of a failure.
const (
	// PhaseRegistration: the instance launched but its Node never joined.
	PhaseRegistration Phase = "Registration"
	// PhaseInitialization: the Node joined but never became ready for pods.
	PhaseInitialization Phase = "Initialization"
)

// Outcomes is how many launch outcomes NodeRegistrationHealthy looks back
// on, as Karpenter does.
const Outcomes = 4

// Record is the value of v1.AnnotationLaunchHealth.
type Record struct {
	// Outcomes are the last launch outcomes, oldest first: true for a
	// NodeClaim that initialised, false for one deleted by a liveness TTL.
	Outcomes []bool `json:"outcomes,omitempty"`
	// LastFailure describes the most recent failure, for the condition.
	LastFailure *Failure `json:"lastFailure,omitempty"`
	// Failures counts every failure recorded on the NodePool (never
	// decreases, except when the record is reset). The provisioner mixes
	// it into NodeClaim names, so a relaunch is a new object.
	Failures int64 `json:"failures,omitempty"`
	// Backoffs are the scopes waiting before their next launch.
	Backoffs []Backoff `json:"backoffs,omitempty"`
}

// Failure is one NodeClaim deleted for not registering or initialising.
type Failure struct {
	NodeClaim string `json:"nodeClaim"`
	Phase     Phase  `json:"phase"`
	// Reason is the condition reason (NodeNotFound, NodeNotReady,
	// StartupTaintsExist, ResourceNotRegistered, ...), Message the
	// explanation given on the NodeClaim's event.
	Reason  string      `json:"reason"`
	Message string      `json:"message,omitempty"`
	Time    metav1.Time `json:"time"`
	// Launched is when the failed NodeClaim was created: one created before
	// its scope's last failure belongs to the same round (see Failed).
	Launched metav1.Time `json:"launched,omitempty"`
}

// Scope is what a back-off applies to within one NodePool.
type Scope struct {
	// NodeClass is the NodeClaim's node class name.
	NodeClass string `json:"nodeClass"`
	// InstanceType, when set, narrows the scope to one instance type;
	// empty covers every instance type of the node class.
	InstanceType string `json:"instanceType,omitempty"`
	// ImageID is the image the failing instance type booted (with
	// InstanceType): a new image is a new scope.
	ImageID string `json:"imageID,omitempty"`
}

// Backoff is one scope's consecutive failures and when it may launch again.
type Backoff struct {
	Scope `json:",inline"`
	// NodePoolHash is the NodePool's template hash the failures happened
	// under; a different hash means the template changed: the back-off no
	// longer applies.
	NodePoolHash string `json:"nodePoolHash,omitempty"`
	// Failures counts the consecutive failures of this scope.
	Failures int `json:"failures"`
	// Phase, Reason and Message are those of the last failure.
	Phase   Phase  `json:"phase"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Wait is the back-off after the last failure; RetryAfter the time the
	// scope may launch again.
	Wait       metav1.Duration `json:"wait"`
	RetryAfter metav1.Time     `json:"retryAfter"`
	// RoundStart is the time of the failure that last lengthened the wait.
	RoundStart metav1.Time `json:"roundStart"`
	// SameCauseTypes are, for a node class widened from instance types
	// (see Failed), the instance types that failed for the same reason.
	SameCauseTypes []string `json:"sameCauseTypes,omitempty"`
}

// Delay is the wait after the failures-th consecutive failure: ttl (the
// TTL that expired) doubled for each earlier failure, capped at max. A
// non-positive failures count waits nothing.
func Delay(failures int, ttl, max time.Duration) time.Duration {
	if failures <= 0 || ttl <= 0 {
		return 0
	}
	if max > 0 && ttl >= max {
		return max
	}
	d := ttl
	for i := 1; i < failures; i++ {
		d *= 2
		if max > 0 && d >= max {
			return max
		}
	}
	return d
}

// Get reads np's record; a missing or unreadable annotation is an empty
// record (an unreadable one is reported so the caller can log it).
func Get(np *v1.NodePool) (Record, error) {
	raw := np.Annotations[v1.AnnotationLaunchHealth]
	if raw == "" {
		return Record{}, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Record{}, fmt.Errorf("reading annotation %s of nodepool %s: %w", v1.AnnotationLaunchHealth, np.Name, err)
	}
	return r, nil
}

// Set writes r on np (an empty record removes the annotation).
func Set(np *v1.NodePool, r Record) {
	if len(r.Outcomes) == 0 && r.LastFailure == nil && r.Failures == 0 && len(r.Backoffs) == 0 {
		delete(np.Annotations, v1.AnnotationLaunchHealth)
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Record holds only strings, numbers and times.
		panic(fmt.Sprintf("encoding launch health: %v", err))
	}
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[v1.AnnotationLaunchHealth] = string(b)
}

// Failed records a failure: the outcome, the last failure, and the scope's
// next back-off. Each round of launches doubles the wait: a failure of a
// NodeClaim created after the scope's last lengthening failure (under the
// same NodePool hash) is a new round; one created before it, such as the
// other NodeClaims of the same batch, failing together, only keeps the
// scope waiting at least as long, so a batch of ten failing NodeClaims
// waits the TTL, not 2^9 TTLs. It returns the scope's back-off.
//
// An initialisation failure is scoped to its instance type and image,
// unless its cause is the node class's: when another instance type of the
// same node class failed for the same reason (a startup taint nothing
// removes, userData that drops taints, a missing device plugin), the
// failure widens to the whole node class, its consecutive failures
// continuing from the worst of the types', and the types' own back-offs
// are folded into it. Without that, a class-wide cause relaunches once per
// TTL for ever, alternating instance types.
func (r *Record) Failed(f Failure, scope Scope, nodePoolHash string, ttl, max time.Duration) Backoff {
	r.push(false)
	r.LastFailure = &f
	r.Failures++
	scope = r.widen(f, scope, nodePoolHash)
	i := slices.IndexFunc(r.Backoffs, func(b Backoff) bool { return b.Scope == scope })
	if i < 0 {
		r.Backoffs = append(r.Backoffs, Backoff{Scope: scope})
		i = len(r.Backoffs) - 1
	}
	b := &r.Backoffs[i]
	if b.NodePoolHash != nodePoolHash {
		b.Failures = 0
	}
	b.NodePoolHash = nodePoolHash
	b.Phase, b.Reason, b.Message = f.Phase, f.Reason, f.Message
	sameRound := b.Failures > 0 && !f.Launched.IsZero() && f.Launched.Time.Before(b.RoundStart.Time)
	if !sameRound {
		b.Failures++
		b.Wait = metav1.Duration{Duration: Delay(b.Failures, ttl, max)}
		b.RoundStart = f.Time
	}
	if retry := f.Time.Add(b.Wait.Duration); retry.After(b.RetryAfter.Time) {
		b.RetryAfter = metav1.NewTime(retry)
	}
	return *b
}

// widen returns the node class's scope for an initialisation failure whose
// cause another instance type of the class shared (see Failed), folding
// those types' back-offs into the class's; otherwise scope unchanged.
func (r *Record) widen(f Failure, scope Scope, nodePoolHash string) Scope {
	if f.Phase != PhaseInitialization || scope.InstanceType == "" {
		return scope
	}
	class := Scope{NodeClass: scope.NodeClass}
	sameCause := func(b Backoff) bool {
		return b.NodeClass == scope.NodeClass && b.NodePoolHash == nodePoolHash && b.Phase == PhaseInitialization && b.Reason == f.Reason
	}
	if slices.ContainsFunc(r.Backoffs, func(b Backoff) bool { return b.Scope == class && sameCause(b) }) {
		return class
	}
	var folded []Backoff
	for _, b := range r.Backoffs {
		if sameCause(b) && b.InstanceType != "" && b.InstanceType != scope.InstanceType {
			folded = append(folded, b)
		}
	}
	if len(folded) == 0 {
		return scope
	}
	wide := Backoff{Scope: class, NodePoolHash: nodePoolHash, SameCauseTypes: []string{scope.InstanceType}}
	r.Backoffs = slices.DeleteFunc(r.Backoffs, func(b Backoff) bool {
		if !sameCause(b) || b.InstanceType == "" {
			return false
		}
		if b.Failures > wide.Failures {
			wide.Failures, wide.Wait, wide.RoundStart = b.Failures, b.Wait, b.RoundStart
		}
		if b.RetryAfter.After(wide.RetryAfter.Time) {
			wide.RetryAfter = b.RetryAfter
		}
		if !slices.Contains(wide.SameCauseTypes, b.InstanceType) {
			wide.SameCauseTypes = append(wide.SameCauseTypes, b.InstanceType)
		}
		return true
	})
	slices.Sort(wide.SameCauseTypes)
	r.Backoffs = append(r.Backoffs, wide)
	return class
}

// ResetRegistration ends every registration back-off: what such a failure
// names (the node role's aws-auth mapping or access entry) changed, so the
// next launch may succeed. It reports whether anything changed.
func (r *Record) ResetRegistration() bool {
	n := len(r.Backoffs)
	r.Backoffs = slices.DeleteFunc(r.Backoffs, func(b Backoff) bool { return b.Phase == PhaseRegistration })
	return len(r.Backoffs) != n
}

// Succeeded records a NodeClaim of nodeClass and instanceType that
// initialised: the outcome, and the end of every back-off covering it.
func (r *Record) Succeeded(nodeClass, instanceType string) {
	r.push(true)
	r.Backoffs = slices.DeleteFunc(r.Backoffs, func(b Backoff) bool {
		return b.NodeClass == nodeClass && b.Covers(instanceType)
	})
}

func (r *Record) push(ok bool) {
	r.Outcomes = append(r.Outcomes, ok)
	if n := len(r.Outcomes); n > Outcomes {
		r.Outcomes = slices.Clone(r.Outcomes[n-Outcomes:])
	}
}

// Prune drops the back-offs that no longer apply: made under another
// NodePool hash, or of another node class than nodeClass. It reports
// whether anything changed.
func (r *Record) Prune(nodePoolHash, nodeClass string) bool {
	n := len(r.Backoffs)
	r.Backoffs = slices.DeleteFunc(r.Backoffs, func(b Backoff) bool {
		return b.NodePoolHash != nodePoolHash || b.NodeClass != nodeClass
	})
	return len(r.Backoffs) != n
}

// Active are the back-offs still waiting at now for a NodePool whose
// template hash is nodePoolHash, earliest retry first.
func (r Record) Active(now time.Time, nodePoolHash string) []Backoff {
	var out []Backoff
	for _, b := range r.Backoffs {
		if b.NodePoolHash == nodePoolHash && now.Before(b.RetryAfter.Time) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b Backoff) int { return a.RetryAfter.Compare(b.RetryAfter.Time) })
	return out
}

// Healthy is Karpenter's NodeRegistrationHealthy verdict on the last
// outcomes: unknown (ok=false) with no outcome yet; unhealthy when at least
// half of them failed.
func (r Record) Healthy() (healthy, known bool) {
	if len(r.Outcomes) == 0 {
		return false, false
	}
	failed := 0
	for _, ok := range r.Outcomes {
		if !ok {
			failed++
		}
	}
	return failed*2 < len(r.Outcomes), true
}

// Covers reports whether b applies to the instance type of that name.
func (b Backoff) Covers(instanceType string) bool {
	return b.InstanceType == "" || b.InstanceType == instanceType
}

// What names the back-off's scope for people, saying why a node class is
// backed off as a whole when its instance types failed alike.
func (b Backoff) What() string {
	if b.InstanceType == "" && len(b.SameCauseTypes) > 1 {
		return fmt.Sprintf("node class %s (the same cause, %s, on instance types %s: the node class's, not a type's)", b.NodeClass, b.Reason, strings.Join(b.SameCauseTypes, ", "))
	}
	return b.Scope.What()
}

// What names the scope for people: "node class default", "instance type
// g5.xlarge with image ami-123".
func (s Scope) What() string {
	switch {
	case s.InstanceType != "" && s.ImageID != "":
		return fmt.Sprintf("instance type %s with image %s", s.InstanceType, s.ImageID)
	case s.InstanceType != "":
		return "instance type " + s.InstanceType
	}
	return "node class " + s.NodeClass
}

// SolverBackoffs turns np's record into the solver's input: the back-offs
// still waiting at now under np's current template and node class, each
// with the instance types of its that it covers. It also returns the
// NodePool's failure count, which names relaunched NodeClaims. The
// provisioner, `joiner simulate` and `joiner explain` all read back-offs
// through it, so a what-if plan sees the same unavailable types as the
// next real batch.
func SolverBackoffs(np *v1.NodePool, its []*scheduling.InstanceType, now time.Time) ([]scheduling.LaunchBackoff, int64, error) {
	record, err := Get(np)
	if err != nil {
		return nil, 0, err
	}
	nodeClass := ""
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		nodeClass = ref.Name
	}
	var out []scheduling.LaunchBackoff
	for _, b := range record.Active(now, np.Hash()) {
		if b.NodeClass != nodeClass {
			continue
		}
		lb := scheduling.LaunchBackoff{What: b.What(), Phase: string(b.Phase), Cause: b.Reason, Failures: b.Failures, NextAttempt: b.RetryAfter.Time}
		for _, it := range its {
			if b.Covers(it.Name) {
				lb.InstanceTypes = append(lb.InstanceTypes, it.Name)
			}
		}
		if len(lb.InstanceTypes) > 0 {
			out = append(out, lb)
		}
	}
	return out, record.Failures, nil
}
