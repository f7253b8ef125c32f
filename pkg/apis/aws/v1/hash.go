package v1

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Static drift of an EC2NodeClass: NodeClaims launched from it carry the
// hash of the fields that only take effect at launch; when the current hash
// differs (and the hash versions agree) the NodeClaim has NodeClassDrift.
const (
	// AnnotationEC2NodeClassHash holds Hash() on the EC2NodeClass and on
	// each NodeClaim launched from it.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion holds EC2NodeClassHashVersion next
	// to the hash.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// EC2NodeClassHashVersion names the hash algorithm. It deliberately
	// differs from Karpenter's versions: NodeClaims launched by Karpenter
	// carry Karpenter's hash, which joiner cannot reproduce, so on a
	// version mismatch joiner re-stamps the NodeClaim with its own hash
	// instead of calling it drifted. Bump it whenever the hashed fields or
	// their defaults change.
	EC2NodeClassHashVersion = "joiner-v1"
)

// hashedSpec is the part of the spec that Hash covers. Selector terms are
// left out (their resolution is checked dynamically: AMIDrift, SubnetDrift,
// SecurityGroupDrift, CapacityReservationDrift) and so is ipPrefixCount;
// amiFamily is replaced by the resolved family so that adding amiFamily:
// AL2023 next to an al2023 alias does not drift anything. The kubelet's
// extra (untyped) fields are hashed with the typed ones.
//
// Fields are added here with omitempty: an object that does not set a new
// field keeps the hash it had before the field existed, so adding
// networkInterfaces, connectionTracking and cpuOptions did not need a new
// EC2NodeClassHashVersion.
type hashedSpec struct {
	AMIFamily                string                  `json:"amiFamily"`
	PlacementGroupSelector   *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	AssociatePublicIPAddress *bool                   `json:"associatePublicIPAddress,omitempty"`
	UserData                 *string                 `json:"userData,omitempty"`
	Role                     string                  `json:"role,omitempty"`
	InstanceProfile          *string                 `json:"instanceProfile,omitempty"`
	Tags                     map[string]string       `json:"tags,omitempty"`
	Kubelet                  *KubeletConfiguration   `json:"kubelet,omitempty"`
	BlockDeviceMappings      []*BlockDeviceMapping   `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy      *InstanceStorePolicy    `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring       *bool                   `json:"detailedMonitoring,omitempty"`
	MetadataOptions          *MetadataOptions        `json:"metadataOptions,omitempty"`
	Context                  *string                 `json:"context,omitempty"`
	NetworkInterfaces        []NetworkInterface      `json:"networkInterfaces,omitempty"`
	ConnectionTracking       *ConnectionTracking     `json:"connectionTracking,omitempty"`
	CPUOptions               *CPUOptions             `json:"cpuOptions,omitempty"`
}

// Hash returns the static drift hash of the EC2NodeClass (see
// AnnotationEC2NodeClassHash): FNV-64a over the canonical JSON of the
// launch-time fields. Map order never matters; list order does.
func (in *EC2NodeClass) Hash() string {
	s := in.Spec
	b, err := json.Marshal(hashedSpec{
		AMIFamily:                in.AMIFamily(),
		PlacementGroupSelector:   s.PlacementGroupSelector,
		AssociatePublicIPAddress: s.AssociatePublicIPAddress,
		UserData:                 s.UserData,
		Role:                     s.Role,
		InstanceProfile:          s.InstanceProfile,
		Tags:                     s.Tags,
		Kubelet:                  hashableKubelet(s.Kubelet),
		BlockDeviceMappings:      s.BlockDeviceMappings,
		InstanceStorePolicy:      s.InstanceStorePolicy,
		DetailedMonitoring:       s.DetailedMonitoring,
		MetadataOptions:          s.MetadataOptions,
		Context:                  s.Context,
		NetworkInterfaces:        s.NetworkInterfaces,
		ConnectionTracking:       s.ConnectionTracking,
		CPUOptions:               s.CPUOptions,
	})
	if err != nil {
		// Every field is a plain value, map or pointer, and the kubelet's
		// extra fields hold valid JSON: Marshal cannot fail.
		panic(err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}

// hashableKubelet returns k with its extra fields in canonical JSON
// (object keys sorted, no spaces, numbers as written), so the same
// configuration always hashes the same. An extra field that is not valid
// JSON (possible only in objects built in Go) is hashed as a JSON string of
// its bytes, so that Hash never fails.
func hashableKubelet(k *KubeletConfiguration) *KubeletConfiguration {
	if k == nil || len(k.Extra) == 0 {
		return k
	}
	out := k.DeepCopy()
	for name, value := range k.Extra {
		out.Extra[name] = apiextensionsv1.JSON{Raw: canonicalJSON(value.Raw)}
	}
	return out
}

func canonicalJSON(raw []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil && !d.More() {
		if b, err := json.Marshal(v); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(string(raw))
	return b
}
