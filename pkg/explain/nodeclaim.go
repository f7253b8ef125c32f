package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
)

// Options are the deadlines explain measures waiting NodeClaims against;
// they must match the controller's settings to be right.
type Options struct {
	// RegistrationTTL defaults to the lifecycle controller's default.
	RegistrationTTL time.Duration
	// InitializationTTL defaults to the lifecycle controller's default.
	InitializationTTL time.Duration
}

// withView fills the TTLs not given from the controller view, the
// lifecycle controller's own settings.
func (o Options) withView(v *controllerview.View) Options {
	if v != nil {
		if o.RegistrationTTL <= 0 {
			o.RegistrationTTL = v.RegistrationTTL.Duration
		}
		if o.InitializationTTL <= 0 {
			o.InitializationTTL = v.InitializationTTL.Duration
		}
	}
	return o.withDefaults()
}

func (o Options) withDefaults() Options {
	if o.RegistrationTTL <= 0 {
		o.RegistrationTTL = lifecycle.DefaultRegistrationTTL
	}
	if o.InitializationTTL <= 0 {
		o.InitializationTTL = lifecycle.DefaultInitializationTTL
	}
	return o
}

// Phase is where a NodeClaim is in its lifecycle.
type Phase string

// The phases, in order.
const (
	PhaseLaunching    Phase = "Launching"
	PhaseRegistering  Phase = "Registering"
	PhaseInitializing Phase = "Initializing"
	PhaseReady        Phase = "Initialized"
	PhaseDeleting     Phase = "Deleting"
)

// NodeClaimVerdict is where a NodeClaim (and its Node) stands and why.
type NodeClaimVerdict struct {
	NodeClaim    string `json:"nodeClaim,omitempty"`
	Node         string `json:"node,omitempty"`
	NodePool     string `json:"nodePool,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	ProviderID   string `json:"providerID,omitempty"`
	// Managed is false for a Node no NodeClaim owns (joiner leaves it
	// alone).
	Managed bool  `json:"managed"`
	Phase   Phase `json:"phase,omitempty"`
	// Steps are launch, registration and initialisation in order.
	Steps []Step `json:"steps,omitempty"`
	// Checklist is what to check while the Node has not registered.
	Checklist string `json:"checklist,omitempty"`
	// Bootstrap are the warnings the controller published about how the
	// Node registered (taints its bootstrap got wrong).
	Bootstrap []EventSummary `json:"bootstrap,omitempty"`
	// Disruption is the disruption controller's stored verdict.
	Disruption *DisruptionVerdict `json:"disruption,omitempty"`
	// Events are the latest events about the NodeClaim and its Node.
	Events []EventSummary `json:"events,omitempty"`
	// Summary is the verdict in one line.
	Summary string `json:"summary"`
}

// Step is one lifecycle step: done, or how long it has waited against its
// deadline and why.
type Step struct {
	Name string `json:"name"`
	Done bool   `json:"done"`
	// Waiting is how long the step has waited (not done), or took (done,
	// when known).
	Waiting Duration `json:"waiting,omitempty"`
	// TTL is the deadline after which the controller deletes the
	// NodeClaim; 0 when the step has none here.
	TTL    Duration `json:"ttl,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Message says what is awaited, in the controller's words.
	Message string `json:"message,omitempty"`
}

// Duration marshals as Go's duration text ("4m0s").
type Duration time.Duration

// MarshalText is the duration's text.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// DisruptionVerdict is the verdict the disruption controller stored on the
// NodeClaim, with what else explains it.
type DisruptionVerdict struct {
	// Stored is false when no verdict has been stored yet.
	Stored bool               `json:"stored"`
	Record *disruption.Record `json:"record,omitempty"`
	// Age is how long the verdict has held.
	Age Duration `json:"age,omitempty"`
	// InFlight is the NodeClaim's DisruptionReason condition message when
	// a command is carrying it out.
	InFlight string `json:"inFlight,omitempty"`
	// DoNotDisrupt is true when the Node or NodeClaim carries the
	// karpenter.sh/do-not-disrupt annotation.
	DoNotDisrupt bool `json:"doNotDisrupt,omitempty"`
	// Problem is set when the stored verdict cannot be read.
	Problem string `json:"problem,omitempty"`
}

// EventSummary is the latest event of one reason about an object.
type EventSummary struct {
	Object  string   `json:"object"`
	Type    string   `json:"type"`
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
	Count   int32    `json:"count"`
	Age     Duration `json:"age"`
}

