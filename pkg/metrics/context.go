package metrics

import "context"

type controllerKey struct{}

// WithController names the controller a context's work is done for, so the
// cloud provider's metrics carry Karpenter's controller label.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

// ControllerFrom is the controller WithController named, or "unknown".
func ControllerFrom(ctx context.Context) string {
	if name, ok := ctx.Value(controllerKey{}).(string); ok {
		return name
	}
	return "unknown"
}
