package plan_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// TestPlanSearches shows what a requests query will search, in order, without a backend: the
// intervals where findings fire first, for their instance, then the sub-windows.
func TestPlanSearches(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour) // two sub-windows of 30 minutes
	at := func(m int) time.Time { return from.Add(time.Duration(m) * time.Minute) }
	set := series.NewSet(series.NewGrid(from, to, 15*time.Second))
	for _, inst := range []string{"vllm-01:8000", "vllm-02:8000", "vllm-03:8000"} {
		set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: inst, Model: "m"}, set.Grid.Len))
	}
	thresholds := map[string]float64{"vllm-01:8000": 0.3, "vllm-02:8000": 0.6, "vllm-03:8000": 0.3}
	finding := func(inst string, sev diagnosis.Severity, start, end int) diagnosis.Finding {
		return diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: series.Key{Instance: inst, Model: "m"}, Severity: sev, Start: at(start), End: at(end)}
	}
	many := make([]diagnosis.Finding, plan.MaxFindingSearches+2)
	for i := range many {
		many[i] = finding("vllm-01:8000", diagnosis.Warning, 2*i, 2*i+1)
	}
	// Each search reads "instance [from, to] minutes after from, TTFT ≥ x"; "*" is the fleet.
	cases := []struct {
		name     string
		query    plan.RequestFilters
		instance string
		findings []diagnosis.Finding
		want     []string
		notice   string
	}{
		{
			name:     "without filters: the finding's interval for its instance, then the fleet and the thresholds per sub-window",
			findings: []diagnosis.Finding{finding("vllm-03:8000", diagnosis.Warning, 10, 20)},
			want: []string{
				"vllm-03:8000 [10,20]",
				"* [0,30]", "vllm-01:8000 [0,30] ≥0.3", "vllm-02:8000 [0,30] ≥0.6", "vllm-03:8000 [0,30] ≥0.3",
				"* [30,60]", "vllm-01:8000 [30,60] ≥0.3", "vllm-02:8000 [30,60] ≥0.6", "vllm-03:8000 [30,60] ≥0.3",
			},
		},
		{
			name:     "a regex filter searches its instances only, and only their findings",
			instance: "vllm-0[12]:8000",
			findings: []diagnosis.Finding{finding("vllm-03:8000", diagnosis.Critical, 10, 20), finding("vllm-02:8000", diagnosis.Warning, 40, 45)},
			want: []string{
				"vllm-02:8000 [40,45]",
				"vllm-01:8000 [0,30]", "vllm-01:8000 [0,30] ≥0.3", "vllm-02:8000 [0,30]", "vllm-02:8000 [0,30] ≥0.6",
				"vllm-01:8000 [30,60]", "vllm-01:8000 [30,60] ≥0.3", "vllm-02:8000 [30,60]", "vllm-02:8000 [30,60] ≥0.6",
			},
		},
		{
			name:     "anomalousOnly: findings' intervals, merged per instance, clipped, the most severe first; then the thresholds only",
			instance: "vllm-0[13]:8000", query: plan.RequestFilters{AnomalousOnly: true},
			findings: []diagnosis.Finding{
				finding("vllm-01:8000", diagnosis.Warning, -5, 12), finding("vllm-01:8000", diagnosis.Warning, 10, 15),
				finding("vllm-03:8000", diagnosis.Critical, 50, 70), finding("vllm-03:8000", diagnosis.Info, 20, 20),
			},
			want: []string{
				"vllm-03:8000 [50,60]", "vllm-01:8000 [0,15]", "vllm-03:8000 [20,21]",
				"vllm-01:8000 [0,30] ≥0.3", "vllm-03:8000 [0,30] ≥0.3",
				"vllm-01:8000 [30,60] ≥0.3", "vllm-03:8000 [30,60] ≥0.3",
			},
		},
		{
			name:     "a finding outside the range is not searched",
			instance: "vllm-01:8000", query: plan.RequestFilters{AnomalousOnly: true},
			findings: []diagnosis.Finding{finding("vllm-01:8000", diagnosis.Critical, 61, 70)},
			want:     []string{"vllm-01:8000 [0,30] ≥0.3", "vllm-01:8000 [30,60] ≥0.3"},
		},
		{
			name:     "at most plan.MaxFindingSearches intervals, a notice for the rest",
			instance: "vllm-01:8000", query: plan.RequestFilters{AnomalousOnly: true},
			findings: many,
			want: func() []string {
				var out []string
				for i := range plan.MaxFindingSearches {
					out = append(out, fmt.Sprintf("vllm-01:8000 [%d,%d]", 2*i, 2*i+1))
				}
				return append(out, "vllm-01:8000 [0,30] ≥0.3", "vllm-01:8000 [30,60] ≥0.3")
			}(),
			notice: "2 more interval(s) where findings fire were not searched on their own",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := plan.NewRequests(settings, plan.Scope{From: from, To: to, Instance: c.instance}, c.query, to)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Searches(plan.RequestMetrics{Set: set, Findings: c.findings, Thresholds: thresholds})
			got := make([]string, len(p.Queries))
			for i, q := range p.Queries {
				got[i] = describeSearch(q, from)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("searches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if notes := strings.Join(p.Notices, "\n"); !strings.Contains(notes, c.notice) || (c.notice == "" && notes != "") {
				t.Fatalf("notices %q, want %q", notes, c.notice)
			}
		})
	}
}

