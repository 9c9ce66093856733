package plugin

import (
	"context"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// searchParallel bounds the trace searches of one query in flight at once.
const searchParallel = 4

// handleRequests answers a requests query: the vLLM spans of the range, each joined with the
// metric state at its start, the worst while it ran and the findings active, flagged when it
// stands out, and ranked by how far it stands from its instance's typical TTFT.
//
// The metrics come first: they name the instances that match the query's filters (the trace
// backends can only match exact instance values, and V1 spans carry no model) and give each
// instance's typical TTFT and its findings. The searches then carry the filters to the
// backend: first one per interval where a finding fires, for its instance, then one per
// instance and sub-window, so that no filter runs after a backend's limit, plus one per
// instance and sub-window for its requests above the instance's threshold, so that the
// slowest requests of the range are found whatever the limit (plan.NewRequests, then its
// Searches from the metrics' answer, at most plan.MaxSearches of them). A search that fails
// fails the query with the backend's error. correlate.Requests then joins what they returned, keeps
// the query's rows, ranks them and writes the notices.
func handleRequests(ctx context.Context, d *Datasource, q backend.DataQuery, query RequestsQuery) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	p, err := plan.NewRequests(d.planSettings(), scopeOf(q, query.Scope),
		plan.RequestFilters{MinTTFT: query.MinTTFT, Limit: query.Limit, AnomalousOnly: query.AnomalousOnly}, time.Now())
	if err != nil {
		return badQuery(err)
	}
	// Phase 1: the metrics.
	var diag *Diagnosis
	merr := p.MetricsErr
	if merr == nil {
		diag, merr = d.diagnosePlan(ctx, p.Metrics)
	}
	in := correlate.Input{From: p.From, To: p.To}
	var notices []string
	metrics := ""
	spans := vllm.GenerationNone
	if merr != nil {
		notices = in.WithMetrics(nil, nil, merr)
	} else {
		notices = in.WithMetrics(diag.Set, diag.Result.Findings, nil)
		metrics, spans = diag.Executed, diag.Generation
	}

	// Phase 2: the searches depend on what the metrics answered.
	sp := p.Searches(plan.RequestMetrics{Set: in.Set, Findings: in.Findings, Thresholds: correlate.Thresholds(in.Typical, 0)}).WithGeneration(spans)
	reqs, info, _, err := traces.SearchAll(ctx, d.traces, sp.Queries, searchParallel)
	if err != nil {
		return errorResponse(err)
	}
	in.Requests, in.Truncated = sp.Filter(reqs), info.Truncated
	sel := correlate.Selection{Model: p.Model.Matches, AnomalousOnly: p.Filters.AnomalousOnly, Limit: p.Rows, MinTTFT: p.Filters.MinTTFT}
	rows, notices := correlate.Requests(in, sel, slices.Concat(notices, sp.Notices, info.Notices(len(sp.Queries), p.Rows)))
	return backend.DataResponse{Frames: data.Frames{frames.Requests(rows, d.settings.traceLinks(answeringUID(ctx)), signalInfo, p.Executed(metrics, info.Query), notices)}}
}

// answeringUID is the uid of the data source a query was sent to, from the request's plugin
// context, so that links open the drill-down on the same data source.
func answeringUID(ctx context.Context) string {
	if s := backend.PluginConfigFromContext(ctx).DataSourceInstanceSettings; s != nil {
		return s.UID
	}
	return ""
}
