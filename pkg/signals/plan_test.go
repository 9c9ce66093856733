package signals_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// plannedRange is a range query's range, its ends as clock times from the test's day.
type plannedRange struct {
	from, to string
	step     time.Duration
}

func clock(day, t time.Time) string {
	d := t.Sub(day)
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

// TestPlanWritesTheQueriesOfARequest: what a request will fetch, without a server: the PromQL
// for the vocabulary detected, the ranges and steps, and the instant lookups.
func TestPlanWritesTheQueriesOfARequest(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(clock string) time.Time {
		var h, m, s time.Duration
		if _, err := fmt.Sscanf(clock, "%d:%d:%d", &h, &m, &s); err != nil {
			t.Fatal(err)
		}
		return day.Add(h*time.Hour + m*time.Minute + s*time.Second)
	}
	v1Names := vllm.Detect([]string{vllm.RequestsRunning, vllm.KVCacheUsage, vllm.TimeToFirstToken + "_bucket", vllm.GenerationTokens})
	v0Names := vllm.Detect([]string{vllm.RequestsRunning, vllm.GPUCacheUsage, vllm.TimeToFirstToken + "_bucket"})
	cfg := signals.Config{Labels: signals.DefaultLabels, Scrape: 15 * time.Second, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "vllm")}}
	cases := []struct {
		name     string
		det      vllm.Detection
		req      signals.Request
		exprs    []string
		ranges   []plannedRange
		instant  []string
		absent   []series.Signal
		planText []string // lines the executed query shows
	}{
		{
			name: "V1 gauge and the quantiles of one family share one bucket-rate query",
			det:  v1Names,
			req: signals.Request{Signals: []series.Signal{series.KVUsage, series.TTFTP50, series.TTFTP99, series.TTFTRatio},
				Start: at("10:00:00"), End: at("11:00:00"), Step: 15 * time.Second, Instance: "vllm-0[12]:8000"},
			exprs: []string{
				`max by (instance, model_name) (vllm:kv_cache_usage_perc{instance=~"vllm-0[12]:8000",job="vllm"})`,
				`sum by (instance, model_name, le) (rate(vllm:time_to_first_token_seconds_bucket{instance=~"vllm-0[12]:8000",job="vllm"}[1m]))`,
			},
			ranges:   []plannedRange{{"10:00:00", "11:00:00", 15 * time.Second}},
			planText: []string{"Prometheus range queries, rate window 1m0s, 2026-01-01T10:00:00Z to 2026-01-01T11:00:00Z every 15s:"},
		},
		{
			name: "a histogram family kept whole shares its quantiles' query; an absent one is left out",
			det:  v1Names,
			req: signals.Request{Signals: []series.Signal{series.TTFTP99}, Start: at("10:00:00"), End: at("11:00:00"), Step: 15 * time.Second,
				Histograms: []string{vllm.TimeToFirstToken, vllm.E2ELatency}},
			exprs:  []string{`sum by (instance, model_name, le) (rate(vllm:time_to_first_token_seconds_bucket{job="vllm"}[1m]))`},
			ranges: []plannedRange{{"10:00:00", "11:00:00", 15 * time.Second}},
		},
		{
			name: "a histogram family kept whole alone",
			det:  vllm.Detect([]string{vllm.E2ELatency + "_bucket"}),
			req: signals.Request{Start: at("10:00:00"), End: at("11:00:00"), Step: 15 * time.Second,
				Histograms: []string{vllm.E2ELatency}},
			exprs:  []string{`sum by (instance, model_name, le) (rate(vllm:e2e_request_latency_seconds_bucket{job="vllm"}[1m]))`},
			ranges: []plannedRange{{"10:00:00", "11:00:00", 15 * time.Second}},
		},
		{
			name:   "V0 names for the same signal",
			det:    v0Names,
			req:    signals.Request{Signals: []series.Signal{series.KVUsage}, Start: at("10:00:00"), End: at("11:00:00"), Step: time.Minute},
			exprs:  []string{`max by (instance, model_name) (vllm:gpu_cache_usage_perc{job="vllm"})`},
			ranges: []plannedRange{{"10:00:00", "11:00:00", time.Minute}},
		},
		{
			name:   "a signal whose metrics are absent is planned as absent, not queried",
			det:    v0Names,
			req:    signals.Request{Signals: []series.Signal{series.PreemptionRate}, Start: at("10:00:00"), End: at("11:00:00"), Step: time.Minute},
			absent: []series.Signal{series.PreemptionRate},
		},
		{
			name: "a coarse lookback: the hour before at one point per rate window, then the step",
			det:  v1Names,
			req: signals.Request{Signals: []series.Signal{series.Running}, Start: at("09:00:00"), End: at("10:00:00"), Step: 15 * time.Second,
				CoarseBefore: at("09:30:00")},
			exprs:    []string{`sum by (instance, model_name) (vllm:num_requests_running{job="vllm"})`},
			ranges:   []plannedRange{{"09:00:00", "09:29:00", time.Minute}, {"09:30:00", "10:00:00", 15 * time.Second}},
			planText: []string{"2026-01-01T09:00:00Z to 2026-01-01T09:29:00Z every 1m0s (the lookback, each point held 4 steps); 2026-01-01T09:30:00Z to 2026-01-01T10:00:00Z every 15s:"},
		},
		{
			name:   "past 11,000 points: split into range queries",
			det:    v1Names,
			req:    signals.Request{Signals: []series.Signal{series.Running}, Start: at("00:00:00"), End: at("00:00:00").Add(48 * time.Hour), Step: 15 * time.Second},
			exprs:  []string{`sum by (instance, model_name) (vllm:num_requests_running{job="vllm"})`},
			ranges: []plannedRange{{"00:00:00", "45:49:45", 15 * time.Second}, {"45:50:00", "48:00:00", 15 * time.Second}},
		},
		{
			name: "the cache configuration: one instant lookup without the model filter",
			det:  v1Names,
			req: signals.Request{Signals: []series.Signal{series.Running}, Start: at("10:00:00"), End: at("11:00:00"), Step: time.Minute,
				Model: "llama", CacheConfig: true},
			exprs:    []string{`sum by (instance, model_name) (vllm:num_requests_running{job="vllm",model_name=~"llama"})`},
			ranges:   []plannedRange{{"10:00:00", "11:00:00", time.Minute}},
			instant:  []string{`vllm:cache_config_info{job="vllm"}[1h15s]`},
			planText: []string{"Prometheus instant query at 2026-01-01T11:00:00Z:", `vllm:cache_config_info{job="vllm"}[1h15s]`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := signals.NewPlan(cfg, c.det, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(p.Exprs, "\n") != strings.Join(c.exprs, "\n") {
				t.Errorf("expressions\n%s\nwant\n%s", strings.Join(p.Exprs, "\n"), strings.Join(c.exprs, "\n"))
			}
			var got []plannedRange
			for _, r := range p.Ranges {
				got = append(got, plannedRange{clock(day, r.Start), clock(day, r.End), r.Step})
			}
			if len(c.exprs) > 0 && !slices.Equal(got, c.ranges) {
				t.Errorf("ranges %v, want %v", got, c.ranges)
			}
			var instant []string
			for _, q := range p.Instant {
				instant = append(instant, q.Expr)
				if !q.At.Equal(p.Ranges[len(p.Ranges)-1].End) {
					t.Errorf("instant query at %s, want the range's end", q.At)
				}
			}
			if strings.Join(instant, "\n") != strings.Join(c.instant, "\n") {
				t.Errorf("instant queries %q, want %q", instant, c.instant)
			}
			for _, s := range c.absent {
				if _, ok := p.Absent[s]; !ok {
					t.Errorf("%s not planned as absent: %v", s, p.Absent)
				}
			}
			if len(p.Absent) != len(c.absent) {
				t.Errorf("absent %v, want %v", p.Absent, c.absent)
			}
			text := p.String()
			for _, line := range append(c.planText, c.exprs...) {
				if !strings.Contains(text, line) {
					t.Errorf("the executed query\n%s\ndoes not show %q", text, line)
				}
			}
		})
	}
}

