// Package awsauth ends the registration back-offs of every NodePool when
// kube-system/aws-auth changes. A Node that never registers is, on EKS,
// most often a node role missing from aws-auth (seed 001): once someone
// maps it, waiting out the back-off (up to LAUNCH_BACKOFF_MAX) would keep
// the fix from showing for an hour. The next provisioning batch launches
// again at once, and the NodePool hears why.
//
// It decides only that: a change of aws-auth's content (not its first
// sighting, nor a resync that changes nothing) resets registration
// back-offs; initialisation back-offs stay, aws-auth cannot cause them.
// Clusters that map node roles with EKS access entries instead are read
// through the provider's access digest (Options.Access), with the same
// rule, but only while some NodePool has a registration back-off: EKS is
// an AWS API with rate limits, aws-auth a cached read of the API server.
//
// Its one permission is a read of that ConfigMap alone; `make generate`
// writes it to config/rbac/awsauth/role.yaml, a Role in kube-system, which
// the chart binds there whatever the release's namespace.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get,namespace=kube-system,resourceNames=aws-auth
package awsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// Namespace and Name are aws-auth's.
const (
	Namespace = "kube-system"
	Name      = "aws-auth"
)

// DefaultInterval is how often aws-auth is read: well inside a batch
// window, so a fix shows within one.
const DefaultInterval = 2 * time.Second

// Options configure the controller.
type Options struct {
	// Client lists and patches NodePools.
	Client client.Client
	// APIReader reads aws-auth (ConfigMaps are not cached).
	APIReader client.Reader
	Recorder  events.Recorder
	Clock     clock.Clock
	// Trigger opens a provisioning batch.
	Trigger func(types.UID)
	// Interval between two reads (0: DefaultInterval).
	Interval time.Duration
	// Access returns the digest of how the cloud maps node roles besides
	// aws-auth (cloudprovider.AccessDigest: EKS access entries), "" when
	// unknown; nil when the cloud has none.
	Access func(ctx context.Context) (string, error)
}

// Controller polls aws-auth and resets the back-offs on a change.
type Controller struct {
	opts Options
	// seen is the content hash last read ("" before the first read, "-"
	// while the ConfigMap is absent).
	seen string
	// accessSeen is the access digest last read while a registration
	// back-off waited ("" when none waited or the digest was unknown).
	accessSeen string
}

// NewController validates opts.
func NewController(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil || opts.APIReader == nil {
		errs = append(errs, errors.New("client and API reader are required"))
	}
	if opts.Recorder == nil || opts.Clock == nil || opts.Trigger == nil {
		errs = append(errs, errors.New("recorder, clock and trigger are required"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("aws-auth options: %w", errors.Join(errs...))
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	return &Controller{opts: opts}, nil
}

// Register adds the controller to the manager (it runs on the leader).
func (c *Controller) Register(mgr manager.Manager) error { return mgr.Add(c) }

// Start polls until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("nodepool.awsauth")
	for {
		if err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "resetting registration back-offs after an aws-auth change")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.opts.Clock.After(c.opts.Interval):
		}
	}
}

// Poll reads aws-auth once and, when its content changed since the last
// read, resets the registration back-offs.
func (c *Controller) Poll(ctx context.Context) error {
	cm := &corev1.ConfigMap{}
	err := c.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: Name}, cm)
	now := "-"
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %s/%s: %w", Namespace, Name, err)
	default:
		now = contentHash(cm)
	}
	before := c.seen
	c.seen = now
	if before != "" && before != now {
		return c.reset(ctx, fmt.Sprintf("%s/%s changed", Namespace, Name))
	}
	return c.pollAccess(ctx)
}

// pollAccess reads the access digest while a registration back-off waits
// and resets the back-offs when it changed since the last read.
func (c *Controller) pollAccess(ctx context.Context) error {
	if c.opts.Access == nil {
		return nil
	}
	waiting, err := c.registrationBackoffWaits(ctx)
	if err != nil || !waiting {
		c.accessSeen = ""
		return err
	}
	now, err := c.opts.Access(ctx)
	if err != nil {
		return fmt.Errorf("reading the cluster's access entries: %w", err)
	}
	before := c.accessSeen
	c.accessSeen = now
	if before == "" || now == "" || before == now {
		return nil
	}
	return c.reset(ctx, "the cluster's EKS access entries (or authenticationMode) changed")
}

// registrationBackoffWaits reports whether some NodePool has a
// registration back-off to end.
func (c *Controller) registrationBackoffWaits(ctx context.Context) (bool, error) {
	var pools v1.NodePoolList
	if err := c.opts.Client.List(ctx, &pools); err != nil {
		return false, fmt.Errorf("listing nodepools: %w", err)
	}
	for i := range pools.Items {
		if r, err := launchhealth.Get(&pools.Items[i]); err == nil && r.ResetRegistration() {
			return true, nil
		}
	}
	return false, nil
}

func contentHash(cm *corev1.ConfigMap) string {
	b, _ := json.Marshal(cm.Data)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// reset ends the registration back-offs of every NodePool that has one;
// cause says what changed.
func (c *Controller) reset(ctx context.Context, cause string) error {
	var pools v1.NodePoolList
	if err := c.opts.Client.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	var errs []error
	reset := false
	for i := range pools.Items {
		r, err := launchhealth.Get(&pools.Items[i])
		if err != nil || !r.ResetRegistration() {
			continue
		}
		np, err := c.resetOne(ctx, pools.Items[i].Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if np != nil {
			reset = true
			c.opts.Recorder.Publish(events.Normal(np, events.LaunchBackoffReset, "Launch",
				"%s: the registration back-off of NodePool %s ends, and the next provisioning batch launches again.", cause, np.Name))
		}
	}
	if reset {
		c.opts.Trigger(types.UID("node-role-mapping-changed"))
	}
	return errors.Join(errs...)
}

// resetOne patches NodePool name's record without its registration
// back-offs (optimistic lock, retried from a fresh read); nil when nothing
// was left to reset or the NodePool is gone.
func (c *Controller) resetOne(ctx context.Context, name string) (*v1.NodePool, error) {
	var out *v1.NodePool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &v1.NodePool{}
		if err := c.opts.APIReader.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			return client.IgnoreNotFound(err)
		}
		r, err := launchhealth.Get(np)
		if err != nil || !r.ResetRegistration() {
			return nil
		}
		stored := np.DeepCopy()
		launchhealth.Set(np, r)
		if err := c.opts.Client.Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("resetting the registration back-off of nodepool %s: %w", name, err)
		}
		out = np
		return nil
	})
	return out, err
}
