package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The outcomes of a promise (CheckPromise); NotEnoughData is shared with the optimisations'.
const (
	Moved      Outcome = "moved"
	GotWorse   Outcome = "got worse"
	DidNotMove Outcome = "did not move"
)

// measure is how a promised signal is read from a window's Stats and printed.
type measure struct {
	// name is the signal in words, for the sentences.
	name string
	// value reads a mean or rate; interval, for a quantile, reads its bucket interval instead.
	value    func(Stats) float64
	interval func(Stats) Interval
	show     func(float64) string
	// share: the value is a share in [0, 1], which must also move by Params.ShareChange.
	share bool
	// reads are the signals Summarise must be given for it.
	reads []series.Signal
}

func perSecond(v float64) string { return num(v) + "/s" }

// measures are the signals a promise may name.
var measures = map[series.Signal]measure{
	series.PreemptionRate:     {name: "preemptions per second", value: func(s Stats) float64 { return s.PreemptionRate }, show: perSecond},
	series.PrefixCacheHitRate: {name: "the prefix-cache hit rate", value: func(s Stats) float64 { return s.HitRate }, show: num, share: true, reads: []series.Signal{series.PromptTPS}},
	series.SpecAcceptanceRate: {name: "the draft acceptance rate", value: func(s Stats) float64 { return s.Acceptance }, show: num, share: true, reads: []series.Signal{series.GenerationTPS}},
	series.TPOTMean:           {name: "decode time per output token", value: func(s Stats) float64 { return s.TPOT }, show: ms},
	series.QueueTimeMean:      {name: "mean queue time", value: func(s Stats) float64 { return s.QueueTime }, show: ms},
	series.WaitingRatio:       {name: "the share of requests waiting", value: func(s Stats) float64 { return s.WaitingRatio }, show: pct, share: true},
	series.AbortRatio:         {name: "the share of requests aborted", value: func(s Stats) float64 { return s.AbortRatio }, show: pct, share: true, reads: []series.Signal{series.RequestRate}},
	series.LengthRatio:        {name: "the share of requests cut at their length limit", value: func(s Stats) float64 { return s.LengthRatio }, show: pct, share: true, reads: []series.Signal{series.RequestRate}},
	series.EngineStepRate:     {name: "engine steps per second", value: func(s Stats) float64 { return s.StepRate }, show: perSecond},
	series.TTFTP50:            {name: "TTFT p50", interval: func(s Stats) Interval { return s.TTFTP50 }},
	series.TTFTP99:            {name: "TTFT p99", interval: func(s Stats) Interval { return s.TTFTP99 }},
	series.TTFTRatio: {name: "TTFT p99/p50", interval: func(s Stats) Interval { return ratio(s.TTFTP99, s.TTFTP50) },
		reads: []series.Signal{series.TTFTP99, series.TTFTP50}},
}

// Checkable reports whether CheckPromise can read a promise's signal.
func Checkable(p series.Promise) bool {
	_, ok := measures[p.Signal]
	return ok && (p.Direction == series.Up || p.Direction == series.Down)
}

