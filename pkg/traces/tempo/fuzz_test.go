package tempo

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	f.Add(400, []byte("invalid TraceQL query: parse error at line 1, col 1025: syntax error: unexpected $end, expecting ) or ,"))
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

// FuzzTraceQLBound: whatever its instances, models, threshold and service name, a search sends
// only TraceQL under MaxTraceQLBytes that together search every instance, or fails as the
// user's invalid query before sending any.
func FuzzTraceQLBound(f *testing.F) {
	f.Add(50, 60, 6, 35, 0.558445945945946, "vllm")
	f.Add(1, 900, 0, 0, 0.0, "vllm")
	f.Add(3, 20, 2, 400, 1e-300, strings.Repeat("s", 300))
	f.Fuzz(func(t *testing.T, nInst, instLen, nModels, modelLen int, ttft float64, service string) {
		if nInst < 0 || nInst > 100 || nModels < 0 || nModels > 20 || instLen < 1 || instLen > 1200 || modelLen < 1 || modelLen > 1200 ||
			ttft < 0 || ttft != ttft || ttft > 1e308 || service == "" || len(service) > 1200 {
			return
		}
		values := func(n, size int, prefix string) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = (prefix + strconv.Itoa(i) + strings.Repeat("x", size))[:size+len(strconv.Itoa(i))]
			}
			return out
		}
		var (
			mu   sync.Mutex
			sent []string
		)
		client := tracetest.FuncClient(func(r *http.Request) (int, string) {
			mu.Lock()
			sent = append(sent, r.URL.Query().Get("q"))
			mu.Unlock()
			return http.StatusOK, `{"traces":[]}`
		})
		src, err := New(client, "http://tempo:3200", traces.Options{ServiceName: service})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1796186045, 0)
		q := traces.Query{From: now.Add(-time.Hour), To: now, Instances: values(nInst, instLen, "i"), Models: values(nModels, modelLen, "m"), MinTTFT: ttft}
		_, _, err = src.Search(context.Background(), q)
		if err != nil {
			if !errors.Is(err, traces.ErrInvalidQuery) || len(sent) != 0 {
				t.Fatalf("err = %v after %d searches; want the user's invalid query before any", err, len(sent))
			}
			return
		}
		searched := map[string]bool{}
		for _, tql := range sent {
			if len(tql) >= MaxTraceQLBytes {
				t.Fatalf("%d bytes: %s", len(tql), tql)
			}
			for _, inst := range q.Instances {
				if strings.Contains(tql, inst) {
					searched[inst] = true
				}
			}
		}
		if len(searched) != len(q.Instances) || len(sent) == 0 {
			t.Fatalf("%d of %d instances searched in %d queries", len(searched), len(q.Instances), len(sent))
		}
	})
}
