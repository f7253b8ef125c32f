// Package schedulerconfig reads SCHEDULER_CONFIG, kube-scheduler's
// configuration, for what joiner must plan as kube-scheduler will act:
//
//   - the cluster-default topology spread constraints kube-scheduler
//     applies to pods that declare none, from kube-scheduler's own
//     KubeSchedulerConfiguration (k8s.io/kube-scheduler config/v1: each
//     profile's PodTopologySpread args, defaultingType List or System) or
//     Karpenter's SCHEDULER_CONFIG document
//     (podTopologySpread.defaultConstraints);
//   - each profile's resource scoring (NodeResourcesFit's scoringStrategy
//     and NodeResourcesBalancedAllocation, with their weights), with
//     which consolidation replays where kube-scheduler puts the pods a
//     command evicts (Scoring, scoring.go).
//
// It refuses what kube-scheduler refuses, naming the field. It decides
// which constraints and scores are in force per scheduler name; the solver
// applies the constraints (scheduling.DefaultSpread), deducing each pod's
// selector as kube-scheduler does, and the disruption engine the scores.
package schedulerconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	schedv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"
)

// DefaultScheduler is the scheduler name of pods that set none, and of a
// profile that names none.
const DefaultScheduler = corev1.DefaultSchedulerName

// AnyScheduler keys the constraints of Karpenter's document, which apply
// whatever a pod's schedulerName.
const AnyScheduler = ""

// pluginName is kube-scheduler's PodTopologySpread plugin.
const pluginName = "PodTopologySpread"

// SystemDefaults are kube-scheduler's built-in default constraints
// (defaultingType: System): spread over hostnames with skew 3 and zones
// with skew 5, both preferences.
func SystemDefaults() []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{
		{TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 3},
		{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 5},
	}
}

// Load reads value, SCHEDULER_CONFIG: the path of a file, or the document
// itself (as Karpenter's chart passes it). Empty means no defaults (nil).
func Load(value string) (map[string][]corev1.TopologySpreadConstraint, error) {
	return load(value, Parse)
}

// load reads value, SCHEDULER_CONFIG, and parses its document with
// parse; the zero T when value is empty.
func load[T any](value string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	doc, err := read(value)
	if err != nil || doc == nil {
		return zero, err
	}
	out, err := parse(doc)
	if err != nil {
		return zero, fmt.Errorf("scheduler-config: %w", err)
	}
	return out, nil
}

// read is SCHEDULER_CONFIG's document: value itself, or the file it
// names; nil when value is empty.
func read(value string) ([]byte, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	if strings.ContainsAny(value, "\n:{") {
		return []byte(value), nil
	}
	b, err := os.ReadFile(value)
	if err != nil {
		return nil, fmt.Errorf("scheduler-config: reading %s: %w", value, err)
	}
	return b, nil
}

// Parse reads one document: a KubeSchedulerConfiguration (its kind says
// so) or Karpenter's podTopologySpread document. The result maps scheduler
// names to the constraints kube-scheduler defaults their pods with; a
// profile without defaults maps to an empty list.
func Parse(doc []byte) (map[string][]corev1.TopologySpreadConstraint, error) {
	cfg, err := decode(doc)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return parseKarpenter(doc)
	}
	out := map[string][]corev1.TopologySpreadConstraint{}
	for i, p := range profiles(cfg) {
		name := profileName(&p)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("profiles[%d].schedulerName %q is repeated", i, name)
		}
		cs, err := profileDefaults(&p)
		if err != nil {
			return nil, fmt.Errorf("profiles[%d] (%s): %w", i, name, err)
		}
		out[name] = cs
	}
	return out, nil
}

// decode reads a KubeSchedulerConfiguration; nil (and no error) when the
// document has no kind, as Karpenter's podTopologySpread document has not.
func decode(doc []byte) (*schedv1.KubeSchedulerConfiguration, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if head.Kind == "" {
		return nil, nil
	}
	if head.Kind != "KubeSchedulerConfiguration" || head.APIVersion != schedv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("%s %s is not a %s KubeSchedulerConfiguration nor Karpenter's podTopologySpread document", head.APIVersion, head.Kind, schedv1.SchemeGroupVersion)
	}
	var cfg schedv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(doc, &cfg); err != nil {
		return nil, fmt.Errorf("decoding KubeSchedulerConfiguration: %w", err)
	}
	return &cfg, nil
}

// profiles are the configuration's profiles: kube-scheduler's one
// default profile when it lists none.
func profiles(cfg *schedv1.KubeSchedulerConfiguration) []schedv1.KubeSchedulerProfile {
	if len(cfg.Profiles) == 0 {
		return []schedv1.KubeSchedulerProfile{{}}
	}
	return cfg.Profiles
}

