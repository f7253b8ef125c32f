package controllerview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// DefaultInterval is how often the view is read again.
const DefaultInterval = 10 * time.Second

// heartbeat rewrites an unchanged view, so a reader can tell a live view
// from one a stopped controller left.
const heartbeat = time.Minute

// InstanceTypes lists a NodePool's instance types: the cloud provider the
// provisioner asks.
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
}

// BufferRooms are where the CapacityBuffers in force hold their room.
type BufferRooms interface {
	Rooms() []capacitybuffer.Room
}

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	// Client lists NodePools (the cache) and writes the ConfigMap.
	Client client.Client
	// APIReader reads the ConfigMap back (ConfigMaps are not cached).
	APIReader     client.Reader
	InstanceTypes InstanceTypes
	Clock         clock.Clock
	// Namespace holds the ConfigMap (the controller's own).
	Namespace   string
	ClusterName string
	// RegistrationTTL and InitializationTTL are published as they are.
	RegistrationTTL, InitializationTTL time.Duration
	// PlanDynamicResources is published as it is (IGNORE_DRA_REQUESTS=false).
	PlanDynamicResources bool
	// Buffers, when set, are where the CapacityBuffers hold their room
	// (capacitybuffer.Store).
	Buffers BufferRooms
	// Interval between two reads (0: DefaultInterval).
	Interval time.Duration
}

func (o *PublisherOptions) validate() error {
	var errs []error
	if o.Client == nil || o.APIReader == nil {
		errs = append(errs, errors.New("client and API reader are required"))
	}
	if o.InstanceTypes == nil {
		errs = append(errs, errors.New("instance types are required"))
	}
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if o.Namespace == "" || o.ClusterName == "" {
		errs = append(errs, errors.New("namespace and cluster name are required"))
	}
	return errors.Join(errs...)
}

// Publisher writes the view every interval while this process leads.
type Publisher struct {
	opts PublisherOptions
	// last is the last view written (without its Read time) and when.
	last    []byte
	written time.Time
}

// NewPublisher validates opts.
func NewPublisher(opts PublisherOptions) (*Publisher, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("controller view options: %w", err)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	return &Publisher{opts: opts}, nil
}

// Start publishes until ctx ends (a manager.Runnable that needs the lease).
func (p *Publisher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("controllerview")
	for {
		if err := p.Publish(ctx); err != nil && ctx.Err() == nil {
			logger.V(1).Info("publishing the controller view", logging.Error, err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.opts.Clock.After(p.opts.Interval):
		}
	}
}

// Publish reads every NodePool's instance types and writes the view when
// it changed or its heartbeat is due.
func (p *Publisher) Publish(ctx context.Context) error {
	var pools v1.NodePoolList
	if err := p.opts.Client.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	now := p.opts.Clock.Now()
	v := View{
		ClusterName:          p.opts.ClusterName,
		RegistrationTTL:      metav1.Duration{Duration: p.opts.RegistrationTTL},
		InitializationTTL:    metav1.Duration{Duration: p.opts.InitializationTTL},
		PlanDynamicResources: p.opts.PlanDynamicResources,
		NodePools:            map[string]NodePoolTypes{},
	}
	if p.opts.Buffers != nil {
		v.Buffers = p.opts.Buffers.Rooms()
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		its, err := p.opts.InstanceTypes.GetInstanceTypes(ctx, np)
		if err != nil {
			v.NodePools[np.Name] = NodePoolTypes{Error: err.Error()}
			continue
		}
		v.NodePools[np.Name] = NodePoolTypes{InstanceTypes: its}
	}
	same, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the controller view: %w", err)
	}
	if bytes.Equal(same, p.last) && now.Sub(p.written) < heartbeat {
		return nil
	}
	v.Read = metav1.NewTime(now)
	data, err := Encode(v)
	if err != nil {
		return err
	}
	if err := p.write(ctx, data); err != nil {
		return err
	}
	p.last, p.written = same, now
	return nil
}

func (p *Publisher) write(ctx context.Context, data map[string][]byte) error {
	key := client.ObjectKey{Namespace: p.opts.Namespace, Name: Name(p.opts.ClusterName)}
	cm := &corev1.ConfigMap{}
	err := p.opts.APIReader.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{LabelView: "true"}},
			BinaryData: data,
		}
		if err := p.opts.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating configmap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading configmap %s: %w", key, err)
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[LabelView] = "true"
	cm.BinaryData = data
	if err := p.opts.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("updating configmap %s: %w", key, err)
	}
	return nil
}

// Register adds the publisher to the manager.
func (p *Publisher) Register(mgr manager.Manager) error { return mgr.Add(p) }
