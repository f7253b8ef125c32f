package localec2

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/joiner-dev/joiner/pkg/cloudprovider/faults"
)

// Fault is an answer the FaultInjector gives in place of, or after, the
// local EC2's. moto never throttles, never runs out of capacity and never
// loses a response; these are the ways real EC2 does, in its wire format
// (the EC2 Query API's <Response><Errors> document, or a CreateFleet
// errorSet), so aws-sdk-go-v2 decodes and retries them as it would EC2's.
type Fault string

const (
	// FaultThrottle is a 503 RequestLimitExceeded.
	FaultThrottle Fault = "throttle"
	// FaultServerError is a 500 InternalError; the request never reached
	// the local EC2.
	FaultServerError Fault = "5xx"
	// FaultCapacity is a CreateFleet that launched nothing with
	// InsufficientInstanceCapacity for every override of the request.
	FaultCapacity Fault = "capacity"
	// FaultSubnetExhausted is a CreateFleet that launched nothing with
	// InsufficientFreeAddressesInSubnet for every override.
	FaultSubnetExhausted Fault = "subnet"
	// FaultSlow forwards the request after the injector's SlowFor.
	FaultSlow Fault = "slow"
	// FaultGhost forwards the request, so it takes effect (the instance of
	// a CreateFleet or RunInstances runs), then answers 500 InternalError:
	// the caller sees a failure while the instance exists, the classic
	// ghost instance.
	FaultGhost Fault = "ghost"
)

// FaultInjector sits on the wire between aws-sdk-go-v2 and the local EC2
// (as an http.RoundTripper, or behind a FaultProxy) and answers some EC2
// Query requests itself. Choose picks the fault for each request's Action
// (the empty Fault forwards it untouched).
//
// It also gives CreateFleet and RunInstances EC2's idempotency, which moto
// lacks: a request repeating a ClientToken that already launched gets the
// original answer instead of a second launch. The SDK fills the token in
// and reuses it when it retries, so a ghost launch retried by the SDK
// returns the ghost's instance, as it would on EC2.
type FaultInjector struct {
	Next    http.RoundTripper
	Choose  func(action string) Fault
	SlowFor time.Duration
	// Capacity, when set, is the room the local EC2 has per instance
	// type; CreateFleet is held to it, all or nothing under
	// MinTargetCapacity (see InstanceCapacity).
	Capacity *InstanceCapacity

	mu       sync.Mutex
	calls    int               // EC2 requests seen
	injected map[string]int    // "<action>:<fault>" -> count
	tokens   map[string][]byte // ClientToken -> the launch's answer
}

// NewFaultInjector returns an injector forwarding to next (the default
// transport when nil).
func NewFaultInjector(next http.RoundTripper, choose func(action string) Fault) *FaultInjector {
	if next == nil {
		next = http.DefaultTransport
	}
	return &FaultInjector{Next: next, Choose: choose, SlowFor: 2 * time.Second, injected: map[string]int{}, tokens: map[string][]byte{}}
}

// Injected returns how many faults were injected, by "<action>:<fault>".
func (f *FaultInjector) Injected() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.injected))
	for k, v := range f.injected {
		out[k] = v
	}
	return out
}

// InjectedSummary renders the EC2 requests seen and Injected sorted, e.g.
// "40 EC2 calls, faults: CreateFleet:ghost=1 DescribeInstances:throttle=3".
func (f *FaultInjector) InjectedSummary() string {
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	counts := f.Injected()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, counts[k])
	}
	return fmt.Sprintf("%d EC2 calls, faults: %s", calls, strings.Join(parts, " "))
}

// ec2APIVersion is the Version of every EC2 Query request.
const ec2APIVersion = "2016-11-15"

// launches are the actions whose ClientToken the injector makes
// idempotent.
var launches = map[string]bool{"CreateFleet": true, "RunInstances": true}

