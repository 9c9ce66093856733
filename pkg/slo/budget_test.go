package slo

import (
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// events builds Events of one step each from (total, good) pairs, counted exactly; a NaN total
// is a step without data.
func events(steps ...[2]float64) Events {
	e := Events{}
	for _, s := range steps {
		e.Total, e.GoodLow, e.GoodHigh = append(e.Total, s[0]), append(e.GoodLow, s[1]), append(e.GoodHigh, s[1])
	}
	return e
}

// TestBudgetLeft: the range is 4 hourly steps after t0 (step 0, at t0, is the range's start);
// the past is read every 2 hours over the 10 hours before t0, 200 events a step, and the
// objective (target 0.9) has a 10-hour window: every window holds 1000 events, so each miss
// spends 1% of the budget.
func TestBudgetLeft(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).Truncate(2 * time.Hour)
	g := series.NewGrid(t0, t0.Add(4*time.Hour), time.Hour)
	pastGrid := series.NewGrid(t0.Add(-10*time.Hour), t0, 2*time.Hour)
	good := [2]float64{100, 100}
	pastGood := [2]float64{200, 200}
	nan := [2]float64{math.NaN(), math.NaN()}
	steady := events(pastGood, pastGood, pastGood, pastGood, pastGood, pastGood)
	o := Objective{Target: 0.9, Window: 10 * time.Hour}
	for _, c := range []struct {
		name     string
		recent   Events
		past     Events
		pastGrid series.Grid
		want     []float64 // the lower ends
		wantHigh []float64 // the upper ends, when they differ
	}{
		{name: "no miss leaves the whole budget", recent: events(good, good, good, good, good), past: steady, pastGrid: pastGrid,
			want: []float64{1, 1, 1, 1}},
		{name: "50 misses at the second step stay in the window to the range's end", recent: events(good, good, [2]float64{100, 50}, good, good),
			past: steady, pastGrid: pastGrid, want: []float64{1, 0.5, 0.5, 0.5}},
		{name: "50 past misses 8 to 10 hours before t0 leave the window as it slides (half of them at t0+1h)", recent: events(good, good, good, good, good),
			past: events(pastGood, [2]float64{200, 150}, pastGood, pastGood, pastGood, pastGood), pastGrid: pastGrid, want: []float64{0.75, 1, 1, 1}},
		{name: "a restart's scrape gap counts no events; 20 misses after it are 20 of 900", recent: events(good, good, nan, [2]float64{100, 80}, good),
			past: steady, pastGrid: pastGrid, want: []float64{1, 1, 1 - 20.0/90, 1 - 20.0/90}},
		{name: "a past step straddling the range's start counts only its part before it", recent: events(good, good, good, good, good),
			// Steps at t0−9h … t0+1h: the last holds (t0−1h, t0+1h], all missed; the 100 of its
			// events before t0 count, with 900 others in every window: 100 misses of 1000.
			past:     events(pastGood, pastGood, pastGood, pastGood, pastGood, [2]float64{200, 0}),
			pastGrid: series.NewGrid(t0.Add(-9*time.Hour), t0.Add(time.Hour), 2*time.Hour),
			want:     []float64{0, 0, 0, 0}},
		{name: "a threshold between bucket bounds leaves an interval", recent: events(good, good, good, good, good),
			past:     Events{Total: []float64{200, 200, 200, 200, 200, 200}, GoodLow: []float64{200, 200, 200, 200, 200, 150}, GoodHigh: []float64{200, 200, 200, 200, 200, 200}},
			pastGrid: pastGrid, want: []float64{0.5, 0.5, 0.5, 0.5}, wantHigh: []float64{1, 1, 1, 1}},
		{name: "a window without events has no budget to tell", recent: events(nan, nan, nan, nan, nan), past: Events{},
			pastGrid: pastGrid, want: []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := BudgetLeft(c.recent, g, 1, c.past, c.pastGrid, o)
			if len(got) != len(c.want) {
				t.Fatalf("%d steps, want %d", len(got), len(c.want))
			}
			for i, w := range c.want {
				high := w
				if c.wantHigh != nil {
					high = c.wantHigh[i]
				}
				if !same(got[i].Low, w) || !same(got[i].High, high) {
					t.Errorf("step %d: [%v, %v], want [%v, %v]", i+1, got[i].Low, got[i].High, w, high)
				}
			}
		})
	}
}

// TestBudgetsAddAModelsInstancesUp: a's TTFTs all meet the objective, b misses a tenth of its
// events after restarting (a step without data); the fleet's budget counts both.
func TestBudgetsAddAModelsInstancesUp(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).Truncate(time.Hour)
	g := series.NewGrid(t0, t0.Add(3*time.Minute), time.Minute)
	recent, past := series.NewSet(g), series.NewSet(series.NewGrid(t0.Add(-time.Hour), t0, 10*time.Minute))
	a, b := series.Key{Instance: "a", Model: "m"}, series.Key{Instance: "b", Model: "m"}
	// Per second, at or under 0.5 s, 1 s, 2.5 s and in all.
	allGood, tenthMissed, gap := []float64{1, 1, 1, 1}, []float64{0.9, 0.9, 0.9, 1}, []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	recent.PutHistogram(vllm.TimeToFirstToken, a, hist(allGood, allGood, allGood, allGood))
	recent.PutHistogram(vllm.TimeToFirstToken, b, hist(allGood, gap, tenthMissed, tenthMissed))
	o := Objective{Name: "ttft-1s", Indicator: TTFT, Family: vllm.TimeToFirstToken, Threshold: 1, Target: 0.9, Window: time.Hour}
	times, got := Budgets([]Objective{o}, recent, past, t0)
	if len(times) != 3 || !times[0].Equal(t0.Add(time.Minute)) {
		t.Fatalf("times %v, want the 3 steps after t0", times)
	}
	want := map[string][]float64{
		// b: no event before its gap ends, then 60 and 120 events of which 6 and 12 missed, as
		// many as allowed.
		"a": {1, 1, 1}, "b": {math.NaN(), 0, 0},
		// The fleet: a's 60 events at the first step, then 180 and 300 of which 6 and 12 missed.
		Fleet: {1, 1 - 6.0/18, 1 - 12.0/30},
	}
	if len(got) != 3 {
		t.Fatalf("%d series, want a, b and the fleet", len(got))
	}
	for _, s := range got {
		for i, w := range want[s.Key.Instance] {
			if !same(s.Left[i].Low, w) {
				t.Errorf("%s at step %d: %v, want %v", s.Key.Instance, i+1, s.Left[i].Low, w)
			}
		}
	}
}
