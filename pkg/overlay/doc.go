// Package overlay applies karpenter.sh/v1alpha1 NodeOverlays to a NodePool's
// instance types: the one place where an overlay's price, priceAdjustment
// and capacity change what the solver, consolidation, `joiner simulate`
// and `joiner explain` see (CloudProvider decorates the cloud's
// GetInstanceTypes; the scenario loader calls Apply). Evaluate finds
// overlays of equal weight that set different values for the same
// offering or resource: while any conflict stands no overlay is applied,
// so a half-applied set never changes a plan.
//
// It decides nothing about scheduling and never writes to the API server;
// pkg/controllers/nodeoverlay evaluates the overlays and reports their
// status.
package overlay
