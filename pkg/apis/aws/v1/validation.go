package v1

import (
	"errors"
	"fmt"
	"strings"
)

// ValidationReasonUnsupportedKubeletConfiguration is the
// ValidationSucceeded=False reason for an error from Validate.
const ValidationReasonUnsupportedKubeletConfiguration = "UnsupportedKubeletConfiguration"

// Validate reports what the CRD's rules cannot: the API server's CEL does
// not see kubelet fields the schema does not declare, so whether they suit
// the AMI family is checked here. It also repeats the registerWithTaints
// rule for objects built in Go, which never met the API server. The
// nodeclass controller calls it and reports an error as
// ValidationSucceeded=False with reason
// ValidationReasonUnsupportedKubeletConfiguration; nil means nothing to
// report.
func (in *EC2NodeClass) Validate() error {
	k := in.Spec.Kubelet
	if k == nil {
		return nil
	}
	var errs []error
	if len(k.RegisterWithTaints) != 0 {
		errs = append(errs, errors.New("spec.kubelet.registerWithTaints: joiner sets the taints nodes register with; remove it and use the NodePool's spec.template.spec.taints or startupTaints instead"))
	}
	var extra, clashing []string
	for _, name := range k.ExtraFieldNames() {
		if IsTypedKubeletField(name) {
			clashing = append(clashing, name)
			continue
		}
		extra = append(extra, name)
	}
	if len(clashing) != 0 {
		errs = append(errs, fmt.Errorf("spec.kubelet: Extra holds %s, which KubeletConfiguration types; set the typed field instead", strings.Join(clashing, ", ")))
	}
	if family := in.AMIFamily(); len(extra) != 0 && family != AMIFamilyAL2023 {
		errs = append(errs, fmt.Errorf("spec.kubelet: %s can only be passed to the kubelet on AL2023 (nodeadm takes the whole configuration), and this EC2NodeClass uses %s; remove them, keep to the fields every family supports (%s), or use AL2023",
			strings.Join(extra, ", "), familyName(family), strings.Join(portableKubeletFields(), ", ")))
	}
	return errors.Join(errs...)
}

func familyName(family string) string {
	if family == "" {
		return "no AMI family"
	}
	return "amiFamily " + family
}

// portableKubeletFields are the typed fields every AMI family passes to the
// kubelet, in declaration order.
func portableKubeletFields() []string {
	var names []string
	for _, name := range kubeletTypedFieldOrder {
		if name != "registerWithTaints" {
			names = append(names, name)
		}
	}
	return names
}
