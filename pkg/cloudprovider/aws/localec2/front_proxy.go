package localec2

import (
	"fmt"
	"net/http"
)

// FrontProxy is the Front on a loopback port: a process pointed at it
// (AWS_ENDPOINT_URL) meets EC2's behaviour where moto's differs, without
// any change to its own code. Behind the front a FaultInjector with no
// faults gives launches EC2's ClientToken idempotency; before it the
// PlacementFront serves capacity reservations and placement groups.
type FrontProxy struct {
	// Endpoint is the proxy's base URL.
	Endpoint string
	*Front
	// Placement holds the reservations and placement groups.
	Placement *PlacementFront
	srv       *http.Server
}

// StartFrontProxy listens on a free loopback port and forwards to target
// (the local EC2's Endpoint) through a Front. The caller must Close it.
func StartFrontProxy(target string, opts FrontOptions) (*FrontProxy, error) {
	front := NewFront(NewFaultInjector(nil, nil), opts)
	placement := NewPlacementFront(front)
	endpoint, srv, err := serveLoopback(target, placement)
	if err != nil {
		return nil, fmt.Errorf("starting the local EC2's front: %w", err)
	}
	return &FrontProxy{Endpoint: endpoint, Front: front, Placement: placement, srv: srv}, nil
}

// Close stops the proxy.
func (p *FrontProxy) Close() error { return p.srv.Close() }
