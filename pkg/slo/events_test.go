package slo

import (
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

var nan = math.NaN()

// layout is a histogram's bucket bounds as hand-built histograms of these tests have them.
var layout = []float64{0.5, 1, 2.5, math.Inf(1)}

// hist builds a histogram of layout from its cumulative bucket rates per step (one row a step).
func hist(steps ...[]float64) *series.Histogram {
	h := &series.Histogram{Uppers: layout, Rates: make([][]float64, len(layout))}
	for _, s := range steps {
		for j := range layout {
			h.Rates[j] = append(h.Rates[j], s[j])
		}
	}
	return h
}

func same(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-9
}

func TestFromHistogram(t *testing.T) {
	const step = time.Minute
	// Per second: 0.5 at or under 0.5 s, 0.8 at or under 1 s, 0.9 at or under 2.5 s, 1 in all.
	steady := []float64{0.5, 0.8, 0.9, 1}
	for _, c := range []struct {
		name         string
		h            *series.Histogram
		threshold    float64
		lower, upper float64
		// total, goodLow, goodHigh at the first step, per minute.
		total, low, high float64
	}{
		{"threshold on a bucket bound is exact", hist(steady), 1, 1, 1, 60, 48, 48},
		{"threshold between bounds is the interval of the bounds around it", hist(steady), 2, 1, 2.5, 60, 48, 54},
		{"threshold under the first bound", hist(steady), 0.1, 0, 0.5, 60, 0, 30},
		{"threshold over the last finite bound", hist(steady), 10, 2.5, math.Inf(1), 60, 54, 60},
		{"a scrape gap has no events", hist([]float64{nan, nan, nan, nan}), 1, 1, 1, nan, nan, nan},
		{"a bucket without its sample widens the interval to the next bucket with one", hist([]float64{0.5, nan, 0.9, 1}), 1, 1, 1, 60, 30, 54},
		{"buckets out of cumulative order are clamped to the total", hist([]float64{0.5, 1.1, 1.2, 1}), 1, 1, 1, 60, 60, 60},
		{"without a +Inf bucket there are no events", &series.Histogram{Uppers: []float64{1, 2}, Rates: [][]float64{{1}, {2}}}, 1, 0, math.Inf(1), nan, nan, nan},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := FromHistogram(c.h, c.threshold, step)
			if e.Lower != c.lower || e.Upper != c.upper {
				t.Errorf("bounds (%v, %v), want (%v, %v)", e.Lower, e.Upper, c.lower, c.upper)
			}
			if !same(e.Total[0], c.total) || !same(e.GoodLow[0], c.low) || !same(e.GoodHigh[0], c.high) {
				t.Errorf("total %v good [%v, %v], want %v [%v, %v]", e.Total[0], e.GoodLow[0], e.GoodHigh[0], c.total, c.low, c.high)
			}
		})
	}
}

func TestTallySkipsGaps(t *testing.T) {
	e := FromHistogram(hist([]float64{0.5, 0.8, 0.9, 1}, []float64{nan, nan, nan, nan}, []float64{0, 0.5, 1, 1}), 1, time.Minute)
	got := e.Tally(0, 2)
	if got.Steps != 2 || got.Gaps != 1 || !same(got.Total, 120) || !same(got.GoodLow, 78) {
		t.Errorf("tally %+v, want 2 steps, 1 gap, 120 events, 78 good", got)
	}
}

func TestFromCountsIsExact(t *testing.T) {
	e := FromCounts([]float64{2, nan, 1}, []float64{1.5, 1, nan}, time.Minute)
	want := []struct{ total, good float64 }{{120, 90}, {nan, nan}, {60, 0}}
	for i, w := range want {
		if !same(e.Total[i], w.total) || !same(e.GoodLow[i], w.good) || !same(e.GoodHigh[i], w.good) {
			t.Errorf("step %d: %v [%v, %v], want %v [%v, %v]", i, e.Total[i], e.GoodLow[i], e.GoodHigh[i], w.total, w.good, w.good)
		}
	}
}

func TestSumKeepsBoundsOnlyWhenShared(t *testing.T) {
	a := FromHistogram(hist([]float64{0.5, 0.8, 0.9, 1}), 2, time.Minute)
	b := FromHistogram(hist([]float64{nan, nan, nan, nan}), 2, time.Minute)
	other := FromHistogram(&series.Histogram{Uppers: []float64{2, math.Inf(1)}, Rates: [][]float64{{1}, {2}}}, 2, time.Minute)
	for _, c := range []struct {
		name         string
		parts        []Events
		total        float64
		lower, upper float64
	}{
		{"one layout", []Events{a, b}, 60, 1, 2.5},
		{"different layouts", []Events{a, other}, 180, nan, nan},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Sum(c.parts...)
			if !same(s.Total[0], c.total) || !same(s.Lower, c.lower) || !same(s.Upper, c.upper) {
				t.Errorf("total %v bounds (%v, %v), want %v (%v, %v)", s.Total[0], s.Lower, s.Upper, c.total, c.lower, c.upper)
			}
		})
	}
}

func TestTallyShares(t *testing.T) {
	const target = 0.99
	for _, c := range []struct {
		name                string
		tally               Tally
		attainment, burn, b Interval
	}{
		{"within the objective", Tally{Total: 1000, GoodLow: 995, GoodHigh: 1000}, Interval{0.995, 1}, Interval{0, 0.5}, Interval{0.5, 1}},
		{"overspent at worst", Tally{Total: 1000, GoodLow: 980, GoodHigh: 990}, Interval{0.98, 0.99}, Interval{1, 2}, Interval{-1, 0}},
		{"no events", Tally{}, Interval{nan, nan}, Interval{nan, nan}, Interval{nan, nan}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, x := range []struct {
				what      string
				got, want Interval
			}{
				{"attainment", c.tally.Attainment(), c.attainment},
				{"burn rate", c.tally.BurnRate(target), c.burn},
				{"budget remaining", c.tally.BudgetRemaining(target), c.b},
			} {
				if !same(x.got.Low, x.want.Low) || !same(x.got.High, x.want.High) {
					t.Errorf("%s %v, want %v", x.what, x.got, x.want)
				}
			}
		})
	}
}
