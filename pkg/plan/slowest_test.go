package plan_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// observed is what an instance's histograms hold: at each step, the rate per second of the
// requests counted in the rate window ending there, by their TTFT and their e2e.
type observed func(t time.Time) (ttft, e2e map[float64]float64)

// histogramsOf writes an instance's TTFT and e2e histograms (vLLM's buckets) into set.
func histogramsOf(set *series.Set, inst string, obs observed) {
	g := set.Grid
	build := func(bounds []float64, pick func(t time.Time) map[float64]float64) *series.Histogram {
		h := &series.Histogram{Uppers: append(slices.Clone(bounds), math.Inf(1))}
		h.Rates = make([][]float64, len(h.Uppers))
		for j := range h.Uppers {
			h.Rates[j] = make([]float64, g.Len)
		}
		for i := range g.Len {
			for v, rate := range pick(g.Time(i)) {
				for j, up := range h.Uppers {
					if v <= up {
						h.Rates[j][i] += rate
					}
				}
			}
		}
		return h
	}
	k := series.Key{Instance: inst, Model: "m"}
	set.PutHistogram(vllm.TimeToFirstToken, k, build(vllm.TTFTBuckets, func(t time.Time) map[float64]float64 { ttft, _ := obs(t); return ttft }))
	set.PutHistogram(vllm.E2ELatency, k, build(vllm.RequestLatencyBuckets, func(t time.Time) map[float64]float64 { _, e2e := obs(t); return e2e }))
}

// burst is an instance serving rate requests a second (TTFT 50 ms, e2e 3 s) whose requests
// counted from minute 40 to 45 include a backlog: two a second with a TTFT of 300 s and an
// e2e of 303 s.
func burst(rate float64) observed {
	return func(t time.Time) (map[float64]float64, map[float64]float64) {
		ttft, e2e := map[float64]float64{0.05: rate}, map[float64]float64{3: rate}
		if m := t.Sub(t0).Minutes(); m > 40 && m <= 45 {
			ttft[300], e2e[303] = 2, 2
		}
		return ttft, e2e
	}
}

func healthy(rate float64) observed {
	return func(time.Time) (map[float64]float64, map[float64]float64) {
		return map[float64]float64{0.05: rate}, map[float64]float64{3: rate}
	}
}

// TestSlowestSearches shows the searches of the slowest requests: from the histograms, where
// requests above a level began, in sub-windows that hold at most plan.SlowestLimit of the
// spans a search bounded by the level matches, at the lowest level that takes at most
// plan.MaxSlowestSearches searches; they replace the threshold searches of the instances they
// cover.
func TestSlowestSearches(t *testing.T) {
	to := t0.Add(time.Hour)
	thresholds := map[string]float64{"vllm-01:8000": 0.3, "vllm-02:8000": 0.3}
	cases := []struct {
		name string
		// rate is the requests a second of both instances besides vllm-01's backlog.
		rate float64
		// level is the least TTFT of every search for vllm-01; searches their number.
		level    float64
		searches int
		notice   string
	}{
		// Above 0.3 s (its bucket's lower bound 0.25 s counts): only the backlog, which began
		// from 40 minutes less the window and 640 s (its bucket's upper bound) to 45 minutes
		// less 0.25 s; a search bounded by 0.3 s matches every request there (e2e 3 s): 16.5
		// minutes of 4 a second and the backlog's 600, some 4,600 spans, in 5 sub-windows.
		{name: "every request above its threshold, where the histograms show them", rate: 4, level: 0.3, searches: 5},
		// At 60 requests a second the same window holds some 60,000 spans: too many searches.
		// From 5 s, a bucket bound above the e2e of the others, the backlog alone: 600 spans in
		// one search.
		{name: "too many: the lowest level that fits", rate: 60, level: 5, searches: 1,
			notice: "in full from 16.7 times their instance's threshold (1 search(es))"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := series.NewSet(series.NewGrid(t0, to.Add(plan.RequestTail), 15*time.Second))
			histogramsOf(set, "vllm-01:8000", burst(c.rate))
			histogramsOf(set, "vllm-02:8000", healthy(c.rate))
			r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to}, plan.RequestFilters{AnomalousOnly: true, Limit: 100}, to.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			p := r.Searches(plan.RequestMetrics{Set: set, Thresholds: thresholds})
			var first, last time.Time
			for _, q := range p.Queries {
				if len(q.Instances) != 1 || q.Instances[0] != "vllm-01:8000" || q.Limit != plan.SlowestLimit || math.Abs(q.MinTTFT-c.level) > 1e-9 {
					t.Fatalf("search %s ≥%g limit %d; want only vllm-01's slowest, from %g, limit %d", describeSearch(q, t0), q.MinTTFT, q.Limit, c.level, plan.SlowestLimit)
				}
				if first.IsZero() {
					first = q.From
				}
				if q.From.Before(last) {
					t.Fatalf("search %s overlaps the one before", describeSearch(q, t0))
				}
				last = q.To
			}
			if len(p.Queries) != c.searches {
				t.Fatalf("%d searches, want %d: %v", len(p.Queries), c.searches, describeAll(p.Queries))
			}
			// The backlog's requests began from 40 minutes less 300 s to 45 minutes.
			if began, ended := t0.Add(40*time.Minute-300*time.Second), t0.Add(45*time.Minute); first.After(began) || last.Before(ended) {
				t.Errorf("searched %v to %v, want at least the backlog's starts %v to %v", first.Sub(t0), last.Sub(t0), began.Sub(t0), ended.Sub(t0))
			}
			if notes := strings.Join(p.Notices, "\n"); !strings.Contains(notes, c.notice) || (c.notice == "" && notes != "") {
				t.Errorf("notices %q, want %q", notes, c.notice)
			}
		})
	}
}

// TestSlowestSearchesNeedTheHistograms: an instance without its TTFT histogram keeps its
// threshold searches per sub-window.
func TestSlowestSearchesNeedTheHistograms(t *testing.T) {
	to := t0.Add(time.Hour)
	set := series.NewSet(series.NewGrid(t0, to.Add(plan.RequestTail), 15*time.Second))
	histogramsOf(set, "vllm-01:8000", burst(4))
	set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: "vllm-02:8000", Model: "m"}, set.Grid.Len))
	r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to}, plan.RequestFilters{AnomalousOnly: true}, to.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Searches(plan.RequestMetrics{Set: set, Thresholds: map[string]float64{"vllm-01:8000": 0.3, "vllm-02:8000": 0.3}})
	var plain []string
	for _, q := range p.Queries {
		if q.Instances[0] == "vllm-02:8000" {
			plain = append(plain, describeSearch(q, t0))
		} else if q.Limit != plan.SlowestLimit {
			t.Errorf("vllm-01 searched by %s too; its histograms cover it", describeSearch(q, t0))
		}
	}
	if want := []string{"vllm-02:8000 [0,30] ≥0.3", "vllm-02:8000 [30,60] ≥0.3"}; !slices.Equal(plain, want) {
		t.Errorf("vllm-02 searched by %q, want %q", plain, want)
	}
}

func describeAll(qs []traces.Query) string {
	var out []string
	for _, q := range qs {
		out = append(out, fmt.Sprintf("%s ≥%g", describeSearch(q, t0), q.MinTTFT))
	}
	return strings.Join(out, "; ")
}
