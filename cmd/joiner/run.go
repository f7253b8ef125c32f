package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/operator"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// runOptions configure `joiner run`.
type runOptions struct {
	settings *options.Options
	// runDir holds the control plane, the simulated cloud's store and
	// joiner's log; it is removed on a clean exit.
	runDir string
	// replicas of the example Deployment.
	replicas int32
	// exitAfterDemo ends the command once the scale-down is done instead
	// of waiting for Ctrl-C.
	exitAfterDemo bool
	// keepRunDir keeps runDir on exit.
	keepRunDir bool
	// timeout bounds each step of the demo.
	timeout time.Duration
	// localEC2 runs the AWS provider against a local EC2 (moto_server).
	localEC2 bool
	// faultNodeClass adds a heavier NodePool on a SimNodeClass whose
	// nodes never register, to show the launch back-off and the fallback.
	faultNodeClass bool
	out            io.Writer
}

// newRunCommand is `make run`: the main job on the embedded default.
func newRunCommand() *cobra.Command {
	o := &runOptions{settings: &options.Options{}}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run joiner end to end on a local control plane with the simulated cloud",
		Long: `Start a local control plane (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager and kwok), install joiner's CRDs, run joiner in this
process against the simulated cloud, apply an example SimNodeClass, NodePool
and Deployment, and print what happens as it happens: pods pending, NodeClaims
created, launched, registered and initialised, pods running; then scale the
Deployment to zero and watch joiner's consolidation give the emptied nodes
back: each deleted NodeClaim shows the reason joiner recorded, then the node
drains and goes away. The cluster keeps running until Ctrl-C; its kubeconfig path is
printed so you can kubectl into it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The demo is one process: a second replica is not coming, and the
			// ports are free for the user unless they ask for them.
			if !cmd.Flags().Changed("disable-leader-election") {
				o.settings.DisableLeaderElection = true
			}
			if !cmd.Flags().Changed("metrics-port") {
				o.settings.MetricsPort = 0
			}
			if !cmd.Flags().Changed("health-probe-port") {
				o.settings.HealthProbePort = 0
			}
			if !cmd.Flags().Changed("cluster-name") {
				o.settings.ClusterName = "joiner-local"
			}
			if o.faultNodeClass && !cmd.Flags().Changed("registration-ttl") {
				// The default 15 minutes would keep the demo waiting.
				o.settings.RegistrationTTL = demoFaultRegistrationTTL
			}
			// The status page is the demo's place to look; on a free
			// loopback port unless asked otherwise (the URL is printed).
			if !cmd.Flags().Changed("status-page") {
				o.settings.StatusPage = true
			}
			if !cmd.Flags().Changed("status-page-address") {
				o.settings.StatusPageAddress = "127.0.0.1:0"
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.out = cmd.OutOrStdout()
			return runDemo(ctx, o)
		},
	}
	o.settings.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.runDir, "run-dir", ".run", "Directory for the control plane, the simulated cloud's store and joiner's log")
	cmd.Flags().Int32Var(&o.replicas, "replicas", 20, "Replicas of the example Deployment")
	cmd.Flags().BoolVar(&o.exitAfterDemo, "exit-after-demo", false, "Exit once the scale-down is done instead of waiting for Ctrl-C")
	cmd.Flags().BoolVar(&o.keepRunDir, "keep-run-dir", false, "Keep the run directory (logs, etcd data) on exit")
	cmd.Flags().DurationVar(&o.timeout, "step-timeout", 5*time.Minute, "How long each step of the demo may take")
	cmd.Flags().BoolVar(&o.faultNodeClass, "fault-nodeclass", false, "Also apply a heavier NodePool on a SimNodeClass whose nodes never register (faults.neverRegister), to watch joiner back off its launches and fall back to the default NodePool (registration TTL 20s unless --registration-ttl is set)")
	cmd.Flags().BoolVar(&o.localEC2, "local-ec2", false, "With --cloud-provider=aws: start a local EC2 (moto_server), seed it like an EKS account and boot its instances into kwok Nodes")
	return cmd
}

// runDemo runs the whole demo; it returns when the demo fails, when ctx
// ends, or (with exitAfterDemo) when the scale-down is done.
func runDemo(ctx context.Context, o *runOptions) (err error) {
	if err := o.settings.Validate(); err != nil {
		return err
	}
	aws := o.settings.CloudProvider == options.CloudProviderAWS
	if aws != o.localEC2 {
		if aws {
			return errAWSNeedsLocalEC2
		}
		return errors.New("--local-ec2 needs --cloud-provider=aws")
	}
	if o.faultNodeClass && aws {
		return errors.New("--fault-nodeclass needs the simulated cloud (its SimNodeClass faults)")
	}
	runDir, err := filepath.Abs(o.runDir)
	if err != nil {
		return fmt.Errorf("resolving run directory: %w", err)
	}
	if err := os.RemoveAll(runDir); err != nil {
		return fmt.Errorf("cleaning run directory: %w", err)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	s := newStory(o.out)
	defer func() {
		if err != nil || o.keepRunDir {
			s.sayf("run directory kept: %s (control-plane logs in logs/, joiner's in joiner.log)", runDir)
			return
		}
		if rmErr := os.RemoveAll(runDir); rmErr != nil {
			s.sayf("could not remove run directory %s: %v", runDir, rmErr)
		}
	}()

	// The control plane.
	s.sayf("starting the local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok)")
	crdFiles, err := apis.CRDFiles()
	if err != nil {
		return err
	}
	var crds [][]byte
	for _, b := range crdFiles {
		crds = append(crds, b)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	cp, err := controlplane.New(controlplane.Options{
		RunDir:            filepath.Join(runDir, "controlplane"),
		Scheduler:         true,
		ControllerManager: true,
		Kwok:              true,
		CRDs:              crds,
		Scheme:            scheme,
	})
	if err != nil {
		return err
	}
	defer func() {
		s.sayf("stopping the control plane")
		if stopErr := cp.Stop(); stopErr != nil {
			s.sayf("stopping the control plane: %v", stopErr)
		}
	}()
	if err := cp.Start(ctx); err != nil {
		return err
	}
	s.sayf("control plane ready; kubeconfig: %s", cp.KubeconfigPath())

	// joiner, in this process, logging to a file so the terminal tells the story.
	logPath := filepath.Join(runDir, "joiner.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating joiner log: %w", err)
	}
	defer logFile.Close()
	logger, err := operator.NewLogger(o.settings.LogLevel, logFile)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	settings := *o.settings
	if settings.SimStorePath == "" {
		settings.SimStorePath = filepath.Join(runDir, "sim-instances.json")
	}
	nodeClass, nodeClassRef := demoSimNodeClass()
	provider := "the simulated cloud"
	var interrupt func(ctx context.Context, nc *v1.NodeClaim) (string, error)
	var capacityTypes []string
	if o.localEC2 {
		local, err := startLocalAWS(ctx, s, runDir, &settings, cp.Client(), cp.Config().Host)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := local.stop(); stopErr != nil {
				s.sayf("stopping the local EC2: %v", stopErr)
			}
		}()
		machinesCtx, stopMachines := context.WithCancel(ctx)
		machinesDone := make(chan struct{})
		go func() { defer close(machinesDone); local.run(machinesCtx, logger) }()
		defer func() { stopMachines(); <-machinesDone }()
		nodeClass, nodeClassRef = local.nodeClass(settings.ClusterName)
		capacityTypes = localAWSCapacityTypes
		interrupt = func(ctx context.Context, nc *v1.NodeClaim) (string, error) {
			return local.interrupt(ctx, settings.InterruptionQueue, nc)
		}
		provider = "the AWS provider on the local EC2 at " + local.server.Endpoint
	}
	if settings.StatusPage && settings.StatusPageListener == nil {
		ln, err := net.Listen("tcp", settings.StatusPageAddress)
		if err != nil {
			return fmt.Errorf("listening for the status page on %s (--status-page-address): %w", settings.StatusPageAddress, err)
		}
		// The status page's server closes it; this covers a joiner that
		// stops before serving.
		defer ln.Close()
		settings.StatusPageListener = ln
	}
	opCtx, stopOperator := context.WithCancel(ctx)
	operatorDone := make(chan error, 1)
	go func() { operatorDone <- operator.Run(opCtx, cp.Config(), &settings, logger) }()
	defer func() {
		stopOperator()
		if opErr := <-operatorDone; opErr != nil && !errors.Is(opErr, context.Canceled) {
			s.sayf("joiner stopped with an error: %v", opErr)
		}
	}()
	s.sayf("joiner running with %s (cluster %q, logs: %s)", provider, settings.ClusterName, logPath)
	if settings.StatusPageListener != nil {
		s.sayf("status page: http://%s/ (nodes and their requests, cost per hour, pending pods and why)", settings.StatusPageListener.Addr())
	}

	d := &demo{
		story:         s,
		client:        cp.Client(),
		replicas:      o.replicas,
		nodeClass:     nodeClass,
		nodeClassRef:  nodeClassRef,
		interrupt:     interrupt,
		capacityTypes: capacityTypes,
		faultPool:     o.faultNodeClass,
		timeout:       o.timeout,
		operatorDone:  operatorDone,
	}
	if err := d.run(ctx); err != nil {
		return err
	}
	s.sayf("demo done; inspect the cluster with: kubectl --kubeconfig %s get nodepools,nodeclaims,nodes", cp.KubeconfigPath())
	if o.exitAfterDemo {
		return nil
	}
	s.sayf("the cluster and joiner keep running: scale the Deployment (kubectl --kubeconfig %s scale deployment/%s --replicas=30) and watch; Ctrl-C to stop", cp.KubeconfigPath(), demoName)
	go d.story.watch(ctx, d.client)
	select {
	case <-ctx.Done():
		s.sayf("interrupted, cleaning up")
		return nil
	case err := <-operatorDone:
		operatorDone <- err
		return fmt.Errorf("joiner stopped: %w", err)
	}
}
