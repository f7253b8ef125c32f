package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The aws-auth ConfigMap through which EKS maps IAM roles to Kubernetes
// users and groups.
const (
	AWSAuthNamespace = "kube-system"
	AWSAuthName      = "aws-auth"
	// NodeUsername is the username EKS documents for node roles.
	NodeUsername = "system:node:{{EC2PrivateDNSName}}"
)

// NodeGroups are the groups a node role must be mapped to.
var NodeGroups = []string{"system:bootstrappers", "system:nodes"}

// RoleMapping is one entry of aws-auth's mapRoles.
type RoleMapping struct {
	RoleARN  string   `json:"rolearn"`
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// roleARNWithoutPath drops the IAM path: aws-auth matches the ARN of the
// assumed role's session, which carries no path, so a mapping must name
// arn:aws:iam::<account>:role/<name>.
func roleARNWithoutPath(arn string) string {
	prefix, rest, ok := strings.Cut(arn, ":role/")
	if !ok {
		return arn
	}
	return prefix + ":role/" + rest[strings.LastIndex(rest, "/")+1:]
}

// authorize says why a kubelet using roleARN cannot register its Node, or
// "" when aws-auth (or an emulated access entry) lets it.
func authorize(ctx context.Context, kube client.Reader, roleARN string, accessEntries []string) (string, error) {
	cm := &corev1.ConfigMap{}
	err := kube.Get(ctx, client.ObjectKey{Namespace: AWSAuthNamespace, Name: AWSAuthName}, cm)
	if apierrors.IsNotFound(err) {
		cm = nil
	} else if err != nil {
		return "", fmt.Errorf("reading %s/%s: %w", AWSAuthNamespace, AWSAuthName, err)
	}
	return Authorize(cm, roleARN, accessEntries), nil
}

// AuthorizeMode is Authorize for a cluster whose EKS authenticationMode is
// mode: API reads only access entries (aws-auth is ignored), CONFIG_MAP
// only aws-auth, API_AND_CONFIG_MAP (or "" when unknown) both.
func AuthorizeMode(mode ekstypes.AuthenticationMode, cm *corev1.ConfigMap, roleARN string, accessEntries []string) string {
	switch mode {
	case ekstypes.AuthenticationModeApi:
		want := roleARNWithoutPath(roleARN)
		if slices.Contains(accessEntries, roleARN) || slices.Contains(accessEntries, want) {
			return ""
		}
		return fmt.Sprintf("the cluster's authenticationMode is API, so EKS does not read %s/%s, and the node role %s has no EKS access entry, so the API server rejects the kubelet as Unauthorized", AWSAuthNamespace, AWSAuthName, want)
	case ekstypes.AuthenticationModeConfigMap:
		return Authorize(cm, roleARN, nil)
	}
	return Authorize(cm, roleARN, accessEntries)
}

// Authorize says why a kubelet using roleARN cannot register its Node
// given the aws-auth ConfigMap (nil when absent) and the principal ARNs of
// the cluster's EKS access entries, or "" when one of them lets it. The
// emulated machines and `joiner doctor` judge by it alike.
func Authorize(cm *corev1.ConfigMap, roleARN string, accessEntries []string) string {
	want := roleARNWithoutPath(roleARN)
	for _, p := range accessEntries {
		if p == roleARN || p == want {
			return ""
		}
	}
	if cm == nil {
		return fmt.Sprintf("the node role %s is not mapped: there is no %s/%s ConfigMap (nor an EKS access entry), so the API server rejects the kubelet as Unauthorized", roleARN, AWSAuthNamespace, AWSAuthName)
	}
	var roles []RoleMapping
	if err := yaml.Unmarshal([]byte(cm.Data["mapRoles"]), &roles); err != nil {
		return fmt.Sprintf("the %s/%s ConfigMap's mapRoles is not valid YAML (%v), so EKS maps no role and the API server rejects the kubelet as Unauthorized", AWSAuthNamespace, AWSAuthName, err)
	}
	for _, r := range roles {
		if r.RoleARN != want {
			continue
		}
		if !slices.Contains(r.Groups, "system:nodes") {
			return fmt.Sprintf("the node role %s is mapped in %s/%s without the group system:nodes, so the kubelet may not create its Node", want, AWSAuthNamespace, AWSAuthName)
		}
		return ""
	}
	return fmt.Sprintf("the node role %s is not in the mapRoles of %s/%s (nor an EKS access entry), so the API server rejects the kubelet as Unauthorized", want, AWSAuthNamespace, AWSAuthName)
}

// MapNodeRole adds roleARN to aws-auth's mapRoles with the node groups, as
// EKS users (and eksctl) do for a node role; it creates the ConfigMap when
// absent. The local demo and tests call it.
func MapNodeRole(ctx context.Context, kube client.Client, roleARN string) error {
	cm := &corev1.ConfigMap{}
	err := kube.Get(ctx, client.ObjectKey{Namespace: AWSAuthNamespace, Name: AWSAuthName}, cm)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return fmt.Errorf("reading %s/%s: %w", AWSAuthNamespace, AWSAuthName, err)
	}
	var roles []RoleMapping
	if !create {
		if err := yaml.Unmarshal([]byte(cm.Data["mapRoles"]), &roles); err != nil {
			return fmt.Errorf("reading mapRoles of %s/%s: %w", AWSAuthNamespace, AWSAuthName, err)
		}
	}
	arn := roleARNWithoutPath(roleARN)
	for _, r := range roles {
		if r.RoleARN == arn {
			return nil
		}
	}
	roles = append(roles, RoleMapping{RoleARN: arn, Username: NodeUsername, Groups: NodeGroups})
	b, err := yaml.Marshal(roles)
	if err != nil {
		return fmt.Errorf("encoding mapRoles: %w", err)
	}
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: AWSAuthNamespace, Name: AWSAuthName}}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["mapRoles"] = string(b)
	if create {
		err = kube.Create(ctx, cm)
	} else {
		err = kube.Update(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("mapping node role %s in %s/%s: %w", arn, AWSAuthNamespace, AWSAuthName, err)
	}
	return nil
}
