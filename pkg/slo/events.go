package slo

import (
	"math"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Events are one key's events of an indicator per step of a grid: the observations of the rate
// window ending at each step (rate × step, so that over a range every observation is counted
// about once), and the good ones among them bounded: at least GoodLow, at most GoodHigh. NaN
// marks a step without data (a scrape gap, or before the series began).
type Events struct {
	Total    []float64
	GoodLow  []float64
	GoodHigh []float64
	// Lower and Upper are the bucket bounds the good events were counted at: GoodLow counts the
	// observations at or under Lower (0: none), GoodHigh those at or under Upper (+Inf: all).
	// They are equal when the threshold is a bucket bound, and the count is then exact.
	Lower, Upper float64
}

// FromHistogram reads the events of a latency histogram (bucket rates per step, as Prometheus's
// rate() gives them: counter resets are read there) against a threshold in seconds. A step
// without the +Inf bucket's sample has no data. A bucket without a sample at a step widens the
// interval to the next bucket that has one, so the interval always holds the true count.
func FromHistogram(h *series.Histogram, threshold float64, step time.Duration) Events {
	n := 0
	if len(h.Rates) > 0 {
		n = len(h.Rates[0])
	}
	e := Events{Total: series.NaNs(n), GoodLow: series.NaNs(n), GoodHigh: series.NaNs(n), Lower: 0, Upper: math.Inf(1)}
	last := len(h.Uppers) - 1
	if last < 0 || !math.IsInf(h.Uppers[last], 1) {
		return e
	}
	lo, hi := -1, last // buckets at or under the threshold (largest) and at or over it (smallest)
	for j, u := range h.Uppers {
		if u <= threshold {
			lo = j
		}
		if u >= threshold && hi == last && j < last {
			hi = j
		}
	}
	if lo >= 0 {
		e.Lower = h.Uppers[lo]
	}
	e.Upper = h.Uppers[hi]
	secs := step.Seconds()
	for i := range n {
		total := h.Rates[last][i]
		if math.IsNaN(total) {
			continue
		}
		low := 0.0
		for j := lo; j >= 0; j-- {
			if v := h.Rates[j][i]; !math.IsNaN(v) {
				low = v
				break
			}
		}
		high := total
		for j := hi; j < last; j++ {
			if v := h.Rates[j][i]; !math.IsNaN(v) {
				high = v
				break
			}
		}
		// Separately extrapolated bucket rates need not keep their cumulative order exactly.
		high = math.Min(high, total)
		low = math.Min(low, high)
		e.Total[i], e.GoodLow[i], e.GoodHigh[i] = total*secs, low*secs, high*secs
	}
	return e
}

// FromCounts reads events counted exactly, such as availability's finished requests and those
// finished without abort or error, from their rates per step.
func FromCounts(total, good []float64, step time.Duration) Events {
	e := Events{Total: series.NaNs(len(total)), GoodLow: series.NaNs(len(total)), GoodHigh: series.NaNs(len(total))}
	secs := step.Seconds()
	for i, t := range total {
		if math.IsNaN(t) {
			continue
		}
		g := 0.0
		if i < len(good) && !math.IsNaN(good[i]) {
			g = math.Min(good[i], t)
		}
		e.Total[i], e.GoodLow[i], e.GoodHigh[i] = t*secs, g*secs, g*secs
	}
	return e
}

// Sum adds events of one grid, such as a model's instances for its fleet row. The bounds are
// kept when every part has the same, else NaN (instances with different bucket layouts).
func Sum(parts ...Events) Events {
	if len(parts) == 0 {
		return Events{}
	}
	n := len(parts[0].Total)
	out := Events{Total: series.NaNs(n), GoodLow: series.NaNs(n), GoodHigh: series.NaNs(n), Lower: parts[0].Lower, Upper: parts[0].Upper}
	for _, p := range parts {
		if p.Lower != out.Lower {
			out.Lower = math.NaN()
		}
		if p.Upper != out.Upper {
			out.Upper = math.NaN()
		}
		for i := 0; i < n && i < len(p.Total); i++ {
			if math.IsNaN(p.Total[i]) {
				continue
			}
			if math.IsNaN(out.Total[i]) {
				out.Total[i], out.GoodLow[i], out.GoodHigh[i] = 0, 0, 0
			}
			out.Total[i] += p.Total[i]
			out.GoodLow[i] += p.GoodLow[i]
			out.GoodHigh[i] += p.GoodHigh[i]
		}
	}
	return out
}

// Interval is a value known to lie between Low and High; both NaN when it cannot be had.
type Interval struct{ Low, High float64 }

// Tally is the events of a range of steps.
type Tally struct {
	Total             float64
	GoodLow, GoodHigh float64
	// Steps are the steps with data, Gaps those without.
	Steps, Gaps int
}

// Tally adds the events of steps from to to (inclusive, clipped to the series).
func (e Events) Tally(from, to int) Tally {
	var t Tally
	for i := max(from, 0); i <= to && i < len(e.Total); i++ {
		if math.IsNaN(e.Total[i]) {
			t.Gaps++
			continue
		}
		t.Steps++
		t.Total += e.Total[i]
		t.GoodLow += e.GoodLow[i]
		t.GoodHigh += e.GoodHigh[i]
	}
	return t
}

// Attainment is the share of good events: [GoodLow/Total, GoodHigh/Total]; NaN without events.
func (t Tally) Attainment() Interval {
	if !(t.Total > 0) {
		return Interval{math.NaN(), math.NaN()}
	}
	return Interval{t.GoodLow / t.Total, t.GoodHigh / t.Total}
}

// BurnRate is how fast the events spend an objective's budget: the share of bad events over
// the budget's share (1 − target); 1 spends it exactly over the window. NaN without events.
func (t Tally) BurnRate(target float64) Interval {
	a := t.Attainment()
	return Interval{(1 - a.High) / (1 - target), (1 - a.Low) / (1 - target)}
}

// BudgetRemaining is the share of the budget the events leave: 1 − bad / ((1 − target) × total),
// negative when overspent. NaN without events.
func (t Tally) BudgetRemaining(target float64) Interval {
	b := t.BurnRate(target)
	return Interval{1 - b.High, 1 - b.Low}
}
