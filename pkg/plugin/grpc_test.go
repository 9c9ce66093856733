package plugin

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// TestPluginOverGRPC runs every behaviour that needs real Prometheus servers against one
// plugin process and one set of servers, talking gRPC as Grafana does.
func TestPluginOverGRPC(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"signals answer what Prometheus answers, one frame per signal and instance", signalsAnswerWhatPrometheusAnswers},
		{"signals without names answer the default signals", signalsWithoutNamesAnswerTheDefaults},
		{"signals filter instances and models, exactly or by regex", signalsFilterInstancesAndModels},
		{"V0 data gives the same signals through the old names", v0DataGivesTheSameSignals},
		{"a signal V0 lacks gives a notice naming the metric and version, and no zeros", signalAbsentInV0GivesANotice},
		{"health says generation, instance and model counts", healthSaysGenerationInstancesAndModels},
		{"health without vLLM metrics says what to check", healthWithoutVLLMSaysWhatToCheck},
		{"resource instances lists instances, filtered by model", resourceInstances},
		{"resource models lists models, filtered by instance", resourceModels},
		{"resource signals lists the catalog", resourceSignals},
		{"malformed query JSON fails that query only", malformedQueryJSON},
		{"unknown queryType fails that query only", unknownQueryType},
		{"unknown signal fails that query only", unknownSignal},
		{"a topK that is not a whole number fails that query only", badTopK},
		{"unknown severity of a findings filter fails that query only", unknownSeverity},
		{"unknown diagnosis format fails that query only", unknownDiagnosisFormat},
		{"unknown explain format fails that query only", unknownExplainFormat},
		{"invalid instance regex fails that query only", invalidInstanceRegex},
		{"empty time range fails that query only", emptyTimeRange},
		{"a panicking handler fails that query only", panickingHandler},
		{"invalid label matchers in settings fail every query and health", invalidLabelMatchers},
		{"bad objectives in settings fail health and every slo query, not the other queries", badObjectives},
		{"unknown slo format fails that query only", unknownSLOFormat},
		{"unknown burn severity fails that query only", unknownBurnSeverity},
		{"an slo query naming an objective the settings lack fails that query only", unknownObjective},
		{"an slo query without objectives in the settings answers no rows and a notice saying to add them", sloWithoutObjectives},
		{"unreachable Prometheus is a downstream error", unreachablePrometheus},
		{"Prometheus 5xx fails the query that hit it, downstream", prometheus5xx},
		{"Prometheus slower than the timeout setting fails that query, downstream", prometheusTimeout},
		{"Tempo's refusal of a search is Tempo's, downstream", tempoRefusalIsTempos},
		{"the built binary answers over go-plugin as Grafana starts it", builtBinaryAnswersOverGoPlugin},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, e) })
	}
}

// signalPromQL is each signal's PromQL as vLLM's metrics are read by hand, at the rate window of a
// 15 s scrape and step (four scrapes).
var signalPromQL = map[series.Signal]string{
	series.TTFTP50: `histogram_quantile(0.5, sum by (le, instance, model_name) (rate(vllm:time_to_first_token_seconds_bucket[1m])))`,
	series.TTFTP99: `histogram_quantile(0.99, sum by (le, instance, model_name) (rate(vllm:time_to_first_token_seconds_bucket[1m])))`,
	series.KVUsage: `max by (instance, model_name) (vllm:kv_cache_usage_perc)`,
	series.ITLP50:  `histogram_quantile(0.5, sum by (le, instance, model_name) (rate(vllm:inter_token_latency_seconds_bucket[1m])))`,
	series.PrefixCacheHitRate: `sum by (instance, model_name) (rate(vllm:prefix_cache_hits_total[1m]))` +
		` / sum by (instance, model_name) (rate(vllm:prefix_cache_queries_total[1m]))`,
}

// v0PromQL is the same for the old engine's names.
var v0PromQL = map[series.Signal]string{
	series.TTFTP50: signalPromQL[series.TTFTP50],
	series.KVUsage: `max by (instance, model_name) (vllm:gpu_cache_usage_perc)`,
	series.ITLP50:  `histogram_quantile(0.5, sum by (le, instance, model_name) (rate(vllm:time_per_output_token_seconds_bucket[1m])))`,
}

// frameKey identifies a signals frame.
type frameKey struct {
	signal, instance, model string
}

// points maps unix milliseconds to a value; nil is a step without a value.
type points map[int64]*float64

