package scheduling_test

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Fixtures for the table tests: a small AWS-like catalogue and builders for
// pods and NodePools. Each test builds what it needs inline.

var testZones = []string{"zone-a", "zone-b", "zone-c"}

// itOpt tweaks an instance type.
type itOpt func(*scheduling.InstanceType)

// instanceType is an amd64 linux type with cpu cores, 2 GiB per core, 10
// pods per core, priced cpu×0.1 $/h in every zone as spot and on-demand
// (spot 30% cheaper).
func instanceType(name string, cpu int64, opts ...itOpt) *scheduling.InstanceType {
	it := &scheduling.InstanceType{
		Name: name,
		Requirements: map[string][]string{
			corev1.LabelInstanceTypeStable:      {name},
			corev1.LabelArchStable:              {"amd64"},
			corev1.LabelOSStable:                {"linux"},
			corev1.LabelTopologyZone:            testZones,
			"karpenter.sh/capacity-type":        {"on-demand", "spot"},
			"karpenter.k8s.aws/instance-cpu":    {strconv.FormatInt(cpu, 10)},
			"karpenter.k8s.aws/instance-family": {"m5"},
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cpu*2<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(cpu*10, resource.DecimalSI),
		},
	}
	for _, z := range testZones {
		it.Offerings = append(it.Offerings,
			scheduling.Offering{Zone: z, CapacityType: "on-demand", Price: float64(cpu) * 0.1, Available: true},
			scheduling.Offering{Zone: z, CapacityType: "spot", Price: float64(cpu) * 0.07, Available: true})
	}
	for _, o := range opts {
		o(it)
	}
	return it
}

func withLabel(key string, vals ...string) itOpt {
	return func(it *scheduling.InstanceType) { it.Requirements[key] = vals }
}

func withCapacity(name corev1.ResourceName, q string) itOpt {
	return func(it *scheduling.InstanceType) { it.Capacity[name] = resource.MustParse(q) }
}

func withOverhead(cpu, mem string) itOpt {
	return func(it *scheduling.InstanceType) {
		it.Overhead.KubeReserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
}

// catalog is 1, 2, 4, 8 and 16 core types.
func catalog() []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, c := range []int64{1, 2, 4, 8, 16} {
		out = append(out, instanceType(fmt.Sprintf("m5.%dx", c), c))
	}
	return out
}

type poolOpt func(*scheduling.NodePool)

func nodePool(name string, opts ...poolOpt) *scheduling.NodePool {
	np := &scheduling.NodePool{Name: name}
	for _, o := range opts {
		o(np)
	}
	return np
}

func poolReq(key string, op corev1.NodeSelectorOperator, vals ...string) poolOpt {
	return func(np *scheduling.NodePool) {
		np.Requirements = append(np.Requirements, scheduling.Requirement{Key: key, Operator: op, Values: vals})
	}
}

func poolMinValues(key string, n int) poolOpt {
	return func(np *scheduling.NodePool) {
		np.Requirements = append(np.Requirements, scheduling.Requirement{Key: key, Operator: corev1.NodeSelectorOpExists, MinValues: &n})
	}
}

func poolTaint(key, value string, effect corev1.TaintEffect) poolOpt {
	return func(np *scheduling.NodePool) {
		np.Taints = append(np.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func poolStartupTaint(key string) poolOpt {
	return func(np *scheduling.NodePool) {
		np.StartupTaints = append(np.StartupTaints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func poolLimit(name corev1.ResourceName, q string) poolOpt {
	return func(np *scheduling.NodePool) {
		if np.Limits == nil {
			np.Limits = corev1.ResourceList{}
		}
		np.Limits[name] = resource.MustParse(q)
	}
}

func poolWeight(w int32) poolOpt { return func(np *scheduling.NodePool) { np.Weight = w } }

type podOpt func(*corev1.Pod)

func pod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pods(n int, prefix, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, pod(fmt.Sprintf("%s-%02d", prefix, i), cpu, mem, opts...))
	}
	return out
}

func labeled(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func nodeSelector(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

// requiredTerms adds required node affinity terms (OR'ed).
func requiredTerms(terms ...[]corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = ns
	}
}

func expr(key string, op corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
}

func preferredTerm(weight int32, exprs ...corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: exprs}})
	}
}

func tolerate(key, value string, effect corev1.TaintEffect) podOpt {
	return func(p *corev1.Pod) {
		op := corev1.TolerationOpEqual
		if value == "" {
			op = corev1.TolerationOpExists
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

func spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, selector map[string]string, tweak ...func(*corev1.TopologySpreadConstraint)) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
		for _, t := range tweak {
			t(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func podAffinityTerm(key string, selector map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
}

func requiredAffinity(key string, selector map[string]string) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, podAffinityTerm(key, selector))
	}
}

func requiredAntiAffinity(key string, selector map[string]string) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, podAffinityTerm(key, selector))
	}
}

func preferredAntiAffinity(weight int32, key string, selector map[string]string) podOpt {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: podAffinityTerm(key, selector)})
	}
}

func request(name corev1.ResourceName, q string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
}

func ownedBy(kind string) podOpt {
	return func(p *corev1.Pod) {
		t := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: "owner", Controller: &t})
	}
}

func pvc(claim string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func snapshot(pools []*scheduling.NodePool, its []*scheduling.InstanceType, ps []*corev1.Pod) *scheduling.Snapshot {
	s := &scheduling.Snapshot{NodePools: pools, InstanceTypes: map[string][]*scheduling.InstanceType{}, Pods: ps}
	for _, p := range pools {
		s.InstanceTypes[p.Name] = its
	}
	return s
}

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}
