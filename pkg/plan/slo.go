package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// SLO is the plan of an slo query: the objectives it answers and two requests of their
// events: Recent, at the panel's step over the range and the slow burn-rate window before its
// end (attainment, burn rates, attribution), and Budget, coarsely over the longest objective's
// window before Recent, ending where Recent begins (the budget left, added up from both).
// Attribution adds the diagnosis of the range.
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
		return SLO{}, backend.PluginError(errors.New(slo.NoObjectives))
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
	// The objectives' events: Recent at the panel's step over the range and the slow burn-rate
	// window before its end, and Budget, coarser, over the longest window before that, ending
	// where Recent begins: the two meet, so no event is counted twice when a window is added up
	// from both (slo.BudgetLeft), and a step of Budget never straddles the start of Recent.
	budgetStep := max(step, (window / sloBudgetPoints).Round(time.Minute))
	budgetStep = (budgetStep + step - 1) / step * step
	recentFrom := from
	if burn := to.Add(-slo.BurnLong); burn.Before(from) {
		recentFrom = burn
	}
	recentFrom = recentFrom.Truncate(budgetStep)
	p := SLO{Objectives: chosen, From: from, To: to, Availability: avail,
		Recent: signals.Request{Signals: sigs, Histograms: families, Start: recentFrom, End: to, Step: step, Instance: sc.Instance, Model: sc.Model},
		Budget: signals.Request{Signals: sigs, Histograms: families, Start: recentFrom.Add(-window).Truncate(budgetStep), End: recentFrom, Step: budgetStep, Instance: sc.Instance, Model: sc.Model},
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
		series.Stamp(p.From), series.Stamp(p.To), p.Recent.Step, p.Budget.Step, recent, budget)
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

// The goodput format's span searches (GoodputSearches).
const (
	// GoodputLead is how long before the range its spans are searched from: a search selects
	// requests by their start, goodput counts them by their finish, so a request that ran
	// longer than this before finishing in the range is not read.
	GoodputLead = 10 * time.Minute
	// GoodputSearchWindow is the length of the sub-windows the searches start with: a few
	// minutes of a busy sampled fleet fit in one search's limit.
	GoodputSearchWindow = 5 * time.Minute
	// MaxGoodputSearches bounds the searches of one goodput query, the halves of the searches
	// that stopped at their limit included.
	MaxGoodputSearches = 256
)

// GoodputSearches are the trace searches of the goodput format: the sampled requests that may
// have finished in the range, those that started from GoodputLead before it to its end, in
// sub-windows of GoodputSearchWindow (at most half of MaxGoodputSearches, the rest left for
// halving the searches that stop at their limit), each at the backends' largest limit. They are
// sent with the metrics, so they cannot depend on them: an exact instance filter is carried to
// the backend, any other filter is applied to what the searches return (the metrics' keys).
func (p SLO) GoodputSearches() []traces.Query {
	from := p.From.Add(-GoodputLead)
	n := int(math.Ceil(float64(p.To.Sub(from)) / float64(GoodputSearchWindow)))
	base := traces.Query{Limit: traces.DefaultMaxLimit}
	if m, err := signals.ParseMatch("instance", p.Recent.Instance); err == nil {
		if exact, ok := m.Exact(); ok {
			base.Instances = []string{exact}
		}
	}
	var out []traces.Query
	for _, w := range traces.Windows(from, p.To, min(n, MaxGoodputSearches/2)) {
		q := base
		q.From, q.To = w[0], w[1]
		out = append(out, q)
	}
	return out
}

// ForBurn plans the burn format, whose every step of the range reads the burn rates of the
// windows before it: Recent reaches back over the slow burn-rate window before the range (the
// page pairs' longest), and Budget, whose budget left the format does not read, holds the
// longest window of slo.BurnPairs (the ticket's) before the range and the range instead, at no
// more than sloBudgetPoints steps.
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
	p.Budget.Start, p.Budget.End = start.Truncate(p.Budget.Step), p.To
	return p
}
