package plan

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/internal/option"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// Search plan bounds (see Requests.Searches).
const (
	// SearchWindow is the length of the sub-windows a long range is split into.
	SearchWindow = 30 * time.Minute
	// MaxWindows bounds the sub-windows of one query.
	MaxWindows = 8
	// MaxFindingSearches bounds the searches of findings' intervals in one query.
	MaxFindingSearches = 2 * MaxWindows
	// minFindingSearch is the shortest interval a finding is searched over: one that fired for
	// a single step has Start = End.
	minFindingSearch = time.Minute
	// RequestTail is how far past the range the metrics are read, for the requests that start
	// in the range and finish after it.
	RequestTail = 5 * time.Minute
	// MaxSearches bounds all the searches of one query: each is a call to the trace backend.
	// The findings' (MaxFindingSearches) and the slowest requests' (MaxSlowestSearches) fit
	// within it; the sub-windows' searches get the rest, the newest windows first.
	MaxSearches = 128
)

// RequestFilters are a requests query's own fields that its searches read.
type RequestFilters struct {
	// MinTTFT only asks for spans with a TTFT of at least this many seconds (0: all).
	MinTTFT float64
	// Limit bounds each search and the rows shown (≤ 0: traces.DefaultLimit for the rows).
	Limit         int
	AnomalousOnly bool
}

// Requests is the plan of a requests query, in two phases: the metrics first (a diagnosis
// plan over the range and a tail past it), then the trace searches, which depend on what the
// metrics answered (which instances match the filters, their typical TTFT, where findings
// fire): Searches writes them from that answer.
type Requests struct {
	// From and To are the query's range: the spans that start in it are searched.
	From, To        time.Time
	Instance, Model signals.Match
	Filters         RequestFilters
	// Metrics is phase 1. MetricsErr says why it could not be planned: the searches are then
	// planned without the metrics (a notice says what is lost), as when they cannot be read.
	Metrics    Diagnosis
	MetricsErr error
	// Rows is how many rows the answer shows: Filters.Limit, or traces.DefaultLimit.
	Rows int
	// window is the metrics' rate window: how long before a step its histograms' observations
	// were made.
	window time.Duration
}

// NewRequests plans a requests query's metrics: the diagnosis of every rule over the range,
// read RequestTail and a step past its end (capped at now, unless the range itself reaches
// past now) for the requests that finish after it, with the request join's signals and the
// TTFT median that ranks the requests. A filter that is not a valid value or regular
// expression fails the query.
func NewRequests(s Settings, sc Scope, f RequestFilters, now time.Time) (Requests, error) {
	instance, err := signals.ParseMatch("instance", sc.Instance)
	if err != nil {
		return Requests{}, err
	}
	model, err := signals.ParseMatch("model", sc.Model)
	if err != nil {
		return Requests{}, err
	}
	p := Requests{From: sc.From, To: sc.To, Instance: instance, Model: model, Filters: f, Rows: option.PositiveOr(f.Limit, traces.DefaultLimit)}
	msc := sc
	msc.To = sc.To.Add(RequestTail + Step(s, sc))
	if msc.To.After(now) {
		msc.To = now
		if sc.To.After(now) {
			msc.To = sc.To
		}
	}
	p.Metrics, p.MetricsErr = NewDiagnosis(s, msc, nil, append(series.JoinSignals(), series.TTFTP50))
	p.Metrics.Metrics.Histograms = append(p.Metrics.Metrics.Histograms, slowestHistograms...)
	p.window = signals.Window(s.Metrics.Scrape, p.Metrics.EvalStep)
	return p, nil
}

// RequestMetrics is what a requests query's searches read of its metrics' answer, as plain
// values; the zero value says that the metrics could not be read.
type RequestMetrics struct {
	// Set is the metrics' series; nil when they could not be read.
	Set      *series.Set
	Findings []diagnosis.Finding
	// Thresholds are, per instance, the TTFT from which a request stands out over the range
	// (a multiple of its typical TTFT: pkg/correlate's Thresholds); an instance without one
	// gets no threshold search.
	Thresholds map[string]float64
}

