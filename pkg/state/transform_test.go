package state

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// readPod sets every pod field a joiner controller reads: the solver
// (requests, sidecars, overhead, ports, volumes, affinity, tolerations,
// spread, node selector), disruption (owners, annotations, priority, grace
// period, deletion, start time), the provisioner and the nomination writer
// (phase, the PodScheduled condition, nominated node name, scheduling
// gates), the metrics (the Ready condition).
func readPod() *corev1.Pod {
	requests := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	now := metav1.NewTime(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "app-1", UID: "uid-1", ResourceVersion: "42", Generation: 1,
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{"karpenter.sh/do-not-disrupt": "true"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app", UID: "rs", Controller: ptr.To(true)}},
			Finalizers:        []string{"example.com/keep"},
			DeletionTimestamp: &now, CreationTimestamp: now,
		},
		Spec: corev1.PodSpec{
			NodeName:     "node-1",
			NodeSelector: map[string]string{"karpenter.sh/nodepool": "default"},
			InitContainers: []corev1.Container{{
				Name: "proxy", Image: "proxy:1", Resources: requests, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: "app:1", Resources: requests,
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 80, Protocol: corev1.ProtocolTCP}},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
			}},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}}}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
			SchedulingGates:               []corev1.PodSchedulingGate{{Name: "example.com/gate"}},
			Priority:                      ptr.To[int32](1000),
			PriorityClassName:             "high",
			PreemptionPolicy:              ptr.To(corev1.PreemptLowerPriority),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			HostNetwork:                   true,
			SchedulerName:                 "default-scheduler",
			ServiceAccountName:            "app",
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
			},
			NominatedNodeName: "node-2",
			StartTime:         &now,
		},
	}
}

// kubeletOnly adds to a pod what only the kubelet reads.
func kubeletOnly(p *corev1.Pod) *corev1.Pod {
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate}}
	p.Annotations[corev1.LastAppliedConfigAnnotation] = `{"kind":"Pod"}`
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
	all := []*corev1.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	all = append(all, (*corev1.Container)(&p.Spec.EphemeralContainers[0].EphemeralContainerCommon))
	for _, c := range all {
		c.Command, c.Args, c.WorkingDir = []string{"/app"}, []string{"--serve"}, "/srv"
		c.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe, probe, probe
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvdb"}}
		c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", corev1.TerminationMessageReadFile
	}
	for _, c := range all {
		c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
	}
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	status := []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha256:0123", ContainerID: "containerd://abc", Ready: true}}
	p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses = status, status, status
	p.Status.HostIP, p.Status.PodIP = "10.0.0.1", "10.0.1.2"
	p.Status.HostIPs, p.Status.PodIPs = []corev1.HostIP{{IP: "10.0.0.1"}}, []corev1.PodIP{{IP: "10.0.1.2"}}
	p.Status.QOSClass = corev1.PodQOSBurstable
	// Conditions only the kubelet's readers use, between the two joiner
	// reads.
	p.Status.Conditions = []corev1.PodCondition{p.Status.Conditions[0],
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
		p.Status.Conditions[1]}
	return p
}

// readNode sets every node field a joiner controller reads.
func readNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-1", UID: "uid-n", ResourceVersion: "7",
			Labels:      map[string]string{"karpenter.sh/nodepool": "default", corev1.LabelInstanceTypeStable: "m5.large"},
			Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"},
			Finalizers:  []string{"karpenter.sh/termination"},
		},
		Spec: corev1.NodeSpec{
			ProviderID:    "aws:///us-east-1a/i-0123",
			Taints:        []corev1.Taint{{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}},
			Unschedulable: true,
		},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", Architecture: "amd64"},
		},
	}
}

func TestTransforms(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
		in, want  any
	}{
		{"pod: every field joiner reads stays", TransformPod, readPod(), readPod()},
		{"pod: what only the kubelet reads goes", TransformPod, kubeletOnly(readPod()), func() *corev1.Pod {
			p := readPod()
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			return p
		}()},
		{"pod transform passes other kinds through", TransformPod, readNode(), readNode()},
		{"node: every field joiner reads stays", TransformNode, readNode(), readNode()},
		{"node: images, volumes and managedFields go", TransformNode, func() *corev1.Node {
			n := readNode()
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
			n.Annotations[corev1.LastAppliedConfigAnnotation] = `{"kind":"Node"}`
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}}
			n.Status.VolumesInUse = []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs^vol-1"}
			n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs^vol-1", DevicePath: "/dev/xvdb"}}
			return n
		}(), readNode()},
		{"node transform passes other kinds through", TransformNode, readPod(), readPod()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.transform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(tc.want, got) {
				t.Errorf("transformed object:\n got %s\nwant %s", asJSON(got), asJSON(tc.want))
			}
			// Idempotent: the cache may transform an object twice.
			again, err := tc.transform(got)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(tc.want, again) {
				t.Errorf("transformed twice:\n got %s\nwant %s", asJSON(again), asJSON(tc.want))
			}
		})
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
