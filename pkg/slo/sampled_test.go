package slo

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

func TestSampledGoodput(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[
		{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "7d"},
		{"name": "itl-50ms", "indicator": "itl", "threshold": 0.05, "objective": 0.99, "window": "7d"},
		{"name": "e2e-other", "indicator": "e2e", "threshold": 1, "objective": 0.99, "window": "7d", "model": "other"}]`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	g := series.NewGrid(t0, t0.Add(2*time.Minute), time.Minute)
	// The goodput's points are at t0 + 1m and t0 + 2m, each counting the minute ending at it.
	p0 := t0.Add(time.Minute)
	a, b, fleet := series.Key{Instance: "a", Model: "m"}, series.Key{Instance: "b", Model: "m"}, series.Key{Instance: Fleet, Model: "m"}
	nan := math.NaN()
	fast := Request{TTFT: 0.5, E2E: 30, FinishReasons: "stop"}
	slow := Request{TTFT: 2, E2E: 30, FinishReasons: "stop"}
	type want struct {
		key          series.Key
		step         int
		share, spans float64
	}
	for _, c := range []struct {
		name     string
		samples  []Sample
		want     []want
		unjudged map[string]int
	}{
		{"a request that met every objective is good",
			[]Sample{{a, p0.Add(-time.Second), fast}}, []want{{a, 0, 1, 1}, {a, 1, nan, 0}}, nil},
		{"a request that missed one is not",
			[]Sample{{a, p0.Add(-time.Second), slow}}, []want{{a, 0, 0, 1}}, nil},
		{"an errored request is not served",
			[]Sample{{a, p0.Add(-time.Second), Request{TTFT: 0.5, FinishReasons: "error"}}}, []want{{a, 0, 0, 1}}, nil},
		{"an objective on inter-token latency is not joined, and one of another model does not apply",
			[]Sample{{a, p0.Add(-time.Second), Request{TTFT: 0.5, E2E: 30}}}, []want{{a, 0, 1, 1}}, nil},
		{"a request whose span lacks a value is not judged, and says why",
			[]Sample{{a, p0.Add(-time.Second), Request{TTFT: nan}}}, []want{{a, 0, nan, 0}}, map[string]int{"the span has no ttft": 1}},
		{"a request counts at the step its finish falls in, a step ending at it",
			[]Sample{{a, p0, fast}, {a, p0.Add(time.Nanosecond), slow}}, []want{{a, 0, 1, 1}, {a, 1, 0, 1}}, nil},
		{"a request that finished before the range is left out",
			[]Sample{{a, t0, fast}}, []want{{a, 0, nan, 0}, {fleet, 0, nan, 0}}, nil},
		{"a fleet's share is its model's samples together",
			[]Sample{{a, p0, fast}, {a, p0, fast}, {b, p0, slow}}, []want{{a, 0, 1, 2}, {b, 0, 0, 1}, {fleet, 0, 2.0 / 3, 3}}, nil},
		{"a request of a key without goodput series is not judged",
			[]Sample{{series.Key{Instance: "c", Model: "m"}, p0, fast}}, []want{{fleet, 0, nan, 0}}, map[string]int{"no goodput series of c (m) in the metrics": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := goodputSet(g, map[series.Key][2]float64{a: {2, 0.25}, b: {4, 0}})
			rows, _ := Goodputs(objectives, set, t0)
			unjudged := SampledGoodput(objectives, c.samples, rows, set)
			for _, w := range c.want {
				for _, r := range rows {
					if r.Key == w.key && (!same(r.Share[w.step], w.share) || r.Spans[w.step] != w.spans) {
						t.Errorf("%v at step %d: share %v of %v spans, want %v of %v", w.key, w.step, r.Share[w.step], r.Spans[w.step], w.share, w.spans)
					}
				}
			}
			if len(unjudged) != len(c.unjudged) {
				t.Errorf("unjudged %v, want %v", unjudged, c.unjudged)
			}
			for why, n := range c.unjudged {
				if unjudged[why] != n {
					t.Errorf("unjudged %v, want %d for %q", unjudged, n, why)
				}
			}
		})
	}
}

// The goodput from spans is the sampled share times the requests vLLM traces: those finished
// without abort, and for a fleet its instances' added up.
func TestSampledGoodputFromSpans(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "7d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	g := series.NewGrid(t0, t0.Add(time.Minute), time.Minute)
	a, b := series.Key{Instance: "a", Model: "m"}, series.Key{Instance: "b", Model: "m"}
	set := goodputSet(g, map[series.Key][2]float64{a: {2, 0.25}, b: {4, 0}})
	rows, _ := Goodputs(objectives, set, t0)
	end := t0.Add(time.Minute)
	SampledGoodput(objectives, []Sample{
		{a, end, Request{TTFT: 0.5}}, {a, end, Request{TTFT: 2}}, {b, end, Request{TTFT: 0.5}},
	}, rows, set)
	want := map[string]float64{"a": 0.5 * 2 * 0.75, "b": 4, Fleet: 2.0 / 3 * (1.5 + 4)}
	for _, r := range rows {
		if !same(r.FromSpans[0], want[r.Key.Instance]) {
			t.Errorf("%s: %v requests/s from spans, want %v", r.Key.Instance, r.FromSpans[0], want[r.Key.Instance])
		}
	}
}

// goodputSet is a set whose keys finish requests at a rate (per second) with a share aborted,
// each with a TTFT histogram (all within 1 s).
func goodputSet(g series.Grid, keys map[series.Key][2]float64) *series.Set {
	set := series.NewSet(g)
	for k, v := range keys {
		rate, abort := series.NewSeries(series.RequestRate, k, g.Len), series.NewSeries(series.AbortRatio, k, g.Len)
		ttft := &series.Histogram{Uppers: []float64{1, math.Inf(1)}, Rates: [][]float64{make([]float64, g.Len), make([]float64, g.Len)}}
		for i := range g.Len {
			rate.Values[i], abort.Values[i] = v[0], v[1]
			ttft.Rates[0][i], ttft.Rates[1][i] = v[0], v[0]
		}
		set.Put(rate)
		set.Put(abort)
		set.PutHistogram(vllm.TimeToFirstToken, k, ttft)
	}
	return set
}
