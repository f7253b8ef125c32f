// Package events publishes joiner's Kubernetes events: a reason vocabulary
// shared by every controller (Karpenter's reasons where they exist) and a
// Recorder that de-duplicates identical events for a while, so a controller
// that reconciles the same broken object every few seconds tells the user
// once, not a hundred times.
//
// It decides nothing: callers choose when to publish and what to say.
package events
