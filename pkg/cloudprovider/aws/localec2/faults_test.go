package localec2

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// The fault proxy answers in EC2's wire format, so aws-sdk-go-v2 decodes
// the codes it would get from EC2; a ghost launch runs the instance while
// the caller sees a 500, and the SDK's retry with the same ClientToken gets
// the ghost's instance back instead of a second one.
func TestFaultProxyAnswersLikeEC2(t *testing.T) {
	ctx := context.Background()
	srv, cl, err := StartSeeded(ctx, StartOptions{}, SeedOptions{ClusterName: "faults", KubernetesVersions: []string{"1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	direct := ec2.NewFromConfig(srv.Config())
	running := func() int {
		out, err := direct.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"running"}}}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range out.Reservations {
			n += len(r.Instances)
		}
		return n
	}
	run := func(c *ec2.Client) error {
		_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId: aws.String(cl.AMI("AL2023", "x86_64").ID), InstanceType: ec2types.InstanceTypeM5Large,
			MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(cl.Subnets[0].ID),
		})
		return err
	}
	for _, tc := range []struct {
		name     string
		fault    Fault
		attempts int // SDK attempts
		wantCode string
		launched int
	}{
		{name: "throttled", fault: FaultThrottle, attempts: 1, wantCode: "RequestLimitExceeded"},
		{name: "server error", fault: FaultServerError, attempts: 1, wantCode: "InternalError"},
		{name: "ghost", fault: FaultGhost, attempts: 1, wantCode: "InternalError", launched: 1},
		{name: "ghost retried with its token", fault: FaultGhost, attempts: 3, launched: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := true
			p, err := StartFaultProxy(srv.Endpoint, FaultRates{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Close() }() // closing the proxy's listener reports nothing actionable
			p.Choose = func(action string) Fault {
				if action == "RunInstances" && first {
					first = false
					return tc.fault
				}
				return ""
			}
			cfg := Config(p.Endpoint, Region)
			cfg.RetryMaxAttempts = tc.attempts
			before := running()
			err = run(ec2.NewFromConfig(cfg))
			var apiErr smithy.APIError
			switch {
			case tc.wantCode == "" && err != nil:
				t.Fatalf("RunInstances = %v, want success", err)
			case tc.wantCode != "" && (!errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.wantCode):
				t.Fatalf("RunInstances = %v, want code %s", err, tc.wantCode)
			}
			if got := running() - before; got != tc.launched {
				t.Errorf("%d instances launched, want %d", got, tc.launched)
			}
			if got := p.Injected()["RunInstances:"+string(tc.fault)]; got != 1 {
				t.Errorf("injected %d %s faults, want 1", got, tc.fault)
			}
		})
	}
}

// Seeded rates give one sequence of faults per seed, and only the faults
// an action can meet.
func TestFaultRatesChooser(t *testing.T) {
	rates := FaultRates{Seed: 7, Throttle: 0.1, ServerError: 0.1, Capacity: 0.3, Ghost: 0.3, Slow: 0.2}
	a, b := Chooser(rates), Chooser(rates)
	seen := map[Fault]bool{}
	for i := range 400 {
		action := []string{"CreateFleet", "DescribeInstances"}[i%2]
		fa, fb := a(action), b(action)
		if fa != fb {
			t.Fatalf("draw %d: %q and %q from one seed", i, fa, fb)
		}
		if action == "DescribeInstances" && fa != "" && fa != FaultThrottle && fa != FaultServerError {
			t.Errorf("DescribeInstances drew %q, which only launches meet", fa)
		}
		seen[fa] = true
	}
	for _, f := range []Fault{FaultThrottle, FaultServerError, FaultCapacity, FaultGhost, FaultSlow, ""} {
		if !seen[f] {
			t.Errorf("400 draws never gave %q", f)
		}
	}
	if got, want := rates.String(), "seed=7,throttle=0.1,5xx=0.1,capacity=0.3,slow=0.2,slow-for=0s,ghost=0.3"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
