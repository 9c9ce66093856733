package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/testbed"
)

// instant runs an instant PromQL query and returns the first sample's value.
func instant(t *testing.T, base, q string, at time.Time) float64 {
	t.Helper()
	u := base + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatInt(at.Unix(), 10)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct{ Value [2]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body.Error)
	}
	if len(body.Data.Result) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
	return v
}

func TestBackfilledKVSaturationShowsInPrometheus(t *testing.T) {
	res := run(t, RuleKVCacheSaturated)
	path := filepath.Join(t.TempDir(), "kv.om")
	if err := res.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	prom := testbed.Prometheus(t, path)
	tr := res.Truth[0]
	mid := tr.Start.Add(tr.End.Sub(tr.Start) / 2)
	sel := fmt.Sprintf(`{instance=%q}`, tr.Instance)
	if kv := instant(t, prom.URL, "max_over_time(vllm:kv_cache_usage_perc"+sel+"[5m])", mid); kv <= 0.85 {
		t.Errorf("max kv usage %v inside the ground truth, want > 0.85", kv)
	}
	if r := instant(t, prom.URL, "rate(vllm:num_preemptions_total"+sel+"[1m])", mid); r <= 0.5 {
		t.Errorf("preemption rate %v/s inside the ground truth, want > 0.5", r)
	}
	before := res.Start.Add(5 * time.Minute)
	if r := instant(t, prom.URL, "rate(vllm:num_preemptions_total"+sel+"[1m])", before); r != 0 {
		t.Errorf("preemption rate %v/s before the fault, want 0", r)
	}
}

func TestSpansReachJaeger(t *testing.T) {
	jaeger := testbed.Jaeger(t)
	sc, _ := Lookup("healthy")
	start := time.Now().Add(-15 * time.Minute).Truncate(time.Second)
	res, err := Run(sc, start, 5*time.Minute, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp, err := NewExporter(ctx, sc, jaeger.OTLPGRPC, ProtocolGRPC, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(ctx, res.Spans[:200]); err != nil {
		t.Fatal(err)
	}
	exp.Close(ctx)
	q := url.Values{
		"query.service_name":   {"vllm"},
		"query.start_time_min": {start.Add(-time.Minute).Format(time.RFC3339)},
		"query.start_time_max": {time.Now().Format(time.RFC3339)},
		"query.num_traces":     {"1000"},
	}
	want := fmt.Sprintf("%x", res.Spans[0].TraceID)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(jaeger.QueryURL + "/api/v3/traces?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Result struct {
				ResourceSpans []struct {
					Resource struct {
						Attributes []struct {
							Key   string
							Value map[string]any
						}
					}
					ScopeSpans []struct {
						Spans []struct {
							TraceID string `json:"traceId"`
							Name    string
						}
					}
				}
			}
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		n := 0
		found := false
		for _, rs := range body.Result.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					n++
					found = found || s.TraceID == want
				}
			}
		}
		if n == 200 && found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger returned %d of 200 spans (trace %s found: %v)", n, want, found)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