// signalFrames indexes a signals response by signal and labels, checking the frame shape
// Grafana needs on the way.
func signalFrames(t *testing.T, frames data.Frames) map[frameKey]points {
	t.Helper()
	out := map[frameKey]points{}
	for _, f := range frames {
		if len(f.Fields) == 0 {
			continue
		}
		if len(f.Fields) != 2 || f.Fields[0].Type() != data.FieldTypeTime || f.Fields[1].Type() != data.FieldTypeNullableFloat64 {
			t.Fatalf("frame %q: want fields [time, *float64 value], got %v", f.Name, f.Fields)
		}
		labels := f.Fields[1].Labels
		k := frameKey{signal: f.Name, instance: labels["instance"], model: labels["model_name"]}
		if k.instance == "" || k.model == "" {
			t.Errorf("frame %q: value labels %v lack instance or model_name", f.Name, labels)
		}
		if _, dup := out[k]; dup {
			t.Errorf("two frames for %+v", k)
		}
		p := points{}
		for i := 0; i < f.Rows(); i++ {
			p[f.Fields[0].At(i).(time.Time).UnixMilli()] = f.Fields[1].At(i).(*float64)
		}
		out[k] = p
	}
	return out
}

// promAnswer runs expr as a range query straight against Prometheus, over the grid the
// plugin uses for the env's queries.
func (e *env) promAnswer(t *testing.T, api v1.API, expr string) map[frameKey]points {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := api.QueryRange(ctx, expr, v1.Range{Start: e.end.Add(-dataSpan), End: e.end, Step: scrape})
	if err != nil {
		t.Fatalf("Prometheus %s: %v", expr, err)
	}
	out := map[frameKey]points{}
	for _, s := range v.(model.Matrix) {
		p := points{}
		for _, sample := range s.Values {
			v := float64(sample.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			p[sample.Timestamp.Time().UnixMilli()] = &v
		}
		out[frameKey{instance: string(s.Metric["instance"]), model: string(s.Metric["model_name"])}] = p
	}
	return out
}

// sameValues reports the first difference between the plugin's points and Prometheus's.
func sameValues(t *testing.T, what string, got, want points) {
	t.Helper()
	var nonNil int
	for ts, g := range got {
		w, ok := want[ts]
		switch {
		case g == nil && !ok:
		case g == nil:
			t.Errorf("%s at %s: no value, Prometheus says %g", what, time.UnixMilli(ts).UTC().Format(time.TimeOnly), *w)
			return
		case !ok:
			t.Errorf("%s at %s: %g, Prometheus has no value", what, time.UnixMilli(ts).UTC().Format(time.TimeOnly), *g)
			return
		case math.Abs(*g-*w) > 1e-9*math.Max(1, math.Abs(*w)):
			t.Errorf("%s at %s: %g, Prometheus says %g", what, time.UnixMilli(ts).UTC().Format(time.TimeOnly), *g, *w)
			return
		default:
			nonNil++
		}
	}
	for ts := range want {
		if _, ok := got[ts]; !ok {
			t.Errorf("%s: no point at %s where Prometheus has one", what, time.UnixMilli(ts).UTC().Format(time.TimeOnly))
			return
		}
	}
	if nonNil == 0 {
		t.Errorf("%s: no values at all", what)
	}
}

func okResponse(t *testing.T, res *backend.QueryDataResponse, refID string) backend.DataResponse {
	t.Helper()
	r, ok := res.Responses[refID]
	if !ok {
		t.Fatalf("no response for refId %s", refID)
	}
	if r.Error != nil {
		t.Fatalf("refId %s failed: %v", refID, r.Error)
	}
	return r
}

func notices(frames data.Frames) []string {
	var out []string
	for _, f := range frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				out = append(out, n.Text)
			}
		}
	}
	return out
}

func signalsQuery(names ...string) map[string]any {
	return map[string]any{"queryType": "signals", "signals": names}
}

