package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/explain"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

type explainOptions struct {
	kubeconfig        string
	context           string
	namespace         string
	files             []string
	output            string
	instanceTypes     string
	registrationTTL   time.Duration
	initializationTTL time.Duration
	// ignoreDRA is IGNORE_DRA_REQUESTS: false plans resource claims, so
	// a pod waiting for devices is told which. Unless given (ignoreDRASet),
	// the controller view's setting is used.
	ignoreDRA, ignoreDRASet bool
}

// explainNow is explain's clock; tests may fix it.
var explainNow = time.Now

func newExplainCommand() *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain (pod [NS/]NAME | node NAME | nodeclaim NAME | nodepool NAME | capacitybuffer [NS/]NAME)",
		Short: "Say why a pod is pending, where a node stands, what a NodePool has left",
		Long: `explain reads the cluster once and prints one grouped verdict:

  pod       each NodePool considered and why it rejects the pod (the solver's
            typed reasons, as joiner simulate reports them), the NodeClaim the
            pod waits for and that claim's phase against its deadline, and what
            would fix it.
  node,     the NodeClaim's phase (launched, registered, initialised) with the
  nodeclaim time waited against its TTL, the registration checklist, the
            initialisation check that is failing, the bootstrap taint problems
            seen at registration, and why the node is or is not being disrupted
            (the verdict the disruption controller stores on the NodeClaim).
  capacitybuffer  [NS/]NAME: the chunks it resolved to (status.replicas) and
            its ReadyForProvisioning, Provisioning (where its room is: on
            existing capacity, or new capacity launching, or nowhere and why)
            and LimitedByQuotas conditions.
  nodepool  its readiness and its node class's, limits used and left, the
            disruptions its budgets allow now, and the instance types that
            survive its requirements, less those backing off after failed
            launches.

Instance types, offerings (with the unavailable ones) and the TTLs are the
running controller's own: it publishes what its cloud provider gave the
provisioner in a ConfigMap labelled joiner.dev/controller-view, and explain
solves with exactly that, plus the back-offs on each NodePool. Without that
ConfigMap it uses the built-in catalog and says so in its output.

A pod's namespace defaults to the kubeconfig context's. Installed as
kubectl-joiner on the PATH, it is also "kubectl joiner explain ...".`,
		Example: `  joiner explain pod default/web-1
  kubectl joiner explain pod web-1 -o yaml
  joiner explain nodeclaim default-abcde
  joiner explain nodepool default -o json
  kubectl get nodepools,nodeclaims,nodes,pods,events -A -o yaml > dump.yaml && joiner explain -f dump.yaml node ip-10-0-1-2
  kubectl get configmaps -A -l joiner.dev/controller-view -o yaml >> dump.yaml   # the controller's instance types and TTLs`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ignoreDRASet = cmd.Flags().Changed("ignore-dra-requests")
			return runExplain(cmd.Context(), o, args[0], args[1], cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means $KUBECONFIG, then ~/.kube/config")
	f.StringVar(&o.context, "context", "", "kubeconfig context to use")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of a pod given without one; default: the context's")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "explain from a dump (kubectl get -o yaml) instead of a live cluster; repeatable; - reads stdin")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	f.StringVar(&o.instanceTypes, "instance-types", "", "instance-type catalog JSON; default: the controller's own (its view ConfigMap), else the built-in catalog shaped by each NodePool's node class")
	f.DurationVar(&o.registrationTTL, "registration-ttl", 0, "REGISTRATION_TTL; default: the controller's (its view ConfigMap), else 15m")
	f.BoolVar(&o.ignoreDRA, "ignore-dra-requests", true, "IGNORE_DRA_REQUESTS: false plans pods' Dynamic Resource Allocation claims from the cluster's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices, and names the device a pod waits for; default: the controller's (its view ConfigMap), else true")
	f.DurationVar(&o.initializationTTL, "initialization-ttl", 0, "INITIALIZATION_TTL; default: the controller's (its view ConfigMap), else 15m")
	return cmd
}

