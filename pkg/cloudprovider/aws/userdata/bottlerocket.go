package userdata

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// bottlerocket renders Bottlerocket's TOML settings: the user's settings
// with joiner's set on top. Scalars joiner sets (cluster, endpoint, CA,
// max-pods, DNS, reserved resources) replace the user's; node labels are
// merged (joiner's value wins on the same key) and joiner's taints are
// added to the user's.
func bottlerocket(o Options) (string, error) {
	doc := map[string]any{}
	if o.CustomUserData != nil && strings.TrimSpace(*o.CustomUserData) != "" {
		if err := toml.Unmarshal([]byte(*o.CustomUserData), &doc); err != nil {
			return "", userErr(o.AMIFamily, "not valid TOML: %v", tomlProblem(err))
		}
	}
	settings, err := table(doc, "settings", o.AMIFamily)
	if err != nil {
		return "", err
	}
	k8s, err := table(settings, "kubernetes", o.AMIFamily)
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = o.ClusterName
	k8s["api-server"] = o.ClusterEndpoint
	if o.CABundle != "" {
		k8s["cluster-certificate"] = o.CABundle
	}
	if dns := o.clusterDNS(); dns != "" {
		k8s["cluster-dns-ip"] = dns
	}
	if mp := o.maxPods(); mp != nil {
		k8s["max-pods"] = int64(*mp)
	}
	if len(o.Labels) > 0 {
		labels, err := table(k8s, "node-labels", o.AMIFamily)
		if err != nil {
			return "", err
		}
		for key, v := range o.Labels {
			labels[key] = v
		}
	}
	if len(o.Taints) > 0 {
		taints, err := table(k8s, "node-taints", o.AMIFamily)
		if err != nil {
			return "", err
		}
		for _, t := range o.Taints {
			entry := t.Value + ":" + string(t.Effect)
			var list []any
			switch v := taints[t.Key].(type) {
			case nil:
			case []any:
				list = v
			case string:
				list = []any{v}
			default:
				return "", userErr(o.AMIFamily, "settings.kubernetes.node-taints.%q must be a list of \"value:Effect\" strings", t.Key)
			}
			if !containsString(list, entry) {
				list = append(list, entry)
			}
			taints[t.Key] = list
		}
	}
	if kc := o.Kubelet; kc != nil {
		setStringMap(k8s, "kube-reserved", kc.KubeReserved)
		setStringMap(k8s, "system-reserved", kc.SystemReserved)
		setStringMap(k8s, "eviction-hard", kc.EvictionHard)
		setStringMap(k8s, "eviction-soft", kc.EvictionSoft)
		if len(kc.EvictionSoftGracePeriod) > 0 {
			grace := map[string]any{}
			for s, d := range kc.EvictionSoftGracePeriod {
				grace[s] = d.Duration.String()
			}
			k8s["eviction-soft-grace-period"] = grace
		}
		if kc.EvictionMaxPodGracePeriod != nil {
			k8s["eviction-max-pod-grace-period"] = int64(*kc.EvictionMaxPodGracePeriod)
		}
		if kc.ImageGCHighThresholdPercent != nil {
			k8s["image-gc-high-threshold-percent"] = int64(*kc.ImageGCHighThresholdPercent)
		}
		if kc.ImageGCLowThresholdPercent != nil {
			k8s["image-gc-low-threshold-percent"] = int64(*kc.ImageGCLowThresholdPercent)
		}
		if kc.CPUCFSQuota != nil {
			k8s["cpu-cfs-quota-enforced"] = *kc.CPUCFSQuota
		}
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		cmds, err := table(settings, "bootstrap-commands", o.AMIFamily)
		if err != nil {
			return "", err
		}
		cmds["000-mount-instance-storage"] = map[string]any{
			"commands": []any{
				[]any{"apiclient", "ephemeral-storage", "init"},
				[]any{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"mode":      "always",
			"essential": true,
		}
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("encoding Bottlerocket settings: %w", err)
	}
	return buf.String(), nil
}

// table returns parent[key] as a TOML table, creating it when absent.
func table(parent map[string]any, key, family string) (map[string]any, error) {
	switch v := parent[key].(type) {
	case nil:
		t := map[string]any{}
		parent[key] = t
		return t, nil
	case map[string]any:
		return v, nil
	default:
		return nil, userErr(family, "%q must be a TOML table ([...]), not %T", key, v)
	}
}

func setStringMap(parent map[string]any, key string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	t := map[string]any{}
	for k, v := range m {
		t[k] = v
	}
	parent[key] = t
}

func containsString(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// tomlProblem adds the line and column go-toml knows to its message.
func tomlProblem(err error) string {
	if de, ok := err.(*toml.DecodeError); ok {
		row, col := de.Position()
		return fmt.Sprintf("line %d, column %d: %s", row, col, de.Error())
	}
	return err.Error()
}
