package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// childEnv marks the test binary re-executed by TestRunDemoAWS.
const childEnv = "JOINER_TEST_RUN_DEMO_AWS_CHILD"

// TestRunDemoAWS runs `joiner run --cloud-provider=aws --local-ec2
// --exit-after-demo`: the same story as TestRunDemo through the AWS
// provider, a local EC2 (moto_server) and the emulated node bootstrap. It
// runs in a child process: joiner's controllers register process-wide
// names and metrics, and TestRunDemo already ran them here.
func TestRunDemoAWS(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunDemoAWS$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	settings := options.Default()
	settings.DisableLeaderElection = true
	settings.MetricsPort, settings.HealthProbePort = 0, 0
	settings.ClusterName = "joiner-run-aws-test"
	settings.CloudProvider = options.CloudProviderAWS
	var out bytes.Buffer
	start := time.Now()
	err := runDemo(t.Context(), &runOptions{
		settings:      settings,
		runDir:        t.TempDir() + "/run",
		replicas:      8,
		exitAfterDemo: true,
		localEC2:      true,
		timeout:       2 * time.Minute,
		out:           &out,
	})
	t.Logf("joiner run output (%.1fs):\n%s", time.Since(start).Seconds(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"local EC2 (moto_server behind joiner's EC2 front) at http://127.0.0.1:",
		"export AWS_ENDPOINT_URL=http://127.0.0.1:", "export AWS_REGION=us-east-1", "export CLUSTER_NAME=joiner-run-aws-test",
		"applied EC2NodeClass/default",
		"8 pending (unschedulable)",
		"created for nodepool default",
		"launched:", "(aws:///us-east-1",
		"registered:",
		"initialized:",
		"all 8 pods running",
		"capacity reservation cr-", "partition placement group joiner-run-aws-test-nodes, both selected by EC2NodeClass/default",
		// The reservation's two m5.large are filled first (the NodePool
		// takes reserved, spot and on-demand capacity).
		"m5.large reserved in us-east-1",
		"sent an EC2 Spot Instance Interruption Warning (instance i-",
		"interruption handled",
		"deleting (reason ",
		"gone: instance",
		"scale-down done",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	// Spot prices come from the local EC2's front (derived from the price
	// snapshot), not moto's $0.00001 for everything. Only the reservation's
	// nodes are (nearly) free: a command that deletes no more nodes than it
	// holds may save $0.0000/h.
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, "saving $0.0000/h") {
			continue
		}
		if !strings.Contains(line, "delete 1 node(s)") && !strings.Contains(line, fmt.Sprintf("delete %d node(s)", localReservationCount)) {
			t.Errorf("a node's price is zero: spot prices are moto's, not the front's: %s", line)
		}
	}
	// Nothing in the demo changes the NodePool or the node class: a node
	// deleted as drifted is a false drift against the local EC2.
	if strings.Contains(out.String(), "reason Drifted") {
		t.Errorf("a node was deleted as drifted, but nothing drifted")
	}
}

// TestRunAWSNeedsLocalEC2: the demo cannot use a real account, and
// --local-ec2 is only for the aws provider.
func TestRunAWSNeedsLocalEC2(t *testing.T) {
	for _, tc := range []struct {
		provider string
		localEC2 bool
		want     string
	}{
		{options.CloudProviderAWS, false, "needs --local-ec2"},
		{options.CloudProviderSim, true, "--local-ec2 needs --cloud-provider=aws"},
	} {
		settings := options.Default()
		settings.CloudProvider = tc.provider
		err := runDemo(t.Context(), &runOptions{settings: settings, runDir: t.TempDir(), localEC2: tc.localEC2, out: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with local-ec2=%v: %v, want an error containing %q", tc.provider, tc.localEC2, err, tc.want)
		}
	}
}
