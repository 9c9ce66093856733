package plugin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/sim"
)

// The end-to-end tests of requests and explain share one bed: starting Prometheus and Jaeger
// and simulating the scenarios takes seconds, the queries milliseconds.
func TestRequestsAndExplain(t *testing.T) {
	b := newTraceBed(t)
	ds := b.jaegerDS()

	t.Run("requests carry every stage and the metrics Prometheus has at their start", func(t *testing.T) {
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		f := b.requests(t, ds, from, to, nil)
		want := spansIn(res, from, to)
		if f.Rows() != len(want) {
			t.Fatalf("%d requests, want the %d spans that started in the range", f.Rows(), len(want))
		}
		for i := range f.Rows() {
			for _, name := range []string{"queue", "prefill", "decode", "ttft", "e2e", "decode_per_token", "prompt_tokens", "output_tokens"} {
				if _, ok := f.ConcreteAt(fieldIndex(t, f, name), i); !ok {
					t.Fatalf("row %d (%s) has no %s", i, cellString(f, "trace_id", i), name)
				}
			}
			if cellString(f, "model", i) == "" || cellString(f, "instance", i) == "" {
				t.Fatalf("row %d has no model or instance", i)
			}
		}
		window := signals.Window(simScrape, simScrape)
		checks := []struct {
			field, promql string
		}{
			{"kv_usage", `max by (instance, model_name) (vllm:kv_cache_usage_perc{%s})`},
			{"running", `sum by (instance, model_name) (vllm:num_requests_running{%s})`},
			{"waiting", `sum by (instance, model_name) (vllm:num_requests_waiting{%s})`},
			{"preemption_rate", `sum by (instance, model_name) (rate(vllm:num_preemptions_total{%s}[` + model.Duration(window).String() + `]))`},
		}
		compared := 0
		for i := 0; i < f.Rows(); i += 23 {
			at, ok := f.ConcreteAt(fieldIndex(t, f, "metrics_at"), i)
			if !ok {
				t.Fatalf("row %d has no metrics time", i)
			}
			sel := fmt.Sprintf(`instance=%q, model_name=%q`, cellString(f, "instance", i), cellString(f, "model", i))
			for _, c := range checks {
				got, _ := f.ConcreteAt(fieldIndex(t, f, c.field), i)
				want := b.instant(t, fmt.Sprintf(c.promql, sel), at.(time.Time))
				if got == nil || math.Abs(got.(float64)-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("row %d: %s = %v at %v, Prometheus answers %v", i, c.field, got, at, want)
				}
				compared++
			}
		}
		t.Logf("compared %d joined values with Prometheus's instant answers", compared)

		notes := noticeText(f)
		m := regexp.MustCompile(`(\d[\d,]*) of (\d[\d,]*) requests that finished`).FindStringSubmatch(notes)
		if m == nil {
			t.Fatalf("notices %q give no coverage", notes)
		}
		spans, finished := atoiComma(t, m[1]), atoiComma(t, m[2])
		if spans != f.Rows() || float64(finished) < 0.7*spanSampling*float64(spans) || float64(finished) > 1.3*spanSampling*float64(spans) {
			t.Fatalf("coverage %d of %d; with 1 span kept in %d, want about %d of %d", spans, finished, spanSampling, f.Rows(), spanSampling*f.Rows())
		}
		if !strings.Contains(notes, "biased") {
			t.Fatalf("notices %q should warn that percentiles from sampled spans are biased", notes)
		}
	})

	t.Run("trace ids link to the trace and to the drill-down", func(t *testing.T) {
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		f := b.requests(t, ds, from, to, map[string]any{"limit": 5})
		id := f.Fields[fieldIndex(t, f, "trace_id")]
		if id.Config == nil || len(id.Config.Links) != 2 {
			t.Fatalf("trace id links %+v, want one to the Jaeger data source and one to the drill-down", id.Config)
		}
		trace, drill := id.Config.Links[0], id.Config.Links[1]
		if trace.Internal == nil || trace.Internal.DatasourceUID != "jaeger-uid" || trace.Internal.Query.(map[string]any)["query"] != "${__value.raw}" {
			t.Fatalf("trace link %+v, want an internal link to data source jaeger-uid querying the trace id", trace)
		}
		uid := ds.DataSourceInstanceSettings.UID
		if !strings.HasPrefix(drill.URL, "/d/vllm-request-drilldown?var-datasource="+uid+"&var-traces=jaeger-uid&var-traceId=${__value.raw}&") ||
			!strings.Contains(drill.URL, "&from=${__data.fields.drilldown_from}") {
			t.Fatalf("drill-down link %q, want the answering data source %s, the trace data source and the trace id", drill.URL, uid)
		}
		start, _ := f.ConcreteAt(fieldIndex(t, f, "start"), 0)
		if got, want := cellString(f, "drilldown_from", 0), strconv.FormatInt(start.(time.Time).Add(-2*time.Minute).UnixMilli(), 10); got != want {
			t.Fatalf("drill-down from %s, want the start minus 2 minutes, %s", got, want)
		}
		noUID := b.pluginContext(map[string]any{"tracesBackend": "jaeger", "tracesUrl": b.jaeger.QueryURL})
		f = b.requests(t, noUID, from, to, map[string]any{"limit": 5})
		if links := f.Fields[fieldIndex(t, f, "trace_id")].Config.Links; len(links) != 1 || links[0].Internal != nil {
			t.Fatalf("links %+v: without tracesDatasourceUid only the drill-down link", links)
		}
	})

	for _, c := range []struct {
		scenario string
		// slowness orders requests by the scenario's symptom.
		slowness string
		// thresholds override the matrix's defaults in the data source's settings.
		thresholds map[string]any
	}{
		{sim.RuleKVCacheSaturated, "e2e", nil},
		// The simulated miss puts TTFT p50 in the (0.5, 0.75] s bucket, whose lower bound never
		// exceeds the default 0.5 s with certainty.
		{sim.RulePrefixCacheMiss, "ttft", map[string]any{sim.RulePrefixCacheMiss: map[string]any{"ttft_p50": 0.4}}},
	} {
		t.Run(c.scenario+": the slowest requests are flagged and explained by the finding", func(t *testing.T) {
			ds := b.pluginContext(map[string]any{"tracesBackend": "jaeger", "tracesUrl": b.jaeger.QueryURL, "thresholds": c.thresholds})
			res := b.runs[c.scenario]
			from, to := faultWindow(res)
			f := b.requests(t, ds, from, to, nil)
			order := make([]int, f.Rows())
			for i := range order {
				order[i] = i
			}
			slowness := func(i int) float64 { return slownessOf(t, f, c.slowness, i) }
			slices.SortFunc(order, func(a, b int) int { return -cmpFloat(slowness(a), slowness(b)) })
			for _, i := range order[:3] {
				if cellString(f, "instance", i) != sim.FaultyInstance || cellString(f, "anomalies", i) == "" {
					t.Fatalf("slow request %s (%s %v s) on %s has anomalies %q; want the faulty instance %s, flagged",
						cellString(f, "trace_id", i), c.slowness, slowness(i), cellString(f, "instance", i), cellString(f, "anomalies", i), sim.FaultyInstance)
				}
				if !slices.Contains(strings.Split(cellString(f, "findings", i), ","), c.scenario) {
					t.Fatalf("slow request %s has findings %q, want %s", cellString(f, "trace_id", i), cellString(f, "findings", i), c.scenario)
				}
			}
			if c.scenario == sim.RulePrefixCacheMiss {
				want := instanceModel(res, sim.FaultyInstance)
				if got := cellString(f, "model", order[0]); got != want {
					t.Fatalf("model %q, want %q: spans without a model take their instance's only model from the metrics", got, want)
				}
			}

			slowest := order[0]
			id := cellString(f, "trace_id", slowest)
			// Grafana's trace-to-metrics links send only expr, over the span's time ± 2 minutes.
			start, _ := f.ConcreteAt(fieldIndex(t, f, "start"), slowest)
			q := rangeQuery("E", start.(time.Time).Add(-2*time.Minute), start.(time.Time).Add(2*time.Minute), map[string]any{"expr": "explain " + id})
			out := b.query(t, ds, q).Responses["E"]
			if out.Error != nil {
				t.Fatalf("explain %s: %v", id, out.Error)
			}
			expl := frameNamed(t, out.Frames, "explanation")
			sentence := cellString(expl, "explanation", 0)
			t.Logf("explain %s: %s", id, sentence)
			if !strings.Contains(sentence, c.scenario) || !strings.Contains(sentence, sim.FaultyInstance) {
				t.Fatalf("explanation %q should name finding %s on %s", sentence, c.scenario, sim.FaultyInstance)
			}
			dominant, most := "", -1.0
			for _, st := range []string{"queue", "prefill", "decode"} {
				if v := slownessOf(t, f, st, slowest); v > most {
					dominant, most = st, v
				}
			}
			other, _ := expl.ConcreteAt(fieldIndex(t, expl, "other_seconds"), 0)
			if other.(float64) > most {
				dominant = "other"
			}
			if got := cellString(expl, "dominant_stage", 0); got != dominant {
				t.Fatalf("dominant stage %q, want %q (the largest of the request's stages)", got, dominant)
			}
			if !strings.Contains(sentence, stageWords[dominant]) {
				t.Fatalf("explanation %q should say the dominant stage (%s)", sentence, stageWords[dominant])
			}
			stages := frameNamed(t, out.Frames, "stages")
			total := 0.0
			for i := range stages.Rows() {
				v, _ := stages.ConcreteAt(1, i)
				total += v.(float64)
			}
			if e2e := slownessOf(t, f, "e2e", slowest); math.Abs(total-e2e) > 0.05*e2e {
				t.Fatalf("stages add up to %v s, want about the end-to-end %v s", total, e2e)
			}
			mark := frameNamed(t, out.Frames, "request")
			if at, _ := mark.ConcreteAt(0, 0); !at.(time.Time).Equal(start.(time.Time)) {
				t.Fatalf("the request's mark starts at %v, want %v", at, start)
			}
			sig := frameNamed(t, out.Frames, "signals")
			if kv, _ := sig.FieldByName("kv_usage"); sig.Rows() == 0 || kv == nil {
				t.Fatalf("no KV usage around the request: %d rows", sig.Rows())
			}
		})
	}

	t.Run("explain judges the request against the settings' objectives", func(t *testing.T) {
		ds := b.pluginContext(map[string]any{"tracesBackend": "jaeger", "tracesUrl": b.jaeger.QueryURL, "slos": []map[string]any{
			{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
			{"name": "itl-50ms", "indicator": "itl", "threshold": 0.05, "objective": 0.99, "window": "28d"},
			{"name": "up", "indicator": "availability", "objective": 0.999, "window": "28d"},
			{"name": "other-model", "indicator": "e2e", "threshold": 1, "objective": 0.99, "window": "28d", "model": "no-such-model"},
		}})
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		// Ground truth: the TTFT the simulator gave each request, clear of the threshold.
		var slow, fast *sim.Span
		for _, sp := range spansIn(res, from, to) {
			switch {
			case slow == nil && sp.TTFT > 1.2:
				slow = &sp
			case fast == nil && sp.TTFT < 0.8:
				fast = &sp
			}
		}
		if slow == nil || fast == nil {
			t.Fatal("the saturated run has no request clearly over or under a 1 s TTFT")
		}
		for _, c := range []struct {
			span *sim.Span
			want string
		}{
			{slow, "ttft-1s missed"},
			{fast, "ttft-1s met"},
		} {
			id := fmt.Sprintf("%x", c.span.TraceID)
			q := rangeQuery("E", c.span.Start.Add(-2*time.Minute), c.span.Start.Add(2*time.Minute), map[string]any{"expr": "explain " + id})
			out := b.query(t, ds, q).Responses["E"]
			if out.Error != nil {
				t.Fatalf("explain %s: %v", id, out.Error)
			}
			got := cellString(frameNamed(t, out.Frames, "explanation"), "objectives", 0)
			parts := strings.Split(got, "; ")
			if len(parts) != 3 || !strings.HasPrefix(parts[0], c.want) || !strings.HasPrefix(parts[1], "itl-50ms unknown") || parts[2] != "up met" {
				t.Errorf("request %s (TTFT %.3f s, finished %q): objectives %q, want %s, itl unknown, up met, and no other model's objective",
					id, c.span.TTFT, c.span.FinishReason, got, c.want)
			}
		}
	})

	t.Run("anomalousOnly and minTtft filter the requests", func(t *testing.T) {
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		all := b.requests(t, ds, from, to, nil)
		only := b.requests(t, ds, from, to, map[string]any{"anomalousOnly": true})
		// anomalousOnly searches only above each instance's threshold, so the window's own
		// statistics differ from the plain query's: the rows that stand out over the range
		// (ttft_above_typical, from the metrics) are the ones both must share.
		onlyIDs := map[string]bool{}
		for i := range only.Rows() {
			if cellString(only, "anomalies", i) == "" {
				t.Fatalf("anomalousOnly row %d has no anomaly", i)
			}
			onlyIDs[cellString(only, "trace_id", i)] = true
		}
		flagged := 0
		for i := range all.Rows() {
			if strings.Contains(cellString(all, "anomalies", i), string(correlate.TTFTAboveTypical)) {
				flagged++
				if id := cellString(all, "trace_id", i); !onlyIDs[id] {
					t.Errorf("request %s stands out in the plain query but is not among the %d anomalousOnly rows", id, only.Rows())
				}
			}
		}
		if flagged == 0 || only.Rows() < flagged {
			t.Fatalf("anomalousOnly gave %d rows, want at least the %d that stand out of %d", only.Rows(), flagged, all.Rows())
		}
		const minTTFT = 1.0
		slow := b.requests(t, ds, from, to, map[string]any{"minTtft": minTTFT})
		for i := range slow.Rows() {
			if v := slownessOf(t, slow, "ttft", i); v < minTTFT {
				t.Fatalf("row %d has TTFT %v s below minTtft %v", i, v, minTTFT)
			}
		}
	})

	t.Run("the dashboards' All, .*, sends the searches no filter sends", func(t *testing.T) {
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		// The trace searches of the executed query string, one line each (Jaeger's parameters).
		searches := func(f *data.Frame) []string {
			var out []string
			for _, line := range strings.Split(f.Meta.ExecutedQueryString, "\n") {
				if strings.Contains(line, "service=") {
					out = append(out, line)
				}
			}
			return out
		}
		none := b.requests(t, ds, from, to, nil)
		all := b.requests(t, ds, from, to, map[string]any{"instance": ".*", "model": ".*"})
		if got, want := searches(all), searches(none); len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("with .* the searches were\n%s\nwithout a filter\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if all.Rows() != none.Rows() {
			t.Fatalf("%d rows with .*, %d without a filter", all.Rows(), none.Rows())
		}
	})

	t.Run("a span without latency attributes is shown with what it has", func(t *testing.T) {
		f := b.requests(t, ds, b.oddAt.Add(-time.Minute), b.oddAt.Add(time.Minute), nil)
		row := -1
		for i := range f.Rows() {
			if cellString(f, "trace_id", i) == b.odd["bare"] {
				row = i
			}
		}
		if row < 0 {
			t.Fatalf("the span without latency attributes is missing from %d rows", f.Rows())
		}
		if v, _ := f.ConcreteAt(fieldIndex(t, f, "prompt_tokens"), row); v != int64(321) {
			t.Fatalf("prompt tokens %v, want the span's 321", v)
		}
		for _, name := range []string{"queue", "prefill", "decode", "ttft", "e2e"} {
			if v, ok := f.ConcreteAt(fieldIndex(t, f, name), row); ok {
				t.Fatalf("%s %v, want empty: the span has none", name, v)
			}
		}
		if n := noticeText(f); !strings.Contains(n, "lack latency attributes") {
			t.Fatalf("notices %q should say that a span lacks latency attributes", n)
		}
	})

	t.Run("bad trace ids are the user's errors", func(t *testing.T) {
		for _, c := range []struct {
			name, id, want string
		}{
			{"not hexadecimal", "not-a-trace", "invalid trace id"},
			{"not a vLLM request", b.odd["gateway"], "not a vLLM request"},
			{"unknown", strings.Repeat("ab", 16), "may have expired or been sampled out"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := b.runs[sim.RuleKVCacheSaturated]
				q := rangeQuery("E", res.Start, res.Start.Add(res.Duration), map[string]any{"queryType": "explain", "traceId": c.id})
				out := b.query(t, ds, q).Responses["E"]
				if out.Error == nil || out.ErrorSource != backend.ErrorSourcePlugin || !strings.Contains(out.Error.Error(), c.want) {
					t.Fatalf("error %v (source %q), want a plugin error saying %q", out.Error, out.ErrorSource, c.want)
				}
			})
		}
	})

	t.Run("without a trace backend requests and explain say to configure one", func(t *testing.T) {
		pc := b.pluginContext(map[string]any{})
		res := b.runs[sim.RuleKVCacheSaturated]
		out := b.query(t, pc,
			rangeQuery("R", res.Start, res.Start.Add(res.Duration), map[string]any{"queryType": "requests"}),
			rangeQuery("E", res.Start, res.Start.Add(res.Duration), map[string]any{"queryType": "explain", "traceId": "abc"}))
		for _, ref := range []string{"R", "E"} {
			r := out.Responses[ref]
			if r.Error == nil || r.ErrorSource != backend.ErrorSourcePlugin || !strings.Contains(r.Error.Error(), "no trace backend is configured") {
				t.Fatalf("%s: error %v (source %q), want a plugin error asking to configure a trace backend", ref, r.Error, r.ErrorSource)
			}
		}
	})

	t.Run("a trace backend that is down fails requests downstream while signals answer", func(t *testing.T) {
		pc := b.pluginContext(map[string]any{"tracesBackend": "jaeger", "tracesUrl": "http://" + freeAddr(t)})
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		out := b.query(t, pc,
			rangeQuery("R", from, to, map[string]any{"queryType": "requests"}),
			rangeQuery("S", from, to, map[string]any{"queryType": "signals", "signals": []string{"kv_usage"}}))
		if r := out.Responses["R"]; r.Error == nil || r.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(r.Error.Error(), "could not be reached") {
			t.Fatalf("requests: error %v (source %q), want a downstream error saying Jaeger cannot be reached", r.Error, r.ErrorSource)
		}
		if s := out.Responses["S"]; s.Error != nil || len(s.Frames) == 0 || s.Frames[0].Rows() == 0 {
			t.Fatalf("signals in the same batch: error %v, %d frames; want data", s.Error, len(s.Frames))
		}
		h, err := b.client.CheckHealth(context.Background(), &backend.CheckHealthRequest{PluginContext: pc})
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != backend.HealthStatusOk || !strings.Contains(h.Message, "Trace backend") {
			t.Fatalf("health %s %q: Prometheus is fine, so the check passes and says the trace backend is down", h.Status, h.Message)
		}
	})

	t.Run("with Prometheus down requests come without their metric state, and say why", func(t *testing.T) {
		pc := b.jaegerDS()
		pc.DataSourceInstanceSettings.URL = "http://" + freeAddr(t)
		res := b.runs[sim.RuleKVCacheSaturated]
		from, to := faultWindow(res)
		f := b.requests(t, pc, from, to, map[string]any{"limit": 10})
		if f.Rows() != 10 {
			t.Fatalf("%d rows, want the 10 asked for", f.Rows())
		}
		if v, ok := f.ConcreteAt(fieldIndex(t, f, "kv_usage"), 0); ok {
			t.Fatalf("kv_usage %v without Prometheus", v)
		}
		if n := noticeText(f); !strings.Contains(n, "metrics could not be read") {
			t.Fatalf("notices %q should say the metrics could not be read", n)
		}
	})

	t.Run("health says the trace backend holds vLLM spans", func(t *testing.T) {
		h, err := b.client.CheckHealth(context.Background(), &backend.CheckHealthRequest{PluginContext: ds})
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != backend.HealthStatusOk || !regexp.MustCompile(`with vLLM spans .* in the last 24 hours; the newest found started [^.]+ ago`).MatchString(h.Message) {
			t.Fatalf("health %s %q, want OK with vLLM spans found in the last 24 hours, and the newest's age", h.Status, h.Message)
		}
	})
}

