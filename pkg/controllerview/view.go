// Package controllerview is what a running joiner controller read, put where
// offline readers can read it too: for each NodePool the instance types and
// offerings the cloud provider gave the provisioner (unavailable offerings
// and their causes included, as GetInstanceTypes applies them), where each
// CapacityBuffer holds its room (the provisioner's last plan), and the
// liveness settings (registration and initialisation TTLs) the lifecycle
// controller acts on. The controller publishes it in a ConfigMap of its
// own namespace (Publisher); `joiner explain` reads it back (Decode), so
// explain judges a pod from the same source as the provisioner instead of
// from the built-in catalog.
//
// It decides nothing: it copies the provider's answer. Launch back-offs are
// not part of it: they live on the NodePool (pkg/launchhealth) and every
// reader takes them from there.
package controllerview

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// LabelView marks a ConfigMap holding a controller view.
const LabelView = "joiner.dev/controller-view"

// dataKey is the binaryData key of the gzipped JSON view.
const dataKey = "view.json.gz"

// maxBytes keeps the ConfigMap under the API server's 1 MiB object limit.
const maxBytes = 900 << 10

// View is what one controller read.
type View struct {
	// ClusterName is the controller's CLUSTER_NAME.
	ClusterName string `json:"clusterName"`
	// Read is when the controller last read the instance types.
	Read metav1.Time `json:"read"`
	// RegistrationTTL and InitializationTTL are the lifecycle controller's
	// settings.
	RegistrationTTL   metav1.Duration `json:"registrationTTL"`
	InitializationTTL metav1.Duration `json:"initializationTTL"`
	// PlanDynamicResources is IGNORE_DRA_REQUESTS=false: the provisioner
	// plans pods' resource claims, so explain plans them too.
	PlanDynamicResources bool `json:"planDynamicResources,omitempty"`
	// NodePools are each NodePool's instance types as GetInstanceTypes
	// returned them.
	NodePools map[string]NodePoolTypes `json:"nodePools"`
	// Buffers are where each CapacityBuffer in force holds its room, as
	// the last provisioning pass planned it (`joiner explain nodepool` and
	// `explain capacitybuffer` show it), in name order.
	Buffers []capacitybuffer.Room `json:"buffers,omitempty"`
}

// NodePoolTypes are one NodePool's instance types, or why the provider
// gave none.
type NodePoolTypes struct {
	InstanceTypes []*scheduling.InstanceType `json:"instanceTypes,omitempty"`
	// Error is GetInstanceTypes' error (a node class not ready, ...).
	Error string `json:"error,omitempty"`
}

// Name is the ConfigMap name of cluster's view.
func Name(cluster string) string {
	n := "joiner-controller-view-" + strings.ToLower(cluster)
	if len(n) > 253 {
		n = n[:253]
	}
	return strings.TrimRight(n, "-.")
}

// Encode renders v as the data of its ConfigMap.
func Encode(v View) (map[string][]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the controller view: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(js); err != nil {
		return nil, fmt.Errorf("compressing the controller view: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the controller view: %w", err)
	}
	if buf.Len() > maxBytes {
		return nil, fmt.Errorf("the controller view takes %d bytes compressed, more than a ConfigMap holds (%d)", buf.Len(), maxBytes)
	}
	return map[string][]byte{dataKey: buf.Bytes()}, nil
}

// Decode reads a view ConfigMap; ok is false for any other ConfigMap.
func Decode(cm *corev1.ConfigMap) (v View, ok bool, err error) {
	if cm.Labels[LabelView] != "true" {
		return View{}, false, nil
	}
	raw, found := cm.BinaryData[dataKey]
	if !found {
		return View{}, true, fmt.Errorf("configmap %s/%s has no %s", cm.Namespace, cm.Name, dataKey)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return View{}, true, fmt.Errorf("reading configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		return View{}, true, fmt.Errorf("reading configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if err := json.Unmarshal(js, &v); err != nil {
		return View{}, true, fmt.Errorf("decoding configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return v, true, nil
}

// Age is how long ago the view was read, at now.
func (v View) Age(now time.Time) time.Duration { return now.Sub(v.Read.Time) }
