package schedulerconfig

import (
	"errors"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// The score plugins whose arguments and weights Scoring reads.
const (
	fitPlugin      = "NodeResourcesFit"
	balancedPlugin = "NodeResourcesBalancedAllocation"
)

// maxNodeScore is kube-scheduler's framework.MaxNodeScore, the top of
// every plugin's score; maxCustomPriorityScore is the top of a
// RequestedToCapacityRatio shape's score (config.MaxCustomPriorityScore).
const (
	maxNodeScore           = 100
	maxCustomPriorityScore = 10
)

// Scoring is how one kube-scheduler profile ranks, by their resources, the
// nodes a pod fits: NodeResourcesFit's scoring strategy (LeastAllocated,
// MostAllocated or RequestedToCapacityRatio, with its resources and
// weights) and NodeResourcesBalancedAllocation, each times its weight in
// the profile. Consolidation replays with it where kube-scheduler will put
// the pods a command evicts (pkg/disruption, realise.go). The zero value is
// not valid: use DefaultScoring or what ParseScoring returns.
type Scoring struct {
	// Fit is NodeResourcesFit's scoring strategy, defaulted as
	// kube-scheduler defaults it (LeastAllocated over cpu and memory,
	// weight 1 each).
	Fit schedv1.ScoringStrategy
	// Balanced are NodeResourcesBalancedAllocation's resources (cpu and
	// memory by default).
	Balanced []schedv1.ResourceSpec
	// FitWeight and BalancedWeight are the plugins' score weights in the
	// profile (1 each by default); 0 when the profile disables the plugin.
	FitWeight, BalancedWeight int64

	// resources is the union of Fit's and Balanced's resources: the order
	// of a Usage's vectors.
	resources []corev1.ResourceName
}

// DefaultScoring is kube-scheduler's default profile's resource scoring.
func DefaultScoring() Scoring {
	s := Scoring{
		Fit:            schedv1.ScoringStrategy{Type: schedv1.LeastAllocated, Resources: defaultResources()},
		Balanced:       defaultResources(),
		FitWeight:      1,
		BalancedWeight: 1,
	}
	s.index()
	return s
}

func defaultResources() []schedv1.ResourceSpec {
	return []schedv1.ResourceSpec{{Name: string(corev1.ResourceCPU), Weight: 1}, {Name: string(corev1.ResourceMemory), Weight: 1}}
}

func (s *Scoring) index() {
	s.resources = s.resources[:0]
	for _, r := range slices.Concat(s.Fit.Resources, s.Balanced) {
		if n := corev1.ResourceName(r.Name); !slices.Contains(s.resources, n) {
			s.resources = append(s.resources, n)
		}
	}
}

// LoadScoring reads value, SCHEDULER_CONFIG, as Load does, and returns
// each profile's Scoring by scheduler name. A document that is not a
// KubeSchedulerConfiguration (Karpenter's podTopologySpread document), or
// none, means kube-scheduler's defaults: nil.
func LoadScoring(value string) (map[string]Scoring, error) {
	return load(value, ParseScoring)
}

// ParseScoring reads the resource scoring of each profile of a
// KubeSchedulerConfiguration, and refuses what kube-scheduler's argument
// validation refuses, naming the field; any other document has none (nil).
func ParseScoring(doc []byte) (map[string]Scoring, error) {
	cfg, err := decode(doc)
	if err != nil || cfg == nil {
		return nil, err
	}
	out := map[string]Scoring{}
	for i, p := range profiles(cfg) {
		name := profileName(&p)
		s, err := profileScoring(&p)
		if err != nil {
			return nil, fmt.Errorf("profiles[%d] (%s): %w", i, name, err)
		}
		out[name] = s
	}
	return out, nil
}

// profileScoring reads one profile's NodeResourcesFit and
// NodeResourcesBalancedAllocation arguments and score weights.
func profileScoring(p *schedv1.KubeSchedulerProfile) (Scoring, error) {
	s := DefaultScoring()
	s.FitWeight = scoreWeight(p.Plugins, fitPlugin, s.FitWeight)
	s.BalancedWeight = scoreWeight(p.Plugins, balancedPlugin, s.BalancedWeight)
	for j, pc := range p.PluginConfig {
		if len(pc.Args.Raw) == 0 {
			continue
		}
		switch pc.Name {
		case fitPlugin:
			var args schedv1.NodeResourcesFitArgs
			if err := yaml.UnmarshalStrict(pc.Args.Raw, &args); err != nil {
				return s, fmt.Errorf("pluginConfig[%d] (%s) args: %w", j, fitPlugin, err)
			}
			if args.ScoringStrategy == nil {
				continue
			}
			st := *args.ScoringStrategy
			if st.Type == "" {
				st.Type = schedv1.LeastAllocated
			}
			st.Resources = defaulted(st.Resources)
			if err := validateStrategy(st); err != nil {
				return s, fmt.Errorf("pluginConfig[%d] (%s) args: scoringStrategy.%w", j, fitPlugin, err)
			}
			s.Fit = st
		case balancedPlugin:
			var args schedv1.NodeResourcesBalancedAllocationArgs
			if err := yaml.UnmarshalStrict(pc.Args.Raw, &args); err != nil {
				return s, fmt.Errorf("pluginConfig[%d] (%s) args: %w", j, balancedPlugin, err)
			}
			s.Balanced = defaulted(args.Resources)
			if err := validateResources(s.Balanced, "resources"); err != nil {
				return s, fmt.Errorf("pluginConfig[%d] (%s) args: %w", j, balancedPlugin, err)
			}
		}
	}
	s.index()
	return s, nil
}

// defaulted is a resource list as kube-scheduler defaults it: cpu and
// memory when empty, weight 1 where none is set.
func defaulted(rs []schedv1.ResourceSpec) []schedv1.ResourceSpec {
	if len(rs) == 0 {
		return defaultResources()
	}
	rs = slices.Clone(rs)
	for i := range rs {
		if rs[i].Weight == 0 {
			rs[i].Weight = 1
		}
	}
	return rs
}

// validateStrategy refuses what kube-scheduler's
// ValidateNodeResourcesFitArgs refuses in a scoring strategy.
func validateStrategy(st schedv1.ScoringStrategy) error {
	var errs []error
	switch st.Type {
	case schedv1.LeastAllocated, schedv1.MostAllocated:
		if st.RequestedToCapacityRatio != nil {
			errs = append(errs, fmt.Errorf("requestedToCapacityRatio must be unset when type is %s", st.Type))
		}
	case schedv1.RequestedToCapacityRatio:
		if st.RequestedToCapacityRatio == nil || len(st.RequestedToCapacityRatio.Shape) == 0 {
			errs = append(errs, errors.New("requestedToCapacityRatio.shape needs at least one point when type is RequestedToCapacityRatio"))
			break
		}
		shape := st.RequestedToCapacityRatio.Shape
		for i, pt := range shape {
			if i > 0 && shape[i-1].Utilization >= pt.Utilization {
				errs = append(errs, fmt.Errorf("requestedToCapacityRatio.shape[%d].utilization %d: utilizations must increase", i, pt.Utilization))
			}
			if pt.Utilization < 0 || pt.Utilization > 100 {
				errs = append(errs, fmt.Errorf("requestedToCapacityRatio.shape[%d].utilization %d is not in [0, 100]", i, pt.Utilization))
			}
			if pt.Score < 0 || pt.Score > maxCustomPriorityScore {
				errs = append(errs, fmt.Errorf("requestedToCapacityRatio.shape[%d].score %d is not in [0, %d]", i, pt.Score, maxCustomPriorityScore))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("type %q is not one of LeastAllocated, MostAllocated, RequestedToCapacityRatio", st.Type))
	}
	if err := validateResources(st.Resources, "resources"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateResources(rs []schedv1.ResourceSpec, field string) error {
	var errs []error
	for i, r := range rs {
		if r.Weight <= 0 || r.Weight > 100 {
			errs = append(errs, fmt.Errorf("%s[%d] (%s).weight %d is not in (0, 100]", field, i, r.Name, r.Weight))
		}
	}
	return errors.Join(errs...)
}

// scoreWeight is a score plugin's weight in a profile, by kube-scheduler's
// merge of plugin sets: the score extension point decides first (enabled
// there, it runs; disabled there by name or "*", it does not, whatever
// multiPoint says), then multiPoint the same way, else the default
// plugins' weight def. An enabled plugin without a weight scores with def,
// as kube-scheduler gives it the default weight (1 for both plugins read
// here).
func scoreWeight(p *schedv1.Plugins, name string, def int64) int64 {
	if p == nil {
		return def
	}
	for _, set := range []schedv1.PluginSet{p.Score, p.MultiPoint} {
		if i := slices.IndexFunc(set.Enabled, func(pl schedv1.Plugin) bool { return pl.Name == name }); i >= 0 {
			if w := set.Enabled[i].Weight; w != nil && *w > 0 {
				return int64(*w)
			}
			return def
		}
		if slices.ContainsFunc(set.Disabled, func(pl schedv1.Plugin) bool { return pl.Name == name || pl.Name == "*" }) {
			return 0
		}
	}
	return def
}

// Usage is a pod's or a node's requests of the resources a Scoring reads,
// in its order: as requested (NodeResourcesBalancedAllocation scores
// these), and with kube-scheduler's non-zero defaults for a container that
// requests no cpu or memory (NodeResourcesFit scores these).
type Usage struct {
	Requested, NonZero []int64
}

// Add adds u to the running total t (allocated when t is empty).
func (t *Usage) Add(u Usage) {
	if t.Requested == nil {
		t.Requested, t.NonZero = make([]int64, len(u.Requested)), make([]int64, len(u.NonZero))
	}
	for i := range u.Requested {
		t.Requested[i] += u.Requested[i]
		t.NonZero[i] += u.NonZero[i]
	}
}

// Sub takes u, added before, back out of the running total t.
func (t *Usage) Sub(u Usage) {
	for i := range u.Requested {
		t.Requested[i] -= u.Requested[i]
		t.NonZero[i] -= u.NonZero[i]
	}
}

// Clone is a copy of u that Add does not share.
func (t Usage) Clone() Usage {
	return Usage{Requested: slices.Clone(t.Requested), NonZero: slices.Clone(t.NonZero)}
}

// Usage is what p requests of s's resources, as requested and as
// NodeResourcesFit counts them (pods.RequestsInto, pods.NonZeroRequestsInto).
func (s Scoring) Usage(p *corev1.Pod) Usage {
	req := make(corev1.ResourceList, 4) // on the stack: they do not escape
	nz := make(corev1.ResourceList, 4)
	pods.RequestsInto(p, req)
	pods.NonZeroRequestsInto(p, nz)
	u := Usage{Requested: make([]int64, len(s.resources)), NonZero: make([]int64, len(s.resources))}
	for i, r := range s.resources {
		u.Requested[i], u.NonZero[i] = quantity(req, r), quantity(nz, r)
	}
	return u
}

// Allocatable is a node's allocatable of s's resources, in its order.
func (s Scoring) Allocatable(rl corev1.ResourceList) []int64 {
	out := make([]int64, len(s.resources))
	for i, r := range s.resources {
		out[i] = quantity(rl, r)
	}
	return out
}

func quantity(rl corev1.ResourceList, r corev1.ResourceName) int64 {
	return quantityValue(r, rl[r])
}

// quantityValue is q in the unit the scores count r in: millicores for
// cpu, else units.
func quantityValue(r corev1.ResourceName, q resource.Quantity) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Score is the weighted sum kube-scheduler's NodeResourcesFit and
// NodeResourcesBalancedAllocation give a node whose pods use node, out of
// alloc, for a pod that uses pod: the integer arithmetic of
// k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources
// (least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go,
// balanced_allocation.go and resource_allocation.go at v1.36), rewritten
// because that package is not importable as a library. Neither plugin
// normalises its score, so the sum is what kube-scheduler adds up.
func (s Scoring) Score(pod, node Usage, alloc []int64) int64 {
	total := int64(0)
	if s.FitWeight > 0 {
		total += s.FitWeight * s.fit(pod.NonZero, node.NonZero, alloc)
	}
	if s.BalancedWeight > 0 {
		total += s.BalancedWeight * s.balanced(pod.Requested, node.Requested, alloc)
	}
	return total
}

// scored reports whether resource i takes part in a score for a pod that
// requests req of it on a node with alloc of it: not when the node has
// none, nor when it is an extended resource the pod does not request
// (resourceAllocationScorer.calculateNodeAllocatableRequest).
func (s Scoring) scored(i int, req, alloc int64) bool {
	if alloc == 0 {
		return false
	}
	switch s.resources[i] {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return req != 0
}

// fit is NodeResourcesFit's score: per resource of the strategy, the share
// of alloc requested once the pod is on the node, scored on 0–100, then
// the weighted mean (integer division; RequestedToCapacityRatio rounds and
// leaves out resources that score 0).
func (s Scoring) fit(pod, node, alloc []int64) int64 {
	var score, weights int64
	for _, r := range s.Fit.Resources {
		i := slices.Index(s.resources, corev1.ResourceName(r.Name))
		if !s.scored(i, pod[i], alloc[i]) {
			continue
		}
		requested, capacity := node[i]+pod[i], alloc[i]
		var rs int64
		switch s.Fit.Type {
		case schedv1.MostAllocated:
			rs = min(requested, capacity) * maxNodeScore / capacity
		case schedv1.RequestedToCapacityRatio:
			rs = s.shape(min(requested, capacity) * 100 / capacity)
			if rs <= 0 {
				continue
			}
		default: // LeastAllocated
			if requested <= capacity {
				rs = (capacity - requested) * maxNodeScore / capacity
			}
		}
		score += rs * int64(r.Weight)
		weights += int64(r.Weight)
	}
	if weights == 0 {
		return 0
	}
	if s.Fit.Type == schedv1.RequestedToCapacityRatio {
		return int64(math.Round(float64(score) / float64(weights)))
	}
	return score / weights
}

// shape is the RequestedToCapacityRatio strategy's broken linear function
// of a utilization in 0–100 (helper.BuildBrokenLinearFunction), its
// scores scaled from 0–10 to 0–100.
func (s Scoring) shape(u int64) int64 {
	pts := s.Fit.RequestedToCapacityRatio.Shape
	score := func(i int) int64 { return int64(pts[i].Score) * (maxNodeScore / maxCustomPriorityScore) }
	for i, pt := range pts {
		if u <= int64(pt.Utilization) {
			if i == 0 {
				return score(0)
			}
			prev := pts[i-1]
			return score(i-1) + (score(i)-score(i-1))*(u-int64(prev.Utilization))/int64(pt.Utilization-prev.Utilization)
		}
	}
	return score(len(pts) - 1)
}

// balanced is NodeResourcesBalancedAllocation's score: how much placing
// the pod evens out the node's shares of its resources (the standard
// deviation of the shares with and without the pod), 50–100.
func (s Scoring) balanced(pod, node, alloc []int64) int64 {
	if !slices.ContainsFunc(s.Balanced, func(r schedv1.ResourceSpec) bool {
		return pod[slices.Index(s.resources, corev1.ResourceName(r.Name))] != 0
	}) {
		return 0 // a best-effort pod: the plugin skips it (kubernetes#129138)
	}
	with := s.balance(pod, node, alloc, true)
	without := s.balance(pod, node, alloc, false)
	return maxNodeScore/2 + (maxNodeScore/2+with-without)/2
}

func (s Scoring) balance(pod, node, alloc []int64, withPod bool) int64 {
	var fractions []float64
	total := 0.0
	for _, r := range s.Balanced {
		i := slices.Index(s.resources, corev1.ResourceName(r.Name))
		if !s.scored(i, pod[i], alloc[i]) {
			continue
		}
		req := node[i]
		if withPod {
			req += pod[i]
		}
		f := min(float64(req)/float64(alloc[i]), 1)
		total += f
		fractions = append(fractions, f)
	}
	std := 0.0
	switch {
	case len(fractions) == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case len(fractions) > 2:
		mean := total / float64(len(fractions))
		sum := 0.0
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * maxNodeScore)
}
