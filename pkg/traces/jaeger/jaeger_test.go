package jaeger

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

var jaegerFixtureFrom = time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)

func jaegerQuery() traces.Query {
	return traces.Query{From: jaegerFixtureFrom, To: jaegerFixtureFrom.Add(30 * time.Minute)}
}

func TestJaegerSearchReturnsEveryRequestAsSent(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 200, File: "jaeger_api_v3_traces_search.json"}}, traces.Options{}, New)
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

func TestJaegerSearchSendsTheAPIv3Parameters(t *testing.T) {
	j, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 404, File: "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, traces.Options{}, New)
	q := jaegerQuery()
	q.Service, q.SpanName, q.Limit, q.MinTTFT = "vllm-server", "llm_request", 20, 1.5
	if _, _, err := j.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	got := rp.Requests()[0].URL.Query()
	want := map[string]string{
		"query.service_name": "vllm-server", "query.operation_name": "llm_request",
		"query.start_time_min": "2026-11-29T08:30:00Z", "query.start_time_max": "2026-11-29T09:00:00Z",
		"query.num_traces": "20", "query.duration_min": "1.499s",
	}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v)
		}
	}
}

func TestJaegerSearchFiltersTTFTLocally(t *testing.T) {
	// Jaeger's HTTP API ignores attribute filters: the TTFT minimum is applied here.
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 200, File: "jaeger_api_v3_traces_search.json"}}, traces.Options{}, New)
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
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 404, File: "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, traces.Options{}, New)
	reqs, _, err := j.Search(context.Background(), jaegerQuery())
	if err != nil || len(reqs) != 0 {
		t.Errorf("got %v, %v; want no request and no error", reqs, err)
	}
}

func TestJaegerSearchRejectionIsDownstream(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 400, File: "jaeger_api_v3_traces_search_error_400_missing_times.json"}}, traces.Options{}, New)
	_, _, err := j.Search(context.Background(), jaegerQuery())
	var d *traces.DownstreamError
	if !errors.As(err, &d) || d.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "query.start_time_min and query.start_time_max are required") {
		t.Errorf("err = %v; want a downstream 400 quoting Jaeger", err)
	}
}

func TestJaegerSearchOnAPathThatIsNotJaegerIsDownstream(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{}, traces.Options{}, New)
	_, _, err := j.Search(context.Background(), jaegerQuery())
	if !traces.IsDownstream(err) || !strings.Contains(err.Error(), "check that tracesUrl points at Jaeger") {
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
			if !errors.Is(err, tt.want) || traces.IsDownstream(err) {
				t.Errorf("err = %v, want %v and not downstream", err, tt.want)
			}
		})
	}
}

func TestJaegerCheckSaysWhenNoVLLMSpans(t *testing.T) {
	j, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v3/traces": {Status: 404, File: "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, traces.Options{}, New)
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
		_, _ = w.Write([]byte(`{"result":` + tracetest.HugeTrace(1500, true) + `}`))
	}))
	defer srv.Close()
	j, err := New(srv.Client(), srv.URL, traces.Options{MaxSpansPerTrace: 1000})
	if err != nil {
		t.Fatal(err)
	}
	q := traces.Query{From: time.Unix(0, 1795941725619000000-1), To: time.Unix(0, 1795941725619000000+1)}
	reqs, info, err := j.Search(context.Background(), q)
	if err != nil || len(reqs) != 1 || info.SpansSkipped != 501 {
		t.Errorf("got %d requests, %d spans skipped, %v; want 1 and 501", len(reqs), info.SpansSkipped, err)
	}
}
