package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// NodeClassControllerName is the EC2NodeClass status controller's name.
const NodeClassControllerName = "nodeclass"

// TerminationFinalizer holds an EC2NodeClass until its NodeClaims are gone
// and its launch templates and managed instance profile are deleted.
const TerminationFinalizer = awsv1.Group + "/termination"

// Condition reasons, as Karpenter writes them.
const (
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	ReasonRoleNotFound            = "RoleNotFound"
	ReasonDependenciesNotReady    = "DependenciesNotReady"
	ReasonTagValidationFailed     = "TagValidationFailed"
	ReasonResolutionFailed        = "ResolutionFailed"
	ReasonInvalidUserData         = "InvalidUserData"
)

// NodeClassController keeps each EC2NodeClass's status: subnets, security
// groups, AMIs, instance profile, conditions and the hash annotation, and
// cleans up launch templates and the managed instance profile when it is
// deleted.
type NodeClassController struct {
	provider *Provider
	clock    clock.PassiveClock
}

// NodeClassController returns the status controller for the provider's
// node classes.
func (p *Provider) NodeClassController() *NodeClassController {
	return &NodeClassController{provider: p, clock: p.clock}
}

// Register adds the controller to mgr.
func (c *NodeClassController) Register(mgr manager.Manager) error {
	if err := builder.ControllerManagedBy(mgr).Named(NodeClassControllerName).For(&awsv1.EC2NodeClass{}).Complete(c); err != nil {
		return fmt.Errorf("registering %s: %w", NodeClassControllerName, err)
	}
	return nil
}

// Reconcile resolves one EC2NodeClass.
func (c *NodeClassController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kube := c.provider.kube
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, TerminationFinalizer) || nc.Annotations[awsv1.AnnotationEC2NodeClassHash] != nc.Hash() {
		patched := nc.DeepCopy()
		controllerutil.AddFinalizer(patched, TerminationFinalizer)
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[awsv1.AnnotationEC2NodeClassHash] = nc.Hash()
		patched.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
		if err := kube.Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		nc = patched
	}
	patched := nc.DeepCopy()
	transient := c.provider.resolveStatus(ctx, patched)
	if !equality.Semantic.DeepEqual(nc.Status, patched.Status) {
		if err := kube.Status().Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if transient != nil {
		return reconcile.Result{}, transient
	}
	return reconcile.Result{RequeueAfter: c.provider.opts.NodeClassRefresh}, nil
}

