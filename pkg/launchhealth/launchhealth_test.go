package launchhealth

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		ttl, max time.Duration
		want     time.Duration
	}{
		{name: "no failure waits nothing", failures: 0, ttl: time.Minute, max: time.Hour, want: 0},
		{name: "first failure waits the ttl", failures: 1, ttl: 15 * time.Minute, max: time.Hour, want: 15 * time.Minute},
		{name: "second doubles", failures: 2, ttl: 15 * time.Minute, max: time.Hour, want: 30 * time.Minute},
		{name: "third reaches the max", failures: 3, ttl: 15 * time.Minute, max: time.Hour, want: time.Hour},
		{name: "capped at the max", failures: 4, ttl: 15 * time.Minute, max: time.Hour, want: time.Hour},
		{name: "short ttl doubles five times", failures: 6, ttl: time.Minute, max: time.Hour, want: 32 * time.Minute},
		{name: "many failures do not overflow", failures: 500, ttl: time.Second, max: time.Hour, want: time.Hour},
		{name: "ttl above the max waits the max", failures: 1, ttl: 2 * time.Hour, max: time.Hour, want: time.Hour},
		{name: "no ttl waits nothing", failures: 3, ttl: 0, max: time.Hour, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delay(tc.failures, tc.ttl, tc.max); got != tc.want {
				t.Fatalf("Delay(%d, %s, %s) = %s, want %s", tc.failures, tc.ttl, tc.max, got, tc.want)
			}
		})
	}
}

// TestLaunchesGrowLogarithmically replays issue 14: a node class whose
// Nodes never register, a 45 s registration TTL, 30 minutes. Relaunching
// every TTL made 40 launches; with the back-off doubling from the TTL
// there are 6 (at 0, 1.5, 3.75, 7.5, 14.25 and 27 minutes).
func TestLaunchesGrowLogarithmically(t *testing.T) {
	const ttl = 45 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var r Record
	scope := Scope{NodeClass: "broken"}
	var launches []time.Duration
	for now := start; now.Before(start.Add(30 * time.Minute)); {
		if active := r.Active(now, "h1"); len(active) > 0 {
			now = active[0].RetryAfter.Time
			continue
		}
		launches = append(launches, now.Sub(start))
		now = now.Add(ttl)
		r.Failed(Failure{Phase: PhaseRegistration, Reason: "NodeNotFound", Time: metav1.NewTime(now)}, scope, "h1", ttl, time.Hour)
	}
	want := []time.Duration{0, 90 * time.Second, 225 * time.Second, 450 * time.Second, 855 * time.Second, 1620 * time.Second}
	if !slices.Equal(launches, want) {
		t.Fatalf("launches at %v, want %v", launches, want)
	}
}

