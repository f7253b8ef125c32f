package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
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
	srv, err := localec2.Start(ctx, localec2.StartOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer srv.Stop()
	cl, err := localec2.Seed(ctx, srv.Config(), localec2.SeedOptions{ClusterName: clusterName, KubernetesVersions: []string{kubernetesVersion}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: seeding the local EC2:", err)
		return 1
	}
	local.server, local.cluster = srv, cl
	local.faults = &faults{next: http.DefaultTransport, queued: map[string][]fault{}}
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
		ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=",
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

// fault is an answer the injector gives instead of the local EC2's.
type fault string

const (
	faultThrottle        fault = "throttle"     // 503 RequestLimitExceeded
	faultServerError     fault = "server-error" // 500 InternalError
	faultICE             fault = "ice"          // CreateFleet: InsufficientInstanceCapacity for every override
	faultSubnetExhausted fault = "subnet"       // CreateFleet: InsufficientFreeAddressesInSubnet for every override
)

// faults sits on the wire between the SDK and the local EC2 and answers
// queued requests of an action itself, in EC2's wire format.
type faults struct {
	next   http.RoundTripper
	mu     sync.Mutex
	queued map[string][]fault // action -> faults, first first
	seen   map[string]int     // action -> injected count
}

func (f *faults) inject(action string, fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[action] = append(f.queued[action], fs...)
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued = map[string][]fault{}
	f.seen = map[string]int{}
}

func (f *faults) injected(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[action]
}

func (f *faults) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return f.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	action := form.Get("Action")
	f.mu.Lock()
	var flt fault
	if q := f.queued[action]; len(q) > 0 {
		flt, f.queued[action] = q[0], q[1:]
		if f.seen == nil {
			f.seen = map[string]int{}
		}
		f.seen[action]++
	}
	f.mu.Unlock()
	switch flt {
	case faultThrottle:
		return xmlResponse(req, 503, ec2Error("RequestLimitExceeded", "Request limit exceeded.")), nil
	case faultServerError:
		return xmlResponse(req, 500, ec2Error("InternalError", "An internal error has occurred.")), nil
	case faultICE:
		return xmlResponse(req, 200, fleetErrors(form, "InsufficientInstanceCapacity", "We currently do not have sufficient capacity in the Availability Zone you requested.")), nil
	case faultSubnetExhausted:
		return xmlResponse(req, 200, fleetErrors(form, "InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet to satisfy the requested number of instances.")), nil
	}
	return f.next.RoundTrip(req)
}

func ec2Error(code, msg string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>injected</RequestID></Response>`, code, msg)
}

// fleetErrors is a CreateFleet answer that launched nothing and reports
// code for every override of the request.
func fleetErrors(form url.Values, code, msg string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>injected</requestId><fleetId>fleet-injected</fleetId><errorSet>`)
	for c := 1; form.Has(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c)); c++ {
		lt := form.Get(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c))
		for o := 1; ; o++ {
			prefix := fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.", c, o)
			if !form.Has(prefix + "InstanceType") {
				break
			}
			fmt.Fprintf(&b, `<item><launchTemplateAndOverrides><launchTemplateSpecification><launchTemplateName>%s</launchTemplateName><version>1</version></launchTemplateSpecification><overrides><instanceType>%s</instanceType><subnetId>%s</subnetId></overrides></launchTemplateAndOverrides><lifecycle>%s</lifecycle><errorCode>%s</errorCode><errorMessage>%s</errorMessage></item>`,
				lt, form.Get(prefix+"InstanceType"), form.Get(prefix+"SubnetId"), form.Get("TargetCapacitySpecification.DefaultTargetCapacityType"), code, msg)
		}
	}
	b.WriteString(`</errorSet><fleetInstanceSet></fleetInstanceSet></CreateFleetResponse>`)
	return b.String()
}

func xmlResponse(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{"Content-Type": []string{"text/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}
