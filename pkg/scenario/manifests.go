package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/dra"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Manifests collects Kubernetes objects read from YAML or JSON manifests,
// as written by hand or dumped by `kubectl get -o yaml`, until Snapshot
// turns them into the solver's input. The zero value is ready to use.
type Manifests struct {
	nodePools    []sourced[*scheduling.NodePool]
	nodeClassRaw []sourced[nodeClass]
	pods         []sourced[*corev1.Pod]
	workloads    []sourced[workload]
	daemonSets   []sourced[*appsv1.DaemonSet]
	// limitRanges by namespace: the defaults the API server gives the
	// pods a workload or DaemonSet would create.
	limitRanges map[string][]corev1.LimitRange
	nodes       []sourced[*corev1.Node]
	csiNodes    []*storagev1.CSINode
	volumes     scheduling.VolumeState
	namespaces  []sourced[*corev1.Namespace]
	// The objects only disruption reads: NodePools as the API has them
	// (their disruption spec), NodeClaims and PodDisruptionBudgets.
	apiNodePools []*v1.NodePool
	nodeClaims   []sourced[*v1.NodeClaim]
	pdbs         []*policyv1.PodDisruptionBudget
	// overlays are the input's NodeOverlays; overlayNotes what the last
	// Snapshot did with them.
	overlays     []*v1alpha1.NodeOverlay
	overlayNotes []string
	// ProvisioningRequests and the PodTemplates they name: each request
	// of a class joiner serves is a gang, planned alone (Gangs).
	requests     []sourced[*autoscalingv1.ProvisioningRequest]
	podTemplates map[string]*corev1.PodTemplate
	// CapacityBuffers, the ResourceQuotas that cap them (by namespace),
	// and what the last Snapshot resolved them to (Buffers).
	buffers  []sourced[*autoscalingv1beta1.CapacityBuffer]
	quotas   map[string][]corev1.ResourceQuota
	resolved []capacitybuffer.Resolution
	// services are read for kube-scheduler's default spread selectors.
	services []*corev1.Service
	// dra holds the Dynamic Resource Allocation objects (resource.k8s.io/v1).
	dra dra.Objects
	// Ignored lists the objects of kinds joiner does not read, as
	// "Kind namespace/name" in input order.
	Ignored []string
}

// sourced is an object with where it came from, for error messages.
type sourced[T any] struct {
	where string
	obj   T
}

// ReadManifestFiles reads every file into one Manifests.
func ReadManifestFiles(paths ...string) (*Manifests, error) {
	m := &Manifests{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if err := m.Read(p, data); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Read adds the objects of one YAML or JSON stream (several documents
// separated by ---, and `kind: List` objects). source names the stream in
// errors, which read like
// `web.yaml: document 2 (Deployment default/web): spec.replicas: must be >= 0`.
func (m *Manifests) Read(source string, data []byte) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue // a document holding only comments
		}
		if err := m.add(fmt.Sprintf("%s: document %d", source, doc), js); err != nil {
			return err
		}
	}
}

// add decodes one object (or list) in JSON; where says where it is.
func (m *Manifests) add(where string, js []byte) error {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if head.Kind == "" {
		return fmt.Errorf("%s: kind: must be set", where)
	}
	id := head.Kind + " " + head.Metadata.Name
	if head.Metadata.Namespace != "" {
		id = head.Kind + " " + head.Metadata.Namespace + "/" + head.Metadata.Name
	}
	if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for i, item := range head.Items {
			if err := m.add(fmt.Sprintf("%s (%s) items[%d]", where, head.Kind, i), item); err != nil {
				return err
			}
		}
		return nil
	}
	where = fmt.Sprintf("%s (%s)", where, id)
	if err := m.addObject(where, head.APIVersion, head.Kind, js); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

