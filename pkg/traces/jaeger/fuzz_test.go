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

var seedFiles = []string{"jaeger_api_v3_traces_search.json", "jaeger_api_v3_traces_by_id.json", "jaeger_api_v3_traces_by_id_gateway_only.json"}

func testdataFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }
