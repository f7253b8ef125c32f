package userdata

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// MaxBytes is the largest user data EC2 accepts, before base64 encoding.
const MaxBytes = 16 * 1024

// Options is everything the bootstrap of a node needs to know.
type Options struct {
	// AMIFamily is one of AL2023, AL2, Bottlerocket, Windows2019,
	// Windows2022, Windows2025 or Custom (awsv1.AMIFamily*).
	AMIFamily string
	// ClusterName, ClusterEndpoint and CABundle (base64 PEM, as EKS
	// returns it) say which cluster the kubelet joins.
	ClusterName, ClusterEndpoint, CABundle string
	// ClusterCIDR is the service CIDR if known, may be "". nodeadm uses it
	// to derive the cluster DNS address.
	ClusterCIDR string
	// Labels are the node labels the kubelet registers with.
	Labels map[string]string
	// Taints are the registration taints: karpenter.sh/unregistered:NoExecute,
	// the NodePool's taints and its startup taints.
	Taints []corev1.Taint
	// MaxPods, when set, overrides Kubelet.MaxPods (joiner's computed pod
	// density for the instance type).
	MaxPods *int32
	// Kubelet is the EC2NodeClass's spec.kubelet, may be nil.
	Kubelet *awsv1.KubeletConfiguration
	// CustomUserData is the EC2NodeClass's spec.userData, may be nil.
	CustomUserData *string
	// InstanceStorePolicy is the EC2NodeClass's spec.instanceStorePolicy.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
}

// Error says what is wrong with spec.userData (or with the user data the
// merge produced). The node class reconciler reports it as a condition:
// retrying cannot fix it.
type Error struct {
	// Family is the AMI family whose format was expected.
	Family string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *Error) Error() string {
	return fmt.Sprintf("spec.userData (amiFamily %s): %s", e.Family, e.Problem)
}

// IsError reports whether err is (or wraps) an *Error.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

func userErr(family, format string, args ...any) error {
	return &Error{Family: family, Problem: fmt.Sprintf(format, args...)}
}

// Generate returns the base64-encoded user data for the launch template.
func Generate(o Options) (string, error) {
	raw, err := Render(o)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// Render returns the user data before base64 encoding: what the instance's
// cloud-init (or Bottlerocket's, or EC2Launch's) reads.
func Render(o Options) ([]byte, error) {
	if o.AMIFamily != awsv1.AMIFamilyCustom {
		var missing []string
		if o.ClusterName == "" {
			missing = append(missing, "ClusterName")
		}
		if o.ClusterEndpoint == "" {
			missing = append(missing, "ClusterEndpoint")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("rendering %s user data: %s required", o.AMIFamily, strings.Join(missing, " and "))
		}
	}
	var out string
	var err error
	switch {
	case o.AMIFamily == awsv1.AMIFamilyAL2:
		out, err = al2(o)
	case o.AMIFamily == awsv1.AMIFamilyAL2023:
		out, err = al2023(o)
	case o.AMIFamily == awsv1.AMIFamilyBottlerocket:
		out, err = bottlerocket(o)
	case awsv1.IsWindows(o.AMIFamily):
		out, err = windows(o)
	case o.AMIFamily == awsv1.AMIFamilyCustom:
		if o.CustomUserData != nil {
			out = *o.CustomUserData
		}
	default:
		return nil, fmt.Errorf("rendering user data: unknown AMI family %q; use one of %s", o.AMIFamily, strings.Join(awsv1.AMIFamilies, ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(out) > MaxBytes {
		return nil, userErr(o.AMIFamily, "the merged user data is %d bytes, EC2 accepts at most %d; shorten spec.userData", len(out), MaxBytes)
	}
	return []byte(out), nil
}

// maxPods is the pod limit the kubelet is told, if any.
func (o *Options) maxPods() *int32 {
	if o.MaxPods != nil {
		return o.MaxPods
	}
	if o.Kubelet != nil {
		return o.Kubelet.MaxPods
	}
	return nil
}

func (o *Options) clusterDNS() string {
	if o.Kubelet != nil && len(o.Kubelet.ClusterDNS) > 0 {
		return o.Kubelet.ClusterDNS[0]
	}
	return ""
}

// TaintString formats a taint the way --register-with-taints takes it:
// key=value:Effect, or key:Effect without a value.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

// joinMap formats m as sorted k<sep>v pairs separated by commas.
func joinMap(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}

// kubeletFlags are the kubelet command-line flags for the families that
// pass settings as flags (AL2 and Windows), in a fixed order.
func kubeletFlags(o *Options) []string {
	var flags []string
	if len(o.Labels) > 0 {
		flags = append(flags, fmt.Sprintf("--node-labels=%q", joinMap(o.Labels, "=")))
	}
	if len(o.Taints) > 0 {
		taints := make([]string, 0, len(o.Taints))
		for _, t := range o.Taints {
			taints = append(taints, TaintString(t))
		}
		flags = append(flags, fmt.Sprintf("--register-with-taints=%q", strings.Join(taints, ",")))
	}
	if mp := o.maxPods(); mp != nil {
		flags = append(flags, fmt.Sprintf("--max-pods=%d", *mp))
	}
	k := o.Kubelet
	if k == nil {
		return flags
	}
	if k.PodsPerCore != nil {
		flags = append(flags, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	if len(k.SystemReserved) > 0 {
		flags = append(flags, "--system-reserved="+joinMap(k.SystemReserved, "="))
	}
	if len(k.KubeReserved) > 0 {
		flags = append(flags, "--kube-reserved="+joinMap(k.KubeReserved, "="))
	}
	if len(k.EvictionHard) > 0 {
		flags = append(flags, "--eviction-hard="+joinMap(k.EvictionHard, "<"))
	}
	if len(k.EvictionSoft) > 0 {
		flags = append(flags, "--eviction-soft="+joinMap(k.EvictionSoft, "<"))
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		grace := make(map[string]string, len(k.EvictionSoftGracePeriod))
		for s, d := range k.EvictionSoftGracePeriod {
			grace[s] = d.Duration.String()
		}
		flags = append(flags, "--eviction-soft-grace-period="+joinMap(grace, "="))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		flags = append(flags, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		flags = append(flags, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		flags = append(flags, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		flags = append(flags, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return flags
}