func signalsAnswerWhatPrometheusAnswers(t *testing.T, e *env) {
	wanted := []series.Signal{series.TTFTP50, series.TTFTP99, series.KVUsage, series.ITLP50, series.PrefixCacheHitRate}
	names := make([]string, len(wanted))
	for i, s := range wanted {
		names[i] = string(s)
	}
	res := e.query(t, pluginContext(e.v1.URL, nil), e.dataQuery("A", signalsQuery(names...)))
	frames := okResponse(t, res, "A").Frames
	got := signalFrames(t, frames)
	if len(got) != len(wanted)*2 {
		t.Errorf("got %d frames, want one per signal and instance: %d", len(got), len(wanted)*2)
	}
	for _, sig := range wanted {
		for k, want := range e.promAnswer(t, e.v1API, signalPromQL[sig]) {
			k.signal = string(sig)
			p, ok := got[k]
			if !ok {
				t.Errorf("no frame for %+v", k)
				continue
			}
			sameValues(t, k.signal+" "+k.instance, p, want)
		}
	}
	for _, c := range []struct {
		sig          series.Signal
		server       server
		lower, upper float64
	}{
		{series.TTFTP50, serverA, 0.25, 0.5},
		{series.TTFTP99, serverA, 1, 2.5},
		{series.TTFTP50, serverB, 0.04, 0.06},
		{series.TTFTP99, serverB, 0.75, 1},
	} {
		for ts, v := range got[frameKey{string(c.sig), c.server.instance, c.server.model}] {
			if v != nil && !(*v > c.lower && *v <= c.upper) {
				t.Errorf("%s on %s at %s = %g, want it in the bucket (%g, %g] that the observations put it in",
					c.sig, c.server.instance, time.UnixMilli(ts).UTC().Format(time.TimeOnly), *v, c.lower, c.upper)
				break
			}
		}
	}
	// Grafana shows each series by its display name and unit: instance first (what a reader of
	// a fleet's legend looks for), the signal's label last, and the signal's unit.
	for _, f := range frames {
		def, _ := signals.Lookup(series.Signal(f.Name))
		cfg := f.Fields[1].Config
		inst := f.Fields[1].Labels["instance"]
		if cfg == nil || !strings.HasPrefix(cfg.DisplayNameFromDS, inst+" · ") || !strings.HasSuffix(cfg.DisplayNameFromDS, " · "+def.Label) || cfg.Unit != def.Unit {
			t.Errorf("frame %q: field config %+v, want display name %q · … · %q and unit %q", f.Name, cfg, inst, def.Label, def.Unit)
		}
	}
	if frames[0].Meta == nil || frames[0].Meta.ExecutedQueryString == "" {
		t.Error("the first frame does not carry the executed PromQL")
	}
}

func signalsWithoutNamesAnswerTheDefaults(t *testing.T, e *env) {
	for name, q := range map[string]map[string]any{
		"no signals field": {"queryType": "signals"},
		"empty list":       signalsQuery(),
		"expr text form":   {"expr": "signals"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.query(t, pluginContext(e.v1.URL, nil), e.dataQuery("A", q))
			var got []series.Signal
			for _, f := range okResponse(t, res, "A").Frames {
				if !slices.Contains(got, series.Signal(f.Name)) {
					got = append(got, series.Signal(f.Name))
				}
			}
			if !slices.Equal(got, plan.DefaultSignals) {
				t.Errorf("signals %v, want the defaults %v in order", got, plan.DefaultSignals)
			}
		})
	}
}

func signalsFilterInstancesAndModels(t *testing.T, e *env) {
	for _, c := range []struct {
		name            string
		instance, model string
		want            []server
	}{
		{"exact instance", serverA.instance, "", []server{serverA}},
		{"instance regex", `10\.0\.0\.[12]:8000`, "", []server{serverA, serverB}},
		{"instance regex matching one", `.*\.2:.*`, "", []server{serverB}},
		{"exact model", "", serverB.model, []server{serverB}},
		{"model regex", "", "meta-llama/.*", []server{serverA}},
		{"instance and model that exclude each other", serverA.instance, serverB.model, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := signalsQuery(string(series.KVUsage))
			q["instance"], q["model"] = c.instance, c.model
			res := e.query(t, pluginContext(e.v1.URL, nil), e.dataQuery("A", q))
			got := signalFrames(t, okResponse(t, res, "A").Frames)
			var gotInstances []string
			for k := range got {
				gotInstances = append(gotInstances, k.instance+" "+k.model)
			}
			var want []string
			for _, s := range c.want {
				want = append(want, s.instance+" "+s.model)
			}
			slices.Sort(gotInstances)
			if !slices.Equal(gotInstances, want) {
				t.Errorf("frames for %v, want %v", gotInstances, want)
			}
		})
	}
}

func v0DataGivesTheSameSignals(t *testing.T, e *env) {
	api := promAPI(t, e.v0.URL)
	wanted := []series.Signal{series.TTFTP50, series.KVUsage, series.ITLP50}
	names := make([]string, len(wanted))
	for i, s := range wanted {
		names[i] = string(s)
	}
	res := e.query(t, pluginContext(e.v0.URL, nil), e.dataQuery("A", signalsQuery(names...)))
	r := okResponse(t, res, "A")
	got := signalFrames(t, r.Frames)
	if len(got) != len(wanted)*2 {
		t.Errorf("got %d frames, want one per signal and instance: %d", len(got), len(wanted)*2)
	}
	for _, sig := range wanted {
		for k, want := range e.promAnswer(t, api, v0PromQL[sig]) {
			k.signal = string(sig)
			sameValues(t, k.signal+" "+k.instance, got[k], want)
		}
	}
	if n := notices(r.Frames); len(n) != 0 {
		t.Errorf("V0 data that has every asked signal gave notices %q", n)
	}
}

