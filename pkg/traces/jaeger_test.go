package traces

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

var jaegerFixtureFrom = time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)

func jaegerQuery() Query {
	return Query{From: jaegerFixtureFrom, To: jaegerFixtureFrom.Add(30 * time.Minute)}
}

func newTestJaeger(t *testing.T, routes map[string]route, opts Options) (*Jaeger, *replay) {
	t.Helper()
	r := newReplay(t, routes)
	j, err := NewJaeger(r.Client(), r.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j, r
}

func TestJaegerSearchReturnsEveryRequestAsSent(t *testing.T) {
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces": {200, "jaeger_api_v3_traces_search.json"}}, Options{})
	reqs, info, err := j.Search(context.Background(), jaegerQuery())
	if err != nil {
		t.Fatal(err)
	}
	sent := loadSent(t, "jaeger_sent_spans.json")
	// The fixture holds the 7 requests sent through the OTel SDK and the gateway's span.
	if len(reqs) != 7 || info.Traces != 7 || info.Incomplete != 0 {
		t.Fatalf("got %d requests of %d traces (%d incomplete), want 7 complete", len(reqs), info.Traces, info.Incomplete)
	}
	for _, r := range reqs {
		checkSent(t, r, sent)
		checkStages(t, r)
	}
}

func TestJaegerSearchSendsTheAPIv3Parameters(t *testing.T) {
	j, rp := newTestJaeger(t, map[string]route{"/api/v3/traces": {404, "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, Options{})
	q := jaegerQuery()
	q.Service, q.SpanName, q.Limit, q.MinTTFT = "vllm-server", "llm_request", 20, 1.5
	if _, _, err := j.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	got := rp.requests()[0].URL.Query()
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
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces": {200, "jaeger_api_v3_traces_search.json"}}, Options{})
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
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces": {404, "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, Options{})
	reqs, _, err := j.Search(context.Background(), jaegerQuery())
	if err != nil || len(reqs) != 0 {
		t.Errorf("got %v, %v; want no request and no error", reqs, err)
	}
}

func TestJaegerSearchRejectionIsDownstream(t *testing.T) {
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces": {400, "jaeger_api_v3_traces_search_error_400_missing_times.json"}}, Options{})
	_, _, err := j.Search(context.Background(), jaegerQuery())
	var d *DownstreamError
	if !errors.As(err, &d) || d.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "query.start_time_min and query.start_time_max are required") {
		t.Errorf("err = %v; want a downstream 400 quoting Jaeger", err)
	}
}

func TestJaegerSearchOnAPathThatIsNotJaegerIsDownstream(t *testing.T) {
	j, _ := newTestJaeger(t, map[string]route{}, Options{})
	_, _, err := j.Search(context.Background(), jaegerQuery())
	if !IsDownstream(err) || !strings.Contains(err.Error(), "check that tracesUrl points at Jaeger") {
		t.Errorf("err = %v; want a downstream error naming tracesUrl", err)
	}
}

func TestJaegerGetReadsEveryStage(t *testing.T) {
	sent := loadSent(t, "jaeger_sent_spans.json")
	id := sent["cmpl-0005"].TraceID
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces/" + id: {200, "jaeger_api_v3_traces_by_id.json"}}, Options{})
	r, err := j.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.RequestID != "cmpl-0005" {
		t.Fatalf("got request %q, want the vLLM span cmpl-0005 (not the gateway's)", r.RequestID)
	}
	checkSent(t, r, sent)
	checkStages(t, r)
	if r.Temperature != 0.7 || r.TopP != 0.95 || r.MaxTokens != 256 || r.Model != "facebook/opt-125m" || len(r.Missing()) != 0 {
		t.Errorf("request = %+v", r)
	}
}

func TestJaegerGetErrors(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name  string
		route route
		want  error
	}{
		{"unknown id", route{404, "jaeger_api_v3_traces_by_id_error_404.json"}, ErrNotFound},
		{"id rejected by Jaeger", route{400, "jaeger_api_v3_traces_by_id_error_400.json"}, ErrInvalidTraceID},
		{"trace without a vLLM span", route{200, "jaeger_api_v3_traces_by_id_gateway_only.json"}, ErrNotVLLM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces/" + id: tt.route}, Options{})
			_, err := j.Get(context.Background(), id)
			if !errors.Is(err, tt.want) || IsDownstream(err) {
				t.Errorf("err = %v, want %v and not downstream", err, tt.want)
			}
		})
	}
}

func TestJaegerCheckSaysWhenNoVLLMSpans(t *testing.T) {
	j, _ := newTestJaeger(t, map[string]route{"/api/v3/traces": {404, "jaeger_api_v3_traces_search_error_404_no_traces.json"}}, Options{})
	h, err := j.Check(context.Background())
	if err != nil || h.VLLMSpans || !strings.Contains(h.Message, "OTEL_SERVICE_NAME=vllm") {
		t.Errorf("Check = %+v, %v", h, err)
	}
}
