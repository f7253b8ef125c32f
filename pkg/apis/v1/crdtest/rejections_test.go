package crdtest

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joiner-dev/joiner/pkg/test"
)

type mutation = func(t *testing.T, u *unstructured.Unstructured)

// TestInvalidObjectsAreRejected creates objects the apiserver must refuse
// and asserts the message the user would read.
func TestInvalidObjectsAreRejected(t *testing.T) {
	manyBudgets := strings.Repeat("- nodes: \"1\"\n", 51)
	manyLabels := ""
	for i := range 101 {
		manyLabels += fmt.Sprintf("l%d: x\n", i)
	}
	for _, tc := range []struct {
		name     string
		manifest string
		mutate   []mutation
		want     string
	}{
		// Requirement keys.
		{name: "requirement on hostname", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("kubernetes.io/hostname", "In", "a"))},
			want:   `requirement key "kubernetes.io/hostname" is restricted`},
		{name: "requirement on nodepool", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.sh/nodepool", "In", "a"))},
			want:   `key "karpenter.sh/nodepool" is restricted`},
		{name: "requirement in karpenter.sh domain", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.sh/team", "In", "a"))},
			want:   `requirement key "karpenter.sh/team" is restricted: the karpenter.sh domain only allows karpenter.sh/capacity-type`},
		{name: "requirement in a karpenter.sh subdomain", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("x.karpenter.sh/team", "Exists"))},
			want:   `requirement key "x.karpenter.sh/team" is restricted`},
		{name: "requirement in kubernetes.io domain", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("node-role.kubernetes.io/worker", "Exists"))},
			want:   `requirement key "node-role.kubernetes.io/worker" is restricted: the kubernetes.io and k8s.io domains`},
		{name: "requirement in k8s.io domain", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("example.k8s.io/thing", "Exists"))},
			want:   `requirement key "example.k8s.io/thing" is restricted`},
		{name: "requirement on unknown aws label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.k8s.aws/instance-colour", "In", "red"))},
			want:   `requirement key "karpenter.k8s.aws/instance-colour" is restricted: the karpenter.k8s.aws domain only allows the well-known instance-type labels`},
		{name: "requirement key not a qualified name", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("bad key", "Exists"))},
			want:   `spec.template.spec.requirements[0].key: Invalid value: "bad key": spec.template.spec.requirements[0].key in body should match`},
		{name: "requirement key too long", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement(strings.Repeat("a", 317), "Exists"))},
			want:   `spec.template.spec.requirements[0].key: Too long: may not be more than 316 bytes`},
		// Requirement operators and values.
		{name: "unknown operator", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("example.com/a", "Near", "1"))},
			want:   `spec.template.spec.requirements[0].operator: Unsupported value: "Near"`},
		{name: "In without values", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("example.com/a", "In"))},
			want:   `requirement "example.com/a": operator In needs at least one value`},
		{name: "Gt with two values", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.k8s.aws/instance-cpu", "Gt", "1", "2"))},
			want:   `requirement "karpenter.k8s.aws/instance-cpu": operator Gt needs exactly one value, a non-negative integer`},
		{name: "Lte with a non-integer", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.k8s.aws/instance-memory", "Lte", "lots"))},
			want:   `operator Lte needs exactly one value, a non-negative integer`},
		{name: "Lt without values", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("karpenter.k8s.aws/instance-memory", "Lt"))},
			want:   `operator Lt needs exactly one value`},
		{name: "value too long", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirement("example.com/a", "In", strings.Repeat("v", 64)))},
			want:   `spec.template.spec.requirements[0].values[0]: Too long: may not be more than 63 bytes`},
		{name: "In with fewer values than minValues", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirementWithMinValues("karpenter.k8s.aws/instance-family", "In", 3, "m5", "c5"))},
			want:   `operator In with minValues needs at least minValues values`},
		{name: "minValues above 50", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirementWithMinValues("karpenter.k8s.aws/instance-family", "Exists", 51))},
			want:   `spec.template.spec.requirements[0].minValues: Invalid value: 51: spec.template.spec.requirements[0].minValues in body should be less than or equal to 50`},
		{name: "minValues below 1", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.requirements", requirementWithMinValues("karpenter.k8s.aws/instance-family", "Exists", -1))},
			want:   `minValues in body should be greater than or equal to 1`},
		// Told what to write, not a bare "Required value".
		{name: "requirements missing", manifest: validNodePool,
			mutate: []mutation{unset("spec.template.spec.requirements")},
			want:   `spec.template.spec.requirements is required: list what a node may be, for example [{key: kubernetes.io/arch, operator: In, values: [amd64]}]`},
		// Template labels.
		{name: "hostname label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{kubernetes.io/hostname: a}`)},
			want:   `label "kubernetes.io/hostname" is restricted (the kubelet sets it)`},
		{name: "nodepool label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{karpenter.sh/nodepool: a}`)},
			want:   `label "karpenter.sh/nodepool" is restricted (joiner sets it`},
		{name: "karpenter.sh label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{karpenter.sh/do-not-sync-taints: "true"}`)},
			want:   `label "karpenter.sh/do-not-sync-taints" is restricted: the karpenter.sh domain only allows karpenter.sh/capacity-type`},
		{name: "kubernetes.io label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{topology.kubernetes.io/rack: r1}`)},
			want:   `label "topology.kubernetes.io/rack" is restricted: the kubernetes.io and k8s.io domains`},
		{name: "unknown aws label", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{karpenter.k8s.aws/team: a}`)},
			want:   `label "karpenter.k8s.aws/team" is restricted: the karpenter.k8s.aws domain`},
		{name: "label key not a qualified name", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{"a/b/c": x}`)},
			want:   `key "a/b/c" is not a qualified name`},
		{name: "label value too long", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", `{team: `+strings.Repeat("x", 64)+`}`)},
			want:   `the value of "team" is longer than 63 characters`},
		{name: "too many labels", manifest: validNodePool,
			mutate: []mutation{set("spec.template.metadata.labels", manyLabels)},
			want:   `spec.template.metadata.labels: Too many: 101: must have at most 100 items`},
		// Taints.
		{name: "taint effect", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.taints", `[{key: dedicated, effect: Sometimes}]`)},
			want:   `spec.template.spec.taints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute`},
		{name: "startup taint effect", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.startupTaints", `[{key: agent-not-ready, effect: NoRun}]`)},
			want:   `spec.template.spec.startupTaints: effect must be one of`},
		{name: "taint without key", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.taints", `[{key: "", effect: NoSchedule}]`)},
			want:   `spec.template.spec.taints: each taint needs a non-empty key`},
		// Durations.
		{name: "expireAfter in days", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.expireAfter", `30d`)},
			want:   `spec.template.spec.expireAfter: Invalid value: "30d": spec.template.spec.expireAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'`},
		{name: "terminationGracePeriod Never", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.terminationGracePeriod", `Never`)},
			want:   `spec.template.spec.terminationGracePeriod in body should match '^([0-9]+(s|m|h))+$'`},
		{name: "consolidateAfter empty", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption", `{consolidateAfter: ""}`)},
			want:   `spec.disruption.consolidateAfter in body should match`},
		// Disruption.
		{name: "unknown consolidation policy", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption", `{consolidationPolicy: WhenUnderutilized}`)},
			want:   `spec.disruption.consolidationPolicy: Unsupported value: "WhenUnderutilized"`},
		{name: "budget percentage over 100", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "101%"}]`)},
			want:   `spec.disruption.budgets[0].nodes in body should match`},
		{name: "budget nodes not a number", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "all"}]`)},
			want:   `spec.disruption.budgets[0].nodes in body should match`},
		{name: "budget schedule without duration", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", schedule: "@daily"}]`)},
			want:   `spec.disruption.budgets: schedule and duration must be set together`},
		{name: "budget duration without schedule", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", duration: 1h}]`)},
			want:   `schedule and duration must be set together`},
		{name: "budget schedule not cron", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", schedule: "every day", duration: 1h}]`)},
			want:   `spec.disruption.budgets[0].schedule in body should match`},
		{name: "budget schedule with a minute out of range", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", schedule: "61 9 * * *", duration: 1h}]`)},
			want:   `spec.disruption.budgets[0].schedule: Invalid value: "61 9 * * *": spec.disruption.budgets[].schedule: "61 9 * * *" is not a valid cron schedule`},
		{name: "budget schedule with an unknown weekday", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", schedule: "0 9 * * funday", duration: 1h}]`)},
			want:   `"0 9 * * funday" is not a valid cron schedule`},
		{name: "budget duration in seconds", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "0", schedule: "@daily", duration: 30s}]`)},
			want:   `spec.disruption.budgets[0].duration in body should match`},
		{name: "budget reason", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", `[{nodes: "1", reasons: [Expired]}]`)},
			want:   `spec.disruption.budgets[0].reasons[0]: Unsupported value: "Expired"`},
		{name: "too many budgets", manifest: validNodePool,
			mutate: []mutation{set("spec.disruption.budgets", manyBudgets)},
			want:   `spec.disruption.budgets: Too many: 51: must have at most 50 items`},
		// Weight.
		// NodeOverlays.
		{name: "overlay with price and priceAdjustment", manifest: validNodeOverlay,
			mutate: []mutation{set("spec.price", `"0.5"`)},
			want:   `spec: set either price or priceAdjustment, not both`},
		{name: "overlay on cpu capacity", manifest: validNodeOverlay,
			mutate: []mutation{unset("spec.priceAdjustment"), set("spec.capacity", `{cpu: "4"}`)},
			want:   `spec.capacity: cpu, memory, ephemeral-storage and pods cannot be overlaid`},
		{name: "overlay price adjustment below -100%", manifest: validNodeOverlay,
			mutate: []mutation{set("spec.priceAdjustment", `"-150%"`)},
			want:   `spec.priceAdjustment in body should match`},
		{name: "overlay In without values", manifest: validNodeOverlay,
			mutate: []mutation{set("spec.requirements", `[{key: a, operator: In}]`)},
			want:   `spec.requirements: operator In needs at least one value`},
		{name: "overlay Gt with a word", manifest: validNodeOverlay,
			mutate: []mutation{set("spec.requirements", `[{key: a, operator: Gt, values: [many]}]`)},
			want:   `operators Gt, Lt, Gte and Lte need exactly one non-negative integer value`},
		{name: "overlay weight over 10000", manifest: validNodeOverlay,
			mutate: []mutation{set("spec.weight", `10001`)},
			want:   `spec.weight in body should be less than or equal to 10000`},
		// Static NodePools (spec.replicas).
		{name: "static nodepool with weight", manifest: validNodePool,
			mutate: []mutation{set("spec.replicas", `3`), set("spec.weight", `10`)},
			want:   `spec.weight: weight is not supported on static NodePools`},
		{name: "static nodepool with a cpu limit", manifest: validNodePool,
			mutate: []mutation{set("spec.replicas", `3`), set("spec.limits", `{cpu: "100", nodes: "5"}`)},
			want:   `spec.limits: only limits.nodes is supported on static NodePools`},
		{name: "negative replicas", manifest: validNodePool,
			mutate: []mutation{set("spec.replicas", `-1`)},
			want:   `spec.replicas in body should be greater than or equal to 0`},
		{name: "weight zero", manifest: validNodePool,
			mutate: []mutation{set("spec.weight", `0`)},
			want:   `spec.weight in body should be greater than or equal to 1`},
		{name: "weight over 100", manifest: validNodePool,
			mutate: []mutation{set("spec.weight", `101`)},
			want:   `spec.weight in body should be less than or equal to 100`},
		// nodeClassRef.
		{name: "nodeClassRef missing", manifest: validNodePool,
			mutate: []mutation{unset("spec.template.spec.nodeClassRef")},
			want:   `spec.template.spec.nodeClassRef: Required value`},
		{name: "nodeClassRef empty group", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.nodeClassRef.group", `""`)},
			want:   `nodeClassRef.group may not be empty`},
		{name: "nodeClassRef empty kind", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.nodeClassRef.kind", `""`)},
			want:   `nodeClassRef.kind may not be empty`},
		{name: "nodeClassRef empty name", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.nodeClassRef.name", `""`)},
			want:   `nodeClassRef.name may not be empty`},
		{name: "nodeClassRef group with version", manifest: validNodePool,
			mutate: []mutation{set("spec.template.spec.nodeClassRef.group", `karpenter.k8s.aws/v1`)},
			want:   `nodeClassRef.group "karpenter.k8s.aws/v1" must be an API group without a version`},
		// NodeClaim.
		{name: "nodeclaim requirement on hostname", manifest: validNodeClaim,
			mutate: []mutation{set("spec.requirements", requirement("kubernetes.io/hostname", "In", "a"))},
			want:   `requirement key "kubernetes.io/hostname" is restricted`},
		{name: "nodeclaim Gte with a fraction", manifest: validNodeClaim,
			mutate: []mutation{set("spec.requirements", requirement("karpenter.k8s.aws/instance-cpu", "Gte", "1.5"))},
			want:   `operator Gte needs exactly one value, a non-negative integer`},
		{name: "nodeclaim without nodeClassRef", manifest: validNodeClaim,
			mutate: []mutation{unset("spec.nodeClassRef")},
			want:   `spec.nodeClassRef: Required value`},
		{name: "nodeclaim taint effect", manifest: validNodeClaim,
			mutate: []mutation{set("spec.taints", `[{key: a, effect: Bad}]`)},
			want:   `spec.taints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute`},
		{name: "nodeclaim expireAfter", manifest: validNodeClaim,
			mutate: []mutation{set("spec.expireAfter", `forever`)},
			want:   `spec.expireAfter in body should match`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, tc.manifest, test.Name(t, "x"))
			for _, m := range tc.mutate {
				m(t, u)
			}
			err := test.Env(t).Client.Create(t.Context(), u)
			if err == nil {
				t.Fatalf("created an invalid %s; want an error containing %q", u.GetKind(), tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not contain %q:\n%v", tc.want, err)
			}
		})
	}
}
