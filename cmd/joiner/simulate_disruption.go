package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/simulate"
)

// disruptionNow is the dry run's clock (budgets' schedules,
// do-not-disrupt durations); tests may fix it.
var disruptionNow = time.Now

// runDisruption is `joiner simulate --disruption`.
func runDisruption(o *simulateOptions, stdin io.Reader, stdout io.Writer) error {
	if o.minSavings < 0 || o.minSavings >= 1 {
		return fmt.Errorf("--min-savings: want a share in [0, 1), got %v", o.minSavings)
	}
	if o.rounds < 0 {
		return fmt.Errorf("--rounds: want 0 (until no command) or more, got %d", o.rounds)
	}
	dopts := disruption.Options{SpotToSpot: o.spotToSpot, MinSavingsFraction: o.minSavings, Scheduling: o.schedulingOptions()}
	scoring, err := schedulerconfig.LoadScoring(o.schedulerConfig)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	dopts.Scoring = scoring
	if o.minSavings == 0 {
		dopts.MinSavingsFraction = -1 // any strictly cheaper replacement
	}
	now := disruptionNow()
	input, err := o.input(now)
	if err != nil {
		return err
	}
	run := simulate.DisruptionOptions{Rounds: o.rounds}
	switch {
	case o.scenario != "":
		if o.cluster == "" {
			return errors.New("--disruption with --scenario needs --cluster FILE: the nodes and the pods bound to them")
		}
		c, err := scenario.LoadCluster(o.scenario, o.cluster)
		if err != nil {
			return err
		}
		run.Next = func() (*disruption.Input, error) {
			// The cluster file prices its own nodes: only the spread applies.
			in := c.Input(now, dopts)
			if d := input.defaultSpread(); d != nil {
				in.Cluster.DefaultSpread = d
			}
			return in, nil
		}
		run.Apply = c.Apply
	default:
		if o.cluster != "" {
			return errors.New("--cluster: only with --scenario")
		}
		m, err := readManifests(o.files, stdin)
		if err != nil {
			return err
		}
		in, notes, err := m.DisruptionInput(input.opts, dopts)
		if err != nil {
			return err
		}
		notes = append(notes, manifestNotes(m)...)
		if o.rounds != 1 {
			notes = append(notes, "--rounds needs --scenario with --cluster (a dump cannot replay commands); showing the first round")
		}
		run.Next = func() (*disruption.Input, error) { return in, nil }
		run.Notes = notes
	}
	report, err := simulate.RunDisruption(run)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(stdout)
	}
	return report.WriteText(stdout, simulate.TextOptions{MaxPods: o.podsPerNode, Brief: o.brief})
}

// readManifests reads every -f file ("-" is stdin) into one Manifests.
func readManifests(files []string, stdin io.Reader) (*scenario.Manifests, error) {
	m := &scenario.Manifests{}
	for _, path := range files {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(stdin)
			path = "stdin"
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if err := m.Read(path, data); err != nil {
			return nil, err
		}
	}
	return m, nil
}
