package statuspage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/joiner-dev/joiner/pkg/logging"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Source is where the live picture comes from: the provisioner's current
// snapshot and its last batch's verdicts.
type Source func(ctx context.Context) (Input, error)

// Options configure the live page's server.
type Options struct {
	// Listener, when set, is where the page is served (a caller that must
	// know the port before the server starts opens it). Else Address is
	// listened on when the server starts.
	Listener net.Listener
	// Address is host:port; a loopback host by default (see
	// DefaultAddress): the page is read-only, but it names pods, nodes
	// and prices, and has no authentication.
	Address string
	// Title heads the page (the cluster's name).
	Title string
	// SampleInterval is how often the cost is sampled for the chart (and
	// how often the page reloads itself); DefaultSampleInterval when 0.
	SampleInterval time.Duration
	// MaxSamples bounds the chart's history; DefaultMaxSamples when 0.
	MaxSamples int
	Source     Source
	Clock      clock.Clock
}

// Defaults of Options.
const (
	DefaultAddress        = "127.0.0.1:8082"
	DefaultSampleInterval = 5 * time.Second
	// DefaultMaxSamples keeps an hour at the default interval.
	DefaultMaxSamples = 720
)

func (o *Options) validate() error {
	var errs []error
	if o.Listener == nil {
		if _, _, err := net.SplitHostPort(o.Address); err != nil {
			errs = append(errs, fmt.Errorf("status page address %q is not host:port (for example %s): %w", o.Address, DefaultAddress, err))
		}
	}
	if o.Source == nil {
		errs = append(errs, errors.New("status page source is required"))
	}
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if o.SampleInterval < 0 || o.MaxSamples < 0 {
		errs = append(errs, errors.New("status page sample interval and max samples must not be negative"))
	}
	return errors.Join(errs...)
}

// Server serves the live status page and samples the cost for its chart.
// It is a manager.Runnable that runs on the elected leader only: a
// follower's state and provisioner are idle, so its picture would be
// empty.
type Server struct {
	opts Options

	mu      sync.Mutex
	history []Sample
}

// NewServer validates opts and returns a Server.
func NewServer(opts Options) (*Server, error) {
	if opts.SampleInterval == 0 {
		opts.SampleInterval = DefaultSampleInterval
	}
	if opts.MaxSamples == 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("status page options: %w", err)
	}
	return &Server{opts: opts}, nil
}

// Register adds the server to the manager (pkg/controllers lists it with
// the controllers).
func (s *Server) Register(mgr manager.Manager) error {
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding status page: %w", err)
	}
	return nil
}

// Start listens (unless given a listener), samples the cost every
// SampleInterval and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("statuspage")
	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.opts.Address); err != nil {
			return fmt.Errorf("listening for the status page on %s: %w", s.opts.Address, err)
		}
	}
	srv := &http.Server{Handler: s.Handler(ln.Addr()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving the status page", logging.URL, "http://"+ln.Addr().String()+"/")

	s.sample(ctx)
	for {
		select {
		case <-ctx.Done():
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
			return nil
		case err := <-served:
			return fmt.Errorf("serving the status page: %w", err)
		case <-s.opts.Clock.After(s.opts.SampleInterval):
			s.sample(ctx)
		}
	}
}

// sample records the cost now; a failed snapshot is skipped (the chart
// shows a gap in time, not a wrong value).
func (s *Server) sample(ctx context.Context) {
	in, err := s.opts.Source(ctx)
	if err != nil {
		log.FromContext(ctx).V(1).Info("status page could not sample the cost", logging.Error, err.Error())
		return
	}
	sample := SampleOf(in)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, sample)
	if extra := len(s.history) - s.opts.MaxSamples; extra > 0 {
		s.history = append(s.history[:0:0], s.history[extra:]...)
	}
}

// Handler serves the page. When addr is a loopback address, requests must
// name the host by an IP address or "localhost": a web page the user
// visits elsewhere could otherwise point a name it controls at 127.0.0.1
// (DNS rebinding) and read the page.
func (s *Server) Handler(addr net.Addr) http.Handler {
	loopback := false
	if tcp, ok := addr.(*net.TCPAddr); ok {
		loopback = tcp.IP.IsLoopback()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the status page is read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if loopback && !localHost(r.Host) {
			http.Error(w, "the status page answers only to an IP address or localhost", http.StatusMisdirectedRequest)
			return
		}
		in, err := s.opts.Source(r.Context())
		if err != nil {
			http.Error(w, "reading the cluster state: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		in.History = append(in.History, s.history...)
		s.mu.Unlock()
		if in.Title == "" {
			in.Title = s.opts.Title
		}
		in.Refresh = s.opts.SampleInterval
		var buf bytes.Buffer
		if err := Render(&buf, Build(in)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		// No script, no remote resource: the page needs neither.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		_, _ = buf.WriteTo(w)
	})
}

// localHost reports whether a Host header names an IP address or
// localhost.
func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}
