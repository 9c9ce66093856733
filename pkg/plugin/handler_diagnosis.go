package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// Formats of a diagnosis query.
const (
	FormatFindings = "findings"
	FormatTimeline = "timeline"
	FormatAlert    = "alert"
	FormatFleet    = "fleet"
	// FormatRecommendation is the recommended values as series, for alert summaries.
	FormatRecommendation = "recommendation"
)

func handleDiagnosis(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	format := query.Format
	if format == "" {
		format = FormatFindings
	}
	if format != FormatFindings && format != FormatTimeline && format != FormatAlert && format != FormatFleet && format != FormatRecommendation {
		return badQuery(fmt.Errorf("format %q is not one of findings, timeline, alert, fleet, recommendation", format))
	}
	keep, err := findingFilter(query)
	if err != nil {
		return badQuery(err)
	}
	var extra []series.Signal
	if format == FormatFleet {
		extra = frames.FleetSignals()
	}
	diag, err := d.diagnose(ctx, q, query, query.Rules, extra)
	if err != nil {
		return errorResponse(err)
	}
	var out data.Frames
	switch format {
	case FormatTimeline:
		out = frames.Timeline(diag.Result, query.AllRules)
	case FormatAlert:
		out = frames.AlertSeries(diag.Result)
	case FormatFleet:
		out = data.Frames{frames.Fleet(diag.Result, diag.Set)}
	case FormatRecommendation:
		out = frames.RecommendationSeries(diag.Result)
	default:
		res := diag.Result
		res.Findings = nil
		for _, f := range diag.Result.Findings {
			if keep(f) {
				res.Findings = append(res.Findings, f)
			}
		}
		out = data.Frames{frames.Findings(res)}
	}
	if diag.Shared {
		markShared(out, diag.EvaluatedAt)
	}
	if len(out) > 0 && len(diag.Set.Keys()) == 0 {
		if out[0].Meta == nil {
			out[0].Meta = &data.FrameMeta{}
		}
		out[0].Meta.Notices = append(out[0].Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: "No vLLM series in this range for the selected instances and models: nothing to diagnose."})
	}
	return backend.DataResponse{Frames: out}
}

// findingFilter is the findings format's selection: headline findings only, and the given
// severities only, when the query asks.
func findingFilter(query Query) (func(diagnosis.Finding) bool, error) {
	sevs := map[diagnosis.Severity]bool{}
	for _, s := range query.Severities {
		switch sev := diagnosis.Severity(s); sev {
		case diagnosis.Critical, diagnosis.Warning, diagnosis.Info:
			sevs[sev] = true
		default:
			return nil, fmt.Errorf("severity %q is not one of critical, warning, info", s)
		}
	}
	return func(f diagnosis.Finding) bool {
		return (!query.HeadlineOnly || f.Headline) && (len(sevs) == 0 || sevs[f.Severity])
	}, nil
}

// Diagnosis is the evaluated matrix over a query's range, with the signals it rests on. It may
// be shared by several queries (see evalCache): read it, never change it.
type Diagnosis struct {
	Result diagnosis.Result
	Set    *series.Set
	Fetch  *signals.Result
	// EvaluatedAt is when the evaluation ran; Shared says whether another query got it too.
	EvaluatedAt time.Time
	Shared      bool
}

// diagnose fetches what the rules need (plus extra signals for the caller), from early enough
// for their baselines and pending periods, and evaluates the rules over the query's range
// (aligned on the step). The queries of one refresh share the evaluation: every caller's
// signals are fetched with the request join's, so that the requests table shares it too.
func (d *Datasource) diagnose(ctx context.Context, q backend.DataQuery, query Query, rules []string, extra []series.Signal) (*Diagnosis, error) {
	step := d.step(q)
	if q.TimeRange.Duration() < step {
		return nil, backend.PluginError(fmt.Errorf("the time range (%s) is shorter than one step (%s): widen it", q.TimeRange.Duration(), step))
	}
	wanted, err := diagnosis.RequiredSignals(rules)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	wanted = appendMissing(appendMissing(wanted, correlate.Signals()), extra)
	from, to := q.TimeRange.From.Truncate(step), q.TimeRange.To.Truncate(step)
	names := make([]string, len(wanted))
	for i, s := range wanted {
		names[i] = string(s)
	}
	key := newEvalKey(rules, names, query.Instance, query.Model, step, from, to)
	diag, shared, err := d.evals.get(ctx, key, func(ctx context.Context) (*Diagnosis, error) {
		return d.evaluate(ctx, query, rules, wanted, step, from, to)
	})
	if err != nil {
		return nil, err
	}
	mine := *diag
	mine.Shared = mine.Shared || shared
	return &mine, nil
}

// evaluate is one evaluation: the fetch and the rules over it.
func (d *Datasource) evaluate(ctx context.Context, query Query, rules []string, wanted []series.Signal, step time.Duration, from, to time.Time) (*Diagnosis, error) {
	opts := diagnosis.Options{Rules: rules, Thresholds: d.settings.Thresholds, EvalFrom: from,
		Report: series.NewGrid(from, to, step)}
	lookback, err := diagnosis.Lookback(opts)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	// The rules run at the step their `for` needs, as Prometheus' rule engine would; the
	// timelines and alert series come back at the panel's step.
	evalStep, err := diagnosis.EvalStep(opts, step, d.settings.ScrapeInterval, to.Sub(from))
	if err != nil {
		return nil, backend.PluginError(err)
	}
	res, err := d.prom.Fetch(ctx, signals.Request{
		Signals:     wanted,
		Start:       from.Add(-lookback),
		End:         to,
		Step:        evalStep,
		Instance:    query.Instance,
		Model:       query.Model,
		CacheConfig: true,
		// The lookback only feeds baselines and pending periods: read it coarsely.
		CoarseBefore: from,
	})
	if err != nil {
		return nil, err
	}
	result, err := diagnosis.Evaluate(res.Set, opts)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	return &Diagnosis{Result: result, Set: res.Set, Fetch: res, EvaluatedAt: time.Now()}, nil
}

func appendMissing(list, extra []series.Signal) []series.Signal {
	seen := make(map[series.Signal]bool, len(list))
	for _, s := range list {
		seen[s] = true
	}
	for _, s := range extra {
		if !seen[s] {
			list = append(list, s)
			seen[s] = true
		}
	}
	return list
}
