package userdata

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// NodeConfigAPIVersion is the nodeadm API joiner writes.
const NodeConfigAPIVersion = "node.eks.aws/v1alpha1"

// NodeConfig is nodeadm's configuration (node.eks.aws/v1alpha1), the
// fields joiner writes and the emulated bootstrap reads.
type NodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       NodeConfigSpec `json:"spec"`
}

// NodeConfigSpec is the spec of a NodeConfig.
type NodeConfigSpec struct {
	Cluster  NodeConfigCluster   `json:"cluster,omitempty"`
	Kubelet  NodeConfigKubelet   `json:"kubelet,omitempty"`
	Instance *NodeConfigInstance `json:"instance,omitempty"`
}

// NodeConfigCluster says which cluster to join.
type NodeConfigCluster struct {
	Name                 string `json:"name,omitempty"`
	APIServerEndpoint    string `json:"apiServerEndpoint,omitempty"`
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr,omitempty"`
}

// NodeConfigKubelet is the kubelet's configuration (a KubeletConfiguration
// document, merged over the AMI's defaults) and extra flags.
type NodeConfigKubelet struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

// NodeConfigInstance configures the instance itself.
type NodeConfigInstance struct {
	LocalStorage *NodeConfigLocalStorage `json:"localStorage,omitempty"`
}

// NodeConfigLocalStorage says how instance-store disks are used.
type NodeConfigLocalStorage struct {
	Strategy string `json:"strategy,omitempty"`
}

// looksLikeNodeConfig reports whether a bare document declares itself a
// nodeadm NodeConfig.
func looksLikeNodeConfig(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "apiVersion:") && strings.Contains(line, "node.eks.aws/") || line == "kind: NodeConfig" {
			return true
		}
	}
	return false
}

// ParseNodeConfig parses one NodeConfig document; the error says what is
// wrong with it.
func ParseNodeConfig(s string) (*NodeConfig, error) { return parseNodeConfig(s) }

func parseNodeConfig(s string) (*NodeConfig, error) {
	nc := &NodeConfig{}
	if err := yaml.Unmarshal([]byte(s), nc); err != nil {
		return nil, fmt.Errorf("the NodeConfig is not valid YAML: %w", err)
	}
	if !strings.HasPrefix(nc.APIVersion, "node.eks.aws/") || nc.Kind != "NodeConfig" {
		return nil, fmt.Errorf("the NodeConfig has apiVersion %q and kind %q, want apiVersion %s and kind NodeConfig", nc.APIVersion, nc.Kind, NodeConfigAPIVersion)
	}
	return nc, nil
}

// al2023 renders the AL2023 user data: the user's parts, then joiner's
// NodeConfig. nodeadm merges every NodeConfig part in order, so joiner's
// cluster, taints and labels win over the user's.
func al2023(o Options) (string, error) {
	parts, err := userParts(&o, true)
	if err != nil {
		return "", err
	}
	config, err := kubeletConfigMap(o.Kubelet)
	if err != nil {
		return "", err
	}
	if mp := o.maxPods(); mp != nil {
		config["maxPods"] = *mp
	}
	if len(o.Taints) > 0 {
		taints := make([]corev1.Taint, len(o.Taints))
		copy(taints, o.Taints)
		config["registerWithTaints"] = taints
	}
	nc := NodeConfig{
		APIVersion: NodeConfigAPIVersion,
		Kind:       "NodeConfig",
		Spec: NodeConfigSpec{
			Cluster: NodeConfigCluster{
				Name:                 o.ClusterName,
				APIServerEndpoint:    o.ClusterEndpoint,
				CertificateAuthority: o.CABundle,
				CIDR:                 o.ClusterCIDR,
			},
			Kubelet: NodeConfigKubelet{Config: config},
		},
	}
	if len(nc.Spec.Kubelet.Config) == 0 {
		nc.Spec.Kubelet.Config = nil
	}
	if len(o.Labels) > 0 {
		nc.Spec.Kubelet.Flags = []string{"--node-labels=" + joinMap(o.Labels, "=")}
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		nc.Spec.Instance = &NodeConfigInstance{LocalStorage: &NodeConfigLocalStorage{Strategy: string(awsv1.InstanceStorePolicyRAID0)}}
	}
	body, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("encoding NodeConfig: %w", err)
	}
	parts = append(parts, Part{ContentType: ContentTypeNodeConfig, Body: string(body)})
	return WriteMIME(parts), nil
}

// kubeletConfigMap is spec.kubelet as a KubeletConfiguration map, with its
// untyped fields (which only nodeadm can apply) included.
func kubeletConfigMap(k *awsv1.KubeletConfiguration) (map[string]any, error) {
	config := map[string]any{}
	if k == nil {
		return config, nil
	}
	b, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding spec.kubelet: %w", err)
	}
	if err := json.Unmarshal(b, &config); err != nil {
		return nil, fmt.Errorf("decoding spec.kubelet: %w", err)
	}
	delete(config, "registerWithTaints")
	return config, nil
}
