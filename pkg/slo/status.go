package slo

import (
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The burn-rate windows of the status: a fast and a slow one, as multi-window alerting reads
// them.
const (
	BurnShort = time.Hour
	BurnLong  = 6 * time.Hour
)

// Status is an objective's state on one key (or a model's fleet) over a range.
type Status struct {
	// Range is the events of the range; Attainment their share of good ones.
	Range      Tally
	Attainment Interval
	// Budget is the share of the error budget left over the objective's window ending at the
	// range's end.
	Budget Interval
	// Burn1h and Burn6h are the burn rates over the last hour and six hours of the range's end.
	Burn1h, Burn6h Interval
}

// StatusOf reads an objective's status from the events of a grid ending at the range's end
// (from is the range's first step; the grid reaches back over BurnLong) and those of past, a
// coarser grid over the objective's window before it (what they lack of the window is read as
// no events): the budget left is the last step of the budget format's series (BudgetLeft).
func StatusOf(recent Events, g series.Grid, from int, past Events, pg series.Grid, o Objective) Status {
	end := g.Len - 1
	r := recent.Tally(from, end)
	return Status{
		Range:      r,
		Attainment: r.Attainment(),
		Budget:     BudgetLeft(recent, g, end, past, pg, o)[0],
		Burn1h:     recent.Tally(end-stepsIn(BurnShort, g.Step)+1, end).BurnRate(o.Target),
		Burn6h:     recent.Tally(end-stepsIn(BurnLong, g.Step)+1, end).BurnRate(o.Target),
	}
}

// stepsIn is how many steps of a grid a duration spans, at least one.
func stepsIn(d, step time.Duration) int {
	if step <= 0 {
		return 1
	}
	return max(int(d/step), 1)
}
