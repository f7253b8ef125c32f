package cloudprovider

import (
	"errors"
	"fmt"
	"strings"
)

// InsufficientCapacityError means the cloud could not launch any of the
// offerings a NodeClaim allowed. The caller deletes the NodeClaim so the
// provisioner retries elsewhere; the offerings named here are unavailable
// for a while.
type InsufficientCapacityError struct {
	// Offerings names the rejected offerings, e.g. "m5.large/us-east-1a/spot".
	Offerings []string
	err       error
}

// NewInsufficientCapacityError wraps err, naming the offerings that had no
// capacity.
func NewInsufficientCapacityError(err error, offerings ...string) *InsufficientCapacityError {
	return &InsufficientCapacityError{Offerings: offerings, err: err}
}

func (e *InsufficientCapacityError) Error() string {
	msg := "insufficient capacity"
	if len(e.Offerings) > 0 {
		msg += " for " + strings.Join(e.Offerings, ", ")
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *InsufficientCapacityError) Unwrap() error { return e.err }

// IsInsufficientCapacityError reports whether err is, or wraps, an
// InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// IgnoreInsufficientCapacityError returns nil for an insufficient capacity
// error and err otherwise.
func IgnoreInsufficientCapacityError(err error) error {
	if IsInsufficientCapacityError(err) {
		return nil
	}
	return err
}

// NodeClaimNotFoundError means the instance behind a NodeClaim does not
// exist (never launched, or already terminated).
type NodeClaimNotFoundError struct {
	err error
}

// NewNodeClaimNotFoundError wraps err as a not-found error.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{err: err}
}

func (e *NodeClaimNotFoundError) Error() string {
	if e.err == nil {
		return "nodeclaim not found"
	}
	return "nodeclaim not found: " + e.err.Error()
}

func (e *NodeClaimNotFoundError) Unwrap() error { return e.err }

// IsNodeClaimNotFoundError reports whether err is, or wraps, a
// NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var e *NodeClaimNotFoundError
	return errors.As(err, &e)
}

// IgnoreNodeClaimNotFoundError returns nil for a not-found error and err
// otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// NodeClaimNotOwnedError means the instance behind a providerID exists but
// does not carry this cluster's identity (its cluster id tag is missing or
// names another cluster): an instance Karpenter launched before a migration
// to joiner, or every instance after a restore gave kube-system a new UID.
// joiner neither manages nor deletes it, and must not treat it as gone:
// deleting its NodeClaim would drain a node whose instance keeps running,
// unmanaged.
type NodeClaimNotOwnedError struct {
	err error
}

// NewNodeClaimNotOwnedError wraps err as a not-owned error.
func NewNodeClaimNotOwnedError(err error) *NodeClaimNotOwnedError {
	return &NodeClaimNotOwnedError{err: err}
}

func (e *NodeClaimNotOwnedError) Error() string {
	if e.err == nil {
		return "instance not owned by this cluster"
	}
	return "instance not owned by this cluster: " + e.err.Error()
}

func (e *NodeClaimNotOwnedError) Unwrap() error { return e.err }

// IsNodeClaimNotOwned reports whether err is, or wraps, a
// NodeClaimNotOwnedError.
func IsNodeClaimNotOwned(err error) bool {
	var e *NodeClaimNotOwnedError
	return errors.As(err, &e)
}

// NodeClassNotReadyError means the NodeClaim's node class is missing or not
// ready, so nothing can be launched from it until the user fixes it.
type NodeClassNotReadyError struct {
	err error
}

// NewNodeClassNotReadyError wraps err as a node-class-not-ready error.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{err: err}
}

func (e *NodeClassNotReadyError) Error() string {
	if e.err == nil {
		return "node class not ready"
	}
	return "node class not ready: " + e.err.Error()
}

func (e *NodeClassNotReadyError) Unwrap() error { return e.err }

// IsNodeClassNotReadyError reports whether err is, or wraps, a
// NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// IgnoreNodeClassNotReadyError returns nil for a node-class-not-ready error
// and err otherwise.
func IgnoreNodeClassNotReadyError(err error) error {
	if IsNodeClassNotReadyError(err) {
		return nil
	}
	return err
}

// CreateError is a launch failure that is neither insufficient capacity nor
// a node class problem. ConditionReason and ConditionMessage are meant for
// the NodeClaim's Launched condition, so the user sees what went wrong (for
// example reason "InsufficientFreeAddressesInSubnet").
type CreateError struct {
	ConditionReason  string
	ConditionMessage string
	err              error
}

// NewCreateError wraps err with a condition reason and message.
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{ConditionReason: reason, ConditionMessage: message, err: err}
}

func (e *CreateError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("creating instance: %s: %s", e.ConditionReason, e.ConditionMessage)
	}
	return fmt.Sprintf("creating instance: %s", e.err.Error())
}

func (e *CreateError) Unwrap() error { return e.err }

// IsCreateError reports whether err is, or wraps, a CreateError.
func IsCreateError(err error) bool {
	var e *CreateError
	return errors.As(err, &e)
}

// AsCreateError returns the CreateError in err's chain, or nil.
func AsCreateError(err error) *CreateError {
	var e *CreateError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// IgnoreCreateError returns nil for a CreateError and err otherwise.
func IgnoreCreateError(err error) error {
	if IsCreateError(err) {
		return nil
	}
	return err
}
