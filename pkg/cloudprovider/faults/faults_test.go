package faults

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Rates
		wantErr string
	}{
		{in: "", want: Rates{}},
		{in: "seed=7,throttle=0.1,5xx=0.05,capacity=0.2,slow=0.5,slow-for=3s,ghost=1",
			want: Rates{Seed: 7, Throttle: 0.1, ServerError: 0.05, Capacity: 0.2, Slow: 0.5, SlowFor: 3 * time.Second, Ghost: 1}},
		{in: "slow=0.5", want: Rates{Slow: 0.5, SlowFor: 2 * time.Second}},
		{in: "ghost=2", wantErr: "ghost rate \"2\" must be a number between 0 and 1"},
		{in: "flaky=0.1", wantErr: "unknown key \"flaky\""},
		{in: "seed", wantErr: "is not key=value"},
		{in: "seed=-1", wantErr: "seed \"-1\" is not an unsigned integer"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if again, err := Parse(got.String()); err != nil || again != got {
				t.Fatalf("String %q does not round-trip: %+v, %v", got.String(), again, err)
			}
		})
	}
}

// TestDiceIsSeeded: one seed draws one sequence; a nil Dice never draws.
func TestDiceIsSeeded(t *testing.T) {
	draw := func(d *Dice) (out []bool) {
		for range 64 {
			out = append(out, d.Roll(0.5))
		}
		return out
	}
	a, b, c := draw(NewDice(7)), draw(NewDice(7)), draw(NewDice(8))
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seed 7 drew %v and %v; seed 8 %v", a, b, c)
	}
	if draw(nil)[0] || NewDice(7).Roll(0) {
		t.Fatal("a nil Dice or a zero rate drew a fault")
	}
}