// RoundTrip implements http.RoundTripper.
func (f *FaultInjector) RoundTrip(req *http.Request) (*http.Response, error) {
	form, ok := ec2Form(req)
	if !ok {
		// Not EC2 (SSM speaks JSON; IAM's Query errors have another shape).
		return f.Next.RoundTrip(req)
	}
	action := form.Get("Action")
	token := ""
	if launches[action] {
		token = form.Get("ClientToken")
	}
	if token != "" {
		f.mu.Lock()
		answer, ok := f.tokens[token]
		f.mu.Unlock()
		if ok {
			return xmlResponse(req, http.StatusOK, string(answer)), nil
		}
	}
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	var flt Fault
	if f.Choose != nil {
		flt = f.Choose(action)
	}
	if flt != "" {
		f.mu.Lock()
		f.injected[action+":"+string(flt)]++
		f.mu.Unlock()
	}
	switch flt {
	case FaultThrottle:
		return xmlResponse(req, http.StatusServiceUnavailable, ec2Error("RequestLimitExceeded", "Request limit exceeded.")), nil
	case FaultServerError:
		return xmlResponse(req, http.StatusInternalServerError, ec2Error("InternalError", "An internal error has occurred.")), nil
	case FaultCapacity:
		if action == "CreateFleet" {
			return xmlResponse(req, http.StatusOK, fleetErrors(form, "InsufficientInstanceCapacity", "We currently do not have sufficient capacity in the Availability Zone you requested.")), nil
		}
	case FaultSubnetExhausted:
		if action == "CreateFleet" {
			return xmlResponse(req, http.StatusOK, fleetErrors(form, "InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet to satisfy the requested number of instances.")), nil
		}
	case FaultSlow:
		select {
		case <-time.After(f.SlowFor):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	decision := -1
	if action == "CreateFleet" && f.Capacity != nil {
		forward, d, ok := f.Capacity.admit(form)
		if !ok {
			f.mu.Lock()
			f.injected[action+":"+string(FaultCapacity)]++
			f.mu.Unlock()
			return xmlResponse(req, http.StatusOK, fleetErrors(form, "InsufficientInstanceCapacity",
				"We currently do not have sufficient capacity to launch the fleet's minimum target capacity.")), nil
		}
		body := forward.Encode()
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
		decision = d
	}
	resp, err := f.Next.RoundTrip(req)
	if (err != nil || resp.StatusCode != http.StatusOK) && decision >= 0 {
		f.Capacity.giveBack(decision)
	}
	if err != nil {
		return nil, err
	}
	if token != "" && resp.StatusCode == http.StatusOK {
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.tokens[token] = answer
		f.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(answer))
	}
	if flt == FaultGhost {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return xmlResponse(req, http.StatusInternalServerError, ec2Error("InternalError", "An internal error has occurred.")), nil
	}
	return resp, nil
}

// FaultRates are the FaultProxy's schedule (see package faults): Throttle
// and ServerError apply to every EC2 action, Capacity to CreateFleet, Slow
// and Ghost to CreateFleet and RunInstances.
type FaultRates = faults.Rates

// Chooser returns a Choose function drawing r's faults from its seed; safe
// for concurrent use. One seed gives one sequence of draws (which request
// gets which draw is still the order requests arrive in).
func Chooser(r FaultRates) func(action string) Fault {
	dice := faults.NewDice(r.Seed)
	roll := dice.Roll
	return func(action string) Fault {
		launch := launches[action]
		switch {
		case roll(r.Throttle):
			return FaultThrottle
		case roll(r.ServerError):
			return FaultServerError
		case action == "CreateFleet" && roll(r.Capacity):
			return FaultCapacity
		case launch && roll(r.Ghost):
			return FaultGhost
		case launch && roll(r.Slow):
			return FaultSlow
		}
		return ""
	}
}

// FaultProxy is an HTTP server on a loopback port that forwards to the
// local EC2 through a FaultInjector: a process pointed at it
// (AWS_ENDPOINT_URL) meets the injector's faults without any change to
// its own code.
type FaultProxy struct {
	// Endpoint is the proxy's base URL.
	Endpoint string
	*FaultInjector
	srv *http.Server
}

// StartFaultProxy listens on a free loopback port and forwards to target
// (the local EC2's Endpoint) with rates' faults. The caller must Close it.
func StartFaultProxy(target string, rates FaultRates) (*FaultProxy, error) {
	inj := NewFaultInjector(nil, Chooser(rates))
	if rates.SlowFor > 0 {
		inj.SlowFor = rates.SlowFor
	}
	endpoint, srv, err := serveLoopback(target, inj)
	if err != nil {
		return nil, fmt.Errorf("starting the fault proxy: %w", err)
	}
	return &FaultProxy{Endpoint: endpoint, FaultInjector: inj, srv: srv}, nil
}

// serveLoopback serves, on a free loopback port, a reverse proxy to target
// whose requests go through rt, and returns its base URL.
func serveLoopback(target string, rt http.RoundTripper) (string, *http.Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, fmt.Errorf("target %q: %w", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			// Request signatures cover the Host header: keep the caller's.
			pr.Out.Host = pr.In.Host
		},
		Transport: rt,
		// A caller giving up (a killed process) is not the proxy's error.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), srv, nil
}

// Close stops the proxy.
func (p *FaultProxy) Close() error { return p.srv.Close() }

func ec2Error(code, msg string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>injected</RequestID></Response>`, code, msg)
}

// fleetErrors is a CreateFleet answer that launched nothing and reports
// code for every override of the request.
func fleetErrors(form url.Values, code, msg string) string {
	lifecycle := form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	var errs []string
	for _, s := range fleetSlots(form) {
		errs = append(errs, fleetErrorItem(s.launchTemplate, s.instanceType, s.subnet, lifecycle, code, msg))
	}
	return fleetAnswer(errs)
}

func xmlResponse(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{"Content-Type": []string{"text/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}
