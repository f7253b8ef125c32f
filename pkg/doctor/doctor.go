package doctor

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Severity says whether a finding keeps nodes from working (Error: the
// command exits non-zero) or is a risk worth knowing (Warning).
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem: which check found it, on which object, what is
// wrong and how to fix it.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Object names what is wrong, as kind/name or kind/namespace/name.
	Object  string `json:"object"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// String is the finding's one line.
func (f Finding) String() string {
	return string(f.Severity) + " [" + f.Check + "] " + f.Object + ": " + f.Message + "; fix: " + f.Fix
}

// Report is every finding, errors first, then by check and object.
type Report struct {
	Findings []Finding `json:"findings"`
	// Skipped names the checks that could not run, with why (no cloud
	// configured, an API that failed).
	Skipped []string `json:"skipped,omitempty"`
}

// Errors counts the error findings.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// Inputs is everything the checks judge: read once from the cluster and
// the cloud by Gather, or built by hand in tests.
type Inputs struct {
	// ClusterName is settings.clusterName; ClusterID the kube-system
	// namespace UID, the identity joiner tags its instances with.
	ClusterName, ClusterID string
	// ClusterEndpoint is the API server the kubelets are told.
	ClusterEndpoint string
	// ClusterCABundle (base64 PEM) and ClusterCIDR (the service CIDR) go
	// into rendered user data as the launch path puts them; empty, the
	// userdata check renders stand-ins (it judges the taints the kubelet
	// registers, and the launch path always fills both).
	ClusterCABundle, ClusterCIDR string

	Pods              []corev1.Pod
	Nodes             []corev1.Node
	PersistentVolumes []corev1.PersistentVolume
	// Controllers are joiner's own Deployments (found by the controller
	// selector).
	Controllers []appsv1.Deployment
	NodePools   []v1.NodePool
	// NodeClaims are the names of this cluster's NodeClaims.
	NodeClaims  []string
	NodeClasses []awsv1.EC2NodeClass
	// AWSAuth is kube-system/aws-auth, nil when absent.
	AWSAuth *corev1.ConfigMap

	// InstanceTypes are each NodePool's instance types as the cloud
	// provider lists them; nil when no cloud was asked.
	InstanceTypes map[string][]*scheduling.InstanceType
	// InstanceTypeErrors are the NodePools whose listing failed.
	InstanceTypeErrors map[string]error

	// AWS holds what was read from the account; nil without one.
	AWS *AWSInputs
	// AWSMissing says why AWS is nil, for the skipped checks ("": no
	// account configured).
	AWSMissing string
}

// check is one named check.
type check struct {
	Name string
	// NeedsAWS checks run only when Inputs.AWS is set.
	NeedsAWS bool
	Run      func(*Inputs) []Finding
}

// checks are every check, in the order the report lists them.
var checks = []check{
	{Name: "controller-placement", Run: checkControllerPlacement},
	{Name: "userdata", Run: checkUserData},
	{Name: "legacy-taint", Run: checkLegacyTaint},
	{Name: "node-role", NeedsAWS: true, Run: checkNodeRole},
	{Name: "image-architecture", Run: checkImageArchitecture},
	{Name: "cluster-name", NeedsAWS: true, Run: checkClusterName},
	{Name: "nodepool-instance-types", Run: checkNodePoolInstanceTypes},
	{Name: "subnets", NeedsAWS: true, Run: checkSubnets},
	{Name: "pod-requests", Run: checkPodRequests},
	{Name: "in-tree-volumes", Run: checkInTreeVolumes},
	{Name: "windows-build", Run: checkWindowsBuild},
}

// Diagnose runs every check over in.
func Diagnose(in *Inputs) Report {
	r := Report{Findings: []Finding{}}
	for _, c := range checks {
		if c.NeedsAWS && in.AWS == nil {
			why := in.AWSMissing
			if why == "" {
				why = "no AWS account configured (--cloud-provider=aws)"
			}
			r.Skipped = append(r.Skipped, c.Name+": "+why)
			continue
		}
		r.Findings = append(r.Findings, c.Run(in)...)
	}
	if in.AWS != nil {
		r.Skipped = append(r.Skipped, in.AWS.Skipped...)
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		if a.Severity != b.Severity {
			if a.Severity == Error {
				return -1
			}
			return 1
		}
		return 0
	})
	return r
}

// nodePoolsOf are the NodePools whose template references the
// EC2NodeClass name.
func (in *Inputs) nodePoolsOf(nodeClass string) []*v1.NodePool {
	var out []*v1.NodePool
	for i := range in.NodePools {
		ref := in.NodePools[i].Spec.Template.Spec.NodeClassRef
		if ref != nil && ref.Kind == "EC2NodeClass" && ref.Name == nodeClass {
			out = append(out, &in.NodePools[i])
		}
	}
	return out
}

// nodeClassOf is the EC2NodeClass np references, or nil.
func (in *Inputs) nodeClassOf(np *v1.NodePool) *awsv1.EC2NodeClass {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Kind != "EC2NodeClass" {
		return nil
	}
	for i := range in.NodeClasses {
		if in.NodeClasses[i].Name == ref.Name {
			return &in.NodeClasses[i]
		}
	}
	return nil
}

// requirementValues are the values np's requirements allow for key with
// In (nil when np does not restrict key that way).
func requirementValues(np *v1.NodePool, key string) []string {
	var out []string
	restricted := false
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Key != key || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		if !restricted {
			out, restricted = slices.Clone(r.Values), true
			continue
		}
		out = slices.DeleteFunc(out, func(v string) bool { return !slices.Contains(r.Values, v) })
	}
	return out
}

func objectName(kind, namespace, name string) string {
	if namespace == "" {
		return strings.ToLower(kind) + "/" + name
	}
	return strings.ToLower(kind) + "/" + namespace + "/" + name
}
