package bootstrap

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kubelet is what a node's kubelet registers with, as its image's bootstrap
// derived it from the user data.
type Kubelet struct {
	// ClusterName is the cluster the bootstrap joins.
	ClusterName string
	// OS is the node's operating system, "" for linux.
	OS string
	// APIServerEndpoint is the endpoint it was given ("" when the image
	// looks it up itself, as bootstrap.sh does through DescribeCluster).
	APIServerEndpoint string
	// Labels are the node labels (--node-labels).
	Labels map[string]string
	// Taints are the registration taints (--register-with-taints), in order.
	Taints []corev1.Taint
	// MaxPods is the pod limit when the user data sets one; nil means the
	// image's default, the ENI-limited density of the instance type.
	MaxPods *int32
	// KubeReserved, SystemReserved and EvictionHard are the kubelet's
	// reservations when the user data sets them; nil means the image's
	// defaults.
	KubeReserved, SystemReserved, EvictionHard map[string]string
}

// kubeletLabelNamespaces are the kubernetes.io / k8s.io label namespaces a
// kubelet may set on its own Node (kubelet's IsKubeletLabel); any other
// label in those namespaces makes the kubelet exit at start.
var (
	kubeletLabels = map[string]bool{
		corev1.LabelHostname: true, corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true,
		corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true,
		corev1.LabelOSStable: true, corev1.LabelArchStable: true, "beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true,
		corev1.LabelInstanceTypeStable: true, corev1.LabelInstanceType: true,
	}
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

func isKubeletLabel(key string) bool {
	if kubeletLabels[key] {
		return true
	}
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

func restrictedNamespace(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}

// parseLabels parses --node-labels as the kubelet does; the error is the
// reason the kubelet refuses to start.
func parseLabels(s string, into map[string]string) error {
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("invalid --node-labels entry %q: want key=value", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid --node-labels key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("invalid --node-labels value %q for %s: %s", v, k, strings.Join(errs, "; "))
		}
		if restrictedNamespace(k) && !isKubeletLabel(k) {
			return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' label %q in --node-labels: the kubelet may only set kubelet.kubernetes.io/, node.kubernetes.io/ and its well-known labels", k)
		}
		into[k] = v
	}
	return nil
}

// ParseTaint parses key[=value]:Effect as --register-with-taints takes it.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("invalid taint %q: want key[=value]:Effect", s)
	}
	k, v, _ := strings.Cut(kv, "=")
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return corev1.Taint{}, fmt.Errorf("invalid taint key %q: %s", k, strings.Join(errs, "; "))
	}
	if v != "" {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return corev1.Taint{}, fmt.Errorf("invalid taint value %q: %s", v, strings.Join(errs, "; "))
		}
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return corev1.Taint{Key: k, Value: v, Effect: e}, nil
	}
	return corev1.Taint{}, fmt.Errorf("invalid taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
}

func parseTaints(s string) ([]corev1.Taint, error) {
	var taints []corev1.Taint
	for _, t := range strings.Split(s, ",") {
		if t == "" {
			continue
		}
		taint, err := ParseTaint(t)
		if err != nil {
			return nil, fmt.Errorf("--register-with-taints: %w", err)
		}
		taints = append(taints, taint)
	}
	return taints, nil
}

func parseMap(s, sep string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, sep); ok {
			m[k] = v
		}
	}
	return m
}

// applyFlags applies kubelet command-line flags to k, the way the kubelet
// (pflag) reads them: --name=value or --name value. Flags joiner does not
// model are ignored.
func (k *Kubelet) applyFlags(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			value = args[i+1]
			i++
		}
		switch name {
		case "node-labels":
			if k.Labels == nil {
				k.Labels = map[string]string{}
			}
			if err := parseLabels(value, k.Labels); err != nil {
				return err
			}
		case "register-with-taints":
			taints, err := parseTaints(value)
			if err != nil {
				return err
			}
			k.Taints = taints
		case "max-pods":
			n, err := strconv.ParseInt(value, 10, 32)
			if err != nil {
				return fmt.Errorf("invalid --max-pods %q: %w", value, err)
			}
			k.MaxPods = ptrInt32(int32(n))
		case "kube-reserved":
			k.KubeReserved = parseMap(value, "=")
		case "system-reserved":
			k.SystemReserved = parseMap(value, "=")
		case "eviction-hard":
			k.EvictionHard = parseMap(value, "<")
		}
	}
	return nil
}

func ptrInt32(n int32) *int32 { return &n }
