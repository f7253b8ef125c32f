package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/simulate"
)

// solve is the solver simulate runs; tests may replace it.
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
StatefulSets, Jobs, DaemonSets, Nodes, PVCs, PVs, StorageClasses and node
classes, as written by hand or dumped by kubectl get -o yaml. Without
--instance-types, NodePools get joiner's built-in AWS-like catalog.`,
		Example: `  joiner simulate -f examples/simulate/cluster.yaml
  kubectl get nodepools,nodes,pods,deployments -A -o yaml | joiner simulate -f -
  joiner simulate --scenario diverse-1000.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(o, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario JSON file (meta, instanceTypes, nodePools, pods)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "Kubernetes YAML or JSON manifests; repeatable; - reads stdin")
	f.StringVar(&o.instanceTypes, "instance-types", "", "instance-type catalog JSON (a list, or an object with instanceTypes); default: the built-in catalog")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.IntVar(&o.podsPerNode, "pods-per-node", 10, "pods listed per node in text output; 0 lists all")
	f.BoolVar(&o.brief, "brief", false, "text output: node groups only, without a line per node")
	f.BoolVar(&o.lowerBound, "lower-bound", true, "also compute the LP lower bound on the new nodes' cost")
	f.StringSliceVar(&o.zones, "zones", nil, "zones of the built-in catalog when no node class or Node names them")
	f.StringSliceVar(&o.families, "instance-families", nil, "limit the built-in catalog to these families (e.g. m5,c6g); known: "+strings.Join(catalog.Families(), ","))
	return cmd
}

func runSimulate(o *simulateOptions, stdin io.Reader, stdout io.Writer) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output: want text or json, got %q", o.output)
	}
	if (o.scenario == "") == (len(o.files) == 0) {
		return errors.New("give either --scenario FILE or -f FILE (one or more)")
	}
	snap, notes, err := loadSimulation(o, stdin)
	if err != nil {
		return err
	}
	report, err := simulate.Run(snap, simulate.Options{Solve: solve, LowerBound: o.lowerBound, Notes: notes})
	if err != nil {
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(stdout)
	}
	return report.WriteText(stdout, simulate.TextOptions{MaxPods: o.podsPerNode, Brief: o.brief})
}

// loadSimulation reads the input into a Snapshot, with notes for the user.
func loadSimulation(o *simulateOptions, stdin io.Reader) (*scheduling.Snapshot, []string, error) {
	var its []*scheduling.InstanceType
	if o.instanceTypes != "" {
		var err error
		if its, err = scenario.LoadInstanceTypes(o.instanceTypes); err != nil {
			return nil, nil, err
		}
	}
	if o.scenario != "" {
		s, err := scenario.LoadFile(o.scenario)
		if err != nil {
			return nil, nil, err
		}
		if its != nil {
			for pool := range s.Snapshot.InstanceTypes {
				s.Snapshot.InstanceTypes[pool] = its
			}
		}
		return s.Snapshot, nil, nil
	}
	m := &scenario.Manifests{}
	for _, path := range o.files {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(stdin)
			path = "stdin"
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading manifests: %w", err)
		}
		if err := m.Read(path, data); err != nil {
			return nil, nil, err
		}
	}
	snap, err := m.Snapshot(scenario.SnapshotOptions{
		InstanceTypes: its,
		Catalog:       catalog.Options{Zones: o.zones, Families: o.families},
	})
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if len(snap.NodePools) == 0 {
		notes = append(notes, "the input has no NodePool, so no new node can be planned")
	}
	if len(m.Ignored) > 0 {
		notes = append(notes, fmt.Sprintf("ignored %s of kinds simulate does not read: %s", count(len(m.Ignored), "object"), shortList(m.Ignored)))
	}
	if elsewhere := m.BoundElsewhere(); len(elsewhere) > 0 {
		notes = append(notes, fmt.Sprintf("left out %s bound to nodes not in the input: %s", count(len(elsewhere), "pod"), shortList(elsewhere)))
	}
	return snap, notes, nil
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