// profileName is the scheduler name a profile serves.
func profileName(p *schedv1.KubeSchedulerProfile) string {
	if p.SchedulerName != nil && *p.SchedulerName != "" {
		return *p.SchedulerName
	}
	return DefaultScheduler
}

// profileDefaults are the constraints a profile defaults pods with: none
// when its PodTopologySpread plugin is disabled, else its args' (System
// when it has none, as kube-scheduler defaults them).
func profileDefaults(p *schedv1.KubeSchedulerProfile) ([]corev1.TopologySpreadConstraint, error) {
	if spreadDisabled(p.Plugins) {
		return []corev1.TopologySpreadConstraint{}, nil
	}
	args := schedv1.PodTopologySpreadArgs{}
	for j, pc := range p.PluginConfig {
		if pc.Name != pluginName || len(pc.Args.Raw) == 0 {
			continue
		}
		if err := yaml.UnmarshalStrict(pc.Args.Raw, &args); err != nil {
			return nil, fmt.Errorf("pluginConfig[%d] (%s) args: %w", j, pluginName, err)
		}
	}
	switch args.DefaultingType {
	case "", schedv1.SystemDefaulting:
		if len(args.DefaultConstraints) > 0 {
			return nil, errors.New(`PodTopologySpread args: defaultConstraints must be empty when defaultingType is System; set defaultingType: List`)
		}
		return SystemDefaults(), nil
	case schedv1.ListDefaulting:
		if err := validate(args.DefaultConstraints, "PodTopologySpread args: defaultConstraints"); err != nil {
			return nil, err
		}
		return args.DefaultConstraints, nil
	default:
		return nil, fmt.Errorf("PodTopologySpread args: defaultingType %q is not one of System, List", args.DefaultingType)
	}
}

// spreadDisabled reports whether the profile turns PodTopologySpread off
// (in multiPoint, or as both a filter and a score plugin).
func spreadDisabled(p *schedv1.Plugins) bool {
	if p == nil {
		return false
	}
	off := func(s schedv1.PluginSet) bool {
		return slices.ContainsFunc(s.Disabled, func(pl schedv1.Plugin) bool { return pl.Name == pluginName || pl.Name == "*" })
	}
	return off(p.MultiPoint) || (off(p.Filter) && off(p.Score))
}

// parseKarpenter reads Karpenter's SCHEDULER_CONFIG document, whose
// constraints apply to every pod without its own.
func parseKarpenter(doc []byte) (map[string][]corev1.TopologySpreadConstraint, error) {
	var cfg struct {
		PodTopologySpread *struct {
			DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
		} `json:"podTopologySpread,omitempty"`
	}
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(doc), &cfg); err != nil {
		return nil, fmt.Errorf("decoding: %w (want a KubeSchedulerConfiguration or Karpenter's podTopologySpread.defaultConstraints)", err)
	}
	if cfg.PodTopologySpread == nil {
		return nil, nil
	}
	if err := validate(cfg.PodTopologySpread.DefaultConstraints, "podTopologySpread.defaultConstraints"); err != nil {
		return nil, err
	}
	return map[string][]corev1.TopologySpreadConstraint{AnyScheduler: cfg.PodTopologySpread.DefaultConstraints}, nil
}

// validate refuses what kube-scheduler's PodTopologySpread args
// validation refuses.
func validate(cs []corev1.TopologySpreadConstraint, field string) error {
	var errs []error
	for i, c := range cs {
		at := fmt.Sprintf("%s[%d]", field, i)
		if c.MaxSkew <= 0 {
			errs = append(errs, fmt.Errorf("%s.maxSkew %d must be greater than 0", at, c.MaxSkew))
		}
		if msgs := validation.IsQualifiedName(c.TopologyKey); c.TopologyKey == "" || len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.topologyKey %q is not a label name: %s", at, c.TopologyKey, strings.Join(msgs, "; ")))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, fmt.Errorf("%s.whenUnsatisfiable %q is not one of DoNotSchedule, ScheduleAnyway", at, c.WhenUnsatisfiable))
		}
		if c.LabelSelector != nil {
			errs = append(errs, fmt.Errorf("%s.labelSelector must be empty: kube-scheduler deduces the selector from the pod's Services and workload", at))
		}
		for j := range i {
			if cs[j].TopologyKey == c.TopologyKey && cs[j].WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, fmt.Errorf("%s repeats [%d] (%s, %s)", at, j, c.TopologyKey, c.WhenUnsatisfiable))
			}
		}
	}
	return errors.Join(errs...)
}
