package doctor

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
)

// checkUserData: a NodeClass's custom userData must still have the kubelet
// register with karpenter.sh/unregistered:NoExecute and every startup
// taint of the NodePools using it, in a shape the image's bootstrap
// parses. Seed 002: `--kubelet-extra-args='--register-with-taints=...'`
// is dropped by bootstrap.sh, the node joins without the taints, and
// joiner deletes it when initialisation times out. The userData is merged
// by the same renderer the launch path uses and read back by the same
// parser the emulated machines use.
func checkUserData(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodeClasses {
		nc := &in.NodeClasses[i]
		if nc.Spec.UserData == nil {
			continue
		}
		obj := objectName("EC2NodeClass", "", nc.Name)
		pools := in.nodePoolsOf(nc.Name)
		if len(pools) == 0 {
			pools = []*v1.NodePool{{}}
		}
		for _, np := range pools {
			if f := userDataFinding(in, nc, np); f != nil {
				f.Object = obj
				out = append(out, *f)
				break
			}
		}
	}
	return out
}

// standInCA is base64 of a placeholder PEM, for a render whose CA doctor
// does not know.
const standInCA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"

// userDataFinding judges nc's userData for a node of np.
func userDataFinding(in *Inputs, nc *awsv1.EC2NodeClass, np *v1.NodePool) *Finding {
	family := nc.AMIFamily()
	want := append([]corev1.Taint{v1.UnregisteredNoExecuteTaint}, np.Spec.Template.Spec.Taints...)
	want = append(want, np.Spec.Template.Spec.StartupTaints...)
	// The pre-v1 taint is never asked for: registering it is the fault
	// (checkLegacyTaint), not the fix.
	want = slices.DeleteFunc(want, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyUninitializedLegacy })
	clusterName, endpoint, ca, cidr := in.ClusterName, in.ClusterEndpoint, in.ClusterCABundle, in.ClusterCIDR
	if endpoint == "" {
		endpoint = "https://kubernetes.default.svc"
	}
	// AL2023's nodeadm refuses a NodeConfig without the CA or the service
	// CIDR, which the launch path always writes: render them too, so a
	// custom NodeConfig is judged as the node would read it.
	if ca == "" {
		ca = standInCA
	}
	if cidr == "" {
		cidr = "10.100.0.0/16"
	}
	raw, err := userdata.Render(userdata.Options{AMIFamily: family, ClusterName: clusterName, ClusterEndpoint: endpoint,
		CABundle: ca, ClusterCIDR: cidr, Taints: want, Kubelet: nc.Spec.Kubelet, CustomUserData: nc.Spec.UserData})
	if err != nil {
		return &Finding{Check: "userdata", Severity: Error, Message: fmt.Sprintf("joiner cannot merge spec.userData: %v", err),
			Fix: "correct spec.userData to the format of amiFamily " + family}
	}
	parseAs := family
	if family == awsv1.AMIFamilyCustom {
		parseAs = awsv1.AMIFamilyAL2
		if _, err := userdata.ParseNodeConfig(string(raw)); err == nil {
			parseAs = awsv1.AMIFamilyAL2023
		}
	}
	k, err := bootstrap.Parse(parseAs, raw)
	if err != nil {
		return &Finding{Check: "userdata", Severity: Error,
			Message: fmt.Sprintf("the node would not boot into a kubelet (read as %s user data): %v", parseAs, err),
			Fix:     "correct spec.userData so the image's bootstrap starts the kubelet"}
	}
	if v1.HasLegacyUninitializedTaint(k.Taints) {
		return &Finding{Check: "userdata", Severity: Error,
			Message: "the kubelet would register with the taint " + v1.TaintKeyUninitializedLegacy + ", which nothing removes",
			Fix:     v1.LegacyUninitializedTaintFix}
	}
	var missing []string
	for _, t := range want {
		if !slices.ContainsFunc(k.Taints, func(g corev1.Taint) bool { return g.Key == t.Key && g.Effect == t.Effect }) {
			missing = append(missing, userdata.TaintString(t))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var got []string
	for _, t := range k.Taints {
		got = append(got, userdata.TaintString(t))
	}
	msg := fmt.Sprintf("the kubelet would register without taint(s) %s (it registers with [%s]), so joiner cannot tell the node is new and it is deleted when initialisation times out",
		strings.Join(missing, ","), strings.Join(got, ","))
	fix := "pass --register-with-taints=" + strings.Join(missing, ",") + " to the kubelet in spec.userData"
	if strings.Contains(*nc.Spec.UserData, "--kubelet-extra-args=") {
		msg += "; bootstrap.sh ignores --kubelet-extra-args=... written with '='"
		fix = "write --kubelet-extra-args '--register-with-taints=" + strings.Join(missing, ",") + "' (a space after the option, not '=', and no quotes inside)"
	}
	if np.Name != "" {
		msg = "for nodepool " + np.Name + ", " + msg
	}
	return &Finding{Check: "userdata", Severity: Error, Message: msg, Fix: fix}
}

// imageArchs are the architectures of nc's resolved images, with one image
// id as an example of each.
func imageArchs(nc *awsv1.EC2NodeClass) map[string]string {
	out := map[string]string{}
	for _, ami := range nc.Status.AMIs {
		for _, r := range ami.Requirements {
			if r.Key == corev1.LabelArchStable && r.Operator == corev1.NodeSelectorOpIn {
				for _, a := range r.Values {
					if _, ok := out[a]; !ok {
						out[a] = ami.ID
					}
				}
			}
		}
	}
	return out
}

var (
	catalogOnce  sync.Once
	catalogArchs map[string]string
)

// typeArch is an instance type's architecture: from the cloud's listing
// when it has the type, else from the built-in catalog ("" if unknown).
func (in *Inputs) typeArch(name string) string {
	for _, its := range in.InstanceTypes {
		for _, it := range its {
			if it.Name == name {
				if vs := it.Requirements[corev1.LabelArchStable]; len(vs) == 1 {
					return vs[0]
				}
			}
		}
	}
	catalogOnce.Do(func() {
		catalogArchs = map[string]string{}
		c, err := catalog.Default(catalog.Options{})
		if err != nil {
			return
		}
		for _, it := range c.InstanceTypes() {
			if vs := it.Requirements[corev1.LabelArchStable]; len(vs) == 1 {
				catalogArchs[it.Name] = vs[0]
			}
		}
	})
	return catalogArchs[name]
}

// poolArchs are the architectures np's requirements allow (its arch
// requirement and the architectures of the instance types it names), nil
// when it allows any.
func (in *Inputs) poolArchs(np *v1.NodePool) ([]string, []string) {
	archs := requirementValues(np, corev1.LabelArchStable)
	names := requirementValues(np, corev1.LabelInstanceTypeStable)
	if names == nil {
		return archs, nil
	}
	var fromTypes []string
	for _, n := range names {
		if a := in.typeArch(n); a != "" && !slices.Contains(fromTypes, a) {
			fromTypes = append(fromTypes, a)
		}
	}
	if len(fromTypes) == 0 {
		return archs, nil
	}
	if archs == nil {
		return fromTypes, names
	}
	return slices.DeleteFunc(archs, func(a string) bool { return !slices.Contains(fromTypes, a) }), names
}

// checkImageArchitecture: seed 000, an arm64 instance booting an amd64
// image (or the reverse) never joins. A NodePool whose allowed instance
// types are all of architectures none of its NodeClass's images has
// launches nodes that never register.
func checkImageArchitecture(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodePools {
		np := &in.NodePools[i]
		nc := in.nodeClassOf(np)
		if nc == nil {
			continue
		}
		imgs := imageArchs(nc)
		if len(imgs) == 0 {
			continue
		}
		archs, names := in.poolArchs(np)
		if archs == nil || slices.ContainsFunc(archs, func(a string) bool { _, ok := imgs[a]; return ok }) {
			continue
		}
		var have []string
		for a, id := range imgs {
			have = append(have, a+" ("+id+")")
		}
		slices.Sort(have)
		allowed := strings.Join(archs, ",")
		if names != nil {
			allowed += " instance types " + strings.Join(names, ",")
		}
		out = append(out, Finding{Check: "image-architecture", Severity: Error, Object: objectName("NodePool", "", np.Name),
			Message: fmt.Sprintf("it allows only %s, but ec2nodeclass %s's images are %s: no allowed instance type can boot them, so its nodes never join",
				allowed, nc.Name, strings.Join(have, ", ")),
			Fix: fmt.Sprintf("select %s images in ec2nodeclass %s's amiSelectorTerms (an alias selects both architectures), or allow instance types of the images' architecture", strings.Join(archs, "/"), nc.Name)})
	}
	return out
}

// windowsBuilds are the node.kubernetes.io/windows-build of each Windows
// AMI family's images.
var windowsBuilds = map[string]string{
	awsv1.AMIFamilyWindows2019: "10.0.17763",
	awsv1.AMIFamilyWindows2022: "10.0.20348",
	awsv1.AMIFamilyWindows2025: "10.0.26100",
}

// checkWindowsBuild: a NodePool that requires a Windows build its
// NodeClass's images are not launches nothing its pods fit (a Windows
// container runs only on the build it was made for).
func checkWindowsBuild(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodePools {
		np := &in.NodePools[i]
		builds := requirementValues(np, corev1.LabelWindowsBuild)
		nc := in.nodeClassOf(np)
		if builds == nil || nc == nil {
			continue
		}
		family := nc.AMIFamily()
		have, windows := windowsBuilds[family]
		switch {
		case !windows && family != awsv1.AMIFamilyCustom:
			out = append(out, Finding{Check: "windows-build", Severity: Error, Object: objectName("NodePool", "", np.Name),
				Message: fmt.Sprintf("it requires %s in [%s] but ec2nodeclass %s boots %s images, which are not Windows", corev1.LabelWindowsBuild, strings.Join(builds, ","), nc.Name, family),
				Fix:     "point the nodepool at a Windows ec2nodeclass, or drop the windows-build requirement"})
		case windows && !slices.Contains(builds, have):
			out = append(out, Finding{Check: "windows-build", Severity: Error, Object: objectName("NodePool", "", np.Name),
				Message: fmt.Sprintf("it requires %s in [%s] but ec2nodeclass %s boots %s, build %s", corev1.LabelWindowsBuild, strings.Join(builds, ","), nc.Name, family, have),
				Fix:     fmt.Sprintf("use the Windows family whose build the pods need in ec2nodeclass %s, or require build %s", nc.Name, have)})
		}
	}
	return out
}

// checkLegacyTaint: seed 002, a NodePool that lists the pre-v1 taint
// karpenter.sh/uninitialized under startupTaints (or taints) waits for a
// removal that never comes: every node it launches is deleted when
// initialisation times out.
func checkLegacyTaint(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodePools {
		np := &in.NodePools[i]
		if v1.HasLegacyUninitializedTaint(np.Spec.Template.Spec.StartupTaints) || v1.HasLegacyUninitializedTaint(np.Spec.Template.Spec.Taints) {
			out = append(out, Finding{Check: "legacy-taint", Severity: Error, Object: objectName("NodePool", "", np.Name),
				Message: "it lists the taint " + v1.TaintKeyUninitializedLegacy + ", which nothing removes, so no node it launches initialises",
				Fix:     v1.LegacyUninitializedTaintFix})
		}
	}
	return out
}
