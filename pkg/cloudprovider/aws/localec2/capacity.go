package localec2

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// InstanceCapacity is how many more instances of each instance type the
// local EC2 can launch (types it does not name are unlimited), the way an
// EC2 region runs out of a type. moto launches whatever it is asked for, so
// the FaultInjector applies this in front of it to every CreateFleet:
//
//   - the fleet's overrides are taken in order, and the first whose type has
//     room launches (one type, as an instant fleet's lowest-price strategy
//     with SingleInstanceType does);
//   - a fleet with MinTargetCapacity (on-demand or spot options) is all or
//     nothing: when no override's type has room for MinTargetCapacity
//     instances, nothing launches and every override is answered with
//     InsufficientInstanceCapacity, as EC2 does;
//   - a fleet without it launches as many as there is room for, and none
//     with the same error when there is none.
//
// Launches use the room up; terminations do not give it back (EC2's
// capacity moves for reasons of its own, and a test sets what it needs).
type InstanceCapacity struct {
	mu        sync.Mutex
	left      map[string]int
	decisions []FleetDecision
}

// FleetDecision is how the local EC2 answered one CreateFleet it held to
// its room: what was asked (TotalTargetCapacity and MinTargetCapacity),
// the instance type that launched and how many (Launched 0: refused with
// InsufficientInstanceCapacity, or the launch behind it failed). A test
// reads them to tell one all-or-nothing fleet from several small ones.
type FleetDecision struct {
	Total, Min   int
	InstanceType string
	Launched     int
}

// NewInstanceCapacity limits each named type to left[type] more instances.
func NewInstanceCapacity(left map[string]int) *InstanceCapacity {
	c := &InstanceCapacity{left: map[string]int{}}
	for k, v := range left {
		c.left[k] = v
	}
	return c
}

// Left is how many more instances of typ can launch (-1: unlimited).
func (c *InstanceCapacity) Left(typ string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.left[typ]; ok {
		return n
	}
	return -1
}

// Decisions are the CreateFleet answers so far, oldest first.
func (c *InstanceCapacity) Decisions() []FleetDecision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.decisions)
}

// fleetOverride is one override of a CreateFleet request.
type fleetOverride struct {
	config, override int
	instanceType     string
}

// fleetOverrides lists a CreateFleet form's overrides in request order.
func fleetOverrides(form url.Values) []fleetOverride {
	var out []fleetOverride
	for c := 1; form.Has(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c)) ||
		form.Has(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateId", c)); c++ {
		for o := 1; ; o++ {
			typ := form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.InstanceType", c, o))
			if typ == "" {
				break
			}
			out = append(out, fleetOverride{config: c, override: o, instanceType: typ})
		}
	}
	return out
}

// minTargetCapacity is the fleet's MinTargetCapacity for its default
// capacity type (0 when unset).
func minTargetCapacity(form url.Values) int {
	opts := "OnDemandOptions"
	if form.Get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot" {
		opts = "SpotOptions"
	}
	n, _ := strconv.Atoi(form.Get(opts + ".MinTargetCapacity"))
	return n
}

// admit decides a CreateFleet against the room left. It returns the form
// to forward (narrowed to the chosen override and the count that fits),
// or ok false when nothing can launch; what it admits is taken from the
// room at once (giveBack returns it if the launch fails). decision is the
// index of the answer among Decisions.
func (c *InstanceCapacity) admit(form url.Values) (forward url.Values, decision int, ok bool) {
	total, _ := strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	minimum := minTargetCapacity(form)
	need := max(minimum, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	decision = len(c.decisions)
	for _, o := range fleetOverrides(form) {
		left, limited := c.left[o.instanceType]
		if limited && left < need {
			continue
		}
		count := total
		if limited {
			count = min(total, left)
			c.left[o.instanceType] = left - count
		}
		c.decisions = append(c.decisions, FleetDecision{Total: total, Min: minimum, InstanceType: o.instanceType, Launched: count})
		return narrowFleet(form, o, count), decision, true
	}
	c.decisions = append(c.decisions, FleetDecision{Total: total, Min: minimum})
	return nil, decision, false
}

// giveBack returns the room decision took, for a launch that did not
// happen.
func (c *InstanceCapacity) giveBack(decision int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &c.decisions[decision]
	if left, ok := c.left[d.InstanceType]; ok {
		c.left[d.InstanceType] = left + d.Launched
	}
	d.Launched = 0
}

// narrowFleet is form with only override o (as config 1, override 1) and
// a total of count.
func narrowFleet(form url.Values, o fleetOverride, count int) url.Values {
	out := url.Values{}
	cfg := fmt.Sprintf("LaunchTemplateConfigs.%d.", o.config)
	ovr := fmt.Sprintf("%sOverrides.%d.", cfg, o.override)
	for k, v := range form {
		switch {
		case !strings.HasPrefix(k, "LaunchTemplateConfigs."):
			out[k] = v
		case strings.HasPrefix(k, ovr):
			out["LaunchTemplateConfigs.1.Overrides.1."+strings.TrimPrefix(k, ovr)] = v
		case strings.HasPrefix(k, cfg+"LaunchTemplateSpecification."):
			out["LaunchTemplateConfigs.1."+strings.TrimPrefix(k, cfg)] = v
		}
	}
	out.Set("TargetCapacitySpecification.TotalTargetCapacity", strconv.Itoa(count))
	return out
}
