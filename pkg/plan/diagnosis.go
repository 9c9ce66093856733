package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// Diagnosis is the plan of one evaluation of the matrix: the rules, the range they are
// evaluated over (aligned on the panel's step), the step they run at, and the one request that
// fetches their signals from early enough for their baselines and pending periods.
type Diagnosis struct {
	Rules []string
	// Signals are every signal fetched: the rules', the request join's, the objectives', then
	// the caller's.
	Signals []series.Signal
	// Step is the panel's step, that timelines and alert series are reported at; EvalStep the
	// step the rules run at (diagnosis.EvalStep: fine enough for their `for`), the request's.
	Step     time.Duration
	EvalStep time.Duration
	From, To time.Time
	// Lookback is how much before From is fetched (diagnosis.Lookback); it is read coarsely.
	Lookback time.Duration
	Options  diagnosis.Options
	Metrics  signals.Request
	// Objectives are the settings' objectives, whose events Metrics reads too (their histogram
	// families, or AvailabilitySignals) so that each finding's misses are counted
	// (slo.Attributions); none without objectives.
	Objectives []slo.Objective
}

// NewDiagnosis plans the evaluation of rules (empty: all) over a query's scope, fetching extra
// signals beside theirs for the caller. The request join's signals are always fetched too. That
// does not let a requests query share a diagnosis query's evaluation: its plan reads past the
// range and keeps two histogram families whole (NewRequests), so their evaluations differ.
func NewDiagnosis(s Settings, sc Scope, rules []string, extra []series.Signal) (Diagnosis, error) {
	step := Step(s, sc)
	if sc.To.Sub(sc.From) < step {
		return Diagnosis{}, backend.PluginError(fmt.Errorf("the time range (%s) is shorter than one step (%s): widen it", sc.To.Sub(sc.From), step))
	}
	wanted, err := diagnosis.RequiredSignals(rules)
	if err != nil {
		return Diagnosis{}, backend.PluginError(err)
	}
	families, sloSignals := sloEvents(s.Objectives)
	wanted = appendMissing(appendMissing(appendMissing(wanted, series.JoinSignals()), sloSignals), extra)
	hists, err := diagnosis.RequiredHistograms(rules)
	if err != nil {
		return Diagnosis{}, backend.PluginError(err)
	}
	for _, f := range families {
		if !slices.Contains(hists, f) {
			hists = append(hists, f)
		}
	}
	from, to := sc.From.Truncate(step), sc.To.Truncate(step)
	opts := diagnosis.Options{Rules: rules, Thresholds: s.Thresholds, EvalFrom: from,
		Report: series.NewGrid(from, to, step), TTFTObjectives: ttftObjectives(s.Objectives)}
	lookback, err := diagnosis.Lookback(opts)
	if err != nil {
		return Diagnosis{}, backend.PluginError(err)
	}
	// The rules run at the step their `for` needs, as Prometheus' rule engine would; the
	// timelines and alert series come back at the panel's step.
	evalStep, err := diagnosis.EvalStep(opts, step, s.Metrics.Scrape, to.Sub(from))
	if err != nil {
		return Diagnosis{}, backend.PluginError(err)
	}
	return Diagnosis{Rules: rules, Signals: wanted, Step: step, EvalStep: evalStep, From: from, To: to, Lookback: lookback, Options: opts,
		Objectives: s.Objectives,
		Metrics: signals.Request{
			Signals:     wanted,
			Start:       from.Add(-lookback),
			End:         to,
			Step:        evalStep,
			Instance:    sc.Instance,
			Model:       sc.Model,
			CacheConfig: true,
			Histograms:  hists,
			// The lookback only feeds baselines and pending periods: read it coarsely.
			CoarseBefore: from,
		}}, nil
}

// Executed is the plan as fetched, for the frames' executedQueryString.
func (p Diagnosis) Executed(fetched *signals.Plan) string {
	rules := "every rule"
	if len(p.Rules) > 0 {
		rules = "rules " + strings.Join(p.Rules, ", ")
	}
	return fmt.Sprintf("Diagnosis of %s from %s to %s, evaluated every %s and reported every %s, after a lookback of %s for baselines and pending periods.\n%s",
		rules, series.Stamp(p.From), series.Stamp(p.To), p.EvalStep, p.Step, p.Lookback, fetched)
}

// ttftObjectives are the TTFT objectives among the settings' objectives, as the diagnosis reads
// them.
func ttftObjectives(objectives []slo.Objective) []diagnosis.TTFTObjective {
	var out []diagnosis.TTFTObjective
	for _, o := range objectives {
		if o.Indicator == slo.TTFT {
			out = append(out, diagnosis.TTFTObjective{Name: o.Name, Seconds: o.Threshold, Applies: o.Matches})
		}
	}
	return out
}
