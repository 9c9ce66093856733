package slo

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// TestStatuses: two instances of model m and one of q on a grid of 3 one-minute steps, after a
// grid of 20-minute steps over the hour before that holds a alone; the objective applies to m
// alone.
func TestStatuses(t *testing.T) {
	os, err := Parse(json.RawMessage(`[{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.9, "window": "1h", "model": "m"},
		{"name": "up", "indicator": "availability", "objective": 0.9, "window": "1h"}]`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	g := series.NewGrid(t0, t0.Add(2*time.Minute), time.Minute)
	set := series.NewSet(g)
	a, b, q := series.Key{Instance: "a", Model: "m"}, series.Key{Instance: "b", Model: "m"}, series.Key{Instance: "c", Model: "q"}
	// Per second at each step: a all good; b half good; c none good.
	set.PutHistogram(vllm.TimeToFirstToken, a, hist([]float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}))
	set.PutHistogram(vllm.TimeToFirstToken, b, hist([]float64{0.5, 0.5, 1, 1}, []float64{0.5, 0.5, 1, 1}, []float64{0.5, 0.5, 1, 1}))
	set.PutHistogram(vllm.TimeToFirstToken, q, hist([]float64{0, 0, 0, 1}, []float64{0, 0, 0, 1}, []float64{0, 0, 0, 1}))
	// Availability on a: 2 requests a second, a quarter aborted, none errored.
	put := func(k series.Key, sig series.Signal, v float64) {
		s := series.NewSeries(sig, k, g.Len)
		for i := range s.Values {
			s.Values[i] = v
		}
		set.Put(s)
	}
	put(a, series.RequestRate, 2)
	put(a, series.AbortRatio, 0.25)
	put(a, series.ErrorRatio, 0)
	// The window before the grid holds a alone, every request good: its last 58 minutes are
	// in the 1-hour window ending at the grid's end, 3480 events.
	window := series.NewSet(series.NewGrid(t0.Add(-time.Hour), t0, 20*time.Minute))
	window.PutHistogram(vllm.TimeToFirstToken, a, hist([]float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}))

	rows := Statuses(os, set, window, t0)
	type want struct {
		slo, instance string
		total, low    float64
		budget        float64
	}
	wants := []want{
		{"ttft-1s", "a", 120, 1, 1},
		// b's window holds the grid's 120 events alone, 60 of them missed: 12 were allowed.
		{"ttft-1s", "b", 120, 0.5, 1 - 60.0/12},
		{"ttft-1s", Fleet, 240, 0.75, 1 - 60/(0.1*(3480+240))},
		// 240 requests, 60 aborted, where 24 were allowed.
		{"up", "a", 240, 0.75, 1 - 60.0/24},
		{"up", Fleet, 240, 0.75, 1 - 60.0/24},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		r := rows[i]
		if r.Objective.Name != w.slo || r.Key.Instance != w.instance || !same(r.Status.Range.Total, w.total) ||
			!same(r.Status.Attainment.Low, w.low) || !same(r.Status.Budget.Low, w.budget) {
			t.Errorf("row %d: %s %s total %v attainment %v budget %v; want %+v", i, r.Objective.Name, r.Key.Instance,
				r.Status.Range.Total, r.Status.Attainment.Low, r.Status.Budget.Low, w)
		}
	}
}

func TestWorstByKey(t *testing.T) {
	a, b := series.Key{Instance: "a:1", Model: "m"}, series.Key{Instance: "b:1", Model: "m"}
	fleet := series.Key{Instance: Fleet, Model: "m"}
	row := func(name string, k series.Key, budget, attainment float64) Row {
		return Row{Objective: Objective{Name: name}, Key: k,
			Status: Status{Budget: Interval{budget, budget}, Attainment: Interval{attainment, attainment}}}
	}
	nan := math.NaN()
	rows := []Row{
		row("ttft", a, 0.4, 0.99), row("up", a, -0.2, 0.998), row("ttft", fleet, -1, 0.9),
		row("ttft", b, 0.5, 0.97), row("up", b, 0.5, 0.999), row("e2e", b, nan, nan),
	}
	got := WorstByKey(rows)
	for _, c := range []struct {
		key  series.Key
		want string
	}{
		{a, "up"},   // the least budget left, overspent
		{b, "ttft"}, // equal budgets: the lower attainment; unknown last
	} {
		if r, ok := got[c.key]; !ok || r.Objective.Name != c.want {
			t.Errorf("%s: %q, want %q", c.key.Instance, r.Objective.Name, c.want)
		}
	}
	if _, ok := got[fleet]; ok || len(got) != 2 {
		t.Errorf("%d keys, want the two instances and no fleet row", len(got))
	}
}
