package plan_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/verdict"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

var (
	t0       = time.Date(2026, 8, 8, 10, 0, 0, 0, time.UTC)
	settings = plan.Settings{Metrics: signals.Config{Labels: signals.DefaultLabels, Scrape: 15 * time.Second, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "vllm")}}}
	// v1 is a Prometheus holding vLLM V1's names for what these tests fetch.
	v1 = vllm.Detect([]string{vllm.RequestsRunning, vllm.RequestsWaiting, vllm.KVCacheUsage, vllm.TimeToFirstToken + "_bucket", vllm.Preemptions})
)

func hour(from time.Time) plan.Scope { return plan.Scope{From: from, To: from.Add(time.Hour)} }

// promql is what a plan's request will send to a V1 Prometheus.
func promql(t *testing.T, req signals.Request) *signals.Plan {
	t.Helper()
	p, err := signals.NewPlan(settings.Metrics, v1, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStep(t *testing.T) {
	cases := []struct {
		name   string
		scrape time.Duration
		scope  plan.Scope
		want   time.Duration
	}{
		{"Grafana's interval", 15 * time.Second, plan.Scope{From: t0, To: t0.Add(6 * time.Hour), Interval: time.Minute}, time.Minute},
		{"never finer than the scrape interval", 15 * time.Second, plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: time.Second}, 15 * time.Second},
		{"never past 11,000 points", 15 * time.Second, plan.Scope{From: t0, To: t0.Add(30 * 24 * time.Hour), Interval: 15 * time.Second}, 236 * time.Second},
		{"the points' bound rounded up", 15 * time.Second, plan.Scope{From: t0, To: t0.Add(170000 * time.Second), Interval: 15 * time.Second}, 16 * time.Second},
		{"rounded to the second", 15 * time.Second, plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: 20*time.Second + 400*time.Millisecond}, 20 * time.Second},
		// The plugin's settings refuse a scrape interval under a second; a plan built from
		// others still steps by whole seconds.
		{"never under a second", 200 * time.Millisecond, plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: 200 * time.Millisecond}, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := settings
			s.Metrics.Scrape = c.scrape
			if got := plan.Step(s, c.scope); got != c.want {
				t.Errorf("step %s, want %s", got, c.want)
			}
		})
	}
}

func TestSignalsPlan(t *testing.T) {
	cases := []struct {
		name    string
		scope   plan.Scope
		names   []string
		signals []series.Signal
		step    time.Duration
		exprs   []string
	}{
		{"no names: the defaults, one bucket-rate query for both quantiles", hour(t0), nil, plan.DefaultSignals, 15 * time.Second, []string{
			`max by (instance, model_name) (vllm:kv_cache_usage_perc{job="vllm"})`,
			`sum by (instance, model_name, le) (rate(vllm:time_to_first_token_seconds_bucket{job="vllm"}[1m]))`,
		}},
		{"named signals with the query's filters", plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: time.Minute, Instance: "vllm-01:8000", Model: "llama|qwen"},
			[]string{"running", "waiting"}, []series.Signal{series.Running, series.Waiting}, time.Minute, []string{
				`sum by (instance, model_name) (vllm:num_requests_running{instance=~"vllm-01:8000",job="vllm",model_name=~"llama|qwen"})`,
				`sum by (instance, model_name) (vllm:num_requests_waiting{instance=~"vllm-01:8000",job="vllm",model_name=~"llama|qwen"})`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewSignals(settings, c.scope, c.names)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Signals, c.signals) || !slices.Equal(p.Metrics.Signals, c.signals) {
				t.Errorf("signals %v, fetched %v, want %v", p.Signals, p.Metrics.Signals, c.signals)
			}
			if p.Metrics.Step != c.step || !p.Metrics.Start.Equal(c.scope.From) || !p.Metrics.End.Equal(c.scope.To) || p.Metrics.CacheConfig {
				t.Errorf("request %+v, want the scope's range every %s, no cache configuration", p.Metrics, c.step)
			}
			got := promql(t, p.Metrics)
			if !slices.Equal(got.Exprs, c.exprs) {
				t.Errorf("PromQL\n%s\nwant\n%s", strings.Join(got.Exprs, "\n"), strings.Join(c.exprs, "\n"))
			}
			if exec := p.Executed(got); !strings.Contains(exec, strings.Join(c.exprs, "\n")) {
				t.Errorf("executed query %q does not show the PromQL", exec)
			}
		})
	}
}