func TestRecord(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := func(at time.Duration) Failure {
		return Failure{NodeClaim: "nc", Phase: PhaseRegistration, Reason: "NodeNotFound", Time: metav1.NewTime(now.Add(at))}
	}
	nodeClass := Scope{NodeClass: "nc"}
	gpu := Scope{NodeClass: "nc", InstanceType: "g5.xlarge", ImageID: "img-1"}
	for _, tc := range []struct {
		name        string
		do          func(r *Record)
		at          time.Duration
		hash        string
		wantActive  int
		wantWait    time.Duration
		wantHealthy bool
		wantKnown   bool
	}{
		{name: "empty is unknown", do: func(*Record) {}, hash: "h", wantKnown: false},
		{
			name:       "a failure backs off for the ttl",
			do:         func(r *Record) { r.Failed(fail(0), nodeClass, "h", time.Minute, time.Hour) },
			at:         30 * time.Second,
			hash:       "h",
			wantActive: 1, wantWait: time.Minute, wantKnown: true,
		},
		{
			name:      "the back-off ends at its retry time",
			do:        func(r *Record) { r.Failed(fail(0), nodeClass, "h", time.Minute, time.Hour) },
			at:        time.Minute,
			hash:      "h",
			wantKnown: true,
		},
		{
			name: "consecutive failures double",
			do: func(r *Record) {
				r.Failed(fail(0), nodeClass, "h", time.Minute, time.Hour)
				r.Failed(fail(2*time.Minute), nodeClass, "h", time.Minute, time.Hour)
				r.Failed(fail(5*time.Minute), nodeClass, "h", time.Minute, time.Hour)
			},
			at:         6 * time.Minute,
			hash:       "h",
			wantActive: 1, wantWait: 4 * time.Minute, wantKnown: true,
		},
		{
			name: "a batch failing together is one round",
			do: func(r *Record) {
				for range 6 {
					f := fail(time.Minute)
					f.Launched = metav1.NewTime(now)
					r.Failed(f, nodeClass, "h", time.Minute, time.Hour)
				}
			},
			at:         90 * time.Second,
			hash:       "h",
			wantActive: 1, wantWait: time.Minute, wantKnown: true,
		},
		{
			name: "a relaunch after the round's failure is the next round",
			do: func(r *Record) {
				f := fail(time.Minute)
				f.Launched = metav1.NewTime(now)
				r.Failed(f, nodeClass, "h", time.Minute, time.Hour)
				f = fail(3 * time.Minute)
				f.Launched = metav1.NewTime(now.Add(2 * time.Minute))
				r.Failed(f, nodeClass, "h", time.Minute, time.Hour)
			},
			at:         4 * time.Minute,
			hash:       "h",
			wantActive: 1, wantWait: 2 * time.Minute, wantKnown: true,
		},
		{
			name: "a changed template starts over",
			do: func(r *Record) {
				r.Failed(fail(0), nodeClass, "old", time.Minute, time.Hour)
				r.Failed(fail(2*time.Minute), nodeClass, "new", time.Minute, time.Hour)
			},
			at:         2 * time.Minute,
			hash:       "new",
			wantActive: 1, wantWait: time.Minute, wantKnown: true,
		},
		{
			name:      "a back-off under another template hash does not apply",
			do:        func(r *Record) { r.Failed(fail(0), nodeClass, "old", time.Minute, time.Hour) },
			hash:      "new",
			wantKnown: true,
		},
		{
			name: "a success on the node class ends its back-off",
			do: func(r *Record) {
				r.Failed(fail(0), nodeClass, "h", time.Minute, time.Hour)
				r.Succeeded("nc", "m5.large")
			},
			hash:      "h",
			wantKnown: true,
		},
		{
			name: "a success on another instance type keeps an instance type's back-off",
			do: func(r *Record) {
				r.Failed(fail(0), gpu, "h", time.Minute, time.Hour)
				r.Succeeded("nc", "m5.large")
				r.Succeeded("nc", "m5.large")
			},
			hash:       "h",
			wantActive: 1, wantWait: time.Minute, wantHealthy: true, wantKnown: true,
		},
		{
			name: "half of the last four failing is unhealthy",
			do: func(r *Record) {
				r.Succeeded("nc", "m5.large")
				r.Succeeded("nc", "m5.large")
				r.Succeeded("nc", "m5.large")
				r.Failed(fail(0), gpu, "h", time.Minute, time.Hour)
				r.Failed(fail(0), gpu, "h", time.Minute, time.Hour)
			},
			at:         time.Hour,
			hash:       "h",
			wantActive: 0, wantKnown: true,
		},
		{
			name: "only the last four outcomes count",
			do: func(r *Record) {
				r.Failed(fail(0), gpu, "h", time.Minute, time.Hour)
				r.Failed(fail(0), gpu, "h", time.Minute, time.Hour)
				r.Succeeded("nc", "g5.xlarge")
				r.Succeeded("nc", "m5.large")
				r.Succeeded("nc", "m5.large")
			},
			hash:        "h",
			wantHealthy: true, wantKnown: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Record
			tc.do(&r)
			// Through the annotation, as the controllers share it.
			np := &v1.NodePool{}
			Set(np, r)
			got, err := Get(np)
			if err != nil {
				t.Fatal(err)
			}
			active := got.Active(now.Add(tc.at), tc.hash)
			if len(active) != tc.wantActive {
				t.Fatalf("active back-offs %+v, want %d", active, tc.wantActive)
			}
			if tc.wantActive > 0 && active[0].Wait.Duration != tc.wantWait {
				t.Fatalf("wait %s, want %s", active[0].Wait.Duration, tc.wantWait)
			}
			healthy, known := got.Healthy()
			if healthy != tc.wantHealthy || known != tc.wantKnown {
				t.Fatalf("Healthy() = %t, %t, want %t, %t (outcomes %v)", healthy, known, tc.wantHealthy, tc.wantKnown, got.Outcomes)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope Scope
		it    string
		want  bool
	}{
		{name: "a node class covers every type", scope: Scope{NodeClass: "nc"}, it: "m5.large", want: true},
		{name: "instance type covers itself", scope: Scope{NodeClass: "nc", InstanceType: "g5.xlarge", ImageID: "i"}, it: "g5.xlarge", want: true},
		{name: "instance type spares others", scope: Scope{NodeClass: "nc", InstanceType: "g5.xlarge", ImageID: "i"}, it: "m5.large", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Backoff{Scope: tc.scope}).Covers(tc.it); got != tc.want {
				t.Fatalf("Covers(%s) = %t, want %t", tc.it, got, tc.want)
			}
		})
	}
}