func describeSearch(q traces.Query, from time.Time) string {
	inst := "*"
	if len(q.Instances) > 0 {
		inst = strings.Join(q.Instances, ",")
	}
	s := fmt.Sprintf("%s [%g,%g]", inst, q.From.Sub(from).Minutes(), q.To.Sub(from).Minutes())
	if q.MinTTFT > 0 {
		s += fmt.Sprintf(" ≥%.3g", q.MinTTFT)
	}
	return s
}

// TestNewRequests shows phase 1 of a requests query, without a server: the metrics are read a
// tail and a step past the range, never past now unless the range is.
func TestNewRequests(t *testing.T) {
	to := t0.Add(time.Hour)
	tail := plan.RequestTail + 15*time.Second // the step of an hour at a 15 s scrape
	cases := []struct {
		name    string
		scope   plan.Scope
		now     time.Time
		metrics [2]time.Time
	}{
		{"a past range: a tail and a step after it", plan.Scope{From: t0, To: to}, to.Add(time.Hour), [2]time.Time{t0, to.Add(tail)}},
		{"a range ending just before now: up to now", plan.Scope{From: t0, To: to}, to.Add(time.Minute), [2]time.Time{t0, to.Add(time.Minute)}},
		{"a range reaching past now: the range", plan.Scope{From: t0, To: to}, to.Add(-time.Minute), [2]time.Time{t0, to}},
		{"the filters go to the metrics as they came", plan.Scope{From: t0, To: to, Instance: "vllm-0[12]:8000", Model: "m"}, to.Add(time.Hour), [2]time.Time{t0, to.Add(tail)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewRequests(settings, c.scope, plan.RequestFilters{}, c.now)
			if err != nil || p.MetricsErr != nil {
				t.Fatal(err, p.MetricsErr)
			}
			if got := [2]time.Time{p.Metrics.From, p.Metrics.To}; got != c.metrics {
				t.Errorf("metrics over %v, want %v", got, c.metrics)
			}
			if p.From != c.scope.From || p.To != c.scope.To {
				t.Errorf("searched range %v–%v, want the query's %v–%v", p.From, p.To, c.scope.From, c.scope.To)
			}
			if p.Metrics.Metrics.Instance != c.scope.Instance || p.Metrics.Metrics.Model != c.scope.Model {
				t.Errorf("metrics filters %q %q, want %q %q", p.Metrics.Metrics.Instance, p.Metrics.Metrics.Model, c.scope.Instance, c.scope.Model)
			}
			if len(p.Metrics.Rules) != 0 {
				t.Errorf("rules %v, want every rule", p.Metrics.Rules)
			}
			for _, s := range append(series.JoinSignals(), series.TTFTP50) {
				if !slices.Contains(p.Metrics.Signals, s) {
					t.Errorf("%s is not fetched: the join and the ranking need it", s)
				}
			}
		})
	}
}

func TestNewRequestsRejectsABadFilter(t *testing.T) {
	for _, sc := range []plan.Scope{{From: t0, To: t0.Add(time.Hour), Instance: "vllm-("}, {From: t0, To: t0.Add(time.Hour), Model: "m("}} {
		if _, err := plan.NewRequests(settings, sc, plan.RequestFilters{}, t0.Add(2*time.Hour)); err == nil {
			t.Errorf("filters %q %q planned; want an error", sc.Instance, sc.Model)
		}
	}
}

