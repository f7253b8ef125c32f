package doctor

import (
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
)

// AWSInputs is what Gather read from the AWS account.
type AWSInputs struct {
	// NodeRoles are each EC2NodeClass's node role ARN (from spec.role or
	// spec.instanceProfile), by NodeClass name.
	NodeRoles map[string]string
	// AccessEntries are the principal ARNs of the cluster's EKS access
	// entries; AccessEntriesUnknown says why they could not be read (the
	// check then judges by aws-auth alone and says so).
	AccessEntries        []string
	AccessEntriesUnknown string
	// AuthMode is the cluster's EKS authenticationMode ("" when unknown:
	// aws-auth and access entries both count).
	AuthMode ekstypes.AuthenticationMode
	// Subnets are the subnets in the NodeClasses' status.
	Subnets []ec2types.Subnet
	// Instances are the live instances tagged
	// eks:eks-cluster-name=<ClusterName>.
	Instances []ec2types.Instance
	// Skipped are the checks Gather could not feed, with why.
	Skipped []string
}

// checkNodeRole: seed 001, a node role neither aws-auth nor an EKS access
// entry maps is refused by the API server and its nodes never register.
// Judged by bootstrap.Authorize, as the emulated machines judge.
func checkNodeRole(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodeClasses {
		nc := &in.NodeClasses[i]
		arn := in.AWS.NodeRoles[nc.Name]
		if arn == "" {
			continue
		}
		why := bootstrap.AuthorizeMode(in.AWS.AuthMode, in.AWSAuth, arn, in.AWS.AccessEntries)
		if why == "" {
			continue
		}
		if in.AWS.AccessEntriesUnknown != "" {
			why += " (EKS access entries could not be read: " + in.AWS.AccessEntriesUnknown + ")"
		}
		out = append(out, Finding{Check: "node-role", Severity: Error, Object: objectName("EC2NodeClass", "", nc.Name),
			Message: why,
			Fix:     nodeRoleFix(in.AWS.AuthMode, arn)})
	}
	return out
}

// nodeRoleFix is how to map arn under the cluster's authentication mode.
func nodeRoleFix(mode ekstypes.AuthenticationMode, arn string) string {
	mapIt := fmt.Sprintf("map %s in kube-system/aws-auth mapRoles with username %s and groups system:bootstrappers, system:nodes", arn, bootstrap.NodeUsername)
	entry := fmt.Sprintf("create an EKS access entry of type EC2_LINUX for it (aws eks create-access-entry --principal-arn %s --type EC2_LINUX)", arn)
	switch mode {
	case ekstypes.AuthenticationModeApi:
		return entry + "; the cluster's authenticationMode is API, so aws-auth is not read"
	case ekstypes.AuthenticationModeConfigMap:
		return mapIt + "; the cluster's authenticationMode is CONFIG_MAP, so access entries are not read"
	}
	return mapIt + ", or " + entry
}

