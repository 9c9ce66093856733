package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/seed/vllm-datasource/pkg/embedprom"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// demoScenario is demo's default: a small fleet whose instances at odd positions carry one
// fault each (sim.Fleet), three faults among six instances.
const demoScenario = sim.FleetPrefix + "6"

// demoRun is how long a demo scenario runs: its fault strikes the middle third, so the rules
// that compare with a baseline have the hour before it.
const demoRun = 2 * time.Hour

// demoScrape is the interval of the simulated scrapes.
const demoScrape = 15 * time.Second

type demoOptions struct {
	scenario   string
	generation string
	list       bool
	save       string
}

func (c *rootCommand) demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [--scenario NAME] [--generation v0|v1] [--list]",
		Short: "Diagnose a simulated vLLM fleet with faults, in an embedded Prometheus: no Prometheus, Docker or GPU needed",
		Long: `demo simulates a vLLM scenario (by default ` + demoScenario + `: six instances, three of them
faulty) for ` + demoRun.String() + ` ending now, writes its scrapes into a Prometheus TSDB inside the
process, and runs the same diagnosis as against a real Prometheus. --list names the scenarios.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The range and the scrape interval are the simulation's.
			why := fmt.Sprintf("demo simulates its own %s up to now, scraped every %s", demoRun, demoScrape)
			if err := refuse(cmd, why, "since", "from", "to", "scrape-interval"); err != nil {
				return err
			}
			return c.runDemo(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.scenario, "scenario", demoScenario, "the simulator's scenario (see --list)")
	cmd.Flags().StringVar(&o.generation, "generation", "", "vLLM's metric names: v1 (current) or v0 (vLLM 0.6 to 0.7); default the scenario's")
	cmd.Flags().StringVar(&o.save, "save", "", "keep the TSDB in this new directory, for vllm-diagnose --from-dir or a Prometheus's --storage.tsdb.path")
	cmd.Flags().BoolVar(&o.list, "list", false, "list the scenarios and exit")
	return cmd
}

func (c *rootCommand) runDemo(ctx context.Context, o demoOptions) error {
	if o.list {
		return listScenarios(c)
	}
	if c.opts.conn.prometheus != "" {
		return errors.New("demo serves its own Prometheus: drop --prometheus, or run vllm-diagnose --prometheus URL without demo")
	}
	sc, err := sim.LookupGeneration(o.scenario, vllm.Generation(o.generation))
	if err != nil {
		return fmt.Errorf("%w (see vllm-diagnose demo --list)", err)
	}
	dir, cleanup, err := tsdbDir(o.save, "vllm-diagnose-demo-")
	if err != nil {
		return err
	}
	defer cleanup()
	p := &progress{w: c.stderr, on: isTerminal(c.stderr)}
	to := c.now().Truncate(demoScrape)
	from := to.Add(-demoRun)
	p.set(fmt.Sprintf("simulating %s: %d instances for %s", sc.Name, len(sc.Instances), demoRun))
	res, err := sim.Run(sc, from, demoRun, demoScrape, sim.WithoutSpans())
	if err != nil {
		return err
	}
	var om bytes.Buffer
	if err := res.WriteOpenMetrics(&om); err != nil {
		return err
	}
	p.set("writing the scrapes into the embedded Prometheus")
	if err := embedprom.Backfill(dir, om.Bytes()); err != nil {
		return err
	}
	srv, err := embedprom.Open(dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	p.set("")
	c.opts.conn.prometheus = srv.URL()
	c.opts.conn.scrapeInterval = demoScrape.String()
	return c.diagnose(ctx, from, to)
}

// listScenarios prints each scenario's name and description.
func listScenarios(c *rootCommand) error {
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, name := range append(sim.Scenarios(), sim.FleetPrefix+"N") {
		desc := fmt.Sprintf("a fleet of N instances, faults on those at odd positions (%s is the default)", demoScenario)
		if sc, err := sim.Lookup(name); err == nil {
			desc = sc.Description
		}
		fmt.Fprintf(w, "%s\t%s\n", name, desc)
	}
	return w.Flush()
}