// PromiseSignals are the signals both windows must be fetched with for a promise to be checked:
// the verdict's own and those its signal reads.
func PromiseSignals(p series.Promise) []series.Signal {
	out := slices.Clone(Signals)
	m := measures[p.Signal]
	extra := m.reads
	if m.interval == nil {
		extra = append([]series.Signal{p.Signal}, extra...)
	}
	for _, s := range extra {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// PromiseCheck is a promise checked on one instance and model.
type PromiseCheck struct {
	Key     series.Key
	Promise series.Promise
	// Before and After are the promised signal's value in each window (a quantile's estimate);
	// NaN when unknown. Change is (After − Before) / Before, ±Inf from a Before of 0.
	Before, After, Change float64
	Outcome               Outcome
	// Sentence says what moved, how far, and what was promised.
	Sentence string
}

// CheckPromise judges whether a promised signal moved between a window before a change and
// one after it: moved when it changed by at least DefaultParams' MeanChange (10%) the promised
// way, got worse when it changed that much the other way, did not move otherwise. A quantile
// (or a ratio of quantiles) needs MinRequests requests in each window and counts as moved or
// worse only when its bucket intervals separate too (the package doc's bound); a change of the
// estimate within bucket resolution did not move. A signal missing in either window is not
// enough data. A share (a rate in [0, 1]) must also move by ShareChange: a relative change of
// a share near 0 measures nothing.
func CheckPromise(before, after Stats, p series.Promise) PromiseCheck {
	params := DefaultParams()
	c := PromiseCheck{Promise: p, Before: math.NaN(), After: math.NaN(), Change: math.NaN()}
	if !Checkable(p) {
		c.Outcome = NotEnoughData
		c.Sentence = fmt.Sprintf("a verdict cannot read %s going %s", p.Signal, p.Direction)
		return c
	}
	m := measures[p.Signal]
	var bq, aq Interval
	var bText, aText string
	if m.interval != nil {
		if before.Requests < params.MinRequests || after.Requests < params.MinRequests {
			c.Outcome = NotEnoughData
			c.Sentence = fmt.Sprintf("%s needs at least %.0f requests in each window: the baseline has %.0f, the current window %.0f",
				m.name, params.MinRequests, before.Requests, after.Requests)
			return c
		}
		bq, aq = m.interval(before), m.interval(after)
		c.Before, c.After = bq.Value, aq.Value
		show := seconds
		if p.Signal == series.TTFTRatio {
			show = plain
		}
		bText, aText = show(bq), show(aq)
	} else {
		c.Before, c.After = m.value(before), m.value(after)
		bText, aText = m.show(c.Before), m.show(c.After)
	}
	if miss := missingIn(c.Before, c.After); miss != "" {
		c.Outcome = NotEnoughData
		c.Sentence = fmt.Sprintf("no %s in %s", m.name, miss)
		return c
	}
	c.Change = change(c.Before, c.After)
	gain := c.Change
	if p.Direction == series.Down {
		gain = -gain
	}
	moved := fmt.Sprintf("%s went from %s to %s (%s)", m.name, bText, aText, signed(c.Change))
	tiny := m.share && math.Abs(c.After-c.Before) < params.ShareChange
	certain := func(way series.Direction) bool {
		if tiny {
			return false
		}
		if m.interval == nil {
			return true
		}
		if way == series.Down {
			return aq.Down(bq)
		}
		return aq.Up(bq)
	}
	opposite := series.Up
	if p.Direction == series.Up {
		opposite = series.Down
	}
	switch {
	case gain >= params.MeanChange && certain(p.Direction):
		c.Outcome = Moved
		c.Sentence = fmt.Sprintf("%s, %s as promised: %s", moved, p.Direction, p.Sentence)
	case gain <= -params.MeanChange && certain(opposite):
		c.Outcome = GotWorse
		c.Sentence = fmt.Sprintf("%s, %s where %s was promised: %s", moved, opposite, p.Direction, p.Sentence)
	case tiny:
		c.Outcome = DidNotMove
		c.Sentence = fmt.Sprintf("%s, by less than %s in absolute terms: no move %s is measurable; promised: %s", moved, num(params.ShareChange), p.Direction, p.Sentence)
	case math.Abs(gain) >= params.MeanChange:
		c.Outcome = DidNotMove
		c.Sentence = fmt.Sprintf("%s, within bucket resolution (the windows' bucket intervals overlap): no move %s is measurable; promised: %s", moved, p.Direction, p.Sentence)
	default:
		c.Outcome = DidNotMove
		c.Sentence = fmt.Sprintf("%s, less than %s either way; promised: %s", moved, pct(params.MeanChange), p.Sentence)
	}
	return c
}

// CheckPromises checks a promise on every instance and model in either window, in Evaluate's
// order.
func CheckPromises(in Input, p series.Promise) []PromiseCheck {
	var out []PromiseCheck
	for _, k := range keysOf(in) {
		c := CheckPromise(summariseOrEmpty(in.Baseline, k, in.BaselineWindow), summariseOrEmpty(in.Current, k, in.CurrentWindow), p)
		c.Key = k
		out = append(out, c)
	}
	return out
}

// missingIn names the windows whose value is unknown, or "".
func missingIn(before, after float64) string {
	switch b, a := math.IsNaN(before), math.IsNaN(after); {
	case b && a:
		return "either window"
	case b:
		return "the baseline window"
	case a:
		return "the current window"
	}
	return ""
}

// change is the relative change from before to after; from 0, no change or an infinite one.
func change(before, after float64) float64 {
	if before == 0 {
		switch {
		case after > 0:
			return math.Inf(1)
		case after < 0:
			return math.Inf(-1)
		}
		return 0
	}
	return (after - before) / math.Abs(before)
}

// signed prints a relative change as a signed percentage, "from 0" for an infinite one.
func signed(v float64) string {
	if math.IsInf(v, 0) {
		return "from 0"
	}
	return fmt.Sprintf("%+.0f%%", 100*v)
}
