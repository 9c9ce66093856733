package slo

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

func TestGoodputBoundsTheJointShare(t *testing.T) {
	const step = time.Minute
	nan := math.NaN()
	// shares builds events of `total` a step (a rate of total/60 per second) with these good ones.
	shares := func(total float64, good ...float64) Events {
		tot, g := make([]float64, len(good)), make([]float64, len(good))
		for i := range good {
			tot[i], g[i] = total/60, good[i]/60
			if math.IsNaN(good[i]) {
				tot[i] = nan
			}
		}
		return FromCounts(tot, g, step)
	}
	for _, c := range []struct {
		name      string
		events    []Events
		low, high []float64
	}{
		{"one objective: its good requests, exactly", []Events{shares(60, 54)}, []float64{0.9}, []float64{0.9}},
		{"two: from max(0, a + b - 1) to min(a, b)", []Events{shares(60, 54), shares(60, 48)}, []float64{0.7}, []float64{0.8}},
		{"shares too low to be sure of any joint one", []Events{shares(60, 30), shares(60, 24)}, []float64{0}, []float64{0.4}},
		{"three objectives: the sum less two", []Events{shares(60, 57), shares(60, 54), shares(60, 57)}, []float64{0.8}, []float64{0.9}},
		{"without finished requests, the requests are the most events an objective counts", []Events{shares(60, 60), shares(30, 30)}, []float64{1}, []float64{1}},
		{"an objective without events at a step missed none", []Events{shares(60, 54), shares(0, 0)}, []float64{0.9}, []float64{0.9}},
		{"a gap of one objective is a gap", []Events{shares(60, 54, 54), shares(60, nan, 48)}, []float64{nan, 0.7}, []float64{nan, 0.8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := goodputOf(c.events, -1, 0, step)
			for i := range c.low {
				if !same(g.Low[i], c.low[i]) || !same(g.High[i], c.high[i]) {
					t.Errorf("step %d: [%v, %v] requests/s, want [%v, %v]", i, g.Low[i], g.High[i], c.low[i], c.high[i])
				}
			}
		})
	}
}

// With the finished requests counted (availability's events), they are the requests the
// shares apply to, not the most events an objective counted.
func TestGoodputOfTheFinishedRequests(t *testing.T) {
	finished := FromCounts([]float64{0.5}, []float64{0.5}, time.Minute) // 30 a step, all served
	ttft := FromCounts([]float64{1}, []float64{0.9}, time.Minute)       // 60 first tokens, 54 in time
	g := goodputOf([]Events{finished, ttft}, 0, 0, time.Minute)
	if !same(g.Low[0], 0.45) || !same(g.High[0], 0.45) {
		t.Errorf("[%v, %v] requests/s, want 0.45: nine tenths of the 30 finished a minute", g.Low[0], g.High[0])
	}
}

func TestGoodputsLeaveOutInterTokenLatencyAndAddUpTheFleet(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[
		{"name": "up", "indicator": "availability", "objective": 0.99, "window": "7d"},
		{"name": "itl-50ms", "indicator": "itl", "threshold": 0.05, "objective": 0.99, "window": "7d"},
		{"name": "other", "indicator": "availability", "objective": 0.99, "window": "7d", "model": "other"}]`))
	if err != nil {
		t.Fatal(err)
	}
	g := series.NewGrid(time.Unix(0, 0), time.Unix(0, 0).Add(2*time.Minute), time.Minute)
	set := series.NewSet(g)
	for _, c := range []struct {
		instance     string
		rate, aborts float64
	}{{"a", 1, 0.1}, {"b", 2, 0.5}} {
		k := series.Key{Instance: c.instance, Model: "m"}
		rate, abort := series.NewSeries(series.RequestRate, k, g.Len), series.NewSeries(series.AbortRatio, k, g.Len)
		for i := range g.Len {
			rate.Values[i], abort.Values[i] = c.rate, c.aborts
		}
		set.Put(rate)
		set.Put(abort)
	}
	// Inter-token latency only on a: no series of its own.
	set.PutHistogram(vllm.InterTokenLatency, series.Key{Instance: "a", Model: "m"}, &series.Histogram{Uppers: []float64{0.05, math.Inf(1)}, Rates: [][]float64{{1, 1, 1}, {2, 2, 2}}})
	out, left := Goodputs(objectives, set, g.Start)
	if len(left) != 1 || left[0].Name != "itl-50ms" {
		t.Errorf("left out %v, want itl-50ms", left)
	}
	want := []struct {
		instance string
		good     float64
	}{{"a", 0.9}, {"b", 1}, {Fleet, 1.9}}
	if len(out) != len(want) {
		t.Fatalf("%d series %+v, want %d", len(out), out, len(want))
	}
	for i, w := range want {
		o := out[i]
		// The range's steps after its start: the last two of three.
		if o.Key.Instance != w.instance || len(o.Low) != 2 || !same(o.Low[1], w.good) || !same(o.High[1], w.good) || len(o.Objectives) != 1 || o.Objectives[0] != "up" {
			t.Errorf("series %d: %+v, want %s at %v requests/s by up alone", i, o, w.instance, w.good)
		}
	}
}

// A request aborted or errored is not goodput, whatever the objectives: with a latency
// objective alone, the served share joins it.
func TestGoodputCountsServedRequestsOnly(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "7d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	g := series.NewGrid(time.Unix(0, 0), time.Unix(0, 0).Add(time.Minute), time.Minute)
	set := series.NewSet(g)
	k := series.Key{Instance: "a", Model: "m"}
	// 2 requests a second, all within 1 s; a tenth of the finished ones aborted.
	set.PutHistogram(vllm.TimeToFirstToken, k, &series.Histogram{Uppers: []float64{1, math.Inf(1)}, Rates: [][]float64{{2, 2}, {2, 2}}})
	for sig, v := range map[series.Signal]float64{series.RequestRate: 2, series.AbortRatio: 0.1} {
		s := series.NewSeries(sig, k, g.Len)
		for i := range s.Values {
			s.Values[i] = v
		}
		set.Put(s)
	}
	out, _ := Goodputs(objectives, set, g.Start)
	if len(out) != 2 || !same(out[0].Low[0], 1.8) || !same(out[0].High[0], 1.8) {
		t.Errorf("%+v, want 1.8 requests/s: the served nine tenths of 2", out)
	}
}
