package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// InstanceState is where an instance is in its life.
type InstanceState string

const (
	// StatePending: launched, not running yet (the node class's launch delay).
	StatePending InstanceState = "pending"
	// StateRunning: the machine is up; its Node registers after the
	// registration delay.
	StateRunning InstanceState = "running"
	// StateTerminated: gone. Kept in the store for a while, as clouds do,
	// then purged.
	StateTerminated InstanceState = "terminated"
)

// Tags the simulated cloud writes on every instance, like Karpenter's AWS
// tags. Ownership is proven by TagCluster, and by TagClusterID when the cluster id is known.
const (
	TagCluster   = "sim.joiner.dev/cluster"
	TagNodePool  = v1.LabelNodePool
	TagNodeClaim = v1.TagNodeClaim
	TagNodeClass = "sim.joiner.dev/simnodeclass"
	// TagNodeClaimUID is the launching NodeClaim's UID, Create's client
	// token: a second Create for the same UID returns the same instance.
	TagNodeClaimUID = "sim.joiner.dev/nodeclaim-uid"
)

// Instance is one simulated machine as the store keeps it.
type Instance struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Zone         string            `json:"zone"`
	Region       string            `json:"region"`
	CapacityType string            `json:"capacityType"`
	Price        float64           `json:"price"`
	ImageID      string            `json:"imageID"`
	State        InstanceState     `json:"state"`
	LaunchTime   time.Time         `json:"launchTime"`
	Tags         map[string]string `json:"tags,omitempty"`
	// Labels are the instance's well-known labels (type, zone, region,
	// arch, os, capacity type, ...) as the cloud knows them; the registered
	// Node may differ when a fault is injected.
	Labels map[string]string `json:"labels,omitempty"`
	// RunningAt is when the instance leaves pending (launch + launch delay).
	RunningAt time.Time `json:"runningAt"`
	// TerminatedAt is set once the instance is terminated.
	TerminatedAt *time.Time `json:"terminatedAt,omitempty"`
	// Registration is what the machine's kubelet will register.
	Registration Registration `json:"registration"`
}

// ProviderID is the instance's Kubernetes provider ID,
// sim:///<zone>/<instance-id>.
func (i *Instance) ProviderID() string { return providerID(i.Zone, i.ID) }

// Registration is the payload a machine's kubelet registers with: the Node
// the instance becomes.
type Registration struct {
	// NodeName is the Node's name (and kubernetes.io/hostname).
	NodeName string `json:"nodeName"`
	// Labels are the node's labels: the instance's well-known labels plus
	// the NodeClaim's labels (as kubelet --node-labels would).
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are registered with the Node (registerWithTaints): the
	// unregistered taint and the startup taints, unless a fault drops them.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Architecture and OS go to status.nodeInfo.
	Architecture string              `json:"architecture"`
	OS           string              `json:"os"`
	Capacity     corev1.ResourceList `json:"capacity,omitempty"`
	Allocatable  corev1.ResourceList `json:"allocatable,omitempty"`
	// After is the earliest time the Node registers.
	After time.Time `json:"after"`
	// Never is set by the neverRegister fault: the machine runs but its
	// kubelet never joins.
	Never bool `json:"never,omitempty"`
	// WithoutExtendedResources is set by the extendedResourcesMissing
	// fault: the Node advertises no extended resources (nvidia.com/gpu,
	// ...), as when their device plugin never starts.
	WithoutExtendedResources bool `json:"withoutExtendedResources,omitempty"`
	// Registered is set once the machine has created its Node.
	Registered bool `json:"registered,omitempty"`
	// NodeGone is set once the Node of a terminated instance was removed.
	NodeGone bool `json:"nodeGone,omitempty"`
}

// StoreState is the whole content of a store file.
type StoreState struct {
	// Sequence numbers instance IDs, so that several processes sharing one
	// store never reuse an ID.
	Sequence uint64 `json:"sequence"`
	// IDPrefix is chosen at random when the store is first written and
	// starts every instance ID, so clouds in different stores (tests
	// sharing one API server) never name two instances, or Nodes, alike.
	IDPrefix  string               `json:"idPrefix,omitempty"`
	Instances map[string]*Instance `json:"instances"`
}

// Store is the simulated cloud's instance database: a JSON file guarded by
// an flock(2) on a sibling lock file, rewritten atomically (write to a
// temporary file, rename). It survives process restarts and can be
// shared by several processes (two joiner instances, or a controller and a
// test) pointing at the same path. A Store is safe for concurrent use.
//
// A burst of thousands of launches must not cost thousands of full
// rewrites of a file that grows with every instance (each a read, a JSON
// decode, an encode and a write of the whole store: quadratic in the
// burst). So the Store keeps the decoded state in memory and reads the file
// again only when another writer replaced it (its inode, size or
// modification time changed), and concurrent Updates of one process are
// committed together: the goroutine that gets the file applies every
// Update queued so far and writes once.
type Store struct {
	path string
	// mu serializes this process's goroutines; the flock serializes
	// processes (and separate Stores on one path). It guards cached and
	// stamp.
	mu sync.Mutex
	// cached is the state as last read or written, valid while the file
	// still has stamp.
	cached *StoreState
	stamp  fileStamp

	// queueMu guards queue, the Updates waiting to be committed.
	queueMu sync.Mutex
	queue   []*pendingUpdate
}