func (m *Manifests) addObject(where, apiVersion, kind string, js []byte) error {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	switch group + "/" + kind {
	case "karpenter.sh/NodePool":
		np, err := nodepool.DecodeAPI(js)
		if err != nil {
			return err
		}
		m.nodePools = append(m.nodePools, sourced[*scheduling.NodePool]{where, nodepool.FromNodePool(np)})
		m.apiNodePools = append(m.apiNodePools, np)
	case "karpenter.sh/NodeOverlay":
		o, err := decodeOverlay(js)
		if err != nil {
			return err
		}
		m.overlays = append(m.overlays, o)
	case "karpenter.sh/NodeClaim":
		nc := &v1.NodeClaim{}
		if err := decodeStrict(js, nc); err != nil {
			return err
		}
		if nc.Name == "" {
			return fmt.Errorf("metadata.name: must be set")
		}
		m.nodeClaims = append(m.nodeClaims, sourced[*v1.NodeClaim]{where, nc})
	case "autoscaling.x-k8s.io/ProvisioningRequest":
		pr := &autoscalingv1.ProvisioningRequest{}
		if err := decodeStrict(js, pr); err != nil {
			return err
		}
		if pr.Namespace == "" {
			pr.Namespace = metav1.NamespaceDefault
		}
		m.requests = append(m.requests, sourced[*autoscalingv1.ProvisioningRequest]{where, pr})
	case "autoscaling.x-k8s.io/CapacityBuffer":
		cb, err := decodeBuffer(js)
		if err != nil {
			return err
		}
		m.buffers = append(m.buffers, sourced[*autoscalingv1beta1.CapacityBuffer]{where, cb})
	case "/Service":
		svc := &corev1.Service{}
		if err := decodeStrict(js, svc); err != nil {
			return err
		}
		if svc.Namespace == "" {
			svc.Namespace = metav1.NamespaceDefault
		}
		m.services = append(m.services, svc)
	case "/ResourceQuota":
		q := &corev1.ResourceQuota{}
		if err := decodeStrict(js, q); err != nil {
			return err
		}
		if q.Namespace == "" {
			q.Namespace = metav1.NamespaceDefault
		}
		if m.quotas == nil {
			m.quotas = map[string][]corev1.ResourceQuota{}
		}
		m.quotas[q.Namespace] = append(m.quotas[q.Namespace], *q)
	case "/PodTemplate":
		pt := &corev1.PodTemplate{}
		if err := decodeStrict(js, pt); err != nil {
			return err
		}
		if pt.Namespace == "" {
			pt.Namespace = metav1.NamespaceDefault
		}
		if m.podTemplates == nil {
			m.podTemplates = map[string]*corev1.PodTemplate{}
		}
		m.podTemplates[pt.Namespace+"/"+pt.Name] = pt
	case "policy/PodDisruptionBudget":
		pdb := &policyv1.PodDisruptionBudget{}
		if err := decodeStrict(js, pdb); err != nil {
			return err
		}
		if pdb.Namespace == "" {
			pdb.Namespace = metav1.NamespaceDefault
		}
		m.pdbs = append(m.pdbs, pdb)
	case "karpenter.k8s.aws/EC2NodeClass", "sim.joiner.dev/SimNodeClass":
		nc, err := decodeNodeClass(kind, js)
		if err != nil {
			return err
		}
		m.nodeClassRaw = append(m.nodeClassRaw, sourced[nodeClass]{where, nc})
	case "/Pod":
		p := &corev1.Pod{}
		if err := decodeStrict(js, p); err != nil {
			return err
		}
		if err := validatePod(p); err != nil {
			return err
		}
		m.pods = append(m.pods, sourced[*corev1.Pod]{where, p})
	case "apps/Deployment", "apps/ReplicaSet", "apps/StatefulSet", "batch/Job":
		w, err := decodeWorkload(kind, js)
		if err != nil {
			return err
		}
		m.workloads = append(m.workloads, sourced[workload]{where, w})
	case "apps/DaemonSet":
		ds := &appsv1.DaemonSet{}
		if err := decodeStrict(js, ds); err != nil {
			return err
		}
		if err := validateTemplate(ds.Name, &ds.Spec.Template); err != nil {
			return err
		}
		m.daemonSets = append(m.daemonSets, sourced[*appsv1.DaemonSet]{where, ds})
	case "/LimitRange":
		lr := &corev1.LimitRange{}
		if err := decodeStrict(js, lr); err != nil {
			return err
		}
		if lr.Namespace == "" {
			lr.Namespace = metav1.NamespaceDefault
		}
		if m.limitRanges == nil {
			m.limitRanges = map[string][]corev1.LimitRange{}
		}
		m.limitRanges[lr.Namespace] = append(m.limitRanges[lr.Namespace], *lr)
	case "/Node":
		n := &corev1.Node{}
		if err := decodeStrict(js, n); err != nil {
			return err
		}
		if n.Name == "" {
			return fmt.Errorf("metadata.name: must be set")
		}
		m.nodes = append(m.nodes, sourced[*corev1.Node]{where, n})
	case "resource.k8s.io/DeviceClass", "resource.k8s.io/ResourceClaim", "resource.k8s.io/ResourceClaimTemplate", "resource.k8s.io/ResourceSlice":
		return m.addDRA(apiVersion, kind, js)
	case "/Namespace":
		ns := &corev1.Namespace{}
		if err := decodeStrict(js, ns); err != nil {
			return err
		}
		if ns.Name == "" {
			return fmt.Errorf("metadata.name: must be set")
		}
		m.namespaces = append(m.namespaces, sourced[*corev1.Namespace]{where, ns})
	case "storage.k8s.io/CSINode":
		n := &storagev1.CSINode{}
		if err := decodeStrict(js, n); err != nil {
			return err
		}
		m.csiNodes = append(m.csiNodes, n)
	case "/PersistentVolumeClaim":
		pvc := &corev1.PersistentVolumeClaim{}
		if err := decodeStrict(js, pvc); err != nil {
			return err
		}
		if pvc.Namespace == "" {
			pvc.Namespace = metav1.NamespaceDefault
		}
		m.volumes.PersistentVolumeClaims = append(m.volumes.PersistentVolumeClaims, pvc)
	case "/PersistentVolume":
		pv := &corev1.PersistentVolume{}
		if err := decodeStrict(js, pv); err != nil {
			return err
		}
		m.volumes.PersistentVolumes = append(m.volumes.PersistentVolumes, pv)
	case "storage.k8s.io/StorageClass":
		sc := &storagev1.StorageClass{}
		if err := decodeStrict(js, sc); err != nil {
			return err
		}
		m.volumes.StorageClasses = append(m.volumes.StorageClasses, &scheduling.StorageClass{
			Name:                 sc.Name,
			Provisioner:          sc.Provisioner,
			WaitForFirstConsumer: sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer,
			AllowedTopologies:    sc.AllowedTopologies,
		})
	default:
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(js, &meta)
		name := meta.Metadata.Name
		if meta.Metadata.Namespace != "" {
			name = meta.Metadata.Namespace + "/" + name
		}
		m.Ignored = append(m.Ignored, kind+" "+name)
	}
	return nil
}

