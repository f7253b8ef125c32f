package v1

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Runtime validation: what the CRD schema and CEL rules cannot check (or
// cannot afford to), run by the NodePool validation controller, which sets
// ValidationSucceeded=False with the errors. Objects rejected here were
// accepted by the apiserver, so every check must tolerate anything the
// schema lets through.

// wellKnownValues are the only valid values of some well-known labels.
var wellKnownValues = map[string]sets.Set[string]{
	LabelCapacityType: CapacityTypes,
}

// supportedOperators are the requirement operators joiner understands.
var supportedOperators = sets.New(
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
	corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
	corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	NodeSelectorOpGte, NodeSelectorOpLte,
)

// RuntimeValidate returns every problem with the NodePool that the
// apiserver did not reject, as field-path errors.
func (in *NodePool) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec")
	tmpl := spec.Child("template")
	var errs field.ErrorList
	errs = append(errs, validateTemplateLabels(in.Spec.Template.ObjectMeta.Labels, tmpl.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(in.Spec.Template.ObjectMeta.Annotations, tmpl.Child("metadata", "annotations"))...)
	errs = append(errs, in.Spec.Template.Spec.validate(tmpl.Child("spec"), true)...)
	errs = append(errs, in.Spec.Disruption.validate(spec.Child("disruption"))...)
	return errs
}

// RuntimeValidate returns every problem with the NodeClaim's spec that the
// apiserver did not reject, as field-path errors.
func (in *NodeClaim) RuntimeValidate() field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateTaints(in.Spec.Taints, in.Spec.StartupTaints, spec)...)
	errs = append(errs, validateRequirements(in.Spec.Requirements, spec.Child("requirements"), false)...)
	errs = append(errs, validateNodeClassRef(in.Spec.NodeClassRef, spec.Child("nodeClassRef"))...)
	return errs
}

func (in *NodeClaimTemplateSpec) validate(path *field.Path, nodePool bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateTaints(in.Taints, in.StartupTaints, path)...)
	errs = append(errs, validateRequirements(in.Requirements, path.Child("requirements"), nodePool)...)
	errs = append(errs, validateNodeClassRef(in.NodeClassRef, path.Child("nodeClassRef"))...)
	return errs
}

func validateTemplateLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, key := range sets.List(sets.KeySet(labels)) {
		value := labels[key]
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(path.Key(key), key, "label key "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(value) {
			errs = append(errs, field.Invalid(path.Key(key), value, "label value "+msg))
		}
		if restricted, why := IsRestrictedLabel(key); restricted {
			errs = append(errs, field.Forbidden(path.Key(key), fmt.Sprintf("label %q is restricted: %s", key, why)))
		}
		if valid, ok := wellKnownValues[key]; ok && !valid.Has(value) {
			errs = append(errs, field.NotSupported(path.Key(key), value, sets.List(valid)))
		}
	}
	return errs
}

// validateTaints checks each taint and that no key+effect pair appears twice
// across taints and startup taints (a node cannot hold both).
func validateTaints(taints, startupTaints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]*field.Path{}
	for _, list := range []struct {
		taints []corev1.Taint
		path   *field.Path
	}{{taints, path.Child("taints")}, {startupTaints, path.Child("startupTaints")}} {
		for i, t := range list.taints {
			p := list.path.Index(i)
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
			if t.Value != "" {
				for _, msg := range validation.IsValidLabelValue(t.Value) {
					errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
				}
			}
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
					[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
			}
			ke := keyEffect{t.Key, t.Effect}
			if first, dup := seen[ke]; dup {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("taint %s:%s is already set at %s; remove one of them", t.Key, t.Effect, first)))
				continue
			}
			seen[ke] = p
		}
	}
	return errs
}

func validateRequirements(reqs []NodeSelectorRequirementWithMinValues, path *field.Path, nodePool bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range reqs {
		errs = append(errs, r.validate(path.Index(i), nodePool)...)
	}
	return errs
}

