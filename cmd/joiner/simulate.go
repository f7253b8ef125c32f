package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/simulate"
	"github.com/joiner-dev/joiner/pkg/statuspage"
)

// solve is the solver simulate runs; tests may replace it.
// simulateNow is the plan's clock: a NodePool dumped from a cluster
// carries its launch back-offs, which are judged against it. Tests fix it.
var simulateNow = time.Now

var solve simulate.Solver = func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
	return scheduling.Solve(s, scheduling.Options{})
}

type simulateOptions struct {
	scenario      string
	files         []string
	instanceTypes string
	output        string
	podsPerNode   int
	brief         bool
	lowerBound    bool
	zones         []string
	families      []string
	// Disruption dry run.
	disruption bool
	cluster    string
	rounds     int
	minSavings float64
	spotToSpot bool
	listPrices bool
	// ignoreDRA is IGNORE_DRA_REQUESTS: false plans the dump's resource
	// claims against its DeviceClasses and ResourceSlices.
	ignoreDRA bool
	// schedulerConfig is SCHEDULER_CONFIG: kube-scheduler's default
	// topology spread, read by schedulerconfig as the controller reads it.
	schedulerConfig string
}

func newSimulateCommand() *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate (--scenario FILE | -f FILE...)",
		Short: "Show the nodes joiner would launch for pending pods, and why pods cannot be placed",
		Long: `simulate solves one scheduling round offline and prints the plan: the new
nodes by NodePool and instance type with their pods and $/hour, the pods
placed on existing nodes, and every unschedulable pod with its reasons,
grouped.

Input is either a scenario JSON file (--scenario) or Kubernetes YAML (-f,
repeatable, "-" for stdin): NodePools, Pods, Deployments, ReplicaSets,
StatefulSets, Jobs, DaemonSets, Nodes, PVCs, PVs, StorageClasses, node
classes, NodeOverlays, and CapacityBuffers (with the PodTemplates,
workloads and ResourceQuotas they name), as written by hand or dumped by
kubectl get -o yaml. A CapacityBuffer's chunks are planned as the
controller plans them, after every real pod; the report says where each
buffer's room is. Without
--instance-types, NodePools get joiner's built-in AWS-like catalog.

With --disruption, simulate is a dry run of voluntary disruption instead:
the commands emptiness, drift and consolidation would issue now (the
nodes they remove, the replacements they launch first, the pods that
would move and the $/hour saved), and for every managed node why it is
or is not a candidate, in Karpenter's words. Input is a kubectl dump
(-f: NodePools, NodeClaims, Nodes, Pods, PodDisruptionBudgets, ...) or a
scenario with a consolidation cluster file (--scenario with --cluster);
the latter can replay several rounds (--rounds). The dry run reads its
input as the plan does and as the controller plans: a dump's
CapacityBuffers keep their room on the nodes that would hold it, and
--scheduler-config (SCHEDULER_CONFIG) spreads pods without constraints of
their own.`,
		Example: `  joiner simulate -f examples/simulate/cluster.yaml
  kubectl get nodepools,nodes,pods,deployments -A -o yaml | joiner simulate -f -
  joiner simulate --scenario diverse-1000.json -o json
  joiner simulate -f examples/simulate/cluster.yaml -o html > plan.html
  kubectl get nodepools,nodeclaims,nodes,pods,pdb -A -o yaml | joiner simulate --disruption -f -
  joiner simulate --disruption --scenario diverse-1000.json --cluster diverse-1000.half.cluster.json --rounds 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(o, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario JSON file (meta, instanceTypes, nodePools, pods)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "Kubernetes YAML or JSON manifests; repeatable; - reads stdin")
	f.StringVar(&o.instanceTypes, "instance-types", "", "instance-type catalog JSON (a list, or an object with instanceTypes); default: the built-in catalog")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or html (the plan drawn as joiner run's status page)")
	f.IntVar(&o.podsPerNode, "pods-per-node", 10, "pods listed per node in text output; 0 lists all")
	f.BoolVar(&o.brief, "brief", false, "text output: node groups only, without a line per node")
	f.BoolVar(&o.lowerBound, "lower-bound", true, "also compute the LP lower bound on the new nodes' cost")
	f.StringSliceVar(&o.zones, "zones", nil, "zones of the built-in catalog when no node class or Node names them")
	f.BoolVar(&o.disruption, "disruption", false, "dry-run voluntary disruption (emptiness, drift, consolidation) instead of provisioning")
	f.StringVar(&o.cluster, "cluster", "", "with --disruption and --scenario: a consolidation cluster file (nodes and the pods bound to them)")
	f.IntVar(&o.rounds, "rounds", 1, "with --disruption --cluster: decisions to make, applying each command before the next; 0 until none is left")
	f.Float64Var(&o.minSavings, "min-savings", disruption.DefaultMinSavingsFraction, "with --disruption: least share of the candidates' price a replacement must save")
	f.BoolVar(&o.spotToSpot, "spot-to-spot", false, "with --disruption: allow spot-to-spot consolidation (the SpotToSpotConsolidation feature gate)")
	f.BoolVar(&o.listPrices, "list-prices", false, "price nodes at their offerings' list prices alone, as Karpenter does (PRICE_MODEL=List), instead of what the bill says (surplus CPU credits of burstable types and EBS volumes added)")
	f.BoolVar(&o.ignoreDRA, "ignore-dra-requests", true, "leave pods with Dynamic Resource Allocation claims unprovisioned, as Karpenter does by default (IGNORE_DRA_REQUESTS); false plans nodes whose devices meet the claims, from the input's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices")
	f.StringVar(&o.schedulerConfig, "scheduler-config", os.Getenv("SCHEDULER_CONFIG"), "kube-scheduler's default topology spread, planned for pods without constraints of their own, as the controller's --scheduler-config (SCHEDULER_CONFIG, its default here): a KubeSchedulerConfiguration or Karpenter's podTopologySpread document, inline or as a file path")
	f.StringSliceVar(&o.families, "instance-families", nil, "limit the built-in catalog to these families (e.g. m5,c6g); known: "+strings.Join(catalog.Families(), ","))
	return cmd
}

// solver is solve, or the solver with --list-prices or
// --ignore-dra-requests=false.
func (o *simulateOptions) solver() simulate.Solver {
	if !o.listPrices && o.ignoreDRA {
		return solve
	}
	opts := o.schedulingOptions()
	return func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
		return scheduling.Solve(s, opts)
	}
}

// schedulingOptions are the solver settings the flags give.
func (o *simulateOptions) schedulingOptions() scheduling.Options {
	return scheduling.Options{ListPrices: o.listPrices, PlanDynamicResources: !o.ignoreDRA}
}

func runSimulate(o *simulateOptions, stdin io.Reader, stdout io.Writer) error {
	if o.output != "text" && o.output != "json" && o.output != "html" {
		return fmt.Errorf("--output: want text, json or html, got %q", o.output)
	}
	if (o.scenario == "") == (len(o.files) == 0) {
		return errors.New("give either --scenario FILE or -f FILE (one or more)")
	}
	if o.disruption {
		if o.output == "html" {
			return errors.New("--output html draws a provisioning plan; with --disruption use text or json")
		}
		return runDisruption(o, stdin, stdout)
	}
	if o.cluster != "" {
		return errors.New("--cluster: only with --disruption")
	}
	in, err := loadSimulation(o, stdin)
	if err != nil {
		return err
	}
	if o.output == "html" {
		return writeHTML(o, in, stdout)
	}
	report, err := simulate.Run(in.snap, simulate.Options{Solve: o.solver(), LowerBound: o.lowerBound, Notes: in.notes, Buffers: in.buffers})
	if err != nil {
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(stdout)
	}
	return report.WriteText(stdout, simulate.TextOptions{MaxPods: o.podsPerNode, Brief: o.brief})
}

// writeHTML draws the plan as `joiner run`'s status page draws the live
// cluster: the input's nodes with the pods the plan adds, the new nodes,
// the cost now and after the plan, every pending pod's verdict and where
// the CapacityBuffers' room is.
func writeHTML(o *simulateOptions, in *simulation, stdout io.Writer) error {
	snap := in.snap
	plan, err := o.solver()(snap)
	if err != nil {
		return fmt.Errorf("solving: %w", err)
	}
	title := o.scenario
	if title == "" {
		title = strings.Join(o.files, ", ")
	}
	return statuspage.Render(stdout, statuspage.Build(statuspage.Input{
		Title:    title,
		Subtitle: "what-if plan (joiner simulate)",
		Snapshot: snap,
		Plan:     plan,
		Buffers:  capacitybuffer.Rooms(in.buffers, capacitybuffer.Outcomes(snap, plan, nil, nil)),
		Notes:    in.notes,
	}))
}

// simulation is simulate's input: the snapshot to solve, notes for the
// user, and the CapacityBuffers as they resolved (their virtual pods are
// among the snapshot's pods).
type simulation struct {
	snap    *scheduling.Snapshot
	notes   []string
	buffers []capacitybuffer.Resolution
}

// loadSimulation reads the input into a Snapshot, with notes for the user.
func loadSimulation(o *simulateOptions, stdin io.Reader) (*simulation, error) {
	in, err := o.input(simulateNow())
	if err != nil {
		return nil, err
	}
	if o.scenario != "" {
		s, err := scenario.LoadFile(o.scenario)
		if err != nil {
			return nil, err
		}
		in.shape(s.Snapshot)
		return &simulation{snap: s.Snapshot}, nil
	}
	m, err := readManifests(o.files, stdin)
	if err != nil {
		return nil, err
	}
	snap, err := m.Snapshot(in.opts)
	if err != nil {
		return nil, err
	}
	// Gangs first: reading them names the requests of classes joiner
	// does not serve among the ignored objects.
	notes, err := gangNotes(m, snap)
	if err != nil {
		return nil, err
	}
	if len(snap.NodePools) == 0 {
		notes = append(notes, "the input has no NodePool, so no new node can be planned")
	}
	notes = append(notes, manifestNotes(m)...)
	return &simulation{snap: snap, notes: notes, buffers: m.Buffers()}, nil
}

// simulationInput is how every simulate mode (the plan, --html,
// --disruption) reads its input as the controller would: the instance
// types (--instance-types, else the catalog), kube-scheduler's default
// spread from --scheduler-config (SCHEDULER_CONFIG), resource claims, and
// a dump's CapacityBuffers, resolved and planned by scenario.Manifests'
// Snapshot as the controller's live model plans them.
type simulationInput struct {
	opts scenario.SnapshotOptions
}

// input reads the options' instance types and scheduler config.
func (o *simulateOptions) input(now time.Time) (*simulationInput, error) {
	in := &simulationInput{opts: scenario.SnapshotOptions{
		Now:     now,
		Catalog: catalog.Options{Zones: o.zones, Families: o.families},
		Devices: !o.ignoreDRA,
	}}
	if o.instanceTypes != "" {
		var err error
		if in.opts.InstanceTypes, err = scenario.LoadInstanceTypes(o.instanceTypes); err != nil {
			return nil, err
		}
	}
	spread, err := schedulerconfig.Load(o.schedulerConfig)
	if err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	in.opts.DefaultSpread = spread
	return in, nil
}

// shape gives a scenario file's snapshot the options' instance types and
// default spread (a scenario file has no Services or workloads to deduce
// selectors from, nor CapacityBuffers).
func (in *simulationInput) shape(snap *scheduling.Snapshot) {
	if its := in.opts.InstanceTypes; its != nil {
		for pool := range snap.InstanceTypes {
			snap.InstanceTypes[pool] = its
		}
	}
	if d := in.defaultSpread(); d != nil {
		snap.DefaultSpread = d
	}
}

// defaultSpread is the default spread of a scenario file's snapshot, nil
// without --scheduler-config.
func (in *simulationInput) defaultSpread() *scheduling.DefaultSpread {
	if in.opts.DefaultSpread == nil {
		return nil
	}
	return &scheduling.DefaultSpread{Constraints: in.opts.DefaultSpread}
}

// manifestNotes say what of a dump was planned specially or left out.
func manifestNotes(m *scenario.Manifests) []string {
	notes := m.OverlayNotes()
	if len(m.Buffers()) > 0 {
		notes = append(notes, fmt.Sprintf("planned the room of %s at the lowest priority (joiner needs --feature-gates=CapacityBuffer=true to do the same)", count(len(m.Buffers()), "CapacityBuffer")))
	}
	if len(m.Ignored) > 0 {
		notes = append(notes, fmt.Sprintf("ignored %s of kinds simulate does not read: %s", count(len(m.Ignored), "object"), shortList(m.Ignored)))
	}
	if elsewhere := m.BoundElsewhere(); len(elsewhere) > 0 {
		notes = append(notes, fmt.Sprintf("left out %s bound to nodes not in the input: %s", count(len(elsewhere), "pod"), shortList(elsewhere)))
	}
	return notes
}

// shortList joins the first few items of list.
func shortList(list []string) string {
	shown := list[:min(len(list), 5)]
	more := ""
	if len(list) > len(shown) {
		more = fmt.Sprintf(", … and %d more", len(list)-len(shown))
	}
	return strings.Join(shown, ", ") + more
}

// count is "1 pod" or "n pods".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
