package cloudprovider

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// DefaultUnavailableOfferingsTTL is how long an offering that failed to
// launch for lack of capacity stays unavailable when no TTL is set
// (Karpenter's ICE cache keeps a fixed 3 minutes). Both clouds use it.
const DefaultUnavailableOfferingsTTL = 3 * time.Minute

// DriftReason says why an instance no longer matches its NodeClaim's node
// class. The empty reason means "not drifted".
type DriftReason string

// CloudProvider is joiner's whole view of a cloud. Implementations must be
// safe for concurrent use by several controllers, and every method acts
// only on instances that provably belong to this cluster (a cluster
// identity tag on the instance, never its name alone).
type CloudProvider interface {
	// Create launches one instance for nodeClaim, choosing the cheapest
	// available offering (instance type × zone × capacity type) that
	// satisfies spec.requirements and spec.resources.requests. It returns
	// a new NodeClaim (the argument is not modified) hydrated with
	// status.providerID, status.imageID, status.capacity,
	// status.allocatable and the labels the instance will carry
	// (instance type, zone, region, arch, os, capacity type, ...); the
	// caller merges them into its own NodeClaim.
	//
	// Errors: InsufficientCapacityError when no allowed offering has
	// capacity (naming the offerings that failed; delete the NodeClaim so
	// the provisioner retries elsewhere); NodeClassNotReadyError when the
	// node class is missing or not ready; CreateError, with a condition
	// reason and message, for other launch failures the user must see.
	// The NodeClaim's UID is Create's client token, as EC2's ClientToken
	// is: while the instance launched for a UID lives, Create for that
	// UID returns it instead of launching another, so a controller that
	// restarts between Create and recording status.providerID does not
	// launch twice. (Providers without client tokens must document it.)
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)

	// Delete terminates the instance named by nodeClaim.status.providerID.
	// It returns nil while termination is in progress and
	// NodeClaimNotFoundError once the instance is gone (or never existed,
	// or belongs to another cluster); callers repeat Delete until they see
	// NodeClaimNotFoundError.
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error

	// Get returns the instance with providerID as a NodeClaim (labels,
	// status.providerID, capacity, allocatable, imageID; the name and UID
	// of the NodeClaim that launched it, from its tags), or
	// NodeClaimNotFoundError when no instance of this cluster has it.
	// Terminated instances are not found.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)

	// List returns every live instance this cluster provably owns, as in
	// Get. Instances of other clusters are never returned. The creation
	// timestamp of each NodeClaim is the instance's launch time.
	List(ctx context.Context) ([]*v1.NodeClaim, error)

	// GetInstanceTypes returns the instance types nodePool may launch, as
	// filtered by its node class (spec.template.spec.nodeClassRef), with
	// offerings marked unavailable while the cloud lacks capacity for
	// them. A missing or unready node class is a NodeClassNotReadyError.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)

	// IsDrifted reports why nodeClaim's instance no longer matches its
	// node class, or "" when it does.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)

	// Name is the provider's name, e.g. "sim"; it is the scheme of its
	// provider IDs.
	Name() string

	// GetSupportedNodeClasses returns an empty object of each node class
	// kind the provider understands; NodeClaims whose nodeClassRef names
	// another kind are not managed by joiner.
	GetSupportedNodeClasses() []client.Object
}

// RegistrationDiagnoser is a capability a CloudProvider may add: naming,
// while a launched NodeClaim waits for its Node, the cause that will keep
// the Node from ever registering when the provider can know it before the
// registration TTL (the AWS provider: a node role aws-auth does not map).
// The lifecycle controller asks through WhyNotRegistered.
type RegistrationDiagnoser interface {
	// WhyNotRegistered returns the cause in one sentence, "" when the
	// provider knows none. It must be cheap: it is asked on each
	// reconcile of a NodeClaim waiting to register.
	WhyNotRegistered(ctx context.Context, nodeClaim *v1.NodeClaim) (string, error)
}

// WhyNotRegistered asks cp (or the provider it wraps) for the cause that
// keeps nodeClaim's Node from registering; "" when it cannot tell.
func WhyNotRegistered(ctx context.Context, cp CloudProvider, nodeClaim *v1.NodeClaim) (string, error) {
	if i, ok := cp.(*instrumented); ok {
		cp = i.next
	}
	d, ok := cp.(RegistrationDiagnoser)
	if !ok {
		return "", nil
	}
	return d.WhyNotRegistered(ctx, nodeClaim)
}

// AccessReader is a capability a CloudProvider may add beside
// RegistrationDiagnoser: a digest of how the cloud maps node identities
// into the cluster outside the cluster's own objects (the AWS provider:
// EKS's authenticationMode and access entries, which kube-system/aws-auth
// does not show). A change of it may end a registration back-off, as a
// change of aws-auth does.
type AccessReader interface {
	// AccessDigest returns the digest, "" when the provider cannot read it
	// (then nothing is compared).
	AccessDigest(ctx context.Context) (string, error)
}

// AccessDigest asks cp (or the provider it wraps) for its AccessReader's
// digest; "" when cp has none.
func AccessDigest(ctx context.Context, cp CloudProvider) (string, error) {
	if i, ok := cp.(*instrumented); ok {
		cp = i.next
	}
	r, ok := cp.(AccessReader)
	if !ok {
		return "", nil
	}
	return r.AccessDigest(ctx)
}