var stageWords = map[string]string{"queue": "in the queue", "prefill": "in prefill", "decode": "decoding", "other": "outside the engine"}

// requests runs a requests query over [from, to] with extra query fields and returns its frame.
func (b *traceBed) requests(t *testing.T, pc backend.PluginContext, from, to time.Time, extra map[string]any) *data.Frame {
	t.Helper()
	m := map[string]any{"queryType": "requests", "limit": 1000}
	for k, v := range extra {
		m[k] = v
	}
	out := b.query(t, pc, rangeQuery("R", from, to, m)).Responses["R"]
	if out.Error != nil {
		t.Fatalf("requests: %v", out.Error)
	}
	return frameNamed(t, out.Frames, "requests")
}

// instant asks Prometheus for a query's single value at t.
func (b *traceBed) instant(t *testing.T, q string, at time.Time) float64 {
	t.Helper()
	v, _, _, err := b.promAPI.Query(context.Background(), q, at)
	if err != nil {
		t.Fatalf("Prometheus %s: %v", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		t.Fatalf("Prometheus %s at %v answered %v, want one sample", q, at, v)
	}
	return float64(vec[0].Value)
}

func spansIn(res *sim.Result, from, to time.Time) []sim.Span {
	var out []sim.Span
	for _, s := range res.Spans {
		if !s.Start.Before(from) && !s.Start.After(to) {
			out = append(out, s)
		}
	}
	return out
}

func instanceModel(res *sim.Result, addr string) string {
	for _, in := range res.Scenario.Instances {
		if in.Address == addr {
			return in.Model
		}
	}
	return ""
}

func frameNamed(t *testing.T, fs data.Frames, name string) *data.Frame {
	t.Helper()
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no frame %q among %d", name, len(fs))
	return nil
}

func fieldIndex(t *testing.T, f *data.Frame, name string) int {
	t.Helper()
	_, i := f.FieldByName(name)
	if i < 0 {
		t.Fatalf("frame %s has no field %q", f.Name, name)
	}
	return i
}

func cellString(f *data.Frame, name string, row int) string {
	field, _ := f.FieldByName(name)
	if field == nil {
		return ""
	}
	v, _ := field.ConcreteAt(row)
	s, _ := v.(string)
	return s
}

func slownessOf(t *testing.T, f *data.Frame, name string, row int) float64 {
	t.Helper()
	v, ok := f.ConcreteAt(fieldIndex(t, f, name), row)
	if !ok {
		t.Fatalf("row %d has no %s", row, name)
	}
	return v.(float64)
}

func noticeText(f *data.Frame) string {
	if f.Meta == nil {
		return ""
	}
	var out []string
	for _, n := range f.Meta.Notices {
		out = append(out, n.Text)
	}
	return strings.Join(out, "\n")
}

func atoiComma(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The trace backend's credentials go to it and nowhere else: an httptest server stands for a
// backend that refuses them, so the answer is a fault the plugin must report without echoing
// them.
func TestTraceBackendCredentialsAreSentAndNeverEchoed(t *testing.T) {
	const password, token = "s3cret-traces-pw", "tok-abc-123"
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	client := grpcPlugin(t)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("grafana:"+password))
	for _, c := range []struct {
		name     string
		jsonData map[string]any
		secure   map[string]string
		header   string
	}{
		{"basic auth", map[string]any{"tracesBasicAuthUser": "grafana"}, map[string]string{"tracesBasicAuthPassword": password}, basic},
		{"bearer token", map[string]any{}, map[string]string{"tracesBearerToken": token}, "Bearer " + token},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.jsonData["tracesBackend"], c.jsonData["tracesUrl"] = "jaeger", srv.URL
			raw, _ := json.Marshal(c.jsonData)
			id := dataSourceID.Add(1)
			pc := backend.PluginContext{OrgID: 1, PluginID: "seed-vllm-datasource", DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
				ID: id, UID: "creds-" + strconv.FormatInt(id, 10), Type: "seed-vllm-datasource", URL: "http://127.0.0.1:9",
				JSONData: raw, DecryptedSecureJSONData: c.secure, Updated: time.Now()}}
			now := time.Now()
			res, err := client.QueryData(context.Background(), &backend.QueryDataRequest{PluginContext: pc,
				Queries: []backend.DataQuery{rangeQuery("R", now.Add(-time.Hour), now, map[string]any{"queryType": "requests"})}})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Responses["R"]
			if got, _ := seen.Load().(string); got != c.header {
				t.Fatalf("the backend got Authorization %q, want %q", got, c.header)
			}
			if r.Error == nil || r.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(r.Error.Error(), "credentials") {
				t.Fatalf("error %v (source %q), want a downstream error about the credentials", r.Error, r.ErrorSource)
			}
			for _, secret := range []string{password, token, basic} {
				if strings.Contains(r.Error.Error(), secret) {
					t.Fatalf("error %q echoes a secret", r.Error)
				}
			}
		})
	}
}
