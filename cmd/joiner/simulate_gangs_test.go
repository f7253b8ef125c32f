package main

import (
	"bytes"
	"strings"
	"testing"
)

// A ProvisioningRequest in the input is planned as one unit: a gang that
// fits says how many nodes launch all or none, one that cannot says that
// nothing launches and why, a check-capacity request is answered on the
// existing capacity alone, and the pod consuming a served request is left
// out of the ordinary plan.
func TestSimulateProvisioningRequests(t *testing.T) {
	in := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: trainer, namespace: ml}
template:
  spec:
    nodeSelector: {node.kubernetes.io/instance-type: g4dn.xlarge}
    containers: [{name: t, image: i, resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]
---
apiVersion: v1
kind: PodTemplate
metadata: {name: huge, namespace: ml}
template:
  spec:
    containers: [{name: t, image: i, resources: {requests: {cpu: "5000"}}}]
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: train, namespace: ml}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets: [{podTemplateRef: {name: trainer}, count: 6}]
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: too-big, namespace: ml}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets: [{podTemplateRef: {name: huge}, count: 2}]
---
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata: {name: check, namespace: ml}
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  podSets: [{podTemplateRef: {name: trainer}, count: 1}]
---
apiVersion: v1
kind: Pod
metadata: {name: train-0, namespace: ml, annotations: {autoscaling.x-k8s.io/consume-provisioning-request: train}}
spec: {containers: [{name: t, image: i, resources: {requests: {cpu: "1"}}}]}
`
	// The real solver: the gang's plan is the point.
	cmd := newRootCommand()
	var buf bytes.Buffer
	cmd.SetOut(&buf)
	cmd.SetErr(&buf)
	cmd.SetIn(strings.NewReader(in))
	cmd.SetArgs([]string{"simulate", "-f", "-"})
	err := cmd.Execute()
	out := buf.String()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ProvisioningRequest ml/train (best-effort-atomic-scale-up.autoscaling.x-k8s.io, 6 pods): provisioned as one unit: 6 new nodes (6× g4dn.xlarge, cheapest options), launched all or none",
		"ProvisioningRequest ml/too-big (best-effort-atomic-scale-up.autoscaling.x-k8s.io, 2 pods): not provisioned: 2 of the request's 2 pods fit nowhere",
		"ProvisioningRequest ml/check (check-capacity.autoscaling.x-k8s.io, 1 pod): not provisioned: 1 of the request's 1 pods fit nowhere in the existing capacity",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "train-0") {
		t.Errorf("the pod consuming a served request was planned one by one:\n%s", out)
	}
}