func runExplain(ctx context.Context, o *explainOptions, kind, name string, stdin io.Reader, stdout io.Writer) error {
	if o.output != "text" && o.output != "json" && o.output != "yaml" {
		return fmt.Errorf("--output: want text, json or yaml, got %q", o.output)
	}
	k, err := explain.ParseKind(kind)
	if err != nil {
		return err
	}
	// The DRA objects are always read: whether the solver plans them is
	// decided once the controller view is known.
	sopts := explain.SnapshotOptions{Now: explainNow(), Devices: true}
	if o.instanceTypes != "" {
		if sopts.InstanceTypes, err = scenario.LoadInstanceTypes(o.instanceTypes); err != nil {
			return err
		}
	}
	namespace := o.namespace
	var snap *explain.Snapshot
	if len(o.files) > 0 {
		data, err := readAll(o.files, stdin)
		if err != nil {
			return err
		}
		if namespace == "" {
			namespace = corev1.NamespaceDefault
		}
		if snap, err = explain.Read("input", data, sopts); err != nil {
			return err
		}
	} else {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
			&clientcmd.ConfigOverrides{CurrentContext: o.context})
		if namespace == "" {
			var err error
			if namespace, _, err = loader.Namespace(); err != nil {
				return fmt.Errorf("reading the kubeconfig's namespace: %w", err)
			}
		}
		cfg, err := loader.ClientConfig()
		if err != nil {
			return fmt.Errorf("loading kubeconfig (set --kubeconfig or KUBECONFIG): %w", err)
		}
		c, err := client.New(cfg, client.Options{Scheme: explain.Scheme})
		if err != nil {
			return fmt.Errorf("connecting to the cluster: %w", err)
		}
		objs, err := listCluster(ctx, c)
		if err != nil {
			return err
		}
		if snap, err = explain.FromObjects(objs, sopts); err != nil {
			return err
		}
	}
	q := explain.Query{Kind: k, Namespace: namespace, Name: name, Solve: solve,
		Options: explain.Options{RegistrationTTL: o.registrationTTL, InitializationTTL: o.initializationTTL}}
	planDRA := snap.View != nil && snap.View.PlanDynamicResources
	if o.ignoreDRASet {
		planDRA = !o.ignoreDRA
	}
	if planDRA {
		q.Solve = func(snap *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(snap, scheduling.Options{PlanDynamicResources: true})
		}
	}
	verdict, err := explain.Verdict(snap, q)
	if err != nil {
		return err
	}
	switch o.output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(verdict)
	case "yaml":
		b, err := yaml.Marshal(verdict)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	default:
		return explain.Write(stdout, verdict)
	}
}

// explainLists are the kinds explain reads, as the solver, the lifecycle
// checks and the disruption budgets need them.
func explainLists() []client.ObjectList {
	return []client.ObjectList{
		&v1.NodePoolList{}, &v1.NodeClaimList{}, &simv1alpha1.SimNodeClassList{}, &awsv1.EC2NodeClassList{},
		&corev1.NodeList{}, &corev1.PodList{}, &corev1.NamespaceList{}, &appsv1.DaemonSetList{},
		&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &storagev1.StorageClassList{}, &storagev1.CSINodeList{},
		&policyv1.PodDisruptionBudgetList{}, &eventsv1.EventList{}, &autoscalingv1beta1.CapacityBufferList{},
	}
}

// listCluster lists every kind explain reads. A kind whose API the cluster
// does not serve (a node class CRD of the other provider) is skipped.
func listCluster(ctx context.Context, c client.Client) ([]runtime.Object, error) {
	var objs []runtime.Object
	lists := explainLists()
	// The DRA objects only matter under IGNORE_DRA_REQUESTS=false: a user
	// who may not read them still gets every other verdict.
	dra := map[client.ObjectList]bool{}
	for _, l := range []client.ObjectList{&resourcev1.DeviceClassList{}, &resourcev1.ResourceClaimList{}, &resourcev1.ResourceClaimTemplateList{}, &resourcev1.ResourceSliceList{}} {
		dra[l] = true
		lists = append(lists, l)
	}
	for _, list := range lists {
		if err := c.List(ctx, list); err != nil {
			if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) || (dra[list] && apierrors.IsForbidden(err)) {
				continue
			}
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		objs = append(objs, items...)
	}
	// The controller view (pkg/controllerview): the instance types,
	// offerings and TTLs the running controller uses. Without read access
	// to it, explain falls back to the built-in catalog and says so.
	var views corev1.ConfigMapList
	err := c.List(ctx, &views, client.HasLabels{controllerview.LabelView})
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing the controller view configmaps: %w", err)
	}
	for i := range views.Items {
		objs = append(objs, &views.Items[i])
	}
	return objs, nil
}

// readAll reads every -f file ("-" is stdin) as one YAML stream.
func readAll(files []string, stdin io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	for _, path := range files {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}