func (r *NodeSelectorRequirementWithMinValues) validate(path *field.Path, nodePool bool) field.ErrorList {
	var errs field.ErrorList
	key := NormalizeLabel(r.Key)
	for _, msg := range validation.IsQualifiedName(r.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), r.Key, msg))
	}
	// Restriction is judged on the key as written, like the CEL rules do:
	// deprecated aliases (beta.kubernetes.io/arch) are not well known.
	if restricted, why := IsRestrictedLabel(r.Key); restricted && (nodePool || r.Key != LabelNodePool) {
		errs = append(errs, field.Forbidden(path.Child("key"), fmt.Sprintf("requirement key %q is restricted: %s", r.Key, why)))
	}
	if !supportedOperators.Has(r.Operator) {
		errs = append(errs, field.NotSupported(path.Child("operator"), r.Operator, sets.List(supportedOperators)))
	}
	for j, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(path.Child("values").Index(j), v, msg))
		}
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(path.Child("values"), "operator In needs at least one value"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			errs = append(errs, field.Forbidden(path.Child("values"), fmt.Sprintf("operator %s takes no values", r.Operator)))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if len(r.Values) != 1 {
			errs = append(errs, field.Invalid(path.Child("values"), r.Values, fmt.Sprintf("operator %s needs exactly one value", r.Operator)))
		} else if n, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil || n < 0 {
			errs = append(errs, field.Invalid(path.Child("values").Index(0), r.Values[0], fmt.Sprintf("operator %s needs a non-negative integer", r.Operator)))
		}
	}
	valid, wellKnown := wellKnownValues[key]
	if wellKnown && r.Operator == corev1.NodeSelectorOpIn {
		for j, v := range r.Values {
			if !valid.Has(v) {
				errs = append(errs, field.NotSupported(path.Child("values").Index(j), v, sets.List(valid)))
			}
		}
	}
	if r.MinValues != nil {
		errs = append(errs, r.validateMinValues(path, valid, wellKnown)...)
	}
	return errs
}

// validateMinValues checks that minValues can be met at all: by the listed
// values for In, and by the remaining valid values of a well-known label for
// NotIn/Exists.
func (r *NodeSelectorRequirementWithMinValues) validateMinValues(path *field.Path, valid sets.Set[string], wellKnown bool) field.ErrorList {
	min := *r.MinValues
	p := path.Child("minValues")
	if min < 1 || min > 50 {
		return field.ErrorList{field.Invalid(p, min, "minValues must be between 1 and 50")}
	}
	available := -1 // unknown: any number of values may exist
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		values := sets.New(r.Values...)
		if wellKnown {
			values = values.Intersection(valid)
		}
		available = values.Len()
	case corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists:
		if wellKnown {
			available = valid.Difference(sets.New(r.Values...)).Len()
		}
	case corev1.NodeSelectorOpDoesNotExist:
		available = 0
	}
	if available >= 0 && available < min {
		return field.ErrorList{field.Invalid(p, min, fmt.Sprintf("minValues %d cannot be met: requirement %q %s allows only %d distinct valid values", min, r.Key, r.Operator, available))}
	}
	return nil
}

func validateNodeClassRef(ref *NodeClassReference, path *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(path, "nodeClassRef names the node class to launch with")}
	}
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"group", ref.Group}, {"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(path.Child(f.name), ""))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
		if ref.Group != "" {
			errs = append(errs, field.Invalid(path.Child("group"), ref.Group, msg))
		}
	}
	return errs
}

func (d *Disruption) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range d.Budgets {
		errs = append(errs, d.Budgets[i].validate(path.Child("budgets").Index(i))...)
	}
	return errs
}

func (b *Budget) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := b.nodes(100); err != nil {
		errs = append(errs, field.Invalid(path.Child("nodes"), b.Nodes, err.Error()))
	}
	if (b.Schedule == nil) != (b.Duration == nil) {
		errs = append(errs, field.Invalid(path, b, "schedule and duration must be set together"))
	}
	if b.Schedule != nil {
		if _, err := parseSchedule(*b.Schedule); err != nil {
			errs = append(errs, field.Invalid(path.Child("schedule"), *b.Schedule, err.Error()))
		}
	}
	return errs
}
