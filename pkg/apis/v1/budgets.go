package v1

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Budget arithmetic shared by the disruption controllers and runtime
// validation. Invalid budgets fail closed: they allow no disruption.

// parseSchedule parses a budget schedule: five cron fields or a macro such
// as @daily, always in UTC (a TZ/CRON_TZ prefix is not allowed).
func parseSchedule(s string) (cron.Schedule, error) {
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, fmt.Errorf("schedules are always in UTC; remove the time zone prefix")
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("invalid cron schedule: %w", err)
	}
	return sched, nil
}

// nodes returns how many of total nodes the budget allows, rounding a
// percentage up.
func (b *Budget) nodes(total int) (int, error) {
	if p, ok := strings.CutSuffix(b.Nodes, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("nodes %q must be a whole percentage between 0%% and 100%%", b.Nodes)
		}
		return int(math.Ceil(float64(total) * float64(pct) / 100)), nil
	}
	n, err := strconv.Atoi(b.Nodes)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("nodes %q must be a non-negative integer or a percentage such as 10%%", b.Nodes)
	}
	return n, nil
}

// IsActive reports whether the budget applies at now: always when it has no
// schedule, else when the schedule last fired no more than Duration ago.
func (b *Budget) IsActive(now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	if b.Schedule == nil || b.Duration == nil {
		return false, fmt.Errorf("schedule and duration must be set together")
	}
	sched, err := parseSchedule(*b.Schedule)
	if err != nil {
		return false, err
	}
	// The budget is active if the schedule fired within (now-duration, now].
	// Look for the first firing after now-duration.
	start := now.UTC().Add(-b.Duration.Duration)
	next := sched.Next(start.Add(-time.Second))
	return !next.After(now.UTC()), nil
}

// AppliesTo reports whether the budget covers reason (a budget without
// reasons covers every reason).
func (b *Budget) AppliesTo(reason DisruptionReason) bool {
	if len(b.Reasons) == 0 {
		return true
	}
	for _, r := range b.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// AllowedDisruptions returns how many of the NodePool's total nodes may be
// disrupted for reason at now: the minimum over active budgets that cover
// the reason, math.MaxInt32 when none does, and 0 for an invalid budget.
func (in *NodePool) AllowedDisruptions(now time.Time, total int, reason DisruptionReason) int {
	allowed := math.MaxInt32
	for i := range in.Spec.Disruption.Budgets {
		b := &in.Spec.Disruption.Budgets[i]
		if !b.AppliesTo(reason) {
			continue
		}
		active, err := b.IsActive(now)
		if err != nil {
			return 0
		}
		if !active {
			continue
		}
		n, err := b.nodes(total)
		if err != nil {
			return 0
		}
		allowed = min(allowed, n)
	}
	return allowed
}
