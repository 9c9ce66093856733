package slo

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// BurnSeverity is how a burn-rate alert asks for attention: a page now, or a ticket.
type BurnSeverity string

// The severities of burn-rate alerts.
const (
	Page   BurnSeverity = "page"
	Ticket BurnSeverity = "ticket"
)

// BurnPair is one condition of multi-window, multi-burn-rate alerting: the burn rate over a
// long window and over a short one (which makes the alert stop soon after the burn does) both
// above Factor, the factor written for a 30-day objective window.
type BurnPair struct {
	Severity    BurnSeverity
	Long, Short time.Duration
	Factor      float64
}

// BurnPairs are the conditions of the SRE workbook's multi-window, multi-burn-rate alerts:
// page at 14.4× over 1 h and 5 m or 6× over 6 h and 30 m, ticket at 1× over 3 d and 6 h.
var BurnPairs = []BurnPair{
	{Page, time.Hour, 5 * time.Minute, 14.4},
	{Page, 6 * time.Hour, 30 * time.Minute, 6},
	{Ticket, 3 * 24 * time.Hour, 6 * time.Hour, 1},
}

// BurnConditions says when a severity's alert holds, from BurnPairs: "above 14.4 over 1h and
// 5m, or above 6 over 6h and 30m".
func BurnConditions(sev BurnSeverity) string {
	var out []string
	for _, p := range BurnPairs {
		if p.Severity == sev {
			out = append(out, fmt.Sprintf("above %g over %s and %s", p.Factor, model.Duration(p.Long), model.Duration(p.Short)))
		}
	}
	return strings.Join(out, ", or ")
}

// BurnSeverities are the severities of BurnPairs, each once, most urgent first.
var BurnSeverities = []BurnSeverity{Page, Ticket}

// workbookWindow is the objective window BurnPairs' factors are written for.
const workbookWindow = 30 * 24 * time.Hour

// FactorFor scales a pair's factor to an objective's window. A workbook factor spends a fixed
// share of a 30-day budget within the long window (14.4 over 1 h is 2 % of it:
// 14.4 × 1 h / 720 h); the burn rate that spends the same share of a window W's budget within
// the same long window is factor × W / 30 d (13.44 over 1 h for 28 d, 3.36 for 7 d).
func (p BurnPair) FactorFor(o Objective) float64 {
	return p.Factor * float64(o.Window) / float64(workbookWindow)
}

// BurnSource is one key's events on the grid they were read at, summed cumulatively so that
// each window's tally is a difference.
type BurnSource struct {
	Grid series.Grid
	// cum[i] sums the events of the steps before i (steps without data count none).
	cum []Tally
}

// NewBurnSource reads a key's events on their grid.
func NewBurnSource(e Events, g series.Grid) BurnSource {
	cum := make([]Tally, len(e.Total)+1)
	for i := range e.Total {
		cum[i+1] = cum[i]
		if !math.IsNaN(e.Total[i]) {
			cum[i+1].Total += e.Total[i]
			cum[i+1].GoodLow += e.GoodLow[i]
			cum[i+1].GoodHigh += e.GoodHigh[i]
		}
	}
	return BurnSource{Grid: g, cum: cum}
}

// covers reports whether a source's grid reaches back a window before t.
func (s BurnSource) covers(t time.Time, d time.Duration) bool {
	return s.Grid.Len > 0 && !s.Grid.Start.After(t.Add(-d))
}

// burnOver is the burn rate over the window d ending at t: the steps of the source at or before
// t and after t − d (at least the one at t), at the worst end of its interval, as the status
// reports burn rates. NaN without events.
func (s BurnSource) burnOver(t time.Time, d time.Duration, target float64) float64 {
	end, ok := s.Grid.Index(t)
	if !ok || end+1 >= len(s.cum) {
		return math.NaN()
	}
	a, b := s.cum[max(end-stepsIn(d, s.Grid.Step)+1, 0)], s.cum[end+1]
	return Tally{Total: b.Total - a.Total, GoodLow: b.GoodLow - a.GoodLow, GoodHigh: b.GoodHigh - a.GoodHigh}.BurnRate(target).High
}

// BurnValue is a severity's alert value at t: for each of its pairs, the lesser of the long and
// short windows' burn rates when both are above the pair's factor scaled to the objective's
// window, else 0; the greatest over the pairs, so that an alert condition "> 0" fires when
// any pair holds. A pair reads fine when fine reaches back over its long window, else coarse
// (a long window read at a coarse step counts whole steps: the window is rounded to them). NaN
// when no pair's long window holds an event.
func BurnValue(o Objective, sev BurnSeverity, fine, coarse BurnSource, t time.Time) float64 {
	out, known := 0.0, false
	for _, p := range BurnPairs {
		if p.Severity != sev {
			continue
		}
		src := coarse
		if fine.covers(t, p.Long) {
			src = fine
		}
		long, short := src.burnOver(t, p.Long, o.Target), src.burnOver(t, p.Short, o.Target)
		if math.IsNaN(long) {
			continue
		}
		known = true
		if f := p.FactorFor(o); long > f && short > f {
			out = math.Max(out, math.Min(long, short))
		}
	}
	if !known {
		return math.NaN()
	}
	return out
}

// BurnAlert is one severity's burn-rate alert series of an objective on a key.
type BurnAlert struct {
	Objective Objective
	Key       series.Key
	Severity  BurnSeverity
	// Values are BurnValue at each step of the recent grid from the range's first step (the
	// times BurnAlerts returns).
	Values []float64
	// TopRule is the finding that holds the largest share of the key's misses over the range
	// (Attribute), empty when no finding does (misses while none was active, or no misses).
	TopRule string
}

// BurnAlerts are the objectives' alert series, per objective, key (sorted as Statuses') and
// severity (BurnSeverities' order; only this one when only is set), and the times of their
// values: recent holds the range from `from` at the panel's step and reaches back over the page
// windows before it; window, coarser, over the ticket's long window before the range. findings
// are the diagnosis of the range, for TopRule.
func BurnAlerts(objectives []Objective, recent, window *series.Set, from time.Time, findings []diagnosis.Finding, only BurnSeverity) ([]time.Time, []BurnAlert) {
	start := rangeFrom(recent.Grid, from)
	var times []time.Time
	for i := start; i < recent.Grid.Len; i++ {
		times = append(times, recent.Grid.Time(i))
	}
	var out []BurnAlert
	for _, o := range objectives {
		for _, k := range keysOf(o, recent) {
			r, _ := eventsOf(o, recent, k)
			w, ok := eventsOf(o, window, k)
			if !ok {
				w = Events{}
			}
			fine, coarse := NewBurnSource(r, recent.Grid), NewBurnSource(w, window.Grid)
			top := ""
			if shares := Attribute(r, recent.Grid, start, recent.Grid.Len-1, k, findings); len(shares) > 0 && shares[0].Rule != NoFinding {
				top = shares[0].Rule
			}
			for _, sev := range BurnSeverities {
				if only != "" && sev != only {
					continue
				}
				values := make([]float64, len(times))
				for i, at := range times {
					values[i] = BurnValue(o, sev, fine, coarse, at)
				}
				out = append(out, BurnAlert{Objective: o, Key: k, Severity: sev, Values: values, TopRule: top})
			}
		}
	}
	return times, out
}
