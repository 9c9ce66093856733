package jaeger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

var jaegerFixtureFrom = time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)

func jaegerQuery() traces.Query {
	return traces.Query{From: jaegerFixtureFrom, To: jaegerFixtureFrom.Add(30 * time.Minute)}
}

func TestJaegerSearchReturnsEveryRequestAsSent(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search.json"}}, traces.Options{}, New)
	reqs, info, err := j.Search(context.Background(), jaegerQuery())
	if err != nil {
		t.Fatal(err)
	}
	sent := tracetest.LoadSent(t, "jaeger_sent_spans.json")
	// The fixture holds the 7 requests sent through the OTel SDK and the gateway's span.
	if len(reqs) != 7 || info.Traces != 7 || info.Incomplete != 0 {
		t.Fatalf("got %d requests of %d traces (%d incomplete), want 7 complete", len(reqs), info.Traces, info.Incomplete)
	}
	for _, r := range reqs {
		tracetest.CheckSent(t, r, sent)
		tracetest.CheckStages(t, r)
	}
}

func TestJaegerSearchSendsTheFiltersToJaeger(t *testing.T) {
	tests := []struct {
		name      string
		instances []string
		models    []string
		want      []map[string]string
	}{
		{"no instance", nil, nil, []map[string]string{{"tags": ""}}},
		{"one instance, as an exact tag", []string{`10.0.0.1:8000`}, nil, []map[string]string{{"tags": `{"service.instance.id":"10.0.0.1:8000"}`}}},
		{"an instance that needs JSON quoting", []string{`a"b\c`}, nil, []map[string]string{{"tags": `{"service.instance.id":"a\"b\\c"}`}}},
		{"an instance and a model, both tags", []string{`10.0.0.1:8000`}, []string{"llama-3-8b"},
			[]map[string]string{{"tags": `{"gen_ai.response.model":"llama-3-8b","service.instance.id":"10.0.0.1:8000"}`}}},
		{"a model alone", nil, []string{`q"1`}, []map[string]string{{"tags": `{"gen_ai.response.model":"q\"1"}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := traces.Options{ServiceName: "vllm-server", SpanName: "llm_request"}
			j, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_tags.json"}}, opts, New)
			q := jaegerQuery()
			q.Limit, q.MinTTFT, q.Instances, q.Models = 20, 1.5, tt.instances, tt.models
			if _, _, err := j.Search(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			got := rp.Requests()[0].URL.Query()
			want := map[string]string{
				"service": "vllm-server", "operation": "llm_request",
				"start": "1795941000000000", "end": "1795942800000000",
				"limit": "20", "minDuration": "1.499s",
			}
			for k, v := range tt.want[0] {
				want[k] = v
			}
			for k, v := range want {
				if got.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, got.Get(k), v)
				}
			}
		})
	}
}

func TestJaegerSearchHostNameFallback(t *testing.T) {
	// The first search (service.instance.id) finds nothing: the host.name and port ones follow.
	j, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_unknown_service.json"}}, traces.Options{}, New)
	q := jaegerQuery()
	q.Instances = []string{"gpu2:8001"}
	if _, _, err := j.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, r := range rp.Requests() {
		tags = append(tags, r.URL.Query().Get("tags"))
	}
	want := []string{`{"service.instance.id":"gpu2:8001"}`, `{"host.name":"gpu2","server.port":"8001"}`, `{"host.name":"gpu2","net.host.port":"8001"}`}
	if strings.Join(tags, " ") != strings.Join(want, " ") {
		t.Errorf("tags sent %q, want %q", tags, want)
	}
}

func TestJaegerSearchSeveralInstancesIsOneSearchEach(t *testing.T) {
	j, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_tags.json"}}, traces.Options{}, New)
	q := jaegerQuery()
	q.Instances = []string{"vllm-00:8000", "vllm-01:8000", "vllm-02:8000"}
	if _, _, err := j.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rp.Requests() {
		seen[r.URL.Query().Get("tags")] = true
	}
	for _, in := range q.Instances {
		if !seen[`{"service.instance.id":"`+in+`"}`] {
			t.Errorf("no search for %s among %v", in, seen)
		}
	}
}

func TestJaegerSearchKeepsTTFTAtLeastTheMinimum(t *testing.T) {
	// Jaeger filters on the span's duration (e2e, never below TTFT); TTFT is checked here.
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_minduration.json"}}, traces.Options{}, New)
	q := jaegerQuery()
	q.MinTTFT = 1.0
	reqs, _, err := j.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Errorf("got %d requests, want the 3 sent with TTFT ≥ 1 s", len(reqs))
	}
	for _, r := range reqs {
		if r.TTFT < 1.0 {
			t.Errorf("%s has TTFT %v < 1", r.RequestID, r.TTFT)
		}
	}
}

func TestJaegerSearchNoTracesIsEmpty(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_unknown_service.json"}}, traces.Options{}, New)
	reqs, _, err := j.Search(context.Background(), jaegerQuery())
	if err != nil || len(reqs) != 0 {
		t.Errorf("got %v, %v; want no request and no error", reqs, err)
	}
}

func TestJaegerSearchRejectionIsDownstream(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 400, File: "jaeger_api_traces_error_missing_service.json"}}, traces.Options{}, New)
	_, _, err := j.Search(context.Background(), jaegerQuery())
	if !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "answered 400") || !strings.Contains(err.Error(), "parameter 'service' is required") {
		t.Errorf("err = %v; want a downstream 400 quoting Jaeger", err)
	}
}

func TestJaegerSearchOnAPathThatIsNotJaegerIsDownstream(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{}, traces.Options{}, New)
	_, _, err := j.Search(context.Background(), jaegerQuery())
	if !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "check that tracesUrl points at Jaeger") {
		t.Errorf("err = %v; want a downstream error naming tracesUrl", err)
	}
}

func TestJaegerGetReadsEveryStage(t *testing.T) {
	sent := tracetest.LoadSent(t, "jaeger_sent_spans.json")
	id := sent["cmpl-0005"].TraceID
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces/" + id: {Status: 200, File: "jaeger_api_v3_traces_by_id.json"}}, traces.Options{}, New)
	r, err := j.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tracetest.CheckWhole(t, r, sent)
}

func TestJaegerGetErrors(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name  string
		route tracetest.Route
		want  error
	}{
		{"unknown id", tracetest.Route{Status: 404, File: "jaeger_api_v3_traces_by_id_error_404.json"}, traces.ErrNotFound},
		{"id rejected by Jaeger", tracetest.Route{Status: 400, File: "jaeger_api_v3_traces_by_id_error_400.json"}, traces.ErrInvalidTraceID},
		{"trace without a vLLM span", tracetest.Route{Status: 200, File: "jaeger_api_v3_traces_by_id_gateway_only.json"}, traces.ErrNotVLLM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces/" + id: tt.route}, traces.Options{}, New)
			_, err := j.Get(context.Background(), id)
			if !errors.Is(err, tt.want) || backend.IsDownstreamError(err) {
				t.Errorf("err = %v, want %v and not downstream", err, tt.want)
			}
		})
	}
}

func TestJaegerCheckSaysWhenNoVLLMSpans(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/traces": {Status: 200, File: "jaeger_api_traces_search_unknown_service.json"}}, traces.Options{}, New)
	h, err := j.Check(context.Background())
	if err != nil || h.VLLMSpans || !strings.Contains(h.Message, "OTEL_SERVICE_NAME=vllm") {
		t.Errorf("Check = %+v, %v", h, err)
	}
}

func TestHugeTraceIsBounded(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		opts     traces.Options
		wantErr  error
		wantText string
	}{
		{"vLLM span past the span bound", `{"result":` + tracetest.HugeTrace(2000, false) + `}`,
			traces.Options{MaxSpansPerTrace: 1000}, traces.ErrNotVLLM, "among its first 1000 spans (1001 more not read)"},
		{"trace over the size bound", `{"result":` + tracetest.HugeTrace(2000, true) + `}`,
			traces.Options{MaxBodyBytes: 64 << 10}, nil, "larger than the 65536 bytes limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			j, err := New(srv.Client(), srv.URL, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %v; want %v with %q", err, tt.wantErr, tt.wantText)
			}
		})
	}
}

func TestSearchCountsSpansPastTheBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(hugeV1Trace(1500)))
	}))
	defer srv.Close()
	j, err := New(srv.Client(), srv.URL, traces.Options{MaxSpansPerTrace: 1000})
	if err != nil {
		t.Fatal(err)
	}
	q := traces.Query{From: time.Unix(0, 1795941725619000000-1), To: time.Unix(0, 1795941725619000000+1)}
	reqs, info, err := j.Search(context.Background(), q)
	if err != nil || len(reqs) != 1 || info.SpansSkipped != 500 {
		t.Errorf("got %d requests, %d spans skipped, %v; want 1 and 500", len(reqs), info.SpansSkipped, err)
	}
}

// hugeV1Trace is a /api/traces answer of one trace of n spans, the vLLM span first.
func hugeV1Trace(n int) string {
	var b strings.Builder
	b.WriteString(`{"data":[{"traceID":"35cda8f3cda64ae250a46b22235d5719","processes":{"p1":{"serviceName":"vllm","tags":[]}},"spans":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		name := "child"
		if i == 0 {
			name = "llm_request"
		}
		fmt.Fprintf(&b, `{"traceID":"35cda8f3cda64ae250a46b22235d5719","spanID":"%016x","operationName":%q,"startTime":1795941725619000,"duration":1000,"processID":"p1","tags":[]}`, i+1, name)
	}
	b.WriteString(`]}]}`)
	return b.String()
}