// Searches is phase 2 of a requests query: its trace searches, written from what the metrics
// answered.
type Searches struct {
	Queries []traces.Query
	// PostFilter: the instance or model filter could not be resolved from the metrics, so it
	// is applied to what the searches return (a notice says so).
	PostFilter bool
	Notices    []string
	// instance and model are the query's filters, for Filter.
	instance, model signals.Match
}

// Filter keeps the requests that pass the query's instance and model filters (a request
// without a model passes the model filter: the join may fill it, and the answer's selection
// of rows applies Requests.Model then) when the searches could not carry them (PostFilter);
// otherwise the searches did, and it returns reqs as they are. It filters reqs in place.
func (s Searches) Filter(reqs []traces.Request) []traces.Request {
	if !s.PostFilter {
		return reqs
	}
	return slices.DeleteFunc(reqs, func(r traces.Request) bool {
		return !s.instance.Matches(r.Instance) || (r.Model != "" && !s.model.Matches(r.Model))
	})
}

// Searches writes the trace searches of a requests query (pure) from the metrics' answer m.
// Instances come from the metrics when a filter needs resolving. The intervals where findings
// fire come first, each searched for its instance, so that the requests the diagnosis points
// at are found whatever the sub-window searches' limits keep; then the fleet's slowest
// requests, where the instances' TTFT histograms show them (slowestPlan); then each sub-window
// of the range is searched for each instance (or once for the fleet, without filters), and,
// for an instance with a threshold but no TTFT histogram, once more for its requests above the
// threshold. With AnomalousOnly the plain sub-window searches are left out: the findings'
// intervals and the slowest requests point at what stands out. At most MaxSearches are written:
// the sub-windows' searches past it are left out, the oldest first, and a notice says which
// part of the range and which instances were not searched.
func (r Requests) Searches(m RequestMetrics) Searches {
	from, to, query := r.From, r.To, r.Filters
	p := Searches{instance: r.Instance, model: r.Model}
	exact, isExact := r.Instance.Exact()
	var instances []string
	switch {
	case r.Instance.All() && r.Model.All():
	case m.Set == nil && isExact && r.Model.All():
		instances = []string{exact}
	case m.Set == nil:
		p.PostFilter = true
		p.Notices = append(p.Notices, "Without the metrics, the instance and model filters cannot be resolved to instances: they are applied to the requests the trace searches returned, so matching requests beyond the searches' limit are missing.")
	default:
		instances = metricInstances(m.Set, r.Instance)
		if len(instances) == 0 && isExact {
			// An instance the metrics do not know may still have spans.
			instances = []string{exact}
		}
		if len(instances) == 0 {
			p.Notices = append(p.Notices, "No instance in the metrics matches the instance and model filters: no trace was searched.")
			return p
		}
	}
	var skipped int
	p.Queries, skipped = findingSearches(m.Findings, instances, query, from, to)
	if skipped > 0 {
		p.Notices = append(p.Notices, fmt.Sprintf("%d more interval(s) where findings fire were not searched on their own (at most %d are): the sub-window searches cover them.", skipped, MaxFindingSearches))
	}
	thresholds := m.Thresholds
	slow := instances
	if slow == nil && !p.PostFilter {
		slow = slices.Sorted(maps.Keys(thresholds))
	}
	// The slowest requests, where the histograms show them, replace the threshold searches of
	// the instances they cover.
	covered := map[string]bool{}
	if sp, ok := newSlowestPlan(m.Set, thresholds, instances, from, to, r.window); ok && !p.PostFilter {
		qs, y := sp.searches(query.MinTTFT)
		if !math.IsInf(y, 1) {
			for _, in := range sp.instances {
				covered[in.name] = true
			}
			p.Queries = append(p.Queries, qs...)
		}
		if y > 1 {
			p.Notices = append(p.Notices, slowestNotice(y, len(qs)))
		}
	}
	n := int(math.Ceil(float64(to.Sub(from)) / float64(SearchWindow)))
	windows := traces.Windows(from, to, min(max(n, 1), MaxWindows))
	perWindow := make([][]traces.Query, len(windows))
	for i, w := range windows {
		base := traces.Query{From: w[0], To: w[1], MinTTFT: query.MinTTFT, Limit: query.Limit}
		plain := !query.AnomalousOnly || len(thresholds) == 0
		if plain && instances == nil {
			perWindow[i] = append(perWindow[i], base)
		}
		// An instance's searches stay together, so that where the cap cuts a window it leaves out
		// whole instances but one, whose threshold search may go while its plain one stays.
		for _, inst := range slow {
			if plain && instances != nil {
				sq := base
				sq.Instances = []string{inst}
				perWindow[i] = append(perWindow[i], sq)
			}
			if th, ok := thresholds[inst]; ok && !covered[inst] {
				sq := base
				sq.Instances, sq.MinTTFT = []string{inst}, math.Max(query.MinTTFT, th)
				perWindow[i] = append(perWindow[i], sq)
			}
		}
	}
	kept, notice := capWindows(windows, perWindow, len(p.Queries))
	p.Queries = append(p.Queries, slices.Concat(kept...)...)
	if notice != "" {
		p.Notices = append(p.Notices, notice)
	}
	return p
}

