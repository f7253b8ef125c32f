package v1

import (
	"fmt"
	"strings"

	karpv1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// AMI families. The family decides the user data format, the default block
// devices and which kubelet settings apply.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// AMIFamilies lists every family accepted in spec.amiFamily.
var AMIFamilies = []string{
	AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket,
	AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025,
	AMIFamilyCustom,
}

// AliasVersionLatest is the alias version that tracks the newest release.
const AliasVersionLatest = "latest"

// aliasFamilies maps the family part of an alias to the AMI family. Custom
// has no alias: a custom image is selected by id, name, tags or SSM.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// Alias is a parsed amiSelectorTerms alias such as al2023@v20240807.
type Alias struct {
	// Family is the AMI family the alias names, e.g. AL2023.
	Family string
	// Version is the release, or "latest".
	Version string
}

// String formats the alias back as family@version, with the family in the
// lower-case form aliases use.
func (a Alias) String() string {
	return strings.ToLower(a.Family) + "@" + a.Version
}

// ParseAlias parses family@version. It applies the same rules as the CRD's
// CEL validation, so objects admitted by the API server always parse.
func ParseAlias(s string) (Alias, error) {
	family, version, ok := strings.Cut(s, "@")
	if !ok || family == "" || version == "" || strings.Contains(version, "@") {
		return Alias{}, fmt.Errorf("alias %q: want family@version, for example al2023@latest", s)
	}
	for i, r := range version {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			return Alias{}, fmt.Errorf("alias %q: version may only hold letters, digits, '.', '_' and '-' and must start with a letter or digit", s)
		}
	}
	f, ok := aliasFamilies[family]
	if !ok {
		return Alias{}, fmt.Errorf("alias %q: unknown family %q", s, family)
	}
	if IsWindows(f) && version != AliasVersionLatest {
		return Alias{}, fmt.Errorf("alias %q: Windows aliases only support %s", s, AliasVersionLatest)
	}
	return Alias{Family: f, Version: version}, nil
}

// IsWindows reports whether family is one of the Windows families.
func IsWindows(family string) bool {
	return strings.HasPrefix(family, "Windows")
}

// Alias returns the parsed alias of the EC2NodeClass's amiSelectorTerms, or
// nil when the terms use no alias (or the alias does not parse).
func (in *EC2NodeClass) Alias() *Alias {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		a, err := ParseAlias(term.Alias)
		if err != nil {
			return nil
		}
		return &a
	}
	return nil
}

// AMIFamily is the resolved AMI family: spec.amiFamily when set, otherwise
// the family of the alias term. CEL cannot default one field from another,
// so every consumer reads the family through this method. An object with
// neither (which the CRD rejects) resolves to Custom, the family that
// assumes nothing about the image.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil && *in.Spec.AMIFamily != "" {
		return *in.Spec.AMIFamily
	}
	if a := in.Alias(); a != nil {
		return a.Family
	}
	return AMIFamilyCustom
}

// RestrictedTagKeys are the tag keys joiner writes itself and so rejects in
// spec.tags; a key with RestrictedTagKeyPrefix is rejected too.
var RestrictedTagKeys = []string{
	TagEKSClusterName,
	karpv1.LabelNodePool,
	TagNodeClaim,
	karpv1.LabelAWSEC2NodeClass,
}

// Tag keys joiner writes on AWS resources besides the NodePool and
// EC2NodeClass ones (which share their names with the labels).
const (
	// TagEKSClusterName holds the cluster name; it is the ownership filter
	// for instances and launch templates.
	TagEKSClusterName = "eks:eks-cluster-name"
	// TagNodeClaim holds the NodeClaim name, added after registration.
	TagNodeClaim = karpv1.TagNodeClaim
	// TagName is EC2's display name tag, set to the Node name.
	TagName = "Name"
)

// RestrictedTagKeyPrefix is the prefix of the cluster ownership tag
// kubernetes.io/cluster/<cluster-name>.
const RestrictedTagKeyPrefix = "kubernetes.io/cluster"

// ValidateTagKey returns an error when key may not be used in spec.tags. It
// mirrors the CRD rules for callers that build tags in Go.
func ValidateTagKey(key string) error {
	if key == "" {
		return fmt.Errorf("tag key must not be empty")
	}
	if strings.HasPrefix(key, RestrictedTagKeyPrefix) {
		return fmt.Errorf("tag key %q is restricted: keys starting with %s are set by joiner", key, RestrictedTagKeyPrefix)
	}
	for _, k := range RestrictedTagKeys {
		if key == k {
			return fmt.Errorf("tag key %q is restricted: it is set by joiner", key)
		}
	}
	return nil
}
