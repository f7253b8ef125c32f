package localec2

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"sync"
)

// InstanceHealth is what EC2's DescribeInstanceStatus says about one
// instance beyond "running, checks ok": moto reports no scheduled events
// and never fails a status check.
type InstanceHealth struct {
	// Impaired fails the instance status check.
	Impaired bool
	// Events are scheduled event codes (instance-retirement,
	// system-reboot, ...), pending.
	Events []string
}

// StatusFront answers DescribeInstanceStatus for the instances it was
// told about (SetHealth), in EC2's wire format, and hands every other
// request to Next (moto, or a FaultInjector in front of it).
type StatusFront struct {
	Next http.RoundTripper

	mu     sync.Mutex
	health map[string]InstanceHealth
}

// NewStatusFront returns a front over next (nil: http.DefaultTransport).
func NewStatusFront(next http.RoundTripper) *StatusFront {
	if next == nil {
		next = http.DefaultTransport
	}
	return &StatusFront{Next: next, health: map[string]InstanceHealth{}}
}

// SetHealth makes DescribeInstanceStatus report h for instance id.
func (f *StatusFront) SetHealth(id string, h InstanceHealth) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health[id] = h
}

// RoundTrip implements http.RoundTripper. A DescribeInstanceStatus naming
// an instance the front knows is answered for every instance it names
// (the unknown ones running and ok); anything else goes to Next.
func (f *StatusFront) RoundTrip(req *http.Request) (*http.Response, error) {
	form, ok := ec2Form(req)
	if !ok || form.Get("Action") != "DescribeInstanceStatus" {
		return f.Next.RoundTrip(req)
	}
	var ids []string
	for i := 1; form.Get(fmt.Sprintf("InstanceId.%d", i)) != ""; i++ {
		ids = append(ids, form.Get(fmt.Sprintf("InstanceId.%d", i)))
	}
	f.mu.Lock()
	known := false
	health := map[string]InstanceHealth{}
	for _, id := range ids {
		if h, ok := f.health[id]; ok {
			known, health[id] = true, h
		}
	}
	f.mu.Unlock()
	if !known {
		return f.Next.RoundTrip(req)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><DescribeInstanceStatusResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>local-status</requestId><instanceStatusSet>`)
	for _, id := range ids {
		h := health[id]
		status := "ok"
		if h.Impaired {
			status = "impaired"
		}
		fmt.Fprintf(&b, `<item><instanceId>%s</instanceId><instanceState><code>16</code><name>running</name></instanceState>`, html.EscapeString(id))
		fmt.Fprintf(&b, `<systemStatus><status>ok</status></systemStatus><instanceStatus><status>%s</status></instanceStatus><eventsSet>`, status)
		for _, e := range h.Events {
			fmt.Fprintf(&b, `<item><code>%s</code><description>The instance is scheduled for %s</description><notBefore>2026-01-01T00:00:00.000Z</notBefore></item>`, html.EscapeString(e), html.EscapeString(e))
		}
		b.WriteString(`</eventsSet></item>`)
	}
	b.WriteString(`</instanceStatusSet></DescribeInstanceStatusResponse>`)
	return xmlResponse(req, http.StatusOK, b.String()), nil
}
