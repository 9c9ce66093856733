package plugin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
)

// wantFailure is how one query must fail: its status, its error source, and words of its
// message that tell the user what to fix.
type wantFailure struct {
	status backend.Status
	source backend.ErrorSource
	says   []string
	// never are words the message must not hold (a stack trace belongs in the log only).
	never []string
}

func checkFailure(t *testing.T, r backend.DataResponse, want wantFailure) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("the query succeeded with %d frames, want it to fail", len(r.Frames))
	}
	if r.ErrorSource != want.source {
		t.Errorf("error source %q, want %q (error: %v)", r.ErrorSource, want.source, r.Error)
	}
	if r.Status != want.status {
		t.Errorf("status %d, want %d (error: %v)", r.Status, want.status, r.Error)
	}
	for _, s := range want.says {
		if !strings.Contains(r.Error.Error(), s) {
			t.Errorf("error %q does not say %q", r.Error, s)
		}
	}
	for _, s := range want.never {
		if strings.Contains(r.Error.Error(), s) {
			t.Errorf("error %q says %q", r.Error, s)
		}
	}
}

// failsAlone sends a bad query beside a good one: the bad one fails as wanted, the good one
// still answers.
func failsAlone(t *testing.T, e *env, pc backend.PluginContext, bad backend.DataQuery, want wantFailure) {
	t.Helper()
	bad.RefID = "BAD"
	res := e.query(t, pc, bad, e.dataQuery("OK", signalsQuery(string(series.TTFTP50))))
	checkFailure(t, res.Responses["BAD"], want)
	if got := signalFrames(t, okResponse(t, res, "OK").Frames); len(got) != 2 {
		t.Errorf("the good query beside the bad one answered %d frames, want 2", len(got))
	}
}

func badQueryFailure(says ...string) wantFailure {
	return wantFailure{status: backend.StatusBadRequest, source: backend.ErrorSourcePlugin, says: says}
}

func malformedQueryJSON(t *testing.T, e *env) {
	q := e.dataQuery("BAD", nil)
	q.JSON = []byte(`{"queryType": "signals", "signals": ["ttft_p50"`)
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure("not valid JSON"))
}

func unknownQueryType(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "latency"})
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`"latency"`, "signals", "diagnosis"))
}

func unknownSignal(t *testing.T, e *env) {
	q := e.dataQuery("BAD", signalsQuery("ttft_p50", "ttft_p95"))
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`"ttft_p95"`, "ttft_p99"))
}

func badTopK(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "signals", "signals": []string{"kv_usage"}, "topK": "$topk"})
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`topK "$topk"`, "whole number"))
}

func unknownSeverity(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "diagnosis", "headlineOnly": true, "severities": []string{"critical", "fatal"}})
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`"fatal"`, "critical, warning, info"))
}

func unknownDiagnosisFormat(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "diagnosis", "format": "table"})
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`"table"`, "findings, timeline, alert, fleet, recommendation"))
}

func unknownExplainFormat(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "explain", "format": "timeline", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"})
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure(`"timeline"`, "empty for the explanation", "annotation"))
}

func invalidInstanceRegex(t *testing.T, e *env) {
	q := signalsQuery(string(series.KVUsage))
	q["instance"] = "10.0.0.(1"
	failsAlone(t, e, pluginContext(e.v1.URL, nil), e.dataQuery("BAD", q), badQueryFailure("10.0.0.(1", "regular expression"))
}

func emptyTimeRange(t *testing.T, e *env) {
	q := e.dataQuery("BAD", signalsQuery(string(series.KVUsage)))
	q.TimeRange.From = q.TimeRange.To
	failsAlone(t, e, pluginContext(e.v1.URL, nil), q, badQueryFailure("time range", "shorter than one step"))
}

// panicQuery is a query type whose handler panics.
type panicQuery struct{}

func (panicQuery) QueryType() QueryType { return "panics_in_test" }

func panickingHandler(t *testing.T, e *env) {
	saved := queryTypes
	queryTypes = append(slices.Clone(queryTypes), kind(func(context.Context, *Datasource, backend.DataQuery, panicQuery) backend.DataResponse {
		panic("deliberate test panic")
	}, panicQuery{}))
	t.Cleanup(func() { queryTypes = saved })
	failsAlone(t, e, pluginContext(e.v1.URL, nil), e.dataQuery("BAD", map[string]any{"queryType": panicQuery{}.QueryType()}),
		wantFailure{status: backend.StatusInternal, source: backend.ErrorSourcePlugin, says: []string{"internal error", "query BAD", "deliberate test panic"}, never: []string{"goroutine", "runtime/debug"}})
}

func invalidLabelMatchers(t *testing.T, e *env) {
	pc := pluginContext(e.v1.URL, map[string]any{"labelMatchers": "{job=}"})
	res := e.query(t, pc, e.dataQuery("A", signalsQuery()), e.dataQuery("B", map[string]any{"queryType": "diagnosis"}))
	for _, ref := range []string{"A", "B"} {
		checkFailure(t, res.Responses[ref], badQueryFailure("labelMatchers", "{job=}"))
	}
	if h := e.health(t, pc); h.Status != backend.HealthStatusError || !strings.Contains(h.Message, "labelMatchers") {
		t.Errorf("health %s %q: want an error naming labelMatchers", h.Status, h.Message)
	}
}