// TestPlanRejectsWhatCannotBeFetched: a plan fails without I/O, with the error's source.
func TestPlanRejectsWhatCannotBeFetched(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	v1Names := vllm.Detect([]string{vllm.RequestsRunning, vllm.KVCacheUsage})
	cfg := signals.Config{Labels: signals.DefaultLabels, Scrape: 15 * time.Second}
	cases := []struct {
		name       string
		det        vllm.Detection
		req        signals.Request
		downstream bool
		says       string
	}{
		{"range shorter than a step", v1Names, signals.Request{Start: t0, End: t0.Add(10 * time.Second), Step: time.Minute}, false, "shorter than one step"},
		{"no step", v1Names, signals.Request{Start: t0, End: t0.Add(time.Hour)}, false, "step must be positive"},
		{"a filter that is no regular expression", v1Names, signals.Request{Start: t0, End: t0.Add(time.Hour), Step: time.Minute, Instance: "vllm-(0"}, false, "neither an exact value nor a valid regular expression"},
		{"a Prometheus without vLLM", vllm.Detect(nil), signals.Request{Start: t0, End: t0.Add(time.Hour), Step: time.Minute}, true, "no vLLM metrics"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := signals.NewPlan(cfg, c.det, c.req)
			if err == nil {
				t.Fatal("no error")
			}
			if backend.IsDownstreamError(err) != c.downstream {
				t.Errorf("downstream %v, want %v: %v", backend.IsDownstreamError(err), c.downstream, err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}
