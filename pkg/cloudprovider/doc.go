// Package cloudprovider is the narrow boundary between joiner's controllers
// and a cloud: the CloudProvider interface, whose doc comments are
// contracts, and the typed errors controllers branch on
// (InsufficientCapacityError, NodeClaimNotFoundError,
// NodeClassNotReadyError, CreateError) with their Is/Ignore helpers.
//
// Implementations live in subpackages: sim (the embedded simulated cloud),
// fake (an in-memory provider for controller tests) and, later, aws. This
// package decides nothing by itself and never talks to the API server.
package cloudprovider