// resolveStatus fills nc.Status from AWS. Bad input becomes a False
// condition naming the field; an AWS failure is returned for a retry with
// backoff (and shown as a condition too).
func (p *Provider) resolveStatus(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	conds := nc.StatusConditions().WithClock(p.clock)
	conds.Initialize()
	var transient []error
	fail := func(cond, reason string, err error) {
		if !isBadInput(err) {
			transient = append(transient, err)
			reason = ReasonResolutionFailed
		}
		conds.SetFalse(cond, reason, err.Error())
	}

	subnets, err := p.subnets(ctx, nc, false)
	switch {
	case err != nil:
		fail(awsv1.ConditionTypeSubnetsReady, ReasonSubnetsNotFound, err)
	case len(subnets) == 0:
		nc.Status.Subnets = nil
		conds.SetFalse(awsv1.ConditionTypeSubnetsReady, ReasonSubnetsNotFound, "spec.subnetSelectorTerms did not match any subnet "+describeTerms(nc.Spec.SubnetSelectorTerms)+"; tag your subnets (e.g. karpenter.sh/discovery: <cluster>) or fix the terms")
	default:
		nc.Status.Subnets = make([]awsv1.Subnet, len(subnets))
		for i, s := range subnets {
			nc.Status.Subnets[i] = awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID}
		}
		conds.SetTrue(awsv1.ConditionTypeSubnetsReady)
	}

	sgs, err := p.securityGroups(ctx, nc)
	switch {
	case err != nil:
		fail(awsv1.ConditionTypeSecurityGroupsReady, ReasonSecurityGroupsNotFound, err)
	case len(sgs) == 0:
		nc.Status.SecurityGroups = nil
		conds.SetFalse(awsv1.ConditionTypeSecurityGroupsReady, ReasonSecurityGroupsNotFound, "spec.securityGroupSelectorTerms did not match any security group "+describeTerms(nc.Spec.SecurityGroupSelectorTerms)+"; tag your security groups or fix the terms")
	default:
		nc.Status.SecurityGroups = sgs
		conds.SetTrue(awsv1.ConditionTypeSecurityGroupsReady)
	}

	amis, err := p.amis(ctx, nc)
	switch {
	case err != nil:
		fail(awsv1.ConditionTypeAMIsReady, ReasonAMINotFound, err)
	case len(amis) == 0:
		nc.Status.AMIs = nil
		msg := "spec.amiSelectorTerms did not match any available image " + describeTerms(nc.Spec.AMISelectorTerms)
		if a := nc.Alias(); a != nil {
			msg += fmt.Sprintf("; no SSM parameter under %s names an image for alias %s and Kubernetes %s", p.opts.SSMParameterRoot, a, p.opts.KubernetesVersion)
		}
		conds.SetFalse(awsv1.ConditionTypeAMIsReady, ReasonAMINotFound, msg)
	default:
		nc.Status.AMIs = amis
		conds.SetTrue(awsv1.ConditionTypeAMIsReady)
	}

	profile, err := p.instanceProfile(ctx, nc)
	if err != nil {
		reason := ReasonInstanceProfileNotFound
		if strings.HasPrefix(err.Error(), "spec.role") {
			reason = ReasonRoleNotFound
		}
		nc.Status.InstanceProfile = ""
		fail(awsv1.ConditionTypeInstanceProfileReady, reason, err)
	} else {
		nc.Status.InstanceProfile = profile
		conds.SetTrue(awsv1.ConditionTypeInstanceProfileReady)
	}

	p.resolvePlacement(ctx, nc, conds, fail)

	switch err := validate(nc); {
	case err != nil:
		conds.SetFalse(awsv1.ConditionTypeValidationSucceeded, ReasonTagValidationFailed, err.Error())
	case p.checkUserData(nc) != nil:
		conds.SetFalse(awsv1.ConditionTypeValidationSucceeded, ReasonInvalidUserData, p.checkUserData(nc).Error())
	case !conds.IsTrue(awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeInstanceProfileReady):
		conds.SetFalse(awsv1.ConditionTypeValidationSucceeded, ReasonDependenciesNotReady, "waiting for subnets, security groups, AMIs and the instance profile to resolve")
	default:
		conds.SetTrue(awsv1.ConditionTypeValidationSucceeded)
	}
	return errors.Join(transient...)
}

// validate checks what the API server's schema cannot: tag keys joiner
// owns and the kubelet fields Validate rejects.
func validate(nc *awsv1.EC2NodeClass) error {
	var errs []error
	for k := range nc.Spec.Tags {
		if err := awsv1.ValidateTagKey(k); err != nil {
			errs = append(errs, fmt.Errorf("spec.tags: %w", err))
		}
	}
	if err := nc.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func describeTerms(terms any) string {
	b, _ := json.Marshal(terms)
	return string(b)
}

// finalize waits for the node class's NodeClaims to go, then deletes its
// launch templates and managed instance profile and drops the finalizer.
func (c *NodeClassController) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.provider.kube.List(ctx, claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of EC2NodeClass %s: %w", nc.Name, err)
	}
	for _, claim := range claims.Items {
		if ref := claim.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass" && ref.Name == nc.Name {
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
	}
	if err := c.provider.templates.deleteAll(ctx, nc.Name); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.provider.deleteInstanceProfile(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	patched := nc.DeepCopy()
	controllerutil.RemoveFinalizer(patched, TerminationFinalizer)
	if err := c.provider.kube.Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// checkUserData merges spec.userData with a probe node's bootstrap, so a
// malformed spec.userData is a condition on the node class rather than a
// launch that fails again and again.
func (p *Provider) checkUserData(nc *awsv1.EC2NodeClass) error {
	if nc.Spec.UserData == nil {
		return nil
	}
	maxPods := int32(110)
	_, err := p.opts.UserData(UserDataOptions{
		AMIFamily: nc.AMIFamily(), ClusterName: p.opts.ClusterName, ClusterEndpoint: p.opts.ClusterEndpoint, CABundle: p.opts.CABundle,
		ClusterCIDR: p.opts.ClusterCIDR, Labels: map[string]string{v1.LabelAWSEC2NodeClass: nc.Name}, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint},
		MaxPods: &maxPods, Kubelet: nc.Spec.Kubelet, CustomUserData: nc.Spec.UserData, InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
	})
	if err != nil {
		return fmt.Errorf("spec.userData: %w", err)
	}
	return nil
}

// ResolveStatus computes nc's status from AWS in place without writing it:
// what the controller would write. Bad input becomes False conditions; the
// error is an AWS failure worth a retry.
func (p *Provider) ResolveStatus(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	return p.resolveStatus(ctx, nc)
}