func TestSolverBackoffs(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	its := []*scheduling.InstanceType{{Name: "m5.large"}, {Name: "g5.xlarge"}}
	pool := func(nodeClass string) *v1.NodePool {
		np := &v1.NodePool{}
		np.Name = "default"
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: nodeClass}
		return np
	}
	withRecord := func(np *v1.NodePool, hash string, scopes ...Scope) *v1.NodePool {
		var r Record
		for _, s := range scopes {
			r.Failed(Failure{Phase: PhaseRegistration, Reason: "NodeNotFound", Time: metav1.NewTime(now.Add(-time.Minute))}, s, hash, 5*time.Minute, time.Hour)
		}
		Set(np, r)
		return np
	}
	for _, tc := range []struct {
		name         string
		np           *v1.NodePool
		now          time.Time
		want         [][]string // instance types per back-off
		wantFailures int64
		wantErr      string
	}{
		{name: "no record", np: pool("a"), now: now},
		{name: "node class back-off covers every type", np: withRecord(pool("a"), pool("a").Hash(), Scope{NodeClass: "a"}), now: now,
			want: [][]string{{"m5.large", "g5.xlarge"}}, wantFailures: 1},
		{name: "instance type back-off covers its type", np: withRecord(pool("a"), pool("a").Hash(), Scope{NodeClass: "a", InstanceType: "g5.xlarge", ImageID: "ami-1"}), now: now,
			want: [][]string{{"g5.xlarge"}}, wantFailures: 1},
		{name: "type the node class no longer offers", np: withRecord(pool("a"), pool("a").Hash(), Scope{NodeClass: "a", InstanceType: "p3.2xlarge"}), now: now,
			wantFailures: 1},
		{name: "another node class", np: withRecord(pool("b"), pool("b").Hash(), Scope{NodeClass: "a"}), now: now, wantFailures: 1},
		{name: "template changed since", np: withRecord(pool("a"), "old-hash", Scope{NodeClass: "a"}), now: now, wantFailures: 1},
		{name: "back-off over", np: withRecord(pool("a"), pool("a").Hash(), Scope{NodeClass: "a"}), now: now.Add(5 * time.Minute), wantFailures: 1},
		{name: "unreadable record", np: func() *v1.NodePool {
			np := pool("a")
			np.Annotations = map[string]string{v1.AnnotationLaunchHealth: "{"}
			return np
		}(), now: now, wantErr: "reading annotation joiner.dev/launch-health of nodepool default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failures, err := SolverBackoffs(tc.np, its, tc.now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types [][]string
			for _, b := range got {
				types = append(types, b.InstanceTypes)
				if !b.NextAttempt.After(tc.now) || b.What == "" || b.Phase != string(PhaseRegistration) {
					t.Errorf("back-off %+v: want a later next attempt, a scope and the phase", b)
				}
			}
			if !reflect.DeepEqual(types, tc.want) || failures != tc.wantFailures {
				t.Fatalf("back-offs cover %v with %d failures, want %v with %d", types, failures, tc.want, tc.wantFailures)
			}
		})
	}
}

