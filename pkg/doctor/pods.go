package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// maxExamples bounds the pods one finding names.
const maxExamples = 3

// workload names a pod by its controller (kind/namespace/name), or the pod
// itself, so a Deployment of 300 replicas is one finding.
func workload(p *corev1.Pod) string {
	if ref := pods.ControllerOf(p); ref != nil {
		name := ref.Name
		if ref.Kind == "ReplicaSet" {
			// A Deployment's ReplicaSet is <deployment>-<hash>.
			if i := strings.LastIndex(name, "-"); i > 0 {
				return objectName("Deployment", p.Namespace, name[:i])
			}
		}
		return objectName(ref.Kind, p.Namespace, name)
	}
	return objectName("Pod", p.Namespace, p.Name)
}

// livePods are the pods not finished, not mirror pods and not DaemonSet
// pods (each node runs those, whatever their requests).
func livePods(in *Inputs) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range in.Pods {
		p := &in.Pods[i]
		if pods.IsTerminal(p) || !pods.IsWorkload(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// groupByWorkload turns per-pod messages into one finding per workload.
type group struct {
	object string
	pods   []string
	detail string
}

func groupPods(pods []*corev1.Pod, why func(*corev1.Pod) string) []*group {
	byObj := map[string]*group{}
	var order []*group
	for _, p := range pods {
		d := why(p)
		if d == "" {
			continue
		}
		w := workload(p)
		g := byObj[w]
		if g == nil {
			g = &group{object: w, detail: d}
			byObj[w] = g
			order = append(order, g)
		}
		g.pods = append(g.pods, p.Name)
	}
	return order
}

// podsText names the group's pods as a sentence's subject, with the verb
// ("pod a has", "3 pods (e.g. a, b, c) have").
func (g *group) podsText(singular, plural string) string {
	if len(g.pods) == 1 {
		return "pod " + g.pods[0] + singular
	}
	shown := g.pods
	if len(shown) > maxExamples {
		shown = shown[:maxExamples]
	}
	return fmt.Sprintf("%d pods (e.g. %s)%s", len(g.pods), strings.Join(shown, ", "), plural)
}

// checkPodRequests: a pod without cpu or memory requests is packed as if
// it used nothing (the provisioner warns with NoResourceRequests).
func checkPodRequests(in *Inputs) []Finding {
	var out []Finding
	for _, g := range groupPods(livePods(in), func(p *corev1.Pod) string {
		if len(scheduling.PodWarnings(p)) > 0 {
			return "x"
		}
		return ""
	}) {
		out = append(out, Finding{Check: "pod-requests", Severity: Warning, Object: g.object,
			Message: g.podsText(" has", " have") + " no cpu or memory requests, so joiner sizes their nodes as if they used nothing",
			Fix:     "set resources.requests (cpu and memory) on every container"})
	}
	return out
}

// checkInTreeVolumes: joiner (like Karpenter) understands only CSI
// volumes; a pod with an in-tree plugin volume, or bound to an in-tree
// PersistentVolume, gets a Volume reason and no node.
func checkInTreeVolumes(in *Inputs) []Finding {
	var out []Finding
	for _, g := range groupPods(livePods(in), func(p *corev1.Pod) string {
		for _, v := range p.Spec.Volumes {
			if pl := scheduling.InTreePlugin(&v.VolumeSource); pl != "" {
				return fmt.Sprintf("volume %q uses the in-tree %s plugin", v.Name, pl)
			}
		}
		return ""
	}) {
		out = append(out, Finding{Check: "in-tree-volumes", Severity: Warning, Object: g.object,
			Message: g.podsText("", "") + ": " + g.detail + ", which joiner cannot provision for",
			Fix:     "use a PersistentVolumeClaim of the plugin's CSI driver (e.g. ebs.csi.aws.com) instead of the inline volume"})
	}
	for _, pv := range in.PersistentVolumes {
		if pl := scheduling.InTreePersistentVolumePlugin(&pv.Spec.PersistentVolumeSource); pl != "" {
			out = append(out, Finding{Check: "in-tree-volumes", Severity: Warning, Object: objectName("PersistentVolume", "", pv.Name),
				Message: fmt.Sprintf("uses the in-tree %s plugin, so pods claiming it cannot be provisioned for", pl),
				Fix:     "migrate the volume to its CSI driver (CSI migration, or a new CSI PersistentVolume)"})
		}
	}
	return out
}