func TestRequestsSearchesWithoutMetrics(t *testing.T) {
	to := t0.Add(time.Hour)
	cases := []struct {
		name       string
		instance   string
		want       []string
		postFilter bool
	}{
		{"an exact instance is searched for", "vllm-01:8000", []string{"vllm-01:8000 [0,30]", "vllm-01:8000 [30,60]"}, false},
		{"a regex is applied to what the fleet's searches return", "vllm-0[12]:8000", []string{"* [0,30]", "* [30,60]"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to, Instance: c.instance}, plan.RequestFilters{}, to)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Searches(plan.RequestMetrics{})
			var got []string
			for _, q := range p.Queries {
				got = append(got, describeSearch(q, t0))
			}
			if !slices.Equal(got, c.want) || p.PostFilter != c.postFilter {
				t.Errorf("searches %q post-filtered %v, want %q %v", got, p.PostFilter, c.want, c.postFilter)
			}
		})
	}
}

// TestSearchesFilter shows the post-filter: the instance and model filters applied to what the
// searches returned when the metrics could not resolve them, and only then.
func TestSearchesFilter(t *testing.T) {
	to := t0.Add(time.Hour)
	reqs := []traces.Request{
		{SpanID: "a", Instance: "vllm-01:8000", Model: "llama"},
		{SpanID: "b", Instance: "vllm-02:8000", Model: "qwen"},
		{SpanID: "c", Instance: "vllm-03:8000", Model: "llama"},
		{SpanID: "d", Instance: "vllm-02:8000"},
	}
	cases := []struct {
		name            string
		instance, model string
		metrics         bool
		want            []string
	}{
		{name: "resolved from the metrics: the searches carried the filters", instance: "vllm-0[12]:8000", metrics: true,
			want: []string{"a", "b", "c", "d"}},
		{name: "an instance regex without metrics", instance: "vllm-0[12]:8000", want: []string{"a", "b", "d"}},
		{name: "a model without metrics keeps the spans without a model", model: "qwen", want: []string{"b", "d"}},
		{name: "both filters without metrics", instance: "vllm-0[13]:8000", model: "llama", want: []string{"a", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to, Instance: c.instance, Model: c.model}, plan.RequestFilters{}, to)
			if err != nil {
				t.Fatal(err)
			}
			var m plan.RequestMetrics
			if c.metrics {
				m.Set = series.NewSet(series.NewGrid(t0, to, 15*time.Second))
				for _, inst := range []string{"vllm-01:8000", "vllm-02:8000"} {
					m.Set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: inst, Model: "m"}, m.Set.Grid.Len))
				}
			}
			var got []string
			for _, r := range r.Searches(m).Filter(slices.Clone(reqs)) {
				got = append(got, r.SpanID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("kept %q, want %q", got, c.want)
			}
		})
	}
}

// TestRequestsRows shows how many rows a requests answer shows: the query's limit, or the
// default without one.
func TestRequestsRows(t *testing.T) {
	for _, c := range []struct {
		limit, want int
	}{{0, traces.DefaultLimit}, {-1, traces.DefaultLimit}, {7, 7}} {
		r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: t0.Add(time.Hour)}, plan.RequestFilters{Limit: c.limit}, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != c.want {
			t.Errorf("limit %d: %d rows, want %d", c.limit, r.Rows, c.want)
		}
	}
}

// TestRequestsSearchesAllInstances shows that a filter matching every value, such as the `.*`
// a dashboard variable's "All" sends, searches as no filter does: once per sub-window for the
// fleet, not once per instance.
func TestRequestsSearchesAllInstances(t *testing.T) {
	to := t0.Add(time.Hour)
	set := series.NewSet(series.NewGrid(t0, to, 15*time.Second))
	for _, inst := range []string{"vllm-01:8000", "vllm-02:8000", "vllm-03:8000"} {
		set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: inst, Model: "m"}, set.Grid.Len))
	}
	fleet := []string{"* [0,30]", "* [30,60]"}
	cases := []struct {
		name            string
		instance, model string
		want            []string
	}{
		{"no filter", "", "", fleet},
		{"the dashboards' All for both filters", ".*", ".*", fleet},
		{"All for the instance, no model filter", ".*", "", fleet},
		{"a star in a group", "(.*)", ".*", fleet},
		{"a regex the metrics' instances all match is still a filter: they were read with it", "vllm-.*", "",
			[]string{"vllm-01:8000 [0,30]", "vllm-02:8000 [0,30]", "vllm-03:8000 [0,30]", "vllm-01:8000 [30,60]", "vllm-02:8000 [30,60]", "vllm-03:8000 [30,60]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to, Instance: c.instance, Model: c.model}, plan.RequestFilters{}, to)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Searches(plan.RequestMetrics{Set: set})
			var got []string
			for _, q := range p.Queries {
				got = append(got, describeSearch(q, t0))
			}
			if !slices.Equal(got, c.want) || p.PostFilter || len(p.Notices) > 0 {
				t.Errorf("searches %q post-filtered %v notices %q, want %q", got, p.PostFilter, p.Notices, c.want)
			}
		})
	}
}