// TestClassWideInitialisationFailureBacksOffTheNodeClass replays issue 31's
// loop on a fake clock: a node class whose every instance type fails to
// initialise for the same reason (a startup taint nothing removes), the
// provisioner launching whichever type is not backing off. Keyed on the
// type alone, the two types alternate and relaunch about once per TTL;
// widened to the node class once two types fail alike, the launches grow
// logarithmically: at most log2(minutes) over 30 minutes.
func TestClassWideInitialisationFailureBacksOffTheNodeClass(t *testing.T) {
	const ttl = 2 * time.Minute
	const window = 30 * time.Minute
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	types := []string{"m5.large", "c5.large"}
	var r Record
	var launches []time.Duration
	for now := start; now.Before(start.Add(window)); {
		active := r.Active(now, "h1")
		typ := ""
		for _, it := range types {
			if !slices.ContainsFunc(active, func(b Backoff) bool { return b.Covers(it) }) {
				typ = it
				break
			}
		}
		if typ == "" {
			now = active[0].RetryAfter.Time
			continue
		}
		launches = append(launches, now.Sub(start))
		launched := now
		now = now.Add(ttl)
		b := r.Failed(Failure{Phase: PhaseInitialization, Reason: "StartupTaintsExist", Time: metav1.NewTime(now), Launched: metav1.NewTime(launched)},
			Scope{NodeClass: "custom-ami", InstanceType: typ, ImageID: "ami-1"}, "h1", ttl, time.Hour)
		if len(launches) >= 2 && (b.InstanceType != "" || !strings.Contains(b.What(), "m5.large, c5.large") && !strings.Contains(b.What(), "c5.large, m5.large")) {
			t.Errorf("launch %d: back-off %q, want the node class named with both types", len(launches), b.What())
		}
	}
	limit := int(math.Log2(window.Minutes()))
	if len(launches) > limit {
		t.Fatalf("%d launches in %s at %v, want at most log2(%v) = %d", len(launches), window, launches, window.Minutes(), limit)
	}
	t.Logf("launches at %v", launches)
	if want := []time.Duration{0, 2 * time.Minute, 8 * time.Minute, 18 * time.Minute}; !slices.Equal(launches, want) {
		t.Errorf("launches at %v, want %v", launches, want)
	}
}

// TestWidenOnlyOnTheSameCause: two types failing for different reasons
// stay two type back-offs; a registration back-off ends on ResetRegistration
// while an initialisation one stays.
func TestWidenOnlyOnTheSameCause(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var r Record
	r.Failed(Failure{Phase: PhaseInitialization, Reason: "StartupTaintsExist", Time: now}, Scope{NodeClass: "c", InstanceType: "a"}, "h", time.Minute, time.Hour)
	b := r.Failed(Failure{Phase: PhaseInitialization, Reason: "ResourceNotRegistered", Time: now}, Scope{NodeClass: "c", InstanceType: "b"}, "h", time.Minute, time.Hour)
	if b.InstanceType != "b" || len(r.Backoffs) != 2 {
		t.Fatalf("different causes widened: %+v", r.Backoffs)
	}
	r.Failed(Failure{Phase: PhaseRegistration, Reason: "NodeNotFound", Time: now}, Scope{NodeClass: "c"}, "h", time.Minute, time.Hour)
	if !r.ResetRegistration() || len(r.Backoffs) != 2 || r.ResetRegistration() {
		t.Fatalf("ResetRegistration: %+v", r.Backoffs)
	}
}