// Node explains the Node name: its NodeClaim's verdict, or that joiner
// does not manage it.
func Node(s *Snapshot, name string, opts Options) (*NodeClaimVerdict, error) {
	node := s.node(name)
	if node == nil {
		if nc := s.nodeClaim(name); nc != nil {
			return NodeClaim(s, name, opts)
		}
		return nil, fmt.Errorf("node %q not found", name)
	}
	nc := s.claimOf(node)
	if nc == nil {
		v := &NodeClaimVerdict{Node: node.Name, ProviderID: node.Spec.ProviderID, NodePool: node.Labels[v1.LabelNodePool],
			InstanceType: node.Labels[v1.LabelInstanceType], Zone: node.Labels[v1.LabelTopologyZone], CapacityType: node.Labels[v1.LabelCapacityType]}
		v.Events = s.eventsAbout(s.Now, ref{"Node", "", node.Name})
		v.Summary = fmt.Sprintf("Node %s has no NodeClaim, so joiner does not manage it: it never launches, drains or deletes it, and consolidation does not consider it.", node.Name)
		if v.NodePool != "" {
			v.Summary += fmt.Sprintf(" It is labelled %s=%s, but no NodeClaim has its name or provider ID.", v1.LabelNodePool, v.NodePool)
		}
		return v, nil
	}
	return claimVerdict(s, nc, node, opts.withView(s.View)), nil
}

// NodeClaim explains the NodeClaim name.
func NodeClaim(s *Snapshot, name string, opts Options) (*NodeClaimVerdict, error) {
	nc := s.nodeClaim(name)
	if nc == nil {
		return nil, fmt.Errorf("nodeclaim %q not found", name)
	}
	return claimVerdict(s, nc, s.nodeOf(nc), opts.withView(s.View)), nil
}

func claimVerdict(s *Snapshot, nc *v1.NodeClaim, node *corev1.Node, opts Options) *NodeClaimVerdict {
	v := &NodeClaimVerdict{
		NodeClaim: nc.Name, NodePool: nc.Labels[v1.LabelNodePool], Managed: true,
		InstanceType: nc.Labels[v1.LabelInstanceType], Zone: nc.Labels[v1.LabelTopologyZone], CapacityType: nc.Labels[v1.LabelCapacityType],
		ProviderID: nc.Status.ProviderID,
	}
	if node != nil {
		v.Node = node.Name
	}
	conds := nc.Status.Conditions
	launched := condition(conds, v1.ConditionTypeLaunched)
	registered := condition(conds, v1.ConditionTypeRegistered)
	initialized := condition(conds, v1.ConditionTypeInitialized)
	since := func(c *metav1.Condition) Duration {
		if c == nil || c.LastTransitionTime.IsZero() {
			return Duration(s.Now.Sub(nc.CreationTimestamp.Time).Round(time.Second))
		}
		return Duration(s.Now.Sub(c.LastTransitionTime.Time).Round(time.Second))
	}

	launch := Step{Name: "Launched", Done: isTrue(launched)}
	if !launch.Done {
		launch.Waiting, launch.TTL = since(launched), Duration(lifecycle.DefaultLaunchTTL)
		launch.Reason, launch.Message = reasonOf(launched)
	}
	reg := Step{Name: "Registered", Done: isTrue(registered)}
	if launch.Done && !reg.Done {
		reg.Waiting, reg.TTL = since(registered), Duration(opts.RegistrationTTL)
		reg.Reason, reg.Message = reasonOf(registered)
		c := metav1.Condition{Type: v1.ConditionTypeRegistered}
		if registered != nil {
			c = *registered
		}
		v.Checklist = lifecycle.RegistrationAdvice(c)
	}
	ini := Step{Name: "Initialized", Done: isTrue(initialized)}
	if reg.Done && !ini.Done {
		ini.Waiting, ini.TTL = since(registered), Duration(opts.InitializationTTL)
		ini.Reason, ini.Message = reasonOf(initialized)
		if node != nil {
			// The live checks, as the controller will run them next.
			if msg := lifecycle.ArchitectureMismatch(nc, node); msg != "" {
				ini.Reason, ini.Message = lifecycle.ReasonArchitectureMismatch, msg
			} else if r, m := lifecycle.NotInitialized(nc, node); r != "" {
				ini.Reason, ini.Message = r, m
			}
		}
	}
	v.Steps = []Step{launch, reg, ini}

	switch {
	case nc.DeletionTimestamp != nil:
		v.Phase = PhaseDeleting
	case !launch.Done:
		v.Phase = PhaseLaunching
	case !reg.Done:
		v.Phase = PhaseRegistering
	case !ini.Done:
		v.Phase = PhaseInitializing
	default:
		v.Phase = PhaseReady
	}

	objs := []ref{{"NodeClaim", "", nc.Name}}
	if v.Node != "" {
		objs = append(objs, ref{"Node", "", v.Node})
	}
	for _, e := range s.eventsAbout(s.Now, objs...) {
		switch e.Reason {
		case events.UnregisteredTaintMissing, events.LegacyUninitializedTaint, events.StartupTaintsMissing:
			// The controller says each on the NodeClaim and on the Node:
			// shown once.
			if !slices.ContainsFunc(v.Bootstrap, func(b EventSummary) bool { return b.Reason == e.Reason && b.Message == e.Message }) {
				v.Bootstrap = append(v.Bootstrap, e)
			}
		default:
			v.Events = append(v.Events, e)
		}
	}
	v.Disruption = disruptionVerdict(s, nc, node)
	v.Summary = claimSummary(v)
	return v
}

