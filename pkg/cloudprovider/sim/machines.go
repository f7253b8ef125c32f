package sim

import (
	"context"
	"errors"
	"fmt"
	"github.com/joiner-dev/joiner/pkg/logging"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultMachinesInterval is how often the machines look at the store.
const DefaultMachinesInterval = 250 * time.Millisecond

// KubeletVersion is the version simulated kubelets report.
const KubeletVersion = "v1.36.3-sim"

// MachinesOptions configure Machines.
type MachinesOptions struct {
	// Client creates and deletes Nodes; it should read from the API server
	// directly (a manager's APIReader-backed client is not needed: the
	// machines only create, patch status and delete).
	Client client.Client
	// Store is the instance store the provider writes.
	Store *Store
	// ClusterName: only instances tagged with it become Nodes of this
	// cluster.
	ClusterName string
	// ClusterID: see Options.ClusterID.
	ClusterID string
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Interval defaults to DefaultMachinesInterval.
	Interval time.Duration
}

// Machines plays the simulated cloud's machines: a pending instance starts
// running after its launch delay, and a running instance's kubelet
// registers its Node (labels, taints, capacity, providerID) after the
// registration delay, unless a fault says it never will. When an instance
// is terminated its Node goes away, as a cloud's node lifecycle controller
// removes Nodes whose machine is gone. kwok then keeps the Nodes Ready and
// runs their pods.
//
// Machines is a manager.Runnable that does not need leader election: real
// machines boot whether or not a controller leads, and two processes
// sharing a store tolerate each other (Node creation is idempotent).
type Machines struct {
	opts MachinesOptions
}

var (
	_ manager.Runnable               = (*Machines)(nil)
	_ manager.LeaderElectionRunnable = (*Machines)(nil)
)

// NewMachines returns the runnable; add it to a manager with mgr.Add.
func NewMachines(opts MachinesOptions) (*Machines, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if opts.Store == nil {
		errs = append(errs, errors.New("Store is required"))
	}
	if err := ValidateClusterName(opts.ClusterName); err != nil {
		errs = append(errs, err)
	}
	if opts.Interval < 0 {
		errs = append(errs, errors.New("Interval must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sim machines options: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultMachinesInterval
	}
	return &Machines{opts: opts}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (m *Machines) NeedLeaderElection() bool { return false }

// Start runs until ctx is done.
func (m *Machines) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("sim-machines")
	ctx = log.IntoContext(ctx, logger)
	t := m.opts.Clock.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		if err := m.Step(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "simulating machines")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Step advances every machine of this cluster once: pending instances whose
// launch delay passed start running, due registrations create Nodes, and
// terminated instances lose their Node. Tests call it directly.
func (m *Machines) Step(ctx context.Context) error {
	now := m.opts.Clock.Now()
	owns := identity{name: m.opts.ClusterName, id: m.opts.ClusterID}.owns
	// starting: a pending instance whose launch delay passed.
	starting := func(inst *Instance) bool {
		return owns(inst) && inst.State == StatePending && !now.Before(inst.RunningAt)
	}
	// Most steps change nothing: look first, under the shared lock, and
	// write only when an instance starts running.
	var register, remove []Instance
	start := false
	scan := func(st *StoreState) {
		register, remove = register[:0], remove[:0]
		for _, inst := range st.Instances {
			if !owns(inst) {
				continue
			}
			if starting(inst) {
				start = true
			}
			r := &inst.Registration
			switch {
			case (inst.State == StateRunning || starting(inst)) && !r.Registered && !r.Never && !now.Before(r.After):
				register = append(register, *inst)
			case inst.State == StateTerminated && r.Registered && !r.NodeGone:
				remove = append(remove, *inst)
			}
		}
	}
	if err := m.opts.Store.View(func(st *StoreState) error { scan(st); return nil }); err != nil {
		return fmt.Errorf("reading instances: %w", err)
	}
	if start {
		err := m.opts.Store.Update(func(st *StoreState) error {
			scan(st)
			for _, inst := range st.Instances {
				if starting(inst) {
					inst.State = StateRunning
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("starting instances: %w", err)
		}
	}
	// Each machine's kubelet registers on its own, as real ones do: one
	// slow API call must not hold back every other node of the step.
	registerErrs := make([]error, len(register))
	workqueue.ParallelizeUntil(ctx, machineWorkers, len(register), func(i int) {
		registerErrs[i] = m.registerNode(ctx, &register[i])
	})
	removeErrs := make([]error, len(remove))
	workqueue.ParallelizeUntil(ctx, machineWorkers, len(remove), func(i int) {
		removeErrs[i] = m.removeNode(ctx, &remove[i])
	})
	var errs []error
	var registered, removed []string
	for i, inst := range register {
		if registerErrs[i] != nil {
			errs = append(errs, registerErrs[i])
			continue
		}
		registered = append(registered, inst.ID)
	}
	for i, inst := range remove {
		if removeErrs[i] != nil {
			errs = append(errs, removeErrs[i])
			continue
		}
		removed = append(removed, inst.ID)
	}
	if len(registered)+len(removed) > 0 {
		err := m.opts.Store.Update(func(st *StoreState) error {
			for _, id := range registered {
				if inst := st.Instances[id]; inst != nil {
					inst.Registration.Registered = true
				}
			}
			for _, id := range removed {
				if inst := st.Instances[id]; inst != nil {
					inst.Registration.NodeGone = true
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("recording registrations: %w", err))
		}
	}
	return errors.Join(errs...)
}

// machineWorkers bounds how many machines of one step talk to the API
// server at once. Real kubelets register all at once; a step waits for
// its slowest registration before the next one starts, so with 16 a
// scale-up of 500 instances registered its Nodes in waves about 10 s
// apart on a loaded API server, a delay no cloud has.
const machineWorkers = 64

// Node returns the Node an instance's kubelet registers.
func (inst *Instance) Node() *corev1.Node {
	r := &inst.Registration
	capacity := r.Capacity.DeepCopy()
	allocatable := r.Allocatable.DeepCopy()
	if capacity == nil {
		capacity = corev1.ResourceList{}
	}
	if allocatable == nil {
		allocatable = corev1.ResourceList{}
	}
	if r.WithoutExtendedResources {
		for _, rl := range []corev1.ResourceList{capacity, allocatable} {
			for name := range rl {
				if strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), corev1.ResourceDefaultNamespacePrefix) {
					delete(rl, name)
				}
			}
		}
	}
	if _, ok := capacity[corev1.ResourcePods]; !ok {
		capacity[corev1.ResourcePods] = resource.MustParse("110")
	}
	if _, ok := allocatable[corev1.ResourcePods]; !ok {
		allocatable[corev1.ResourcePods] = capacity[corev1.ResourcePods]
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   r.NodeName,
			Labels: maps.Clone(r.Labels),
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0",
				AnnotationInstanceID:           inst.ID,
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: inst.ProviderID(),
			Taints:     slices.Clone(r.Taints),
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       corev1.NodeRunning,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    r.Architecture,
				OperatingSystem: r.OS,
				KubeletVersion:  KubeletVersion,
				MachineID:       inst.ID,
				SystemUUID:      inst.ID,
				BootID:          inst.ID,
			},
		},
	}
}

// AnnotationInstanceID names the simulated instance behind a Node.
const AnnotationInstanceID = "sim.joiner.dev/instance-id"

func (m *Machines) registerNode(ctx context.Context, inst *Instance) error {
	node := inst.Node()
	status := node.Status
	err := m.opts.Client.Create(ctx, node)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Another process (or an earlier pass that failed to record it)
		// registered it; its devices may not be published yet.
		if inst.Registration.WithoutExtendedResources {
			return nil
		}
		if err := m.opts.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return fmt.Errorf("reading node %s of instance %s: %w", node.Name, inst.ID, err)
		}
		return m.publishDevices(ctx, node)
	case err != nil:
		return fmt.Errorf("registering node %s of instance %s: %w", node.Name, inst.ID, err)
	}
	// The API server may drop status on create; the kubelet posts it.
	if node.Status.Capacity == nil || node.Status.Allocatable == nil {
		node.Status = status
		if err := m.opts.Client.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("posting status of node %s: %w", node.Name, err)
		}
	}
	if !inst.Registration.WithoutExtendedResources {
		if err := m.publishDevices(ctx, node); err != nil {
			return err
		}
	}
	logr.FromContextOrDiscard(ctx).Info("machine registered its node", logging.Instance, inst.ID, logging.Node, klog.KObj(node),
		logging.InstanceType, inst.Type, logging.Zone, inst.Zone, logging.ProviderID, inst.ProviderID())
	return nil
}

func (m *Machines) removeNode(ctx context.Context, inst *Instance) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.Registration.NodeName, Labels: inst.Registration.Labels}}
	if err := m.withdrawDevices(ctx, node); err != nil {
		return err
	}
	if err := m.opts.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing node %s of terminated instance %s: %w", node.Name, inst.ID, err)
	}
	logr.FromContextOrDiscard(ctx).Info("machine terminated, node removed", logging.Instance, inst.ID, logging.Node, klog.KObj(node))
	return nil
}
