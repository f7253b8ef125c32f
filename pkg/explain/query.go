package explain

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Kind is a kind of object explain gives a verdict on.
type Kind string

// The kinds explain knows.
const (
	KindPod            Kind = "pod"
	KindNode           Kind = "node"
	KindNodeClaim      Kind = "nodeclaim"
	KindNodePool       Kind = "nodepool"
	KindCapacityBuffer Kind = "capacitybuffer"
)

// ParseKind reads a kind as kubectl users type it: singular, plural or
// short name, in any case.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return KindPod, nil
	case "node", "nodes", "no":
		return KindNode, nil
	case "nodeclaim", "nodeclaims":
		return KindNodeClaim, nil
	case "nodepool", "nodepools":
		return KindNodePool, nil
	case "capacitybuffer", "capacitybuffers", "cb":
		return KindCapacityBuffer, nil
	}
	return "", fmt.Errorf("explain: want pod, node, nodeclaim, nodepool or capacitybuffer, got %q", s)
}

// Query names the object to explain and how.
type Query struct {
	Kind Kind
	// Name names the object. A pod's or CapacityBuffer's Name may be
	// namespace/name, which wins over Namespace.
	Namespace, Name string
	// Solve plans pods (Pod's solver; nil: the solver with default
	// options).
	Solve Solver
	// Options are the lifecycle deadlines NodeClaim and Node verdicts
	// measure against.
	Options Options
	// NoEvents leaves the events section out of the verdict, so a reader
	// sees what the verdict itself says.
	NoEvents bool
}

// Verdict is the verdict on q's object in s: a *PodVerdict,
// *NodeClaimVerdict, *NodePoolVerdict or *CapacityBufferVerdict, for Write
// or for JSON and YAML.
func Verdict(s *Snapshot, q Query) (any, error) {
	ns, name := q.Namespace, q.Name
	if i := strings.IndexByte(name, '/'); i >= 0 && (q.Kind == KindPod || q.Kind == KindCapacityBuffer) {
		ns, name = name[:i], name[i+1:]
	}
	switch q.Kind {
	case KindPod:
		v, err := Pod(s, ns, name, q.Solve, q.Options)
		if err != nil {
			return nil, err
		}
		if q.NoEvents {
			v.Events = nil
		}
		return v, nil
	case KindNode, KindNodeClaim:
		of := NodeClaim
		if q.Kind == KindNode {
			of = Node
		}
		v, err := of(s, name, q.Options)
		if err != nil {
			return nil, err
		}
		if q.NoEvents {
			v.Events = nil
		}
		return v, nil
	case KindNodePool:
		v, err := NodePool(s, name)
		if err != nil {
			return nil, err
		}
		return v, nil
	case KindCapacityBuffer:
		v, err := CapacityBuffer(s, ns, name)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, fmt.Errorf("explain: cannot explain kind %q", q.Kind)
}

// Text is what `joiner explain` prints for q's object over objs (objects as
// a client lists them from the API server) at now: the one path from
// objects to rendered text, for tests that check explain agrees with the
// controller.
func Text(objs []runtime.Object, now time.Time, q Query) (string, error) {
	s, err := FromObjects(objs, SnapshotOptions{Now: now})
	if err != nil {
		return "", err
	}
	v, err := Verdict(s, q)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := Write(&out, v); err != nil {
		return "", err
	}
	return out.String(), nil
}