// fileStamp identifies one version of the store file: every write renames
// a new file into place, so another writer's change shows as a new inode
// (and modification time).
type fileStamp struct {
	ino, size int64
	mtime     time.Time
}

// pendingUpdate is one Update waiting for its commit.
type pendingUpdate struct {
	fn   func(*StoreState) error
	err  error
	done chan struct{}
}

// OpenStore opens (creating when needed) the store at path. The directory
// must exist or be creatable.
func OpenStore(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("opening instance store: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("opening instance store %s: %w", path, err)
	}
	s := &Store{path: path}
	// Touch the lock file and validate any existing content.
	if err := s.View(func(*StoreState) error { return nil }); err != nil {
		return nil, fmt.Errorf("opening instance store %s: %w", path, err)
	}
	return s, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// View calls fn with the current state under a shared lock. fn must not
// modify or retain the state.
func (s *Store) View(fn func(*StoreState) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.read()
	if err != nil {
		return err
	}
	return fn(st)
}

// Update calls fn with the current state under an exclusive lock and, if fn
// returns nil, writes the state back atomically. fn may be called more than
// once (when an Update committed together with it fails, the others are
// applied again to a fresh copy of the state), so it must compute its
// result from the state it is given, as a retry-on-conflict function does.
func (s *Store) Update(fn func(*StoreState) error) error {
	u := &pendingUpdate{fn: fn, done: make(chan struct{})}
	s.queueMu.Lock()
	s.queue = append(s.queue, u)
	s.queueMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-u.done: // committed by the goroutine that held the file before
		return u.err
	default:
	}
	s.queueMu.Lock()
	batch := s.queue
	s.queue = nil
	s.queueMu.Unlock()
	s.commit(batch)
	return u.err
}

// commit applies a batch of Updates to the state and writes it once.
// An Update that fails may have changed the state before failing, so then
// the state is read afresh and only the others are applied again.
func (s *Store) commit(batch []*pendingUpdate) {
	defer func() {
		for _, u := range batch {
			close(u.done)
		}
	}()
	fail := func(err error) {
		for _, u := range batch {
			if u.err == nil {
				u.err = err
			}
		}
	}
	unlock, err := s.lock(syscall.LOCK_EX)
	if err != nil {
		fail(err)
		return
	}
	defer unlock()
	for {
		st, err := s.read()
		if err != nil {
			fail(err)
			return
		}
		failed, applied := false, 0
		for _, u := range batch {
			if u.err != nil {
				continue
			}
			if u.err = u.fn(st); u.err != nil {
				failed = true
				continue
			}
			applied++
		}
		if failed {
			// The cached state may hold a failed Update's changes.
			s.cached = nil
			if applied > 0 {
				continue // once more with the Updates that succeeded
			}
			return
		}
		if err := s.write(st); err != nil {
			s.cached = nil
			fail(err)
		}
		return
	}
}

func (s *Store) lock(how int) (func(), error) {
	f, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// read returns the state, from memory while the file is the one last read
// or written. Callers hold mu and the flock.
func (s *Store) read() (*StoreState, error) {
	stamp, err := statStamp(s.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading instance store: %w", err)
	}
	exists := err == nil
	if s.cached != nil && exists && stamp == s.stamp {
		return s.cached, nil
	}
	st := &StoreState{}
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading instance store: %w", err)
	case len(data) > 0:
		if err := json.Unmarshal(data, st); err != nil {
			return nil, fmt.Errorf("decoding instance store %s: %w", s.path, err)
		}
	}
	if st.Instances == nil {
		st.Instances = map[string]*Instance{}
	}
	s.cached = nil
	if exists {
		s.cached, s.stamp = st, stamp
	}
	return st, nil
}

// statStamp returns the stamp of the file at path.
func statStamp(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	stamp := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		stamp.ino = int64(sys.Ino)
	}
	return stamp, nil
}

// write replaces the file with st and keeps st as the cached state. The
// temporary file is not fsynced: the store is a simulation that must
// survive its processes, not the machine, and the rename is atomic for
// every reader either way. The state is encoded straight into the file
// (json.Encoder reuses its buffer across calls): a Marshal, and the copy
// that appending the newline made, were two fresh buffers the size of the
// whole store per write, megabytes per launch at a thousand instances.
func (s *Store) write(st *StoreState) error {
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing instance store: %w", err)
	}
	// After a successful rename the temporary file is gone and Remove's
	// not-found error says nothing; before it, a leftover file is harmless
	// (the next write makes a new one).
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := json.NewEncoder(tmp).Encode(st); err != nil {
		tmp.Close()
		return fmt.Errorf("writing instance store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing instance store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("writing instance store: %w", err)
	}
	stamp, err := statStamp(s.path)
	if err != nil {
		s.cached = nil
		return nil // written; the next read decodes the file
	}
	s.cached, s.stamp = st, stamp
	return nil
}
