package statuspage

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestServer runs the server on a loopback port with a fake clock: it
// samples the cost on every tick, serves the page with that history, and
// refuses what a read-only loopback page must refuse.
func TestServer(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	var cost atomic.Int64 // in 1/100 $/hour, the sim's single node
	source := func(ctx context.Context) (Input, error) {
		snap := cluster()
		snap.Now = clk.Now()
		snap.Nodes = snap.Nodes[:1] // one large spot node
		price := float64(cost.Load()) / 100
		snap.InstanceTypes = map[string][]*scheduling.InstanceType{"default": {instanceType("large", "8", "32Gi", map[string]float64{"spot": price})}}
		return Input{Snapshot: snap}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Options{Listener: ln, Title: "test-cluster", Source: source, Clock: clk, SampleInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	for _, c := range []int64{10, 30, 20} {
		waitFor(t, clk.HasWaiters)
		cost.Store(c)
		clk.Step(10 * time.Second)
	}
	waitFor(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.history) == 4
	})
	srv.mu.Lock()
	var got []float64
	for _, s := range srv.history {
		got = append(got, s.CostPerHour)
	}
	srv.mu.Unlock()
	// The first sample is taken at start, before any price was set.
	if want := []float64{0, 0.10, 0.30, 0.20}; !equalFloats(got, want) {
		t.Errorf("sampled costs = %v, want %v", got, want)
	}

	base := "http://" + ln.Addr().String()
	cases := []struct {
		name, method, path, host string
		wantStatus               int
		wantBody                 string
	}{
		{name: "page", method: http.MethodGet, path: "/", wantStatus: http.StatusOK, wantBody: `<meta http-equiv="refresh" content="10">`},
		{name: "page by localhost", method: http.MethodGet, path: "/", host: "localhost:1234", wantStatus: http.StatusOK, wantBody: "joiner · test-cluster"},
		{name: "head", method: http.MethodHead, path: "/", wantStatus: http.StatusOK},
		{name: "post is refused", method: http.MethodPost, path: "/", wantStatus: http.StatusMethodNotAllowed, wantBody: "read-only"},
		{name: "other paths", method: http.MethodGet, path: "/metrics", wantStatus: http.StatusNotFound},
		{name: "a rebound name is refused", method: http.MethodGet, path: "/", host: "attacker.example:8082", wantStatus: http.StatusMisdirectedRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body lacks %q:\n%s", tc.wantBody, body)
			}
			if tc.wantStatus == http.StatusOK && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("Content-Security-Policy = %q", resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
	// The page's chart holds the four samples and the page's own.
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), "<circle"); n != 5 {
		t.Errorf("the chart has %d points, want 5", n)
	}
}

func TestServerSourceError(t *testing.T) {
	srv, err := NewServer(Options{Address: "127.0.0.1:0", Source: func(context.Context) (Input, error) {
		return Input{}, errors.New("cache not started")
	}, Clock: clocktesting.NewFakeClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(ln.Addr())}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "cache not started") {
		t.Errorf("got %d %s, want 503 naming the error", resp.StatusCode, body)
	}
}

func TestNewServerValidates(t *testing.T) {
	_, err := NewServer(Options{Address: "8082"})
	if err == nil || !strings.Contains(err.Error(), `"8082" is not host:port`) || !strings.Contains(err.Error(), "source is required") {
		t.Errorf("NewServer = %v, want errors naming the address and the source", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}
