package userdata

import (
	"fmt"
	"net"
	"strings"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// userParts splits spec.userData into MIME parts: a MIME archive's parts,
// or a single script/cloud-config part. nodeConfig says whether a bare
// NodeConfig YAML document is accepted too (AL2023).
func userParts(o *Options, nodeConfig bool) ([]Part, error) {
	if o.CustomUserData == nil || strings.TrimSpace(*o.CustomUserData) == "" {
		return nil, nil
	}
	s := *o.CustomUserData
	if IsMIME(s) {
		parts, err := ParseMIME(s)
		if err != nil {
			return nil, userErr(o.AMIFamily, "not a valid MIME multipart archive: %v", err)
		}
		if nodeConfig {
			for i, p := range parts {
				if p.MediaType() != ContentTypeNodeConfig {
					continue
				}
				if _, err := parseNodeConfig(p.Body); err != nil {
					return nil, userErr(o.AMIFamily, "MIME part %d (%s): %v", i+1, ContentTypeNodeConfig, err)
				}
			}
		}
		return parts, nil
	}
	if p, ok := scriptPart(s); ok {
		return []Part{p}, nil
	}
	if nodeConfig && looksLikeNodeConfig(s) {
		if _, err := parseNodeConfig(s); err != nil {
			return nil, userErr(o.AMIFamily, "%v", err)
		}
		return []Part{{ContentType: ContentTypeNodeConfig, Body: s}}, nil
	}
	want := "a MIME multipart archive, a shell script starting with #! or a #cloud-config document"
	if nodeConfig {
		want = "a MIME multipart archive, a nodeadm NodeConfig (apiVersion: node.eks.aws/v1alpha1, kind: NodeConfig), a shell script starting with #! or a #cloud-config document"
	}
	return nil, userErr(o.AMIFamily, "unrecognised format: want %s", want)
}

// al2 renders the AL2 user data: the user's parts, then a shell part that
// calls /etc/eks/bootstrap.sh. bootstrap.sh only knows
// --kubelet-extra-args followed by a separate argument; the flags go in one
// single-quoted word.
func al2(o Options) (string, error) {
	parts, err := userParts(&o, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " --b64-cluster-ca '%s'", o.CABundle)
	}
	if dns := o.clusterDNS(); dns != "" {
		if ip := net.ParseIP(dns); ip != nil && ip.To4() == nil {
			b.WriteString(" \\\n--ip-family ipv6")
		}
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip '%s'", dns)
	}
	if o.maxPods() != nil {
		b.WriteString(" \\\n--use-max-pods false")
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		b.WriteString(" \\\n--local-disks raid0")
	}
	if flags := kubeletFlags(&o); len(flags) > 0 {
		fmt.Fprintf(&b, " \\\n--kubelet-extra-args '%s'", strings.Join(flags, " "))
	}
	b.WriteString("\n")
	parts = append(parts, Part{ContentType: ContentTypeShell + `; charset="us-ascii"`, Body: b.String()})
	return WriteMIME(parts), nil
}