// checkClusterName: seed 004, two controllers with the same clusterName
// each take the other's instances for their own (drift, garbage
// collection). An instance tagged with this clusterName but another
// cluster's identity, or claiming a NodeClaim this cluster does not have,
// shows another controller is there.
func checkClusterName(in *Inputs) []Finding {
	var out []Finding
	others := map[string][]string{}
	var strangers []string
	for _, inst := range in.AWS.Instances {
		id := aws.ToString(inst.InstanceId)
		tags := map[string]string{}
		for _, t := range inst.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if other := tags[awsprovider.TagClusterID]; other != "" && in.ClusterID != "" && other != in.ClusterID {
			others[other] = append(others[other], id)
			continue
		}
		if nc := tags[awsv1.TagNodeClaim]; nc != "" && tags[awsprovider.TagClusterID] == "" && !in.hasNodeClaim(nc) {
			strangers = append(strangers, id+" (nodeclaim "+nc+")")
		}
	}
	const fix = "give each cluster its own settings.clusterName (CLUSTER_NAME), matching its EKS cluster"
	for _, other := range slices.Sorted(maps.Keys(others)) {
		ids := others[other]
		out = append(out, Finding{Check: "cluster-name", Severity: Error, Object: "cluster/" + in.ClusterName,
			Message: fmt.Sprintf("%d instance(s) (%s) carry %s=%s but cluster identity %s=%s, not this cluster's %s: another controller uses this clusterName",
				len(ids), strings.Join(examples(ids), ", "), awsv1.TagEKSClusterName, in.ClusterName, awsprovider.TagClusterID, other, in.ClusterID),
			Fix: fix})
	}
	if len(strangers) > 0 {
		out = append(out, Finding{Check: "cluster-name", Severity: Warning, Object: "cluster/" + in.ClusterName,
			Message: fmt.Sprintf("%d instance(s) tagged %s=%s belong to NodeClaims this cluster does not have (%s): another Karpenter may use this clusterName",
				len(strangers), awsv1.TagEKSClusterName, in.ClusterName, strings.Join(examples(strangers), ", ")),
			Fix: fix})
	}
	return out
}

// hasNodeClaim reports whether this cluster has the NodeClaim name.
func (in *Inputs) hasNodeClaim(name string) bool {
	return slices.Contains(in.NodeClaims, name)
}

func examples(ss []string) []string {
	if len(ss) > maxExamples {
		return append(slices.Clone(ss[:maxExamples]), "...")
	}
	return ss
}

// Subnet thresholds: a subnet with no free address launches nothing (the
// launch fails with InsufficientFreeAddressesInSubnet and, in Karpenter,
// surfaces only as "no available offering"); one under lowFreeFraction of
// its size, or under lowFreeAddresses, is close to it.
const (
	lowFreeFraction  = 0.1
	lowFreeAddresses = 16
)

// checkSubnets: the NodeClasses' subnets close to exhaustion.
func checkSubnets(in *Inputs) []Finding {
	users := map[string][]string{}
	for _, nc := range in.NodeClasses {
		for _, s := range nc.Status.Subnets {
			users[s.ID] = append(users[s.ID], nc.Name)
		}
	}
	var out []Finding
	for _, s := range in.AWS.Subnets {
		id := aws.ToString(s.SubnetId)
		free := int(aws.ToInt32(s.AvailableIpAddressCount))
		size := subnetSize(aws.ToString(s.CidrBlock))
		obj := "subnet/" + id
		who := "used by ec2nodeclass " + strings.Join(users[id], ", ")
		switch {
		case free <= 0:
			out = append(out, Finding{Check: "subnets", Severity: Error, Object: obj,
				Message: fmt.Sprintf("no free IP addresses left (%s%s, %s): launches there fail with InsufficientFreeAddressesInSubnet", aws.ToString(s.CidrBlock), negativeFree(free), who),
				Fix:     "free addresses (delete unused ENIs), or add a larger subnet to the ec2nodeclass's subnetSelectorTerms"})
		case free < lowFreeAddresses || (size > 0 && float64(free) < lowFreeFraction*float64(size)):
			out = append(out, Finding{Check: "subnets", Severity: Warning, Object: obj,
				Message: fmt.Sprintf("only %d of %d IP addresses free (%s, %s)", free, size, aws.ToString(s.CidrBlock), who),
				Fix:     "add a larger subnet in the same zone to the ec2nodeclass's subnetSelectorTerms, or use prefix delegation"})
		}
	}
	return out
}

// subnetSize is how many addresses a subnet can hand out (AWS keeps five).
func subnetSize(cidr string) int {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return 0
	}
	return int(math.Pow(2, float64(32-p.Bits()))) - 5
}

// negativeFree notes a negative free-address count (an emulator's or a
// racing count), which is as exhausted as zero.
func negativeFree(free int) string {
	if free < 0 {
		return fmt.Sprintf(", %d reported free", free)
	}
	return ""
}
