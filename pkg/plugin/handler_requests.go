package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// searchParallel bounds the trace searches of one query in flight at once.
const searchParallel = 4

// handleRequests answers a requests query: the vLLM spans of the range, each joined with the
// metric state at its start, the worst while it ran and the findings active, flagged when it
// stands out, and ranked by how far it stands from its instance's typical TTFT (DESIGN §3, §5).
//
// The metrics come first: they name the instances that match the query's filters (the trace
// backends can only match exact instance values, and V1 spans carry no model) and give each
// instance's typical TTFT and its findings. The searches then carry the filters to the
// backend: first one per interval where a finding fires, for its instance, then one per
// instance and sub-window, so that no filter runs after a backend's limit, plus one per
// instance and sub-window for its requests above the instance's threshold, so that the
// slowest requests of the range are found whatever the limit (plan.NewRequests, then its
// Searches from the metrics' answer).
func handleRequests(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	p, err := plan.NewRequests(d.planSettings(), scopeOf(q, query),
		plan.RequestFilters{MinTTFT: query.MinTTFT, Limit: query.Limit, AnomalousOnly: query.AnomalousOnly}, time.Now())
	if err != nil {
		return badQuery(err)
	}
	from, to := p.From, p.To
	var notices []string
	// Phase 1: the metrics.
	var diag *Diagnosis
	merr := p.MetricsErr
	if merr == nil {
		diag, merr = d.diagnosePlan(ctx, p.Metrics)
	}
	in := correlate.Input{From: from, To: to}
	if merr != nil {
		notices = append(notices, "The metrics could not be read, so requests are shown without their metric state, findings and ranking: "+merr.Error())
	} else {
		in.Set, in.Findings = diag.Set, diag.Result.Findings
		in.Typical = correlate.TypicalTTFT(diag.Set, from, to)
		for _, js := range correlate.Joined {
			if reason, ok := diag.Set.Absent[js.Signal]; ok {
				notices = append(notices, string(js.Signal)+" is not joined: "+reason)
			}
		}
	}

	// Phase 2: the searches depend on what the metrics answered.
	sp := p.Searches(in)
	notices = append(notices, sp.Notices...)
	reqs, info, _, err := traces.SearchAll(ctx, d.traces, sp.Queries, searchParallel)
	if err != nil {
		return errorResponse(err)
	}
	metrics := ""
	if diag != nil {
		metrics = diag.Executed
	}
	executed := p.Executed(metrics, info.Query)
	if sp.PostFilter {
		kept := reqs[:0]
		for _, r := range reqs {
			if p.Instance.Matches(r.Instance) && (r.Model == "" || p.Model.Matches(r.Model)) {
				kept = append(kept, r)
			}
		}
		reqs = kept
	}
	in.Requests, in.Truncated = reqs, info.Truncated
	res := correlate.Join(in, correlate.Options{})

	cov := res.Coverage.Text()
	if query.MinTTFT > 0 {
		cov += fmt.Sprintf(" (only spans with TTFT ≥ %g s were asked for)", query.MinTTFT)
	}
	if by := instanceCoverage(in, res.Coverage); by != "" {
		cov += "; " + by
	}
	notices = append([]string{cov}, notices...)
	if info.Truncated {
		notices = append(notices, fmt.Sprintf("Some of the %d trace searches stopped at their limit of %d traces: requests of those instances and sub-windows may be missing; narrow the range or raise the limit.", len(sp.Queries), max(query.Limit, 0)))
	}
	if info.Incomplete > 0 {
		notices = append(notices, fmt.Sprintf("%d span(s) lack latency attributes (an older vLLM, or a span that is not vLLM's): they are shown with what they carry, and their missing stages are empty.", info.Incomplete))
	}
	if info.SpansSkipped > 0 {
		notices = append(notices, fmt.Sprintf("%d span(s) of very large traces were not read.", info.SpansSkipped))
	}
	notices = append(notices, res.Notices...)

	rows := res.Rows[:0]
	for _, r := range res.Rows {
		// A model known only from the metrics is filtered now, once the join has filled it.
		if r.Model != "" && !p.Model.Matches(r.Model) {
			continue
		}
		if query.AnomalousOnly && len(r.Reasons) == 0 {
			continue
		}
		rows = append(rows, r)
	}
	correlate.Rank(rows)
	if limit := sp.Limit; len(rows) > limit {
		notices = append(notices, fmt.Sprintf("%d requests were examined; the %d that stand out most from their instance's typical TTFT are shown.", len(rows), limit))
		rows = rows[:limit]
	}
	links := frames.TraceLinks{DatasourceUID: d.settings.TracesDatasourceUID, Backend: d.settings.TracesBackend, VLLMUID: answeringUID(ctx)}
	return backend.DataResponse{Frames: data.Frames{frames.Requests(rows, links, signalInfo, executed, notices)}}
}

// answeringUID is the uid of the data source a query was sent to, from the request's plugin
// context, so that links open the drill-down on the same data source.
func answeringUID(ctx context.Context) string {
	if s := backend.PluginConfigFromContext(ctx).DataSourceInstanceSettings; s != nil {
		return s.UID
	}
	return ""
}

// instanceCoverage names the instances whose share of requests examined differs from the
// whole's by more than a factor of two, with their shares; empty when none does.
func instanceCoverage(in correlate.Input, all correlate.Coverage) string {
	if !all.Known() || all.Finished <= 0 {
		return ""
	}
	whole := float64(all.Spans) / all.Finished
	by := correlate.CoverageByInstance(in)
	var parts []string
	for _, inst := range slices.Sorted(maps.Keys(by)) {
		c := by[inst]
		if !c.Known() || c.Finished <= 0 {
			continue
		}
		share := float64(c.Spans) / c.Finished
		if share > 2*whole || share < whole/2 {
			parts = append(parts, fmt.Sprintf("%s %.1f%% (%d of %.0f)", inst, 100*share, c.Spans, c.Finished))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f%% of the range's requests were examined overall; where it differs, per instance: %s", 100*whole, strings.Join(parts, ", "))
}
