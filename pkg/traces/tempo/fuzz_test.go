package tempo

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

// FuzzDecode: any answer to a search or a by-id read decodes or fails with an error, never a
// panic; every request decoded has a trace id.
func FuzzDecode(f *testing.F) {
	for _, name := range seedFiles {
		if b, err := testdataFile(name); err == nil {
			f.Add(200, b)
		}
	}
	f.Add(404, []byte(`{"error":{"httpCode":404,"message":"No traces found"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			return
		}
		src, err := New(tracetest.BodyClient(status, body), "http://backend:1", traces.Options{MaxBodyBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		now := time.Unix(1795941700, 0)
		reqs, _, err := src.Search(ctx, traces.Query{From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 20})
		if err == nil {
			for _, r := range reqs {
				if r.TraceID == "" {
					t.Error("a request without a trace id")
				}
			}
		}
		_, _ = src.Get(ctx, "0af7651916cd43dd8448eb211c80319c")
	})
}

var seedFiles = []string{"tempo_api_search_traceql_select.json", "tempo_api_v2_traces_by_id.json", "tempo_api_search_traceql_leading_zero_trace_ids.json"}

func testdataFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }

// FuzzTraceQLAttr: an attribute name is written bare only when TraceQL reads it as one name,
// else quoted so that it reads back as itself.
func FuzzTraceQLAttr(f *testing.F) {
	for _, s := range []string{"service.instance.id", "gen_ai.response.model", `a"b`, "a b", "a}||{", "\\", "модель"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := traceQLAttr(name)
		if got == name {
			if !plainAttr.MatchString(name) {
				t.Errorf("%q written bare", name)
			}
			return
		}
		back, err := strconv.Unquote(got)
		if err != nil || back != name {
			t.Errorf("%q written as %s, which reads back as %q (%v)", name, got, back, err)
		}
	})
}
