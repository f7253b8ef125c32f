package disruption

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// A pass that started a command is followed at once by the next, as
// Karpenter's disruption controller requeues immediately after a command;
// a pass that started none, or failed, waits PollInterval. Upstream's
// performance suite drifts 300 nodes (one node per drift command): one
// command per PollInterval took 50 minutes.
func TestRunGoesOnAtOnceAfterACommand(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	c := &Controller{opts: Options{Clock: clk, PollInterval: 10 * time.Second}}
	type outcome struct {
		command bool
		err     error
	}
	script := []outcome{
		{command: true}, // the first pass waits PollInterval
		{command: true}, // at once
		{},              // at once; started nothing
		{command: true}, // after PollInterval
		{err: errors.New("listing nodes failed")}, // at once
		{command: true}, // after PollInterval: the failed pass started nothing
	}
	var polls atomic.Int32
	var seen []int32
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pass := func(context.Context) (*disruption.Command, error) {
		seen = append(seen, polls.Load())
		if len(seen) > len(script) {
			cancel()
			return nil, nil
		}
		o := script[len(seen)-1]
		if o.command {
			return &disruption.Command{Method: disruption.MethodDrift}, o.err
		}
		return nil, o.err
	}
	done := make(chan struct{})
	go func() {
		c.run(ctx, pass)
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-deadline:
			t.Fatalf("run did not end; passes so far after polls %v", seen)
		default:
			if clk.HasWaiters() {
				polls.Add(1)
				clk.Step(10 * time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// The poll count each pass ran after; the 7th pass ends the run.
	if want := []int32{1, 1, 1, 2, 2, 3, 3}; !slices.Equal(seen, want) {
		t.Errorf("passes ran after polls %v, want %v", seen, want)
	}
}

// failingCreator creates replacements as the provisioner does until its
// failFrom-th call (1-based), then refuses them all.
type failingCreator struct {
	*fakeProvisioner
	calls, failFrom int
}

func (f *failingCreator) CreateReplacements(ctx context.Context, pools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string, replaces []types.UID) ([]*v1.NodeClaim, error) {
	f.calls++
	if f.failFrom > 0 && f.calls >= f.failFrom {
		return nil, errors.New("the API server refused the nodeclaim")
	}
	return f.fakeProvisioner.CreateReplacements(ctx, pools, planned, reason, replaces)
}

// A command that is rolled back does not keep the passes going at once:
// one whose validation fails or whose replacement cannot be created
// started nothing, so the next pass waits PollInterval; one whose
// replacement fails after it started is followed at once by one pass
// (which finds its node in flight), and its node, back after the
// rollback, is taken again at the next poll. The engine is a stub that
// takes the first node not being disrupted; the Disrupt pass, the queue
// and its rollbacks are the controller's own.
func TestRunAfterARolledBackCommand(t *testing.T) {
	const poll, validation = 10 * time.Second, 15 * time.Second
	drift := func(name string) *disruption.Command {
		return &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{name}, Replacements: []*scheduling.NewNodeClaim{replacement()}}
	}
	for _, tc := range []struct {
		name  string
		nodes []string
		// command is what the engine decides for a node it takes.
		command func(name string) *disruption.Command
		// failValidation fails every validation; failFrom refuses the
		// replacements from that creation on.
		failValidation bool
		failFrom       int
		// between runs while the loop waits, after the given pass.
		between func(u *unit, after int)
		// want is each pass's start (seconds after the loop began) and
		// whether it started a command.
		wantStart   []int
		wantStarted []bool
	}{
		{
			name:  "the next command fails validation",
			nodes: []string{"n1", "n2"},
			command: func(name string) *disruption.Command {
				if name == "n1" {
					return drift(name)
				}
				return &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{name}}
			},
			failValidation: true,
			// Pass 2 (at once) waits the validation period; pass 3 the poll.
			wantStart:   []int{10, 10, 35},
			wantStarted: []bool{true, false, false},
		},
		{
			name:        "the next command's replacement cannot be created",
			nodes:       []string{"n1", "n2"},
			command:     drift,
			failFrom:    2,
			wantStart:   []int{10, 10, 20},
			wantStarted: []bool{true, false, false},
		},
		{
			name:    "the command's replacement fails after it started",
			nodes:   []string{"n1"},
			command: drift,
			between: func(u *unit, after int) {
				if after != 2 || u.ctrl.queue.Len() == 0 {
					return
				}
				u.ctrl.queue.Process(u.ctx)
				if err := u.kube.Delete(u.ctx, u.getClaim(u.prov.created[0])); err != nil {
					u.t.Fatal(err)
				}
				u.ctrl.queue.Process(u.ctx)
				if u.ctrl.queue.Len() != 0 {
					u.t.Fatal("the command was not rolled back")
				}
			},
			wantStart:   []int{10, 10, 20, 20},
			wantStarted: []bool{true, false, true, false},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t)
			for _, name := range tc.nodes {
				u.node(name)
			}
			c := u.ctrl
			c.opts.PollInterval, c.opts.ValidationPeriod = poll, validation
			c.opts.NodeClaims = &failingCreator{fakeProvisioner: u.prov, failFrom: tc.failFrom}
			c.decide = func(in *disruption.Input) (*disruption.Decision, error) {
				d := &disruption.Decision{Verdicts: make([]disruption.Verdict, len(in.Nodes))}
				for i, n := range in.Nodes {
					d.Verdicts[i].Node = n.Name
					if d.Command == nil && !n.Disrupting && !n.Deleting {
						d.Command = tc.command(n.Name)
					}
				}
				return d, nil
			}
			c.validate = func(*disruption.Command, *disruption.Input) error {
				if tc.failValidation {
					return errors.New("the cluster changed")
				}
				return nil
			}
			began := u.clock.Now()
			var (
				starts  []int
				started []bool
				passes  atomic.Int32
			)
			ctx, cancel := context.WithCancel(u.ctx)
			defer cancel()
			pass := func(ctx context.Context) (*disruption.Command, error) {
				starts = append(starts, int(u.clock.Since(began)/time.Second))
				cmd, err := c.Disrupt(ctx)
				started = append(started, err == nil && cmd != nil)
				if passes.Add(1) == int32(len(tc.wantStart)) {
					cancel()
				}
				return cmd, err
			}
			done := make(chan struct{})
			go func() {
				c.run(ctx, pass)
				close(done)
			}()
			deadline := time.After(20 * time.Second)
			for running := true; running; {
				select {
				case <-done:
					running = false
				case <-deadline:
					cancel()
					<-done
					t.Fatalf("the loop did not end; passes started at %v s", starts)
				default:
					// Only while the loop waits on the clock: it is not
					// running a pass then.
					if u.clock.HasWaiters() {
						if tc.between != nil {
							tc.between(u, int(passes.Load()))
						}
						u.clock.Step(time.Second)
					}
					time.Sleep(time.Millisecond)
				}
			}
			if !slices.Equal(starts, tc.wantStart) || !slices.Equal(started, tc.wantStarted) {
				t.Errorf("passes started at %v s, started commands %v; want %v s, %v", starts, started, tc.wantStart, tc.wantStarted)
			}
			for _, name := range tc.nodes {
				if c.queue.Has(name) {
					continue
				}
				if v1.HasDisruptedTaint(u.getNode(name).Spec.Taints) {
					t.Errorf("%s is tainted with no command in flight for it", name)
				}
			}
		})
	}
}