// disruptionVerdict reads the stored verdict.
func disruptionVerdict(s *Snapshot, nc *v1.NodeClaim, node *corev1.Node) *DisruptionVerdict {
	d := &DisruptionVerdict{
		DoNotDisrupt: nc.Annotations[v1.AnnotationDoNotDisrupt] == "true" || (node != nil && node.Annotations[v1.AnnotationDoNotDisrupt] == "true"),
	}
	if c := condition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason); isTrue(c) {
		d.InFlight = c.Message
	}
	raw, ok := nc.Annotations[v1.AnnotationDisruptionVerdict]
	if !ok {
		return d
	}
	rec, err := disruption.DecodeRecord(raw)
	if err != nil {
		d.Problem = err.Error()
		return d
	}
	d.Stored, d.Record = true, &rec
	if !rec.Since.IsZero() {
		d.Age = Duration(s.Now.Sub(rec.Since).Round(time.Second))
	}
	return d
}

func claimSummary(v *NodeClaimVerdict) string {
	var step *Step
	for i := range v.Steps {
		if !v.Steps[i].Done {
			step = &v.Steps[i]
			break
		}
	}
	what := "NodeClaim " + v.NodeClaim
	switch {
	case v.Phase == PhaseDeleting:
		return what + " is being deleted."
	case step != nil:
		left := time.Duration(step.TTL) - time.Duration(step.Waiting)
		deadline := fmt.Sprintf("joiner deletes it in %s", left)
		if left <= 0 {
			deadline = "past its deadline: joiner deletes it now"
		}
		why := ""
		if step.Reason != "" {
			why = " (" + step.Reason + ")"
		}
		return fmt.Sprintf("%s is not %s after %s of %s%s; %s.", what, strings.ToLower(step.Name), time.Duration(step.Waiting), time.Duration(step.TTL), why, deadline)
	}
	d := v.Disruption
	switch {
	case d == nil || !d.Stored:
		return what + " is initialised; the disruption controller has not stored a verdict about it yet."
	case d.Record.State == disruption.StateDisrupting:
		return fmt.Sprintf("%s is initialised and being disrupted: %s.", what, d.Record.Message)
	case d.Record.State == disruption.StateCandidate:
		return what + " is initialised and a disruption candidate: nothing blocks it, and no method found a command that takes it yet."
	default:
		return fmt.Sprintf("%s is initialised and not being disrupted (%s): %s.", what, d.Record.State, d.Record.Message)
	}
}

// ref names an object events may be about.
type ref struct{ kind, namespace, name string }

// maxEvents bounds the events shown per verdict.
const maxEvents = 8

// eventsAbout is the latest event per (object, reason) about objs,
// newest first.
func (s *Snapshot) eventsAbout(now time.Time, objs ...ref) []EventSummary {
	latest := map[string]*eventsv1.Event{}
	var keys []string
	for _, e := range s.Events {
		for _, o := range objs {
			r := e.Regarding
			if r.Kind != o.kind || r.Name != o.name || r.Namespace != o.namespace {
				continue
			}
			k := o.kind + "/" + o.name + "/" + e.Reason
			if prev, ok := latest[k]; !ok || eventTime(e).After(eventTime(prev)) {
				if !ok {
					keys = append(keys, k)
				}
				latest[k] = e
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := eventTime(latest[keys[i]]), eventTime(latest[keys[j]])
		if !a.Equal(b) {
			return a.After(b)
		}
		return keys[i] < keys[j]
	})
	var out []EventSummary
	for _, k := range keys[:min(len(keys), maxEvents)] {
		e := latest[k]
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		} else if e.DeprecatedCount > 0 {
			count = e.DeprecatedCount
		}
		out = append(out, EventSummary{
			Object: e.Regarding.Kind + "/" + e.Regarding.Name, Type: e.Type, Reason: e.Reason, Message: e.Note, Count: count,
			Age: Duration(now.Sub(eventTime(e)).Round(time.Second)),
		})
	}
	return out
}

// eventTime is when the event last happened.
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, t)
}

func isTrue(c *metav1.Condition) bool { return c != nil && c.Status == metav1.ConditionTrue }

func reasonOf(c *metav1.Condition) (string, string) {
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}