// TestRequestsSearchesCap shows the cap on one query's searches: the findings' intervals are
// kept, then the sub-windows from the newest; a notice says which part of the range and which
// instances were left out.
func TestRequestsSearchesCap(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(4 * time.Hour) // 8 sub-windows of 30 minutes
	set := series.NewSet(series.NewGrid(from, to, time.Minute))
	var instances []string
	for i := range 20 {
		instances = append(instances, fmt.Sprintf("vllm-%02d:8000", i))
		set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: instances[i], Model: "m"}, set.Grid.Len))
	}
	finding := func(inst string) diagnosis.Finding {
		return diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: series.Key{Instance: inst, Model: "m"}, Severity: diagnosis.Warning, Start: from, End: from.Add(time.Minute)}
	}
	cases := []struct {
		name     string
		instance string
		findings []diagnosis.Finding
		// perWindow is how many searches each sub-window keeps, oldest first.
		perWindow []int
		notice    []string
	}{
		{
			name: "20 instances over 8 sub-windows: 6 windows whole, 8 instances of the 7th",
			// A regex, so that each instance is searched on its own.
			instance:  "vllm-.*",
			perWindow: []int{0, 8, 20, 20, 20, 20, 20, 20},
			notice: []string{"needs 160 trace searches and at most 128 are sent",
				"the range from 2026-12-01T10:00:00Z to 2026-12-01T10:30:00Z (30m0s of 4h0m0s)",
				"from 2026-12-01T10:30:00Z to 2026-12-01T11:00:00Z, the searches of 12 of the 20 instance(s) (vllm-08:8000, vllm-09:8000, vllm-10:8000 and 9 more)",
				"narrow the instance filter or the time range."},
		},
		{
			name:      "the findings' intervals are searched first and leave fewer to the sub-windows",
			instance:  "vllm-.*",
			findings:  []diagnosis.Finding{finding("vllm-00:8000"), finding("vllm-01:8000"), finding("vllm-02:8000")},
			perWindow: []int{0, 5, 20, 20, 20, 20, 20, 20},
			notice: []string{"needs 163 trace searches",
				"from 2026-12-01T10:30:00Z to 2026-12-01T11:00:00Z, the searches of 15 of the 20 instance(s)"},
		},
		{
			name:      "the fleet without a filter: one search per sub-window, nothing left out",
			perWindow: []int{1, 1, 1, 1, 1, 1, 1, 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := plan.NewRequests(settings, plan.Scope{From: from, To: to, Instance: c.instance}, plan.RequestFilters{}, to)
			if err != nil {
				t.Fatal(err)
			}
			p := r.Searches(plan.RequestMetrics{Set: set, Findings: c.findings})
			if len(p.Queries) > plan.MaxSearches {
				t.Fatalf("%d searches, more than plan.MaxSearches (%d)", len(p.Queries), plan.MaxSearches)
			}
			got := make([]int, len(c.perWindow))
			for _, q := range p.Queries[len(c.findings):] {
				got[int(q.From.Sub(from)/plan.SearchWindow)]++
			}
			if !slices.Equal(got, c.perWindow) {
				t.Errorf("searches per sub-window %v, want %v", got, c.perWindow)
			}
			for i, q := range p.Queries[:len(c.findings)] {
				if q.Instances[0] != c.findings[i].Key.Instance || !q.From.Equal(c.findings[i].Start) {
					t.Errorf("search %d is %s, want the interval of finding %d", i, describeSearch(q, from), i)
				}
			}
			notes := strings.Join(p.Notices, "\n")
			if len(c.notice) == 0 && notes != "" {
				t.Errorf("notices %q, want none", notes)
			}
			for _, want := range c.notice {
				if !strings.Contains(notes, want) {
					t.Errorf("notices %q lack %q", notes, want)
				}
			}
		})
	}
}