func badObjectives(t *testing.T, e *env) {
	pc := pluginContext(e.v1.URL, map[string]any{"slos": []map[string]any{
		{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 99, "window": "28d"}}})
	h := e.health(t, pc)
	if h.Status != backend.HealthStatusError {
		t.Errorf("health %s, want an error", h.Status)
	}
	for _, want := range []string{`slos[0] "ttft-2s"`, "objective 99", "such as 0.99", "2 vLLM instance(s)"} {
		if !strings.Contains(h.Message, want) {
			t.Errorf("health message %q does not say %q", h.Message, want)
		}
	}
	res := e.query(t, pc, e.dataQuery("A", signalsQuery(string(series.TTFTP50))), e.dataQuery("B", map[string]any{"queryType": "diagnosis"}),
		e.dataQuery("S", map[string]any{"queryType": "slo"}), e.dataQuery("T", map[string]any{"queryType": "slo", "format": "attribution"}),
		e.dataQuery("U", map[string]any{"queryType": "slo", "format": "burn"}))
	for _, ref := range []string{"A", "B"} {
		okResponse(t, res, ref)
	}
	for _, ref := range []string{"S", "T", "U"} {
		checkFailure(t, res.Responses[ref], badQueryFailure(`slos[0] "ttft-2s"`, "objective 99", "such as 0.99"))
	}
}

// withObjectives is a data source of e's v1 Prometheus with one objective, ttft-2s.
func withObjectives(e *env) backend.PluginContext {
	return pluginContext(e.v1.URL, map[string]any{"slos": []map[string]any{
		{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}}})
}

func unknownSLOFormat(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "slo", "format": "burndown"})
	failsAlone(t, e, withObjectives(e), q, badQueryFailure(`"burndown"`, "status, attribution, goodput, burn"))
}

func unknownBurnSeverity(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "slo", "format": "burn", "severity": "critical"})
	failsAlone(t, e, withObjectives(e), q, badQueryFailure(`severity "critical"`, "page, ticket"))
}

func unknownObjective(t *testing.T, e *env) {
	q := e.dataQuery("BAD", map[string]any{"queryType": "slo", "slos": []string{"ttft-1s"}})
	failsAlone(t, e, withObjectives(e), q, badQueryFailure(`slo "ttft-1s"`, "they are ttft-2s"))
}

func sloWithoutObjectives(t *testing.T, e *env) {
	for _, f := range sloFormats {
		format := f.Value
		q := e.dataQuery("A", map[string]any{"queryType": "slo", "format": format})
		r := okResponse(t, e.query(t, pluginContext(e.v1.URL, nil), q), "A")
		if got := notices(r.Frames); len(r.Frames) != 1 || r.Frames[0].Rows() != 0 || len(got) != 1 || !strings.Contains(got[0], "add them to its settings (slos)") {
			t.Errorf("format %s without objectives answered %d frames with notices %q, want one empty frame saying to add objectives", format, len(r.Frames), got)
		}
	}
}

func unreachablePrometheus(t *testing.T, e *env) {
	addr := freeAddr(t) // closed as soon as it was found free: nothing listens there
	const password = "hunter2-s3cret"
	pc := pluginContext("http://admin:"+password+"@"+addr, nil)
	res := e.query(t, pc, e.dataQuery("A", signalsQuery()), e.dataQuery("B", signalsQuery(string(series.Running))))
	for _, ref := range []string{"A", "B"} {
		r := res.Responses[ref]
		checkFailure(t, r, wantFailure{status: backend.StatusBadGateway, source: backend.ErrorSourceDownstream, says: []string{"Prometheus", addr, "connection refused"}})
		if r.Error != nil && strings.Contains(r.Error.Error(), password) {
			t.Errorf("error %q shows the password written into the URL", r.Error)
		}
	}
	h := e.health(t, pc)
	if h.Status != backend.HealthStatusError {
		t.Errorf("health %s, want an error", h.Status)
	}
	if strings.Contains(h.Message, password) {
		t.Errorf("health message %q shows the password written into the URL", h.Message)
	}
	for _, want := range []string{addr, "connection refused", "Check the URL"} {
		if !strings.Contains(h.Message, want) {
			t.Errorf("health message %q does not say %q", h.Message, want)
		}
	}
}

// faultyProm is a proxy to a real Prometheus that hands the range queries whose PromQL
// contains match to fault, with the proxy to call if it answers after all.
func faultyProm(t *testing.T, target, match string, fault func(w http.ResponseWriter, r *http.Request, next http.Handler)) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		query := form.Get("query") + r.URL.Query().Get("query")
		if r.URL.Path == "/api/v1/query_range" && strings.Contains(query, match) {
			fault(w, r, proxy)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func prometheus5xx(t *testing.T, e *env) {
	promURL := faultyProm(t, e.v1.URL, "kv_cache_usage_perc", func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
	})
	failsAlone(t, e, pluginContext(promURL, nil), e.dataQuery("BAD", signalsQuery(string(series.KVUsage))),
		wantFailure{status: backend.StatusBadGateway, source: backend.ErrorSourceDownstream, says: []string{"Prometheus failed", "503"}})
}

func prometheusTimeout(t *testing.T, e *env) {
	// The stalled query answers after 4 s: only a 1 s timeout setting, applied, makes it fail.
	promURL := faultyProm(t, e.v1.URL, "kv_cache_usage_perc", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		select {
		case <-r.Context().Done():
		case <-time.After(4 * time.Second):
			next.ServeHTTP(w, r)
		}
	})
	// jsonData.timeout is Grafana's HTTP setting, in seconds; the SDK's HTTP client applies it.
	pc := pluginContext(promURL, map[string]any{"timeout": 1})
	failsAlone(t, e, pc, e.dataQuery("BAD", signalsQuery(string(series.KVUsage))),
		wantFailure{status: backend.StatusTimeout, source: backend.ErrorSourceDownstream, says: []string{"Prometheus did not answer in time"}})
}
