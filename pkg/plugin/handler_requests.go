package plugin

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// Search plan bounds (see planSearches).
const (
	// searchWindow is the length of the sub-windows a long range is split into.
	searchWindow = 30 * time.Minute
	// maxWindows bounds the sub-windows of one query.
	maxWindows = 8
	// searchParallel bounds the trace searches of one query in flight at once.
	searchParallel = 4
	// requestTail is how far past the range the metrics are read, for the requests that start
	// in the range and finish after it.
	requestTail = 5 * time.Minute
)

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
// slowest requests of the range are found whatever the limit (planSearches).
func handleRequests(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	instance, err := signals.ParseMatch("instance", query.Instance)
	if err != nil {
		return badQuery(err)
	}
	model, err := signals.ParseMatch("model", query.Model)
	if err != nil {
		return badQuery(err)
	}
	from, to := q.TimeRange.From, q.TimeRange.To
	mq := q
	mq.TimeRange.To = to.Add(requestTail + d.step(q))
	if now := time.Now(); mq.TimeRange.To.After(now) {
		mq.TimeRange.To = now
		if to.After(now) {
			mq.TimeRange.To = to
		}
	}
	var notices []string
	executed := []string{}
	diag, merr := d.diagnose(ctx, mq, query, nil, append(correlate.Signals(), series.TTFTP50))
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

	p := planSearches(query, instance, model, in, from, to)
	notices = append(notices, p.notices...)
	reqs, info, _, err := traces.SearchAll(ctx, d.traces, p.queries, searchParallel)
	if err != nil {
		return errorResponse(err)
	}
	executed = append(executed, info.Query)
	if diag != nil {
		executed = append(executed, diag.Fetch.Queries...)
	}
	if p.postFilter {
		kept := reqs[:0]
		for _, r := range reqs {
			if instance.Matches(r.Instance) && (r.Model == "" || model.Matches(r.Model)) {
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
		notices = append(notices, fmt.Sprintf("Some of the %d trace searches stopped at their limit of %d traces: requests of those instances and sub-windows may be missing; narrow the range or raise the limit.", len(p.queries), max(query.Limit, 0)))
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
		if r.Model != "" && !model.Matches(r.Model) {
			continue
		}
		if query.AnomalousOnly && len(r.Reasons) == 0 {
			continue
		}
		rows = append(rows, r)
	}
	correlate.Rank(rows)
	if limit := p.limit; len(rows) > limit {
		notices = append(notices, fmt.Sprintf("%d requests were examined; the %d that stand out most from their instance's typical TTFT are shown.", len(rows), limit))
		rows = rows[:limit]
	}
	links := frames.TraceLinks{DatasourceUID: d.settings.TracesDatasourceUID, Backend: d.settings.TracesBackend, VLLMUID: answeringUID(ctx)}
	return backend.DataResponse{Frames: data.Frames{frames.Requests(rows, links, signalInfo, strings.Join(executed, "\n"), notices)}}
}

// searchPlan is the trace searches of one requests query.
type searchPlan struct {
	queries []traces.Query
	// postFilter: the instance or model filter could not be resolved from the metrics, so it
	// is applied to what the searches return (a notice says so).
	postFilter bool
	// limit is the query's limit, defaults filled: how many rows are shown.
	limit   int
	notices []string
}

// maxFindingSearches bounds the searches of findings' intervals in one query.
const maxFindingSearches = 2 * maxWindows

// minFindingSearch is the shortest interval a finding is searched over: one that fired for a
// single step has Start = End.
const minFindingSearch = time.Minute

// planSearches writes the searches of a requests query (pure). Instances come from the
// metrics when a filter needs resolving. The intervals where findings fire come first, each
// searched for its instance, so that the requests the diagnosis points at are found whatever
// the sub-window searches' limits keep; then each sub-window of the range is searched for each
// instance (or once for the fleet, without filters), and, where the metrics give an instance's
// typical TTFT, once more for its requests above the threshold that makes them stand out.
// With anomalousOnly the plain sub-window searches are left out: the findings' intervals and
// the thresholds point at what stands out.
func planSearches(query Query, instance, model signals.Match, in correlate.Input, from, to time.Time) searchPlan {
	p := searchPlan{limit: query.Limit}
	if p.limit <= 0 {
		p.limit = traces.DefaultLimit
	}
	exact, isExact := instance.Exact()
	var instances []string
	switch {
	case instance.All() && model.All():
	case in.Set == nil && isExact && model.All():
		instances = []string{exact}
	case in.Set == nil:
		p.postFilter = true
		p.notices = append(p.notices, "Without the metrics, the instance and model filters cannot be resolved to instances: they are applied to the requests the trace searches returned, so matching requests beyond the searches' limit are missing.")
	default:
		instances = metricInstances(in.Set, instance)
		if len(instances) == 0 && isExact {
			// An instance the metrics do not know may still have spans.
			instances = []string{exact}
		}
		if len(instances) == 0 {
			p.notices = append(p.notices, "No instance in the metrics matches the instance and model filters: no trace was searched.")
			return p
		}
	}
	var skipped int
	p.queries, skipped = findingSearches(in.Findings, instances, query, from, to)
	if skipped > 0 {
		p.notices = append(p.notices, fmt.Sprintf("%d more interval(s) where findings fire were not searched on their own (at most %d are): the sub-window searches cover them.", skipped, maxFindingSearches))
	}
	thresholds := correlate.Thresholds(in.Typical, 0)
	slow := instances
	if slow == nil && !p.postFilter {
		slow = slices.Sorted(maps.Keys(thresholds))
	}
	n := int(math.Ceil(float64(to.Sub(from)) / float64(searchWindow)))
	for _, w := range traces.Windows(from, to, min(max(n, 1), maxWindows)) {
		base := traces.Query{From: w[0], To: w[1], MinTTFT: query.MinTTFT, Limit: query.Limit}
		if !query.AnomalousOnly || len(thresholds) == 0 {
			if instances == nil {
				p.queries = append(p.queries, base)
			}
			for _, inst := range instances {
				sq := base
				sq.Instances = []string{inst}
				p.queries = append(p.queries, sq)
			}
		}
		for _, inst := range slow {
			th, ok := thresholds[inst]
			if !ok {
				continue
			}
			sq := base
			sq.Instances, sq.MinTTFT = []string{inst}, math.Max(query.MinTTFT, th)
			p.queries = append(p.queries, sq)
		}
	}
	return p
}

// findingSearches are the searches of the intervals where findings fire, each for its
// instance (one of instances, or any when instances is nil): clipped to the range, merged
// where one instance's intervals overlap, the most severe first, at most maxFindingSearches
// (the count left out is returned). The findings were diagnosed with the query's model filter,
// so their instances serve the model.
func findingSearches(findings []diagnosis.Finding, instances []string, query Query, from, to time.Time) ([]traces.Query, int) {
	type interval struct {
		instance   string
		start, end time.Time
		severity   int
	}
	var ivs []interval
	for _, f := range findings {
		inst := f.Key.Instance
		if inst == "" || (instances != nil && !slices.Contains(instances, inst)) {
			continue
		}
		start, end := maxTime(f.Start, from), minTime(maxTime(f.End, f.Start.Add(minFindingSearch)), to)
		if !start.Before(end) {
			continue
		}
		ivs = append(ivs, interval{instance: inst, start: start, end: end, severity: f.Severity.Rank()})
	}
	slices.SortFunc(ivs, func(a, b interval) int {
		return cmp.Or(strings.Compare(a.instance, b.instance), a.start.Compare(b.start))
	})
	merged := ivs[:0]
	for _, iv := range ivs {
		if last := len(merged) - 1; last >= 0 && merged[last].instance == iv.instance && !iv.start.After(merged[last].end) {
			merged[last].end = maxTime(merged[last].end, iv.end)
			merged[last].severity = max(merged[last].severity, iv.severity)
			continue
		}
		merged = append(merged, iv)
	}
	slices.SortStableFunc(merged, func(a, b interval) int { return b.severity - a.severity })
	skipped := max(len(merged)-maxFindingSearches, 0)
	merged = merged[:len(merged)-skipped]
	out := make([]traces.Query, len(merged))
	for i, iv := range merged {
		out[i] = traces.Query{From: iv.start, To: iv.end, Instances: []string{iv.instance}, MinTTFT: query.MinTTFT, Limit: query.Limit}
	}
	return out, skipped
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// metricInstances lists the instances of the metrics' series that match the instance filter
// (the series were fetched with the model filter already).
func metricInstances(set *series.Set, instance signals.Match) []string {
	var out []string
	for _, k := range set.Keys() {
		if k.Instance != "" && instance.Matches(k.Instance) && !slices.Contains(out, k.Instance) {
			out = append(out, k.Instance)
		}
	}
	slices.Sort(out)
	return out
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