func signalAbsentInV0GivesANotice(t *testing.T, e *env) {
	res := e.query(t, pluginContext(e.v0.URL, nil), e.dataQuery("A", signalsQuery(string(series.TTFTP50), string(series.QueueTimeMean))))
	r := okResponse(t, res, "A")
	for k, p := range signalFrames(t, r.Frames) {
		if k.signal == string(series.QueueTimeMean) {
			t.Errorf("a frame for %+v with %d points: an absent metric must not become a series", k, len(p))
		}
	}
	var notice string
	for _, n := range notices(r.Frames) {
		if strings.Contains(n, string(series.QueueTimeMean)) {
			notice = n
		}
	}
	for _, want := range []string{"vllm:request_queue_time_seconds", "0.8"} {
		if !strings.Contains(notice, want) {
			t.Errorf("notice %q does not name %q", notice, want)
		}
	}
}

func healthSaysGenerationInstancesAndModels(t *testing.T, e *env) {
	for _, c := range []struct {
		name, url, generation string
	}{
		{"V1", e.v1.URL, "V1"},
		{"V0", e.v0.URL, "V0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := e.health(t, pluginContext(c.url, nil))
			if h.Status != backend.HealthStatusOk {
				t.Fatalf("health %s: %s", h.Status, h.Message)
			}
			for _, want := range []string{c.generation, "2 vLLM instance(s)", "2 model(s)"} {
				if !strings.Contains(h.Message, want) {
					t.Errorf("health message %q does not say %q", h.Message, want)
				}
			}
		})
	}
}

func healthWithoutVLLMSaysWhatToCheck(t *testing.T, e *env) {
	for _, c := range []struct {
		name     string
		url      string
		jsonData map[string]any
	}{
		{"Prometheus with only other series", e.none.URL, nil},
		{"label matchers that match no vLLM series", e.v1.URL, map[string]any{"labelMatchers": `{job="node"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := e.health(t, pluginContext(c.url, c.jsonData))
			if h.Status != backend.HealthStatusError {
				t.Errorf("health %s, want an error", h.Status)
			}
			for _, want := range []string{"no vLLM metrics", "/metrics", "--disable-log-stats"} {
				if !strings.Contains(h.Message, want) {
					t.Errorf("health message %q does not say %q", h.Message, want)
				}
			}
		})
	}
}

func resourceList(t *testing.T, e *env, path string) []string {
	t.Helper()
	status, body := e.resource(t, pluginContext(e.v1.URL, nil), path)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, status, body)
	}
	var out []string
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: %v in %s", path, err, body)
	}
	return out
}

func resourceInstances(t *testing.T, e *env) {
	from := e.end.Add(-dataSpan).UnixMilli()
	for _, c := range []struct {
		path string
		want []string
	}{
		{"instances", []string{serverA.instance, serverB.instance}},
		{"instances?model=" + strings.ReplaceAll(serverB.model, "/", "%2F"), []string{serverB.instance}},
		{"instances?model=meta-llama%2F.%2A", []string{serverA.instance}},
		{"instances?model=nothing-serves-this", []string{}},
		{"instances?from=" + itoa(from) + "&to=" + itoa(e.end.UnixMilli()), []string{serverA.instance, serverB.instance}},
		{"instances?from=1000&to=2000", []string{}},
	} {
		t.Run(c.path, func(t *testing.T) {
			if got := resourceList(t, e, c.path); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func resourceModels(t *testing.T, e *env) {
	for _, c := range []struct {
		path string
		want []string
	}{
		{"models", []string{serverB.model, serverA.model}},
		{"models?instance=" + serverA.instance, []string{serverA.model}},
		{"models?instance=10%5C.0%5C.0%5C.2%3A.%2A", []string{serverB.model}},
	} {
		t.Run(c.path, func(t *testing.T) {
			if got := resourceList(t, e, c.path); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	t.Run("an invalid regex is a bad request that says why", func(t *testing.T) {
		status, body := e.resource(t, pluginContext(e.v1.URL, nil), "models?instance=%28unclosed")
		if status != http.StatusBadRequest || !strings.Contains(string(body), "regular expression") {
			t.Errorf("status %d, body %s: want 400 and an error naming the regular expression", status, body)
		}
	})
}

func resourceSignals(t *testing.T, e *env) {
	status, body := e.resource(t, pluginContext(e.v1.URL, nil), "signals")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var got []struct {
		Name, Label, Unit, Group, Description string
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		if d.Label == "" || d.Unit == "" || d.Group == "" || d.Description == "" {
			t.Errorf("signal %+v lacks a label, unit, group or description", d)
		}
		names = append(names, d.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, signals.Names()) {
		t.Errorf("catalog lists %v, want every signal %v", names, signals.Names())
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