// workload is a controller whose replicas become pending pods.
type workload struct {
	kind     string
	meta     metav1.ObjectMeta
	replicas int32
	selector *metav1.LabelSelector
	template corev1.PodTemplateSpec
	// ordinals names pods name-0, name-1, ... (StatefulSets).
	ordinals bool
}

func decodeWorkload(kind string, js []byte) (workload, error) {
	w := workload{kind: kind}
	one := int32(1)
	var replicas *int32
	switch kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := decodeStrict(js, d); err != nil {
			return w, err
		}
		w.meta, replicas, w.selector, w.template = d.ObjectMeta, d.Spec.Replicas, d.Spec.Selector, d.Spec.Template
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		if err := decodeStrict(js, rs); err != nil {
			return w, err
		}
		w.meta, replicas, w.selector, w.template = rs.ObjectMeta, rs.Spec.Replicas, rs.Spec.Selector, rs.Spec.Template
	case "StatefulSet":
		ss := &appsv1.StatefulSet{}
		if err := decodeStrict(js, ss); err != nil {
			return w, err
		}
		w.meta, replicas, w.selector, w.template, w.ordinals = ss.ObjectMeta, ss.Spec.Replicas, ss.Spec.Selector, ss.Spec.Template, true
	case "Job":
		j := &batchv1.Job{}
		if err := decodeStrict(js, j); err != nil {
			return w, err
		}
		w.meta, w.selector, w.template = j.ObjectMeta, j.Spec.Selector, j.Spec.Template
		// Pods running at once: parallelism, but never more than the
		// completions still to go.
		par := one
		if j.Spec.Parallelism != nil {
			par = *j.Spec.Parallelism
		}
		if j.Spec.Completions != nil {
			par = min(par, max(0, *j.Spec.Completions-j.Status.Succeeded))
		}
		if j.Spec.Suspend != nil && *j.Spec.Suspend {
			par = 0
		}
		replicas = &par
		if par < 0 {
			return w, fmt.Errorf("spec.parallelism: must be >= 0, got %d", par)
		}
	}
	if w.meta.Name == "" {
		return w, fmt.Errorf("metadata.name: must be set")
	}
	if w.meta.Namespace == "" {
		w.meta.Namespace = metav1.NamespaceDefault
	}
	if w.meta.UID == "" {
		// Its pods name it by UID (their controller reference), which
		// kube-scheduler's default spread reads its selector by.
		w.meta.UID = types.UID("simulated/" + kind + "/" + w.meta.Namespace + "/" + w.meta.Name)
	}
	w.replicas = one
	if replicas != nil {
		w.replicas = *replicas
	}
	if w.replicas < 0 {
		return w, fmt.Errorf("spec.replicas: must be >= 0, got %d", w.replicas)
	}
	if err := validateTemplate(w.meta.Name, &w.template); err != nil {
		return w, err
	}
	if w.selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(w.selector); err != nil {
			return w, fmt.Errorf("spec.selector: %w", err)
		}
	}
	return w, nil
}

