package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// simScrape is the scrape interval of the simulated fleets, and the data sources' setting.
const simScrape = 15 * time.Second

// simRun is how long each scenario runs; its fault holds from a third to two thirds of it.
const simRun = 30 * time.Minute

// spanSampling keeps one request span in this many, as a sampling tracer would.
const spanSampling = 5

// traceBed is a real Prometheus holding two simulated scenarios one after the other, a real
// Jaeger v2 holding their sampled request spans (and a few odd spans), and the plugin served
// over gRPC as Grafana talks to it.
type traceBed struct {
	client  *datasourcetest.TestPluginClient
	prom    *testbed.PromServer
	promAPI v1.API
	jaeger  *testbed.JaegerServer
	// runs are the scenarios by name; each one's spans are in Jaeger.
	runs map[string]*sim.Result
	// odd holds trace ids of spans sent on their own: "gateway" (not vLLM) and "bare" (a vLLM
	// span without latency attributes, at oddAt).
	odd   map[string]string
	oddAt time.Time
}

func newTraceBed(t *testing.T) *traceBed {
	t.Helper()
	ctx := context.Background()
	end := time.Now().Truncate(time.Minute).Add(-5 * time.Minute)
	b := &traceBed{runs: map[string]*sim.Result{}, odd: map[string]string{}}
	starts := map[string]time.Time{
		sim.RuleKVCacheSaturated: end.Add(-2*simRun - 10*time.Minute),
		sim.RulePrefixCacheMiss:  end.Add(-simRun),
	}
	var files []string
	for name, start := range starts {
		sc, err := sim.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == sim.RulePrefixCacheMiss {
			// Current vLLM spans carry no model: the plugin takes it from the metrics.
			off := false
			sc.SpanModelAttribute = &off
			// The seed makes the trace ids: two runs with one seed would share them.
			sc.Seed++
		}
		res, err := sim.Run(sc, start, simRun, simScrape, sim.WithSpanSampling(spanSampling))
		if err != nil {
			t.Fatalf("simulating %s: %v", name, err)
		}
		b.runs[name] = res
		path := filepath.Join(t.TempDir(), name+".om")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteOpenMetrics(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	b.prom = testbed.Prometheus(t, files...)
	api, err := promapi.NewClient(promapi.Config{Address: b.prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	b.promAPI = v1.NewAPI(api)

	b.jaeger = testbed.Jaeger(t)
	for name, res := range b.runs {
		if err := sim.ExportAll(ctx, res.Scenario, b.jaeger.OTLPGRPC, res.Spans, 10*time.Second); err != nil {
			t.Fatalf("sending the spans of %s to Jaeger: %v", name, err)
		}
	}
	b.oddAt = end.Add(-simRun - 5*time.Minute)
	b.odd["gateway"] = b.sendSpan(t, "gateway", "POST /v1/chat/completions", b.oddAt, nil)
	b.odd["bare"] = b.sendSpan(t, vllm.DefaultServiceName, vllm.DefaultSpanName, b.oddAt.Add(time.Second), []attribute.KeyValue{
		attribute.Int(vllm.AttrPromptTokens, 321), attribute.String(vllm.AttrRequestID, "cmpl-bare")})
	b.waitForSpans(t)

	b.client = grpcPlugin(t)
	return b
}

// sendSpan sends one span of its own trace through the OTel SDK and returns its trace id.
func (b *traceBed) sendSpan(t *testing.T, service, name string, at time.Time, attrs []attribute.KeyValue) string {
	t.Helper()
	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(b.jaeger.OTLPGRPC), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(
		attribute.String(vllm.ResourceServiceName, service),
		attribute.String(vllm.ResourceInstanceID, sim.FaultyInstance))))
	_, span := tp.Tracer("test").Start(ctx, name, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	id := span.SpanContext().TraceID().String()
	span.End(trace.WithTimestamp(at.Add(1500 * time.Millisecond)))
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("sending span %s: %v", name, err)
	}
	return id
}

// waitForSpans waits until Jaeger serves the last span of each run and the odd spans: its
// OTLP receiver batches before storing.
func (b *traceBed) waitForSpans(t *testing.T) {
	t.Helper()
	src, err := jaeger.New(http.DefaultClient, b.jaeger.QueryURL, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{b.odd["bare"]}
	for _, res := range b.runs {
		last := res.Spans[len(res.Spans)-1].TraceID
		ids = append(ids, traceHex(last))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			_, err := src.Get(context.Background(), id)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Jaeger does not serve trace %s after 30 s: %v", id, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func traceHex(id [16]byte) string { return trace.TraceID(id).String() }

// pluginContext is what Grafana sends for a data source on the bed's Prometheus with these
// trace settings.
func (b *traceBed) pluginContext(jsonData map[string]any) backend.PluginContext {
	jsonData["scrapeInterval"] = simScrape.String()
	return pluginContext(b.prom.URL, jsonData)
}

// jaegerDS is a data source reading the bed's Jaeger, linking traces to Grafana's data source
// uid "jaeger-uid".
func (b *traceBed) jaegerDS() backend.PluginContext {
	return b.pluginContext(map[string]any{"tracesBackend": "jaeger", "tracesUrl": b.jaeger.QueryURL, "tracesDatasourceUid": "jaeger-uid"})
}

func (b *traceBed) query(t *testing.T, pc backend.PluginContext, qs ...backend.DataQuery) *backend.QueryDataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := b.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: qs})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	return res
}

// rangeQuery is a Grafana query over [from, to] at the scrape interval.
func rangeQuery(refID string, from, to time.Time, model map[string]any) backend.DataQuery {
	raw, _ := json.Marshal(model)
	qt, _ := model["queryType"].(string)
	return backend.DataQuery{RefID: refID, QueryType: qt, JSON: raw, Interval: simScrape, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: from, To: to}}
}

// faultWindow is the middle of a run's fault: where its finding must hold.
func faultWindow(res *sim.Result) (time.Time, time.Time) {
	d := res.Duration
	return res.Start.Add(d * 2 / 5), res.Start.Add(d * 3 / 5)
}

// simPrometheus is a real Prometheus holding a simulator run's metrics.
func simPrometheus(t testing.TB, res *sim.Result) *testbed.PromServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.om")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = res.WriteOpenMetrics(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return testbed.Prometheus(t, path)
}
