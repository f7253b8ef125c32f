package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
)

// RunOptions are `joiner doctor`'s settings.
type RunOptions struct {
	// ClusterName is settings.clusterName.
	ClusterName string
	// ControllerSelector finds joiner's Deployment
	// (DefaultControllerSelector when empty).
	ControllerSelector string
	// AWS is the account's configuration; nil checks the cluster alone.
	AWS *aws.Config
	// SSMParameterRoot resolves AMI aliases ("" is AWS's /aws/service).
	SSMParameterRoot string
}

// Run connects to the cluster of cfg (and the account), gathers and
// diagnoses: what `joiner doctor` prints.
func Run(ctx context.Context, cfg *rest.Config, o RunOptions) (Report, error) {
	if o.ControllerSelector == "" {
		o.ControllerSelector = DefaultControllerSelector
	}
	sel, err := labels.Parse(o.ControllerSelector)
	if err != nil {
		return Report{}, fmt.Errorf("controller selector: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return Report{}, err
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return Report{}, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return Report{}, fmt.Errorf("connecting to the cluster: %w", err)
	}
	clusterID, err := identity.ClusterID(ctx, kube)
	if err != nil {
		return Report{}, err
	}
	opts := Options{Kube: kube, ClusterName: o.ClusterName, ClusterID: clusterID, ClusterEndpoint: cfg.Host, ControllerSelector: sel}
	var skipped []string
	awsMissing := "no AWS account configured (--cloud-provider=aws)"
	if o.AWS != nil {
		// Without credentials every AWS call fails: list the cluster's
		// findings and name the AWS checks skipped, rather than abort.
		if reason := credentialsMissing(ctx, o.AWS); reason != "" {
			awsMissing = reason
			o.AWS = nil
		}
	}
	if o.AWS != nil {
		version, err := kubernetesVersion(cfg)
		if err != nil {
			return Report{}, err
		}
		if err := ForAWS(&opts, AWSOptions{Config: *o.AWS, Kube: kube, ClusterName: o.ClusterName, ClusterID: clusterID,
			ClusterEndpoint: cfg.Host, KubernetesVersion: version, SSMParameterRoot: o.SSMParameterRoot}); err != nil {
			return Report{}, err
		}
	} else {
		skipped = append(skipped, "nodepool-instance-types: "+awsMissing)
	}
	in, err := Gather(ctx, opts)
	if err != nil {
		return Report{}, err
	}
	in.AWSMissing = awsMissing
	r := Diagnose(in)
	r.Skipped = append(skipped, r.Skipped...)
	return r, nil
}

func kubernetesVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("reading the Kubernetes version: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the Kubernetes version: %w", err)
	}
	return strings.TrimSuffix(v.Major, "+") + "." + strings.TrimSuffix(v.Minor, "+"), nil
}

// credentialsMissing says why the AWS checks cannot run when cfg yields no
// credentials ("" when it does).
func credentialsMissing(ctx context.Context, cfg *aws.Config) string {
	const fix = "set AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN"
	if cfg.Credentials == nil {
		return "no AWS credentials: " + fix
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return fmt.Sprintf("no AWS credentials (%v): %s", err, fix)
	}
	return ""
}
