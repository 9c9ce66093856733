package plugin

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Two vLLM servers, one model each. Their TTFT observations put the quantiles in known
// buckets, bursts or not: on a, p50 in (0.25, 0.5] and p99 in (1, 2.5]; on b, p50 in
// (0.04, 0.06] and p99 in (0.75, 1].
var (
	serverA = server{instance: "10.0.0.1:8000", model: "meta-llama/Llama-3.1-8B-Instruct", running: 4, kvUsage: 0.5,
		ttft: []observation{{seconds: 0.3, count: 80}, {seconds: 2, count: 20}, {seconds: 2, count: 10, every: 6}},
		itl:  []observation{{seconds: 0.02, count: 500}, {seconds: 0.12, count: 50}, {seconds: 0.35, count: 100, every: 5}}}
	serverB = server{instance: "10.0.0.2:8000", model: "Qwen/Qwen2.5-7B-Instruct", running: 8, kvUsage: 0.7,
		ttft: []observation{{seconds: 0.05, count: 98}, {seconds: 0.9, count: 2}, {seconds: 0.9, count: 10, every: 6}},
		itl:  []observation{{seconds: 0.04, count: 300}, {seconds: 0.18, count: 60, every: 7}}}
)

// dataSpan is how much history each generated Prometheus holds.
const dataSpan = 30 * time.Minute

// env is one plugin process served over gRPC the way Grafana talks to it, and the real
// Prometheus servers its data sources point at. Starting them once per package keeps the
// package's tests fast.
type env struct {
	client *datasourcetest.TestPluginClient
	// end is the last sample time of the generated data (on the scrape grid).
	end time.Time
	// v1 holds the current generation's names, v0 the old engine's, none no vLLM series.
	v1, v0, none *testbed.PromServer
	// v1API queries v1 directly, to compare the plugin's answers with Prometheus's own.
	v1API v1.API
}

func newEnv(t *testing.T) *env {
	t.Helper()
	end := time.Now().Truncate(scrape)
	e := &env{end: end}
	e.v1 = testbed.Prometheus(t, fleet{generation: vllm.GenerationV1, end: end, span: dataSpan, instances: []server{serverA, serverB}}.write(t))
	e.v0 = testbed.Prometheus(t, fleet{generation: vllm.GenerationV0, end: end, span: dataSpan, instances: []server{serverA, serverB}}.write(t))
	e.none = testbed.Prometheus(t, writeNonVLLM(t, end))
	e.v1API = promAPI(t, e.v1.URL)

	e.client = grpcPlugin(t)
	return e
}

// The SDK's middleware registers its metrics in the default registry, so a second
// datasourcetest.Manage in one process panics: every test of the package shares one plugin
// server, shut down by TestMain.
var (
	pluginOnce   sync.Once
	pluginServer datasourcetest.TestPlugin
	pluginErr    error
)

// grpcPlugin returns a gRPC client of the package's plugin server, which serves NewDatasource
// as Grafana's plugin host would.
func grpcPlugin(t testing.TB) *datasourcetest.TestPluginClient {
	t.Helper()
	pluginOnce.Do(func() {
		pluginServer, pluginErr = testbed.Plugin(NewDatasource)
	})
	if pluginErr != nil {
		t.Fatalf("serving the plugin over gRPC: %v", pluginErr)
	}
	return pluginServer.Client
}

func TestMain(m *testing.M) {
	installLogCapture()
	code := m.Run()
	_ = pluginServer.Shutdown()
	if code == 0 {
		code = leaked()
	}
	os.Exit(code)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// dataSourceID makes every data source configuration of the tests a distinct instance:
// Grafana's instance manager caches instances by id and update time.
var dataSourceID atomic.Int64

// pluginContext is what Grafana sends for a data source with this URL and jsonData.
func pluginContext(url string, jsonData map[string]any) backend.PluginContext {
	if jsonData == nil {
		jsonData = map[string]any{}
	}
	if _, ok := jsonData["scrapeInterval"]; !ok {
		jsonData["scrapeInterval"] = scrape.String()
	}
	raw, _ := json.Marshal(jsonData)
	id := dataSourceID.Add(1)
	return backend.PluginContext{
		OrgID:    1,
		PluginID: "seed-vllm-datasource",
		DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
			ID:       id,
			UID:      "vllm-" + strconv.FormatInt(id, 10),
			Name:     "vLLM " + strconv.FormatInt(id, 10),
			Type:     "seed-vllm-datasource",
			URL:      url,
			JSONData: raw,
			Updated:  time.Now(),
		},
	}
}

// dataQuery is a Grafana query over the whole generated history at the scrape interval.
func (e *env) dataQuery(refID string, model map[string]any) backend.DataQuery {
	raw, _ := json.Marshal(model)
	qt, _ := model["queryType"].(string)
	return backend.DataQuery{
		RefID:         refID,
		QueryType:     qt,
		JSON:          raw,
		Interval:      scrape,
		MaxDataPoints: 1000,
		TimeRange:     backend.TimeRange{From: e.end.Add(-dataSpan), To: e.end},
	}
}

func (e *env) query(t *testing.T, pc backend.PluginContext, queries ...backend.DataQuery) *backend.QueryDataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: queries})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	if len(res.Responses) != len(queries) {
		t.Fatalf("QueryData answered %d queries, want %d", len(res.Responses), len(queries))
	}
	return res
}

func (e *env) health(t *testing.T, pc backend.PluginContext) *backend.CheckHealthResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.client.CheckHealth(ctx, &backend.CheckHealthRequest{PluginContext: pc})
	if err != nil {
		t.Fatalf("CheckHealth over gRPC: %v", err)
	}
	return res
}

// resource calls a resource route as Grafana's /api/datasources/uid/<uid>/resources/<path> does.
func (e *env) resource(t *testing.T, pc backend.PluginContext, pathAndQuery string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path, _, _ := strings.Cut(pathAndQuery, "?")
	var got *backend.CallResourceResponse
	err := e.client.CallResource(ctx, &backend.CallResourceRequest{PluginContext: pc, Path: path, Method: "GET", URL: pathAndQuery},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			got = r
			return nil
		}))
	if err != nil {
		t.Fatalf("CallResource %s over gRPC: %v", pathAndQuery, err)
	}
	if got == nil {
		t.Fatalf("CallResource %s sent no response", pathAndQuery)
	}
	return got.Status, got.Body
}

// promAPI is a plain client of a Prometheus, for the tests' own queries.
func promAPI(t testing.TB, url string) v1.API {
	t.Helper()
	api, err := promapi.NewClient(promapi.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(api)
}
