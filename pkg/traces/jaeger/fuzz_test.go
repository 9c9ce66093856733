package jaeger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

// FuzzDecode: any answer to a by-id read (API v3: a stream of OTLP JSON chunks) decodes or
// fails with an error, never a panic; a request read has a trace id.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"jaeger_api_v3_traces_by_id.json", "jaeger_api_v3_traces_by_id_gateway_only.json"} {
		f.Add(200, testdataFile(f, name))
	}
	f.Add(404, testdataFile(f, "jaeger_api_v3_traces_by_id_error_404.json"))
	f.Add(400, testdataFile(f, "jaeger_api_v3_traces_by_id_error_400.json"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			return
		}
		// The recorded trace's id, so that the seeds read as a request.
		r, err := fuzzSource(t, status, body).Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
		if err == nil && r.TraceID == "" {
			t.Error("a request without a trace id")
		}
	})
}

// FuzzDecodeSearch: any answer to a search (the query service's /api/traces JSON) decodes or
// fails with an error, never a panic; the requests found are at most the limit, each with a
// trace id and within the range searched.
func FuzzDecodeSearch(f *testing.F) {
	for _, name := range []string{"jaeger_api_traces_search_tags.json", "jaeger_api_traces_search_minduration.json"} {
		f.Add(200, testdataFile(f, name))
	}
	f.Add(500, testdataFile(f, "jaeger_api_traces_error_missing_service.json"))
	f.Add(200, testdataFile(f, "jaeger_api_traces_search_unknown_service.json"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			return
		}
		now := time.Unix(1795941700, 0)
		q := traces.Query{From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 5}
		reqs, _, err := fuzzSource(t, status, body).Search(context.Background(), q)
		if err != nil {
			return
		}
		if len(reqs) > q.Limit {
			t.Errorf("%d requests for a limit of %d", len(reqs), q.Limit)
		}
		for _, r := range reqs {
			if r.TraceID == "" {
				t.Error("a request without a trace id")
			}
			if r.Start.Before(q.From) || r.Start.After(q.To) {
				t.Errorf("request %s starts at %s, outside the range searched", r.TraceID, r.Start)
			}
		}
	})
}

// fuzzSource is a source whose backend answers status and body to every call, in process.
func fuzzSource(t *testing.T, status int, body []byte) *Source {
	src, err := New(tracetest.BodyClient(status, body), "http://backend:1", traces.Options{MaxBodyBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// testdataFile reads a recorded answer; a seed that is missing fails the fuzzer, so that it
// never fuzzes from nothing unseen.
func testdataFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
