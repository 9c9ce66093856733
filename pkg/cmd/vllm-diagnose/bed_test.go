package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Every scenario runs two hours, so that its fault (the middle third) has the hour of
// baseline that baseline rules compare with; 15 s is the data sources' scrape interval.
const (
	runFor = 2 * time.Hour
	scrape = 15 * time.Second
)

// fleetSize is the fleet scenario the bed holds beside the catalogue's.
const fleetSize = 12

// spansScenario is the scenario whose request spans the bed's Jaeger holds.
const spansScenario = sim.RuleKVCacheSaturated

var runStart = time.Now().Add(-runFor - 10*time.Minute).Truncate(time.Minute)

// The commands under test, built once per test binary without the race detector: it would
// slow the simulation tenfold and tests nothing of theirs.
var cliBin, simBin string

func TestMain(m *testing.M) {
	// The plugin served over gRPC logs each request; the tests' output is for their failures.
	log.DefaultLogger = log.NewNullLogger()
	dir, err := os.MkdirTemp("", "vllm-diagnose-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cliBin, simBin = filepath.Join(dir, "vllm-diagnose"), filepath.Join(dir, "vllm-sim")
	for pkg, bin := range map[string]string{".": cliBin, "../vllm-sim": simBin} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	if thePlugin.Client != nil {
		_ = thePlugin.Shutdown()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// scenarioRun is one simulated scenario, stored in the bed's Prometheus under its own job.
type scenarioRun struct {
	name, job string
	truth     []sim.Finding
}

type bed struct {
	prom   *testbed.PromServer
	jaeger *testbed.JaegerServer
	runs   map[string]*scenarioRun
}

func jobOf(name string) string { return "sim-" + name }

// scenarioNames are every catalogue scenario and a fleet.
func scenarioNames() []string {
	return append(sim.Scenarios(), sim.FleetPrefix+fmt.Sprint(fleetSize))
}

// newBed simulates every scenario with the vllm-sim command's backfill, as an operator would,
// loads them into one real Prometheus (each under its own job), and sends the request spans
// of spansScenario to a real Jaeger.
func newBed(t *testing.T) *bed {
	t.Helper()
	b := &bed{runs: map[string]*scenarioRun{}, jaeger: testbed.Jaeger(t)}
	dir := t.TempDir()
	names := scenarioNames()
	files := make([]string, len(names))
	runs := make([]*scenarioRun, len(names))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() error {
			job := jobOf(name)
			args := []string{"--scenario", name, "--start", runStart.Format(time.RFC3339), "--duration", runFor.String(),
				"--scrape-interval", scrape.String()}
			if name == spansScenario {
				args = append(args, "--otlp-endpoint", b.jaeger.OTLPGRPC)
			}
			run := &scenarioRun{name: name, job: job}
			file, err := testbed.SimBackfill(simBin, dir, sim.Job, job, &run.truth, args...)
			files[i], runs[i] = file, run
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		b.runs[r.name] = r
	}
	b.prom = testbed.Prometheus(t, files...)
	return b
}

// traceIn waits until Jaeger serves the spans of spansScenario's faulty instance between from
// and to, and returns one of their trace ids.
func (b *bed) traceIn(t *testing.T, instance string, from, to time.Time) string {
	t.Helper()
	src, err := jaeger.New(http.DefaultClient, b.jaeger.QueryURL, traces.Options{ServiceName: vllm.DefaultServiceName,
		SpanName: vllm.DefaultSpanName, InstanceAttribute: vllm.DefaultInstanceAttr, ModelAttribute: vllm.DefaultModelAttr})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		// Jaeger cannot select by a resource attribute: the search filters the traces it is
		// given, so ask for all of the window's and pick one of the instance's.
		reqs, _, err := src.Search(context.Background(), traces.Query{From: from, To: to, Limit: traces.DefaultMaxLimit})
		var mine []traces.Request
		for _, r := range reqs {
			if r.Instance == instance {
				mine = append(mine, r)
			}
		}
		if err == nil && len(mine) > 0 {
			return mine[len(mine)/2].TraceID
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no span of %s between %s and %s after a minute (last error %v)", instance, from, to, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// thePlugin is the plugin's gRPC server, started once per test binary as Grafana starts it
// once per plugin (the SDK registers its metrics globally, so a second server would panic).
var (
	pluginOnce sync.Once
	thePlugin  datasourcetest.TestPlugin
	pluginErr  error
)

// grafana asks the plugin over gRPC, as Grafana does, for a data source on promURL with this
// jsonData.
type grafana struct {
	tp datasourcetest.TestPlugin
	pc backend.PluginContext
}

func grafanaFor(t *testing.T, promURL string, jsonData map[string]any) grafana {
	t.Helper()
	pluginOnce.Do(func() { thePlugin, pluginErr = testbed.Plugin(plugin.NewDatasource) })
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	raw, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	return grafana{tp: thePlugin, pc: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
		UID: "vllm-" + t.Name(), Name: "vLLM", URL: promURL, JSONData: raw, Updated: time.Now(),
	}}}
}

// ask runs one query of the plugin's query model over gRPC with the interval the CLI uses.
func (g grafana) ask(t *testing.T, model map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, _ := json.Marshal(model)
	qt, _ := model["queryType"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := g.tp.Client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: g.pc, Queries: []backend.DataQuery{{
		RefID: "A", QueryType: qt, JSON: raw, Interval: scrape, MaxDataPoints: 43200, TimeRange: backend.TimeRange{From: from, To: to}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error != nil {
		t.Fatalf("the plugin answers %v over gRPC", r.Error)
	}
	return r
}

// result is one run of the built command.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the built vllm-diagnose with args and extra environment variables.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("running vllm-diagnose %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
