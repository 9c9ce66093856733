package slo

import (
	"math"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Budget is an objective's error budget left on one key (or a model's fleet: Instance Fleet)
// at each step of a range, each over the objective's window ending at the step.
type Budget struct {
	Objective Objective
	Key       series.Key
	Left      []Interval
}

// Budgets are the objectives' budget series, each objective's keys sorted then a fleet series
// per model, at the steps of recent's grid after `from` (times): recent holds the range at the
// panel's step from the end of past (see BudgetLeft), past the longest objective's window
// before the range at a coarser step.
// Reading every step's window (28 days, say) from Prometheus would cost a range query per
// step; instead each window is added up here from the two grids' events (BudgetLeft).
func Budgets(objectives []Objective, recent, past *series.Set, from time.Time) (times []time.Time, out []Budget) {
	start := rangeFrom(recent.Grid, from)
	for i := start; i < recent.Grid.Len; i++ {
		times = append(times, recent.Grid.Time(i))
	}
	for _, o := range objectives {
		for _, e := range eventsByKey(o, recent, past) {
			out = append(out, Budget{Objective: o, Key: e.Key, Left: BudgetLeft(e.Recent, recent.Grid, start, e.Window, past.Grid, o)})
		}
	}
	return times, out
}

// BudgetLeft is the share of an objective's budget left (Tally.BudgetRemaining) at each step of
// a grid from step `from` on, over the objective's window ending at the step. The events after
// the grid's first step are recent's; those up to it come from past, a coarser grid that
// should end there: what a past step holds after it is left out, but a past step's events are
// spread evenly over its step (the rate window ending at it), which they are not where the
// data begins inside it. A window's start inside a past step takes the share of its events the
// window covers: an error of at most one past step's events. A step without data counts no
// events, and so does what a window reaches before past's first step. NaN where a window holds
// no event.
func BudgetLeft(recent Events, g series.Grid, from int, past Events, pg series.Grid, o Objective) []Interval {
	c := cumulative{}
	boundary := g.Time(0)
	for k := range past.Total {
		end := pg.Time(k)
		begin := end.Add(-pg.Step)
		if !begin.Before(boundary) {
			break
		}
		if end.After(boundary) {
			end = boundary
		}
		c.add(begin, end, pg.Step, past, k)
	}
	for i := 1; i < g.Len && i < len(recent.Total); i++ {
		c.add(g.Time(i).Add(-g.Step), g.Time(i), g.Step, recent, i)
	}
	out := make([]Interval, 0, max(g.Len-from, 0))
	for i := from; i < g.Len; i++ {
		end := g.Time(i)
		w := c.at(end).minus(c.at(end.Add(-o.Window)))
		out = append(out, w.BudgetRemaining(o.Target))
	}
	return out
}

// cumulative is a running sum of events over time: sums[j] is the events up to times[j], spread
// evenly between consecutive times.
type cumulative struct {
	times []time.Time
	sums  []Tally
}

// add appends the events of a step of e, whose events fill (stepEnd − step, stepEnd], clipped
// to (begin, end]: the share of its step that interval is.
func (c *cumulative) add(begin, end time.Time, step time.Duration, e Events, k int) {
	if !end.After(begin) {
		return
	}
	var last Tally
	if n := len(c.sums); n > 0 {
		last = c.sums[n-1]
	}
	if n := len(c.times); n == 0 || c.times[n-1].Before(begin) {
		// Nothing is known before the step (or between it and the one before).
		c.times, c.sums = append(c.times, begin), append(c.sums, last)
	}
	if v := e.Total[k]; !math.IsNaN(v) {
		share := float64(end.Sub(begin)) / float64(step)
		last.Total += v * share
		last.GoodLow += e.GoodLow[k] * share
		last.GoodHigh += e.GoodHigh[k] * share
	}
	c.times, c.sums = append(c.times, end), append(c.sums, last)
}

// at is the events up to t.
func (c cumulative) at(t time.Time) Tally {
	j := sort.Search(len(c.times), func(j int) bool { return !c.times[j].Before(t) })
	switch {
	case j == 0:
		return Tally{}
	case j == len(c.times):
		return c.sums[j-1]
	}
	a, b := c.sums[j-1], c.sums[j]
	f := float64(t.Sub(c.times[j-1])) / float64(c.times[j].Sub(c.times[j-1]))
	return Tally{Total: a.Total + f*(b.Total-a.Total), GoodLow: a.GoodLow + f*(b.GoodLow-a.GoodLow), GoodHigh: a.GoodHigh + f*(b.GoodHigh-a.GoodHigh)}
}

// minus is the events between two running sums.
func (t Tally) minus(before Tally) Tally {
	return Tally{Total: t.Total - before.Total, GoodLow: t.GoodLow - before.GoodLow, GoodHigh: t.GoodHigh - before.GoodHigh}
}