func TestDiagnosisPlan(t *testing.T) {
	all := plan.Scope{From: t0.Add(7 * time.Second), To: t0.Add(2*time.Hour + 7*time.Second), Interval: 15 * time.Second}
	cases := []struct {
		name     string
		scope    plan.Scope
		rules    []string
		extra    []series.Signal
		lookback time.Duration
		wantSigs []series.Signal // among those fetched
		ranges   [][3]time.Duration
	}{
		{"every rule: an hour's baseline after the longest pending period, read coarsely", all, nil, nil, time.Hour + 5*time.Minute,
			append(series.JoinSignals(), series.TTFTP99, series.PrefillTimeMean),
			[][3]time.Duration{{-65 * time.Minute, -time.Minute, time.Minute}, {0, 2 * time.Hour, 15 * time.Second}}},
		{"one rule without a baseline: its pending period only", hour(t0), []string{"kv_cache_saturated"}, []series.Signal{series.TTFTP50}, 3 * time.Minute,
			append(series.JoinSignals(), series.KVUsage, series.PreemptionRate, series.TTFTP50),
			[][3]time.Duration{{-3 * time.Minute, -time.Minute, time.Minute}, {0, time.Hour, 15 * time.Second}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewDiagnosis(settings, c.scope, c.rules, c.extra)
			if err != nil {
				t.Fatal(err)
			}
			step := plan.Step(settings, c.scope)
			from, to := c.scope.From.Truncate(step), c.scope.To.Truncate(step)
			if p.Step != step || !p.From.Equal(from) || !p.To.Equal(to) || !p.Options.EvalFrom.Equal(from) {
				t.Errorf("evaluated %s to %s every %s (from %s), want %s to %s every %s", p.From, p.To, p.Step, p.Options.EvalFrom, from, to, step)
			}
			if p.Lookback != c.lookback || !p.Metrics.Start.Equal(from.Add(-c.lookback)) || !p.Metrics.CoarseBefore.Equal(from) || !p.Metrics.CacheConfig {
				t.Errorf("lookback %s, request from %s coarse before %s cache config %v; want %s, coarse before %s, the cache configuration",
					p.Lookback, p.Metrics.Start, p.Metrics.CoarseBefore, p.Metrics.CacheConfig, c.lookback, from)
			}
			for _, s := range c.wantSigs {
				if !slices.Contains(p.Metrics.Signals, s) {
					t.Errorf("%s not fetched: %v", s, p.Metrics.Signals)
				}
			}
			got := promql(t, p.Metrics)
			var ranges [][3]time.Duration
			for _, r := range got.Ranges {
				ranges = append(ranges, [3]time.Duration{r.Start.Sub(from), r.End.Sub(from), r.Step})
			}
			if !slices.Equal(ranges, c.ranges) {
				t.Errorf("ranges (from the evaluated start) %v, want %v", ranges, c.ranges)
			}
			if len(got.Instant) != 1 || !strings.HasPrefix(got.Instant[0].Expr, vllm.CacheConfigInfo) {
				t.Errorf("instant lookups %v, want the cache configuration", got.Instant)
			}
			exec := p.Executed(got)
			for _, want := range append([]string{"lookback of " + c.lookback.String(), got.Instant[0].Expr}, got.Exprs...) {
				if !strings.Contains(exec, want) {
					t.Errorf("executed query does not show %q:\n%s", want, exec)
				}
			}
		})
	}
}

func TestVerdictPlan(t *testing.T) {
	now := t0.Add(time.Hour)
	cases := []struct {
		name                  string
		from, to              string
		baseline              verdict.Window
		baselineStep, curStep time.Duration
	}{
		{"no baseline: the window before the range; steps tile each window", "", "", verdict.Window{From: t0.Add(-time.Hour), To: t0}, 2 * time.Minute, 2 * time.Minute},
		{"a week back, two hours long", "now-7d", "now-7d+2h", verdict.Window{From: now.Add(-7 * 24 * time.Hour), To: now.Add(-7*24*time.Hour + 2*time.Hour)}, 4 * time.Minute, 2 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewVerdict(settings, hour(t0), c.from, c.to, []string{"chunked_prefill"}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Baseline.From.Equal(c.baseline.From) || !p.Baseline.To.Equal(c.baseline.To) || !p.Current.From.Equal(t0) || !p.Current.To.Equal(now) {
				t.Errorf("windows %v and %v, want %v and the range", p.Baseline, p.Current, c.baseline)
			}
			if !slices.Equal(p.Declared, []verdict.Optimisation{"chunked_prefill"}) {
				t.Errorf("declared %v", p.Declared)
			}
			for i, want := range []struct {
				w    verdict.Window
				step time.Duration
			}{{c.baseline, c.baselineStep}, {p.Current, c.curStep}} {
				m := p.Metrics[i]
				if !m.Start.Equal(want.w.From) || !m.End.Equal(want.w.To) || m.Step != want.step || !m.CacheConfig || !slices.Equal(m.Signals, verdict.Signals) {
					t.Errorf("request %d: %s to %s every %s, want %s to %s every %s with the cache configuration", i, m.Start, m.End, m.Step, want.w.From, want.w.To, want.step)
				}
				if got := promql(t, m); got.Window != want.step {
					t.Errorf("request %d: rate window %s, want the step %s", i, got.Window, want.step)
				}
			}
		})
	}
}

