package signals_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// v0Server is a vLLM V0 server as its /metrics would read every 15 s: prompt tokens processed
// at 1000 a second, of which a share hit the prefix cache, and the hit rate since the server
// started (vLLM V0's CacheMetricData), which is all V0 exported about the prefix cache.
type v0Server struct {
	job string
	// hitShare is the share of the prompt tokens processed in the 15 s before minute m that hit.
	hitShare func(m float64) float64
	// restartAt restarts the server (counters and the lifetime ratio start over); 0: never.
	restartAt float64
}

const scrapeEvery = 15 * time.Second

func (s v0Server) openMetrics(start time.Time, minutes int) string {
	var rates, prompts strings.Builder
	var tokens, hits float64
	labels := fmt.Sprintf(`instance="v0.example:8000",job=%q,model_name="m"`, s.job)
	for i := 0; i <= minutes*4; i++ {
		m := float64(i) / 4
		if s.restartAt > 0 && m == s.restartAt {
			tokens, hits = 0, 0
		} else if i > 0 {
			tokens += 15000
			hits += 15000 * s.hitShare(m)
		}
		ratio := -1.0 // what V0 prints before its first lookup
		if tokens > 0 {
			ratio = hits / tokens
		}
		ts := float64(start.Add(time.Duration(i) * scrapeEvery).Unix())
		fmt.Fprintf(&rates, "vllm:gpu_prefix_cache_hit_rate{%s} %g %.0f\n", labels, ratio, ts)
		fmt.Fprintf(&prompts, "vllm:prompt_tokens_total{%s} %g %.0f\n", labels, tokens, ts)
	}
	return "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\n" + rates.String() +
		"# TYPE vllm:prompt_tokens counter\n" + prompts.String()
}

// V0's only prefix-cache metric is a ratio since the server started, so a cache that stops
// hitting after half an hour of hits barely moves it. The signal is the window's hit rate.
func TestV0PrefixCacheHitRateIsTheWindowsNotTheLifetimes(t *testing.T) {
	const minutes = 40
	start := time.Now().Add(-minutes*time.Minute - 5*time.Minute).Truncate(time.Minute)
	servers := []v0Server{
		{job: "hits-then-misses", hitShare: func(m float64) float64 {
			if m <= 30 {
				return 0.8
			}
			return 0
		}},
		{job: "restart", hitShare: func(float64) float64 { return 0.6 }, restartAt: 35},
	}
	var text strings.Builder
	for _, s := range servers {
		text.WriteString(s.openMetrics(start, minutes))
	}
	text.WriteString("# EOF\n")
	api := backfilledText(t, text.String())

	fetch := func(t *testing.T, job string) (*series.Series, series.Grid) {
		t.Helper()
		matchers, err := signals.ParseMatchers(fmt.Sprintf(`{job=%q}`, job))
		require.NoError(t, err)
		client := signals.NewClient(api, signals.DefaultLabels, scrapeEvery, matchers)
		res, err := client.Fetch(context.Background(), signals.Request{Signals: []series.Signal{series.PrefixCacheHitRate},
			Start: start, End: start.Add(minutes * time.Minute), Step: scrapeEvery})
		require.NoError(t, err)
		require.Equal(t, vllm.GenerationV0, res.Generation)
		s := res.Set.Get(series.Key{Instance: "v0.example:8000", Model: "m"}, series.PrefixCacheHitRate)
		require.NotNil(t, s, "no hit rate series; notices %v", res.Notices)
		return s, res.Set.Grid
	}
	at := func(t *testing.T, s *series.Series, g series.Grid, minute float64) float64 {
		t.Helper()
		i, ok := g.Index(start.Add(time.Duration(minute * float64(time.Minute))))
		require.True(t, ok)
		return s.Values[i]
	}

	for _, c := range []struct {
		name, job string
		minute    float64
		want      float64 // NaN: no value
	}{
		{"steady hits read as the share that hit", "hits-then-misses", 20, 0.8},
		// Ten minutes after the cache stopped hitting, the lifetime ratio still reads 0.6.
		{"misses show within one window, whatever the lifetime ratio says", "hits-then-misses", 40, 0},
		{"one window after the change, the window holds only misses", "hits-then-misses", 31, 0},
		{"a window holding a restart has no value", "restart", 35.5, math.NaN()},
		{"after the restart, the window's share again", "restart", 38, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, g := fetch(t, c.job)
			got := at(t, s, g, c.minute)
			if math.IsNaN(c.want) {
				require.True(t, math.IsNaN(got), "got %v, want no value", got)
				return
			}
			require.InDelta(t, c.want, got, 0.01)
		})
	}
}

// A vLLM V0 server may export only the gauge vllm:spec_decode_draft_acceptance_rate (a ratio
// since it started), not the token counters: the acceptance rate still resolves, from the
// gauge; where the counters exist, the window's counter ratio is used instead.
func TestV0AcceptanceGaugeIsTheFallbackOfTheAcceptanceRate(t *testing.T) {
	const minutes = 10
	start := time.Now().Add(-minutes*time.Minute - 5*time.Minute).Truncate(time.Minute)
	var text strings.Builder
	text.WriteString("# TYPE vllm:spec_decode_draft_acceptance_rate gauge\n")
	gaugeOnly := `instance="gauge.example:8000",job="spec",model_name="m"`
	both := `instance="counters.example:8000",job="spec",model_name="m"`
	for i := 0; i <= minutes*4; i++ {
		ts := start.Add(time.Duration(i) * scrapeEvery).Unix()
		fmt.Fprintf(&text, "vllm:spec_decode_draft_acceptance_rate{%s} 0.42 %d\n", gaugeOnly, ts)
		fmt.Fprintf(&text, "vllm:spec_decode_draft_acceptance_rate{%s} 0.9 %d\n", both, ts)
	}
	text.WriteString("# TYPE vllm:spec_decode_num_draft_tokens counter\n")
	for i := 0; i <= minutes*4; i++ {
		fmt.Fprintf(&text, "vllm:spec_decode_num_draft_tokens_total{%s} %d %d\n", both, 100*i, start.Add(time.Duration(i)*scrapeEvery).Unix())
	}
	text.WriteString("# TYPE vllm:spec_decode_num_accepted_tokens counter\n")
	for i := 0; i <= minutes*4; i++ {
		fmt.Fprintf(&text, "vllm:spec_decode_num_accepted_tokens_total{%s} %d %d\n", both, 30*i, start.Add(time.Duration(i)*scrapeEvery).Unix())
	}
	text.WriteString("# EOF\n")
	api := backfilledText(t, text.String())
	client := signals.NewClient(api, signals.DefaultLabels, scrapeEvery, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "spec")})
	res, err := client.Fetch(context.Background(), signals.Request{Signals: []series.Signal{series.SpecAcceptanceRate},
		Start: start.Add(2 * time.Minute), End: start.Add(minutes * time.Minute), Step: scrapeEvery})
	require.NoError(t, err)
	require.NotContains(t, res.Set.Absent, series.SpecAcceptanceRate)
	for instance, want := range map[string]float64{"gauge.example:8000": 0.42, "counters.example:8000": 0.3} {
		s := res.Set.Get(series.Key{Instance: instance, Model: "m"}, series.SpecAcceptanceRate)
		require.NotNil(t, s, "%s: notices %v", instance, res.Notices)
		require.InDelta(t, want, s.Values[len(s.Values)-1], 1e-9, instance)
	}
}
