package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

const (
	clusterName       = "e2e"
	kubernetesVersion = "1.36"
)

// local is the local EC2 shared by the package's tests.
var local struct {
	server  *localec2.Server
	cluster *localec2.Cluster
	faults  *faults
	calls   *calls
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{}, localec2.SeedOptions{ClusterName: clusterName, KubernetesVersions: []string{kubernetesVersion}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	defer func() {
		if joinerBuild.bin != "" {
			_ = os.RemoveAll(filepath.Dir(joinerBuild.bin))
		}
	}()
	local.server, local.cluster = srv, cl
	local.faults = newFaults()
	local.calls = &calls{}
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	return test.Run(m, controlplane.Options{
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         s,
	})
}

// awsConfig is the local EC2's configuration with the fault injector on
// the wire and the call counter in the SDK's middleware stack.
func awsConfig() aws.Config {
	cfg := local.server.Config()
	cfg.HTTPClient = &http.Client{Transport: local.faults}
	cfg.APIOptions = append(cfg.APIOptions, local.calls.middleware)
	return cfg
}

// providerOptions are a provider's options for the local EC2, as a cluster
// with the given id.
func providerOptions(t testing.TB, clusterID string) awsprovider.Options {
	cfg := awsConfig()
	return awsprovider.Options{
		EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg),
		Client: test.Env(t).Client, Region: cfg.Region,
		ClusterName: clusterName, ClusterID: clusterID,
		ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", ClusterCIDR: localec2.DefaultServiceCIDR,
		KubernetesVersion:       kubernetesVersion,
		SSMParameterRoot:        localec2.DefaultParameterRoot,
		VMMemoryOverheadPercent: 0.075,
		UserData:                awsprovider.GenerateUserData,
	}
}

func newProvider(t testing.TB, clusterID string) *awsprovider.Provider {
	t.Helper()
	p, err := awsprovider.New(providerOptions(t, clusterID))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// calls counts SDK operations by service and name.
type calls struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *calls) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("CountCalls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[awsmiddleware.GetServiceID(ctx)+":"+awsmiddleware.GetOperationName(ctx)]++
		c.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// reset zeroes the counts and returns what they were.
func (c *calls) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

func total(counts map[string]int, service string) int {
	n := 0
	for k, v := range counts {
		if strings.HasPrefix(k, service+":") {
			n += v
		}
	}
	return n
}

func describe(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// faults answers queued requests of an action with localec2's injected
// faults, in EC2's wire format, and forwards the rest to the local EC2.
type faults struct {
	*localec2.FaultInjector
	mu     sync.Mutex
	queued map[string][]localec2.Fault // action -> faults, first first
	seen   map[string]int              // action -> injected count
}

func newFaults() *faults {
	f := &faults{queued: map[string][]localec2.Fault{}, seen: map[string]int{}}
	f.FaultInjector = localec2.NewFaultInjector(nil, f.next)
	return f
}

// next pops the action's next queued fault.
func (f *faults) next(action string) localec2.Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queued[action]
	if len(q) == 0 {
		return ""
	}
	f.queued[action] = q[1:]
	f.seen[action]++
	return q[0]
}

func (f *faults) inject(action string, fs ...localec2.Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[action] = append(f.queued[action], fs...)
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued = map[string][]localec2.Fault{}
	f.seen = map[string]int{}
}

func (f *faults) injected(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[action]
}
