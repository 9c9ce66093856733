package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// Formats of an slo query; sloFormats says what each answers.
const (
	FormatSLOStatus      SLOFormat = "status"
	FormatSLOAttribution SLOFormat = "attribution"
	FormatSLOGoodput     SLOFormat = "goodput"
	FormatSLOBurn        SLOFormat = "burn"
	FormatSLOBudget      SLOFormat = "budget"
)

// burnSeverityDoc says when a severity of the burn format holds.
func burnSeverityDoc(sev slo.BurnSeverity) string {
	return "the burn rate is " + slo.BurnConditions(sev) + " (factors for a 30-day window, scaled to the objective's)"
}

// sloFormat is one form of an slo query's answer.
type sloFormat struct {
	EnumValue
	// attribution says whether the format needs the diagnosis of the range.
	attribution bool
}

// sloFormats are the formats of an slo query (FormatSLOStatus when it names none).
var sloFormats = []sloFormat{
	{EnumValue: EnumValue{Value: string(FormatSLOStatus), Doc: "one row per objective, instance and model: attainment as an interval, the budget left over the objective's window, burn rates over 1 h and 6 h; a fleet row per objective and model"}},
	{EnumValue: EnumValue{Value: string(FormatSLOAttribution), Doc: "one row per objective, instance and finding: the misses while the finding was active and their share of the instance's misses; rule none for the misses while no finding was"}, attribution: true},
	{EnumValue: EnumValue{Value: string(FormatSLOGoodput), Doc: "per instance and model, then per model's fleet, the requests per second served (without abort or error) that met every objective of the model, bounded from the metrics (goodput_low, goodput_high); with a trace backend, also from the range's sampled request spans: the share of each step's that met them all (sampled_share), how many spans it rests on (sampled_spans) and that share of the requests per second vLLM traces (goodput_sampled); objectives on itl are left out"}},
	{EnumValue: EnumValue{Value: string(FormatSLOBurn), Doc: "alert series per objective, instance, model and severity (multi-window, multi-burn-rate): page while " +
		burnSeverityDoc(slo.Page) + "; ticket while " + burnSeverityDoc(slo.Ticket) +
		"; the value is the lesser burn rate of the pair that holds, else 0; labels slo, instance, model_name, severity and top_rule (the finding holding most misses over the range)"}, attribution: true},
	{EnumValue: EnumValue{Value: string(FormatSLOBudget), Doc: "budget burn-down: per objective, instance and model, then per model's fleet (instance fleet), the share of the budget left at each step over the objective's window ending at the step, the worst end of its interval as in status (budget_remaining; negative when overspent)"}},
}

func handleSLO(ctx context.Context, d *Datasource, q backend.DataQuery, query SLOQuery) backend.DataResponse {
	if d.settings.SLOsErr != nil {
		return badQuery(fmt.Errorf("data source settings: %w", d.settings.SLOsErr))
	}
	if len(d.settings.SLOs) == 0 && len(query.SLOs) == 0 {
		// The provisioned SLOs panels on a data source without objectives: nothing was asked
		// that could fail, so the panel says what to add instead of showing an error.
		return backend.DataResponse{Frames: data.Frames{frames.NoObjectives()}}
	}
	format, ok := lookup(sloFormats, cmp.Or(query.Format, FormatSLOStatus))
	if !ok {
		return badQuery(fmt.Errorf("format %q is not one of %s", query.Format, valueList(sloFormats)))
	}
	p, err := plan.NewSLO(d.planSettings(), scopeOf(q, query.Scope), d.settings.SLOs, query.SLOs, format.attribution)
	if err != nil {
		return errorResponse(err)
	}
	burn := format.Value == string(FormatSLOBurn)
	if query.Severity != "" && !slices.Contains(slo.BurnSeverities, query.Severity) {
		return badQuery(fmt.Errorf("severity %q is not one of %s", query.Severity, burnSeverityList()))
	}
	if burn {
		p = p.ForBurn()
	}
	var (
		res  []*signals.Result
		diag *Diagnosis
	)
	if p.Diagnosis != nil {
		// The diagnosis is shared with the refresh's diagnosis queries of the same range.
		if diag, err = d.diagnosePlan(ctx, *p.Diagnosis); err != nil {
			return errorResponse(err)
		}
	}
	if format.Value == string(FormatSLOBudget) {
		return budget(ctx, d, p)
	}
	if format.Value == string(FormatSLOGoodput) {
		return goodput(ctx, d, p)
	}
	if res, err = d.prom.FetchAll(ctx, p.Recent, p.Budget); err != nil {
		return errorResponse(err)
	}
	recent, budget := res[0], res[1]
	executed := p.Executed(recent.Plan, budget.Plan)
	notices := append(append([]string(nil), recent.Notices...), budget.Notices...)
	if burn {
		times, alerts := slo.BurnAlerts(p.Objectives, recent.Set, budget.Set, p.From, diag.Result.Findings, query.Severity)
		return backend.DataResponse{Frames: frames.SLOBurn(times, alerts, executed+"\n"+diag.Executed, notices)}
	}
	if format.attribution {
		// The evaluation attributed every objective's misses (the findings' slo_misses): keep
		// the query's.
		var rows []slo.AttributionRow
		for _, r := range diag.SLO {
			if slices.ContainsFunc(p.Objectives, func(o slo.Objective) bool { return o.Name == r.Objective.Name }) {
				rows = append(rows, r)
			}
		}
		return backend.DataResponse{Frames: data.Frames{frames.SLOAttribution(rows, executed+"\n"+diag.Executed, notices)}}
	}
	rows := slo.Statuses(p.Objectives, recent.Set, budget.Set, p.From)
	return backend.DataResponse{Frames: data.Frames{frames.SLOStatus(rows, executed, notices)}}
}

// budget answers the budget format: each step's window is added up from the range's events and
// the coarser ones of the window before it (slo.Budgets), two requests as the status's.
func budget(ctx context.Context, d *Datasource, p plan.SLO) backend.DataResponse {
	res, err := d.prom.FetchAll(ctx, p.Recent, p.Budget)
	if err != nil {
		return errorResponse(err)
	}
	times, budgets := slo.Budgets(p.Objectives, res[0].Set, res[1].Set, p.From)
	notices := append(append([]string(nil), res[0].Notices...), res[1].Notices...)
	return backend.DataResponse{Frames: frames.SLOBudget(times, budgets, p.Executed(res[0].Plan, res[1].Plan), notices)}
}

// burnSeverityList names the severities of the burn format, for messages.
func burnSeverityList() string {
	names := make([]string, len(slo.BurnSeverities))
	for i, s := range slo.BurnSeverities {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