func TestVariablesPlan(t *testing.T) {
	now := t0
	cases := []struct {
		name, kind, filter string
		from, to           time.Time
		label, selector    string
		start, end         time.Time
	}{
		{"instances serving a model, over the last day", plan.VariableInstances, "llama", time.Time{}, time.Time{},
			"instance", `vllm:num_requests_running{job="vllm",model_name=~"llama"}`, now.Add(-24 * time.Hour), now},
		{"models of an instance, over the panel's range", plan.VariableModels, "vllm-01:8000", t0.Add(-time.Hour), t0,
			"model_name", `vllm:num_requests_running{instance=~"vllm-01:8000",job="vllm"}`, t0.Add(-time.Hour), t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewVariables(settings, c.kind, c.filter, c.from, c.to, now)
			if err != nil {
				t.Fatal(err)
			}
			q := p.Lookup
			if q.Label != c.label || q.Selector != c.selector || !q.Start.Equal(c.start) || !q.End.Equal(c.end) {
				t.Errorf("lookup %+v, want %s on %s from %s to %s", q, c.label, c.selector, c.start, c.end)
			}
		})
	}
}

// TestPlansRejectBadQueriesBeforeAnyIO: what cannot be planned fails as the plugin's error,
// with no server to ask.
func TestPlansRejectBadQueriesBeforeAnyIO(t *testing.T) {
	short := plan.Scope{From: t0, To: t0.Add(10 * time.Second)}
	cases := []struct {
		name string
		plan func() error
		says string
	}{
		{"unknown signal", func() error { _, err := plan.NewSignals(settings, hour(t0), []string{"ttft_p42"}); return err }, `unknown signal "ttft_p42"`},
		{"signals over less than a step", func() error { _, err := plan.NewSignals(settings, short, nil); return err }, "shorter than one step"},
		{"unknown rule", func() error {
			_, err := plan.NewDiagnosis(settings, hour(t0), []string{"no_such_rule"}, nil)
			return err
		}, "no_such_rule"},
		{"diagnosis over less than a step", func() error { _, err := plan.NewDiagnosis(settings, short, nil, nil); return err }, "shorter than one step"},
		{"baseline that is not a time", func() error {
			_, err := plan.NewVerdict(settings, hour(t0), "last tuesday", "", nil, t0.Add(time.Hour))
			return err
		}, `baselineFrom "last tuesday" is not a time`},
		{"verdict window shorter than two rate windows", func() error {
			_, err := plan.NewVerdict(settings, plan.Scope{From: t0, To: t0.Add(time.Minute)}, "", "", nil, t0.Add(time.Minute))
			return err
		}, "needs at least 2m0s per window"},
		{"unknown optimisation", func() error {
			_, err := plan.NewVerdict(settings, hour(t0), "", "", []string{"paged_attention"}, t0.Add(time.Hour))
			return err
		}, `unknown optimisation "paged_attention"`},
		{"variable filter that is no regular expression", func() error {
			_, err := plan.NewVariables(settings, plan.VariableInstances, "llama(", time.Time{}, time.Time{}, t0)
			return err
		}, "neither an exact value nor a valid regular expression"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.plan()
			if err == nil {
				t.Fatal("no error")
			}
			if backend.IsDownstreamError(err) {
				t.Errorf("a downstream error: %v", err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}

// The executedQueryString of the two-phase plans: the metrics' plan, then the trace searches,
// either left out when it is empty.
func TestTwoPhaseExecuted(t *testing.T) {
	var e plan.Explain
	var r plan.Requests
	for _, c := range []struct {
		name, got, want string
	}{
		{"explain: the metrics, then the peers' search", e.Executed("metrics", "peers"), "metrics\npeers"},
		{"explain without the peers' search", e.Executed("metrics", ""), "metrics"},
		{"requests: the metrics, then the searches", r.Executed("metrics", "searches"), "metrics\nsearches"},
		{"requests without metrics", r.Executed("", "searches"), "searches"},
	} {
		if c.got != c.want {
			t.Errorf("%s: executed %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestPlanImports keeps the plan pure and apart from the join: the plugin hands it the
// metrics' answer as plain values, and joins what the searches return itself.
func TestPlanImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasSuffix(imp, "/pkg/correlate") || strings.HasSuffix(imp, "/pkg/plugin") || strings.HasSuffix(imp, "/pkg/frames") {
			t.Errorf("plan imports %s", imp)
		}
	}
}
