// Command vllm-sim simulates a fleet of vLLM servers and produces their telemetry.
//
//	vllm-sim list
//	vllm-sim serve --scenario NAME [--listen 127.0.0.1:8000] [--otlp-endpoint 127.0.0.1:4317]
//	vllm-sim backfill --scenario NAME --start RFC3339|now-2h --duration 1h --scrape-interval 15s \
//	    --openmetrics out.om --truth truth.json [--otlp-endpoint HOST:PORT --otlp-protocol grpc|http] [--generation v0|v1]
//
// serve paces the scenario to the wall clock: instance i serves /metrics on the listen port
// plus i, and pushes its spans to the OTLP endpoint. backfill simulates without sleeping and
// writes an OpenMetrics file for `promtool tsdb create-blocks-from openmetrics`, the ground
// truth as JSON, and optionally pushes the spans with their historical timestamps.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "vllm-sim:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  vllm-sim list
  vllm-sim serve --scenario NAME [--listen 127.0.0.1:8000] [--duration 1h] [--otlp-endpoint HOST:PORT] [--otlp-protocol grpc|http]
  vllm-sim backfill --scenario NAME --start RFC3339|now-2h --duration 1h --scrape-interval 15s --openmetrics FILE --truth FILE
                    [--otlp-endpoint HOST:PORT] [--otlp-protocol grpc|http] [--generation v0|v1]`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "list":
		for _, n := range sim.Scenarios() {
			sc, _ := sim.Lookup(n)
			fmt.Fprintf(stdout, "%-24s %s\n", n, sc.Description)
		}
		fmt.Fprintf(stdout, "%-24s %s\n", sim.FleetPrefix+"N", "a fleet of N instances, faults on five of them (fleet-14: the fleet of the screenshots)")
		return nil
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "backfill":
		return backfill(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// otlpTimeout bounds connecting to the OTLP endpoint and each export.
const otlpTimeout = 5 * time.Second

// commonFlags are the flags serve and backfill share: which scenario, in which metric
// vocabulary, for how long, and where its spans go.
type commonFlags struct {
	scenario, endpoint, protocol, generation *string
	duration                                 *time.Duration
}

func addCommonFlags(fs *flag.FlagSet, scenario, durationHelp string) commonFlags {
	return commonFlags{
		scenario:   fs.String("scenario", scenario, "scenario name (vllm-sim list)"),
		duration:   fs.Duration("duration", time.Hour, durationHelp),
		endpoint:   fs.String("otlp-endpoint", "", "OTLP host:port to push spans to (empty: no spans)"),
		protocol:   fs.String("otlp-protocol", sim.ProtocolGRPC, "grpc or http"),
		generation: fs.String("generation", "", "metric vocabulary: v1 (current) or v0"),
	}
}

func (c commonFlags) lookup() (sim.Scenario, error) {
	return sim.LookupGeneration(*c.scenario, vllm.Generation(*c.generation))
}

// exporter connects to the OTLP endpoint, if one is given, before anything runs, so an
// unreachable endpoint fails first; nil without an endpoint.
func (c commonFlags) exporter(ctx context.Context, sc sim.Scenario) (*sim.Exporter, error) {
	if *c.endpoint == "" {
		return nil, nil
	}
	return sim.NewExporter(ctx, sc, *c.endpoint, *c.protocol, otlpTimeout)
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	common := addCommonFlags(fs, "healthy", "scenario length: faults happen at their fractions of it")
	listen := fs.String("listen", "127.0.0.1:8000", "host:port of the first instance; instance i listens on port+i")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, err := common.lookup()
	if err != nil {
		return err
	}
	// The exporter names the instances by the addresses Serve gives them.
	served, err := sim.Relisten(sc, *listen)
	if err != nil {
		return err
	}
	exp, err := common.exporter(ctx, served)
	if err != nil {
		return err
	}
	if exp != nil {
		defer exp.Close(context.Background())
	}
	return sim.Serve(ctx, sc, sim.ServeOptions{Listen: *listen, Duration: *common.duration, Exporter: exp,
		Ready: func(addrs []string) {
			for _, a := range addrs {
				fmt.Fprintf(stdout, "serving http://%s/metrics\n", a)
			}
		}})
}

func backfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	common := addCommonFlags(fs, "", "length of the run")
	startText := fs.String("start", "now-1h", "start of the run: RFC 3339, or now-DURATION")
	scrape := fs.Duration("scrape-interval", 15*time.Second, "Prometheus scrape interval")
	omPath := fs.String("openmetrics", "", "OpenMetrics file to write")
	truthPath := fs.String("truth", "", "ground truth JSON file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *common.scenario == "" || *omPath == "" || *truthPath == "" {
		return errors.New("backfill needs --scenario, --openmetrics and --truth\n" + usage)
	}
	sc, err := common.lookup()
	if err != nil {
		return err
	}
	start, err := parseStart(*startText, time.Now())
	if err != nil {
		return err
	}
	exp, err := common.exporter(ctx, sc)
	if err != nil {
		return err
	}
	var opts []sim.Option
	if exp == nil {
		opts = append(opts, sim.WithoutSpans())
	} else {
		defer exp.Close(context.Background())
	}
	res, err := sim.Run(sc, start, *common.duration, *scrape, opts...)
	if err != nil {
		return err
	}
	if exp != nil {
		if err := exp.Export(ctx, res.Spans); err != nil {
			return err
		}
	}
	if err := res.WriteFile(*omPath); err != nil {
		return err
	}
	if err := res.WriteTruth(*truthPath); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d instances, %s from %s; %d spans; %d ground-truth findings\n",
		sc.Name, len(sc.Instances), *common.duration, start.UTC().Format(time.RFC3339), len(res.Spans), len(res.Truth))
	return nil
}

// parseStart reads an RFC 3339 time or now-DURATION (now-2h), truncated to the second.
func parseStart(s string, now time.Time) (time.Time, error) {
	if rest, ok := strings.CutPrefix(s, "now"); ok {
		if rest == "" {
			return now.Truncate(time.Second), nil
		}
		d, err := time.ParseDuration(strings.TrimPrefix(rest, "-"))
		if err != nil || !strings.HasPrefix(rest, "-") {
			return time.Time{}, fmt.Errorf("--start %q: want RFC 3339 or now-DURATION such as now-2h", s)
		}
		return now.Add(-d).Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--start %q: want RFC 3339 or now-DURATION such as now-2h", s)
	}
	return t, nil
}
