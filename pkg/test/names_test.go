package test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestName(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	tests := []struct {
		name       string
		prefix     string
		wantPrefix string
	}{
		{name: "plain", prefix: "ns", wantPrefix: "ns-testname-plain-"},
		{name: "Odd_Chars/and spaces!", prefix: "Node", wantPrefix: "node-testname-odd-chars-and-spaces-"},
		{name: strings.Repeat("long", 30), prefix: "ns", wantPrefix: "ns-testname-longlong"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Name(t, tt.prefix)
			if !label.MatchString(got) || len(got) > 63 {
				t.Errorf("Name = %q, not a DNS-1123 label", got)
			}
			if !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("Name = %q, want prefix %q", got, tt.wantPrefix)
			}
			if seen[got] {
				t.Errorf("Name = %q twice", got)
			}
			seen[got] = true
			if again := Name(t, tt.prefix); again == got {
				t.Errorf("Name returned %q twice", got)
			}
		})
	}
}

func TestPoll(t *testing.T) {
	calls := 0
	err := Poll(t.Context(), time.Second, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}

	boom := errors.New("still broken")
	err = Poll(t.Context(), 50*time.Millisecond, func(context.Context) error { return boom })
	var pe *PollError
	if !errors.As(err, &pe) || !errors.Is(err, boom) || pe.Canceled {
		t.Fatalf("Poll = %v, want a timeout wrapping %v", err, boom)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = Poll(ctx, time.Minute, func(context.Context) error { return boom })
	if !errors.As(err, &pe) || !pe.Canceled {
		t.Fatalf("Poll on a canceled context = %v, want Canceled", err)
	}
}