// capWindows keeps, of the sub-windows' searches (perWindow, one list per window of windows),
// as many as MaxSearches leaves after the before searches already planned, the newest windows
// first, and says what the rest would have searched ("" when every search is kept).
func capWindows(windows [][2]time.Time, perWindow [][]traces.Query, before int) ([][]traces.Query, string) {
	budget := max(MaxSearches-before, 0)
	total := before
	kept := make([][]traces.Query, len(perWindow))
	for i := len(perWindow) - 1; i >= 0; i-- {
		total += len(perWindow[i])
		n := min(len(perWindow[i]), budget)
		kept[i], budget = perWindow[i][:n], budget-n
	}
	if total <= MaxSearches {
		return kept, ""
	}
	// Cut from the newest window down: the windows left out whole are the oldest, and at most
	// one window, the newest of those cut, keeps part of its searches.
	var parts []string
	whole := -1
	for i := range perWindow {
		if len(kept[i]) == 0 && len(perWindow[i]) > 0 {
			whole = i
		}
	}
	if whole >= 0 {
		parts = append(parts, fmt.Sprintf("the range from %s to %s (%s of %s)", series.Stamp(windows[0][0]), series.Stamp(windows[whole][1]),
			windows[whole][1].Sub(windows[0][0]), windows[len(windows)-1][1].Sub(windows[0][0])))
	}
	if i := whole + 1; i < len(perWindow) && len(kept[i]) < len(perWindow[i]) {
		all, left := searchedInstances(perWindow[i]), searchedInstances(perWindow[i][len(kept[i]):])
		parts = append(parts, fmt.Sprintf("from %s to %s, the searches of %d of the %d instance(s) (%s)", series.Stamp(windows[i][0]), series.Stamp(windows[i][1]),
			len(left), len(all), nameSome(left)))
	}
	return kept, fmt.Sprintf("This query needs %d trace searches and at most %d are sent (the findings' intervals and the slowest requests first, then the sub-windows from the newest). Not searched: %s. The requests only those searches would have found are missing: narrow the instance filter or the time range.",
		total, MaxSearches, strings.Join(parts, "; "))
}

// nameSome lists names, the first few when they are many.
func nameSome(names []string) string {
	const few = 3
	if len(names) <= few+1 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:few], ", "), len(names)-few)
}

// searchedInstances are the instances that searches name, in their order, each once.
func searchedInstances(qs []traces.Query) []string {
	var out []string
	for _, q := range qs {
		for _, in := range q.Instances {
			if !slices.Contains(out, in) {
				out = append(out, in)
			}
		}
	}
	return out
}

// Executed is the requests plan as fetched, for the frames' executedQueryString: the metrics'
// plan (empty when they could not be read), then the searches as sent (traces.SearchInfo.Query).
func (r Requests) Executed(metrics, searches string) string {
	return joinNonEmpty(metrics, searches)
}

// findingSearches are the searches of the intervals where findings fire, each for its
// instance (one of instances, or any when instances is nil): clipped to the range, merged
// where one instance's intervals overlap, the most severe first, at most MaxFindingSearches
// (the count left out is returned). The findings were diagnosed with the query's model filter,
// so their instances serve the model.
func findingSearches(findings []diagnosis.Finding, instances []string, query RequestFilters, from, to time.Time) ([]traces.Query, int) {
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
	skipped := max(len(merged)-MaxFindingSearches, 0)
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

// joinNonEmpty joins the parts that are not empty, one per line.
func joinNonEmpty(parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "\n")
}
