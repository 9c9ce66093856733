package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// SLO is the plan of an slo query: the objectives it answers and two requests of their
// events, each ending at the range's end: Recent, at the panel's step over the range and the
// slow burn-rate window (attainment, burn rates, attribution), and Budget, coarsely over the
// longest objective's window (the budget left). Attribution adds the diagnosis of the range.
type SLO struct {
	Objectives []slo.Objective
	From, To   time.Time
	Recent     signals.Request
	Budget     signals.Request
	// Availability says whether an objective counts finished requests (the signals of
	// AvailabilitySignals) rather than a histogram.
	Availability bool
	Diagnosis    *Diagnosis
}

// AvailabilitySignals are what availability objectives read: finished requests per second and
// the shares of them aborted and errored.
var AvailabilitySignals = []series.Signal{series.RequestRate, series.AbortRatio, series.ErrorRatio}

// sloBudgetPoints bounds the steps of the budget request: a 28-day window is read every 40
// minutes, each observation still counted once (the rate window is the step).
const sloBudgetPoints = 1000

// NewSLO plans an slo query over the objectives named (empty: all) of the settings.
func NewSLO(s Settings, sc Scope, objectives []slo.Objective, names []string, attribution bool) (SLO, error) {
	var chosen []slo.Objective
	for _, o := range objectives {
		if len(names) == 0 || slices.Contains(names, o.Name) {
			chosen = append(chosen, o)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(objectives, func(o slo.Objective) bool { return o.Name == n }) {
			return SLO{}, backend.PluginError(fmt.Errorf("slo %q is not an objective of the data source's settings (slos): %s", n, objectiveNames(objectives)))
		}
	}
	if len(chosen) == 0 {
		return SLO{}, backend.PluginError(fmt.Errorf("the data source has no service-level objectives: add them to its settings (slos)"))
	}
	step := Step(s, sc)
	if sc.To.Sub(sc.From) < step {
		return SLO{}, backend.PluginError(fmt.Errorf("the time range (%s) is shorter than one step (%s): widen it", sc.To.Sub(sc.From), step))
	}
	from, to := sc.From.Truncate(step), sc.To.Truncate(step)
	families, sigs := sloEvents(chosen)
	var window time.Duration
	for _, o := range chosen {
		window = max(window, o.Window)
	}
	avail := len(sigs) > 0
	recentFrom := from
	if burn := to.Add(-slo.BurnLong).Truncate(step); burn.Before(from) {
		recentFrom = burn
	}
	budgetStep := max(step, (window / sloBudgetPoints).Round(time.Minute))
	p := SLO{Objectives: chosen, From: from, To: to, Availability: avail,
		Recent: signals.Request{Signals: sigs, Histograms: families, Start: recentFrom, End: to, Step: step, Instance: sc.Instance, Model: sc.Model},
		Budget: signals.Request{Signals: sigs, Histograms: families, Start: to.Add(-window).Truncate(budgetStep), End: to, Step: budgetStep, Instance: sc.Instance, Model: sc.Model},
	}
	if attribution {
		d, err := NewDiagnosis(s, sc, nil, nil)
		if err != nil {
			return SLO{}, err
		}
		p.Diagnosis = &d
	}
	return p, nil
}

// sloEvents are what objectives' events are read from: the histogram families of the latency
// ones, and AvailabilitySignals when one counts finished requests.
func sloEvents(objectives []slo.Objective) (families []string, sigs []series.Signal) {
	for _, o := range objectives {
		if o.Family == "" {
			sigs = AvailabilitySignals
		} else if !slices.Contains(families, o.Family) {
			families = append(families, o.Family)
		}
	}
	return families, sigs
}

func objectiveNames(os []slo.Objective) string {
	if len(os) == 0 {
		return "it has none"
	}
	names := make([]string, len(os))
	for i, o := range os {
		names[i] = o.Name
	}
	return "they are " + strings.Join(names, ", ")
}

// Executed is the plan as fetched, for the frames' executedQueryString.
func (p SLO) Executed(recent, budget *signals.Plan) string {
	return fmt.Sprintf("Objectives from %s to %s, read every %s (and every %s over their window for the budget).\n%s\n%s",
		stamp(p.From), stamp(p.To), p.Recent.Step, p.Budget.Step, recent, budget)
}

// Goodput is the request of the goodput format: the objectives' events over the range, with the
// finished requests and their shares aborted and errored, which goodput counts whatever the
// objectives (slo.Goodputs).
func (p SLO) Goodput() signals.Request {
	r := p.Recent
	r.Start = p.From
	r.Signals = AvailabilitySignals
	return r
}

// ForBurn plans the burn format, whose every step of the range reads the burn rates of the
// windows before it: Recent reaches back over the slow burn-rate window before the range (the
// page pairs' longest), and Budget, whose budget left the format does not read, holds the
// longest window of slo.BurnPairs (the ticket's) before the range instead, at no more than
// sloBudgetPoints steps.
func (p SLO) ForBurn() SLO {
	if start := p.From.Add(-slo.BurnLong).Truncate(p.Recent.Step); start.Before(p.Recent.Start) {
		p.Recent.Start = start
	}
	var longest time.Duration
	for _, b := range slo.BurnPairs {
		longest = max(longest, b.Long)
	}
	start := p.From.Add(-longest)
	p.Budget.Step = max(p.Recent.Step, (p.To.Sub(start) / sloBudgetPoints).Round(time.Minute))
	p.Budget.Start = start.Truncate(p.Budget.Step)
	return p
}

// ForBudget plans the budget format, whose every step of the range reads its objective's
// window ending at the step: Budget holds the longest objective's window before the range at no
// more than sloBudgetPoints steps (a whole number of the panel's), ending at its last step at or
// before the range's start, and Recent the rest at the panel's step, from there to the range's
// end: the two meet, so that no event is counted twice (slo.Budgets adds each step's window up
// from them).
func (p SLO) ForBudget() SLO {
	var window time.Duration
	for _, o := range p.Objectives {
		window = max(window, o.Window)
	}
	step := p.Recent.Step
	p.Budget.Step = max(step, (window / sloBudgetPoints).Round(time.Minute))
	p.Budget.Step = (p.Budget.Step + step - 1) / step * step
	p.Budget.End = p.From.Truncate(p.Budget.Step)
	p.Budget.Start = p.From.Add(-window).Truncate(p.Budget.Step)
	p.Recent.Start = p.Budget.End
	return p
}
