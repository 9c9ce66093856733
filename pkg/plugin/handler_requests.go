package plugin

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
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
// instance's typical TTFT. The searches then carry the filters to the backend, one per
// instance and sub-window, so that no filter runs after a backend's limit, plus one per
// instance and sub-window for its requests above the instance's threshold, so that the
// slowest requests of the range are found whatever the limit.
func handleRequests(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	instance, err := filterOf("instance", query.Instance)
	if err != nil {
		return badQuery(err)
	}
	model, err := filterOf("model", query.Model)
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
			if instance.match(r.Instance) && (r.Model == "" || model.match(r.Model)) {
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
		if r.Model != "" && !model.match(r.Model) {
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

// planSearches writes the searches of a requests query (pure). Instances come from the
// metrics when a filter needs resolving; each sub-window of the range is searched for each
// instance (or once for the fleet, without filters), and, where the metrics give an instance's
// typical TTFT, once more for its requests above the threshold that makes them stand out.
// With anomalousOnly only the threshold searches are needed.
func planSearches(query Query, instance, model filter, in correlate.Input, from, to time.Time) searchPlan {
	p := searchPlan{limit: query.Limit}
	if p.limit <= 0 {
		p.limit = traces.DefaultLimit
	}
	var instances []string
	switch {
	case instance.re == nil && model.re == nil:
	case in.Set == nil && instance.exact != nil && model.re == nil:
		instances = instance.exact
	case in.Set == nil:
		p.postFilter = true
		p.notices = append(p.notices, "Without the metrics, the instance and model filters cannot be resolved to instances: they are applied to the requests the trace searches returned, so matching requests beyond the searches' limit are missing.")
	default:
		instances = metricInstances(in.Set, instance)
		if len(instances) == 0 && instance.exact != nil {
			// An instance the metrics do not know may still have spans.
			instances = instance.exact
		}
		if len(instances) == 0 {
			p.notices = append(p.notices, "No instance in the metrics matches the instance and model filters: no trace was searched.")
			return p
		}
	}
	thresholds := correlate.Thresholds(in.Typical, 0)
	slow := instances
	if slow == nil && !p.postFilter {
		slow = sortedKeys(thresholds)
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

// metricInstances lists the instances of the metrics' series that match the instance filter
// (the series were fetched with the model filter already).
func metricInstances(set *series.Set, instance filter) []string {
	var out []string
	for _, k := range set.Keys() {
		if k.Instance != "" && instance.match(k.Instance) && !slices.Contains(out, k.Instance) {
			out = append(out, k.Instance)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// filter is a query's instance or model filter: an exact value, a regular expression (Grafana
// interpolates multi-value template variables as one), or empty for all.
type filter struct {
	re *regexp.Regexp
	// exact holds the value when it has no regular-expression syntax but dots (which match
	// themselves too, as in "10.0.0.1:8000"), so that it is an instance to search for even
	// when the metrics cannot be read.
	exact []string
}

func filterOf(what, v string) (filter, error) {
	if v == "" {
		return filter{}, nil
	}
	_, err := regexp.Compile(v) // alone too: anchored, an unbalanced ")" closes the group and passes
	re, anchoredErr := regexp.Compile("^(?:" + v + ")$")
	if err == nil {
		err = anchoredErr
	}
	if err != nil {
		return filter{}, fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", what, v, err)
	}
	f := filter{re: re}
	if !strings.ContainsAny(v, `\^$*+?()[]{}|`) {
		f.exact = []string{v}
	}
	return f, nil
}

func (f filter) match(v string) bool { return f.re == nil || f.re.MatchString(v) }

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
