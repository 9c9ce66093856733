package embedprom

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// simulated is a scenario's scrapes as OpenMetrics text, in a file for promtool and in memory.
func simulated(t *testing.T, scenario string, start time.Time, d time.Duration) (string, []byte) {
	t.Helper()
	sc, err := sim.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sc, start, d, 15*time.Second, sim.WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), scenario+".om")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, buf.Bytes()
}

func backfilled(t *testing.T, om []byte) *Server {
	t.Helper()
	dir := t.TempDir()
	if err := Backfill(dir, om); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func client(t *testing.T, url string) v1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

// TestAnswersEqualARealPrometheus loads the same simulated scrapes into a real Prometheus
// (promtool's backfill) and into the embedded one (Backfill), and asks both the kinds of
// question the plugin asks: label values, series, and range and instant queries over
// counters, gauges and histograms.
func TestAnswersEqualARealPrometheus(t *testing.T) {
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	d := 45 * time.Minute
	file, om := simulated(t, sim.RuleKVCacheSaturated, start, d)
	real, embedded := client(t, testbed.Prometheus(t, file).URL), client(t, backfilled(t, om).URL())
	from, to := start, start.Add(d)
	r := v1.Range{Start: from, End: to, Step: 15 * time.Second}
	type answer struct {
		value any
		err   error
	}
	questions := []struct {
		name string
		ask  func(ctx context.Context, c v1.API) answer
	}{
		{"label values of instance", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.LabelValues(ctx, "instance", []string{`{job="vllm"}`}, from, to)
			return answer{v, err}
		}},
		{"metric names", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.LabelValues(ctx, "__name__", []string{`{__name__=~"vllm:.+"}`}, time.Time{}, time.Time{})
			return answer{v, err}
		}},
		{"series", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.Series(ctx, []string{vllm.KVCacheUsage}, from, to)
			return answer{v, err}
		}},
		{"counter rate", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.QueryRange(ctx, "sum by (instance) (rate("+vllm.PromptTokens+"[1m]))", r)
			return answer{v, err}
		}},
		{"histogram quantile", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.QueryRange(ctx, "histogram_quantile(0.99, sum by (instance, le) (rate("+vllm.TimeToFirstToken+"_bucket[5m])))", r)
			return answer{v, err}
		}},
		{"gauge over time", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.QueryRange(ctx, "max_over_time("+vllm.KVCacheUsage+"[2m])", r)
			return answer{v, err}
		}},
		{"instant query", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.Query(ctx, "count by (instance, model_name) ("+vllm.KVCacheUsage+")", to)
			return answer{v, err}
		}},
		{"bad query", func(ctx context.Context, c v1.API) answer {
			v, _, _, err := c.Query(ctx, "rate(", to)
			return answer{v, err}
		}},
	}
	for _, q := range questions {
		t.Run(q.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			want, got := q.ask(ctx, real), q.ask(ctx, embedded)
			if (want.err == nil) != (got.err == nil) || (want.err != nil && want.err.Error() != got.err.Error()) {
				t.Fatalf("error: real %v, embedded %v", want.err, got.err)
			}
			if w, g := fmt.Sprint(want.value), fmt.Sprint(got.value); w != g {
				t.Errorf("answers differ:\nreal     %.600s\nembedded %.600s", w, g)
			}
			if w := fmt.Sprint(want.value); want.err == nil && (w == "" || w == "[]") {
				t.Errorf("the real Prometheus answers nothing: the question tests nothing")
			}
		})
	}
}

// TestServesTheBackfilledInstances: the instances the API lists are the scenario's own.
func TestServesTheBackfilledInstances(t *testing.T) {
	start := time.Now().Add(-time.Hour).Truncate(time.Minute)
	_, om := simulated(t, "healthy", start, 10*time.Minute)
	sc, _ := sim.Lookup("healthy")
	var want []string
	for _, in := range sc.Instances {
		want = append(want, in.Address)
	}
	got, _, _, err := client(t, backfilled(t, om).URL()).LabelValues(context.Background(), "instance", nil, start, start.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("instances %v, want the scenario's %v", got, want)
	}
}

func TestBackfillRejects(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"a sample without a timestamp", "# TYPE x gauge\nx 1\n# EOF\n", "without a timestamp"},
		{"no samples", "# EOF\n", "no samples"},
		{"text that is not OpenMetrics", "<html>nope</html>\n", "OpenMetrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Backfill(t.TempDir(), []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