// validateTemplate checks a pod template as validatePod checks a pod,
// naming fields from the owner (spec.template.spec...).
func validateTemplate(owner string, t *corev1.PodTemplateSpec) error {
	p := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: t.Spec}
	p.Name = owner
	if err := validatePod(p); err != nil {
		return fmt.Errorf("spec.template.%w", err)
	}
	return nil
}

// nodeClass is what simulate reads from a node class: the zones it offers,
// for a SimNodeClass the catalog families, and for an EC2NodeClass the
// kubelet's maxPods.
type nodeClass struct {
	group, kind, name string
	zones             []string
	families          []string
	maxPods           int32
}

func decodeNodeClass(kind string, js []byte) (nodeClass, error) {
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			Zones   []string `json:"zones"`
			Catalog struct {
				InstanceFamilies []string `json:"instanceFamilies"`
			} `json:"catalog"`
			Kubelet *struct {
				MaxPods *int32 `json:"maxPods"`
			} `json:"kubelet"`
		} `json:"spec"`
		Status struct {
			Subnets []struct {
				Zone string `json:"zone"`
			} `json:"subnets"`
		} `json:"status"`
	}
	if err := json.Unmarshal(js, &obj); err != nil {
		return nodeClass{}, err
	}
	if obj.Metadata.Name == "" {
		return nodeClass{}, fmt.Errorf("metadata.name: must be set")
	}
	nc := nodeClass{kind: kind, name: obj.Metadata.Name}
	switch kind {
	case "SimNodeClass":
		nc.group = simv1alpha1.SchemeGroupVersion.Group
		nc.zones = obj.Spec.Zones
		if len(nc.zones) == 0 {
			nc.zones = simv1alpha1.DefaultZones
		}
		nc.families = obj.Spec.Catalog.InstanceFamilies
	case "EC2NodeClass":
		nc.group = "karpenter.k8s.aws"
		if k := obj.Spec.Kubelet; k != nil && k.MaxPods != nil {
			if *k.MaxPods < 0 {
				return nodeClass{}, fmt.Errorf("spec.kubelet.maxPods: must be >= 0, got %d", *k.MaxPods)
			}
			nc.maxPods = *k.MaxPods
		}
		for _, s := range obj.Status.Subnets {
			if s.Zone != "" && !slices.Contains(nc.zones, s.Zone) {
				nc.zones = append(nc.zones, s.Zone)
			}
		}
	}
	return nc, nil
}

// addDRA reads a resource.k8s.io/v1 object; earlier versions (v1beta1,
// v1beta2) have other shapes and are refused with the fix.
func (m *Manifests) addDRA(apiVersion, kind string, js []byte) error {
	if apiVersion != resourcev1.SchemeGroupVersion.String() {
		return fmt.Errorf("apiVersion %s: joiner reads %s %s objects only (Kubernetes 1.34 and later); dump them with kubectl get %s.%s",
			apiVersion, resourcev1.SchemeGroupVersion, kind, strings.ToLower(kind)+"s", resourcev1.SchemeGroupVersion.Version+"."+resourcev1.GroupName)
	}
	switch kind {
	case "DeviceClass":
		var o resourcev1.DeviceClass
		if err := decodeStrict(js, &o); err != nil {
			return err
		}
		m.dra.DeviceClasses = append(m.dra.DeviceClasses, o)
	case "ResourceClaim":
		var o resourcev1.ResourceClaim
		if err := decodeStrict(js, &o); err != nil {
			return err
		}
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		m.dra.Claims = append(m.dra.Claims, o)
	case "ResourceClaimTemplate":
		var o resourcev1.ResourceClaimTemplate
		if err := decodeStrict(js, &o); err != nil {
			return err
		}
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		m.dra.Templates = append(m.dra.Templates, o)
	case "ResourceSlice":
		var o resourcev1.ResourceSlice
		if err := decodeStrict(js, &o); err != nil {
			return err
		}
		m.dra.Slices = append(m.dra.Slices, o)
	}
	return nil
}
