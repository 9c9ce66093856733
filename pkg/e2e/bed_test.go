package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/stack"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Every scenario runs for two hours so that the fault (the middle third) has the hour of
// baseline that baseline rules compare with.
const (
	runFor = 2 * time.Hour
	scrape = 15 * time.Second
)

// runStart is shared by every scenario, so that one query range fits all of them.
var runStart = time.Now().Add(-runFor - 10*time.Minute).Truncate(time.Minute)

// scenarioRun is one simulated scenario, stored in the shared Prometheus under its own job.
type scenarioRun struct {
	name  string
	job   string
	truth []sim.Finding
}

type bed struct {
	prom *testbed.PromServer
	runs map[string]*scenarioRun
}

// newBed simulates every scenario in both metric generations with the vllm-sim command's
// backfill, as an operator would, and loads them into one Prometheus, which lives as long as
// the test t. The command is built without the race detector, which would slow the simulation
// tenfold and test nothing of the plugin.
func newBed(t *testing.T) *bed {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "vllm-sim")
	build := exec.Command("go", "build", "-o", bin, "./pkg/cmd/vllm-sim")
	build.Dir = stack.RepoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building vllm-sim: %s", out)

	b := &bed{runs: map[string]*scenarioRun{}}
	type job struct {
		name string
		gen  vllm.Generation
	}
	var jobs []job
	for _, gen := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationV0} {
		for _, name := range sim.Scenarios() {
			jobs = append(jobs, job{name, gen})
		}
	}
	files := make([]string, len(jobs))
	runs := make([]*scenarioRun, len(jobs))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		g.Go(func() error {
			name := jobOf(j.name, j.gen)
			run := &scenarioRun{name: j.name, job: name}
			file, err := testbed.SimBackfill(bin, dir, sim.Job, name, &run.truth, "--scenario", j.name, "--generation", string(j.gen),
				"--start", runStart.Format(time.RFC3339), "--duration", runFor.String(), "--scrape-interval", scrape.String())
			files[i], runs[i] = file, run
			return err
		})
	}
	require.NoError(t, g.Wait())
	for _, r := range runs {
		b.runs[r.job] = r
	}
	b.prom = testbed.Prometheus(t, files...)
	return b
}

// jobOf names the Prometheus job of a scenario run: the simulator writes job="vllm", and one
// Prometheus holds every scenario, each selected by the data source's label matchers.
func jobOf(name string, gen vllm.Generation) string { return "sim-" + name + "-" + string(gen) }

// thePlugin is the plugin's gRPC server, started once per test binary as Grafana starts it
// once per plugin: the SDK registers its metrics globally, so a second server would panic.
// Each test gets its own data source instance through its own settings.
var (
	pluginOnce sync.Once
	thePlugin  datasourcetest.TestPlugin
	pluginErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if thePlugin.Client != nil {
		_ = thePlugin.Shutdown()
	}
	os.Exit(code)
}

// pluginFor returns the plugin's gRPC client and a plugin context for a data source with the
// given jsonData, pointing at promURL.
func pluginFor(t testing.TB, promURL string, jsonData map[string]any) (datasourcetest.TestPlugin, backend.PluginContext) {
	t.Helper()
	pluginOnce.Do(func() { thePlugin, pluginErr = testbed.Plugin(plugin.NewDatasource) })
	require.NoError(t, pluginErr)
	raw, err := json.Marshal(jsonData)
	require.NoError(t, err)
	pc := backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
		UID: "vllm-" + t.Name(), Name: "vLLM", URL: promURL, JSONData: raw, Updated: time.Now(),
	}}
	return thePlugin, pc
}

func query(refID string, model map[string]any, from, to time.Time, interval time.Duration) backend.DataQuery {
	raw, _ := json.Marshal(model)
	qt, _ := model["queryType"].(string)
	return backend.DataQuery{RefID: refID, QueryType: qt, JSON: raw, Interval: interval, MaxDataPoints: 43200,
		TimeRange: backend.TimeRange{From: from, To: to}}
}

func ask(t *testing.T, tp datasourcetest.TestPlugin, pc backend.PluginContext, qs ...backend.DataQuery) *backend.QueryDataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := tp.Client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: qs})
	require.NoError(t, err)
	return resp
}
