package traces

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Source reads vLLM requests from a trace backend.
type Source interface {
	// Search returns the vLLM requests that started in the query's range and pass its
	// filters, newest first, at most Query.Limit of them.
	Search(ctx context.Context, q Query) ([]Request, SearchInfo, error)
	// Get returns the vLLM request of one trace. When the trace holds several vLLM spans
	// (a gateway that called vLLM more than once), the earliest is returned.
	Get(ctx context.Context, traceID string) (Request, error)
	// Check says whether the backend answers and whether vLLM spans started in the last
	// CheckWindow, and how long ago the newest did.
	Check(ctx context.Context) (Health, error)
}

// Query selects vLLM requests.
type Query struct {
	// From and To bound the requests' start (arrival) time; both are required.
	From, To time.Time
	// Instances keeps only requests whose Instance is one of them (exact values; empty keeps
	// all).
	Instances []string
	// Models keeps only requests whose model attribute (Options.ModelAttribute) is one of them;
	// empty keeps all. The backends match it in the search (Tempo a TraceQL condition, Jaeger
	// a tag), so a span without the attribute is not returned: V1 spans carry none, so set it
	// only for an instance whose requests the metrics cannot attribute to one model (it serves
	// several, of which the filter keeps some); elsewhere the caller takes the model from the
	// metrics.
	Models []string
	// MinTTFT keeps only requests whose time to first token is at least this many seconds
	// (0 keeps all; a request without the attribute is then dropped).
	MinTTFT float64
	// Limit bounds the answer (0 means Options.DefaultLimit; above Options.MaxLimit it is
	// lowered to that).
	Limit int
	// Generation is the span vocabulary the searched spans can carry (see SpanAttributes):
	// from the metrics of the instances searched, or from a span of the same instance already
	// read. Empty, GenerationNone or GenerationMix: either. A backend that returns only the
	// attributes it asks for (Tempo's select()) asks for that vocabulary's; one that returns
	// whole spans (Jaeger) has no use for it.
	Generation vllm.Generation
}

// SearchInfo describes a search's answer, for the notices shown beside it.
type SearchInfo struct {
	// Query is what was sent: the TraceQL for Tempo, the query string for Jaeger.
	Query string
	// Traces is the number of traces the backend returned.
	Traces int
	// Truncated: the backend returned as many traces as were asked, so requests of the range
	// may be missing. Narrow the range or raise the limit.
	Truncated bool
	// Incomplete counts returned requests that lack latency attributes (see Request.Missing).
	Incomplete int
	// SpansSkipped counts spans not looked at because their trace exceeded MaxSpansPerTrace.
	SpansSkipped int
}

// Notices say what a search's answer lacks, in words a user can act on: the requests a search
// that stopped at its limit left out, the spans without latency attributes, the spans of very
// large traces not read. searches is how many searches the answer merges (SearchAll), limit
// the limit each of them had (the query's, or the default when it gave none).
func (i SearchInfo) Notices(searches, limit int) []string {
	var out []string
	if i.Truncated {
		out = append(out, fmt.Sprintf("Some of the %d trace searches stopped at their limit of %d traces: requests of those instances and sub-windows may be missing; narrow the range or raise the limit.", searches, max(limit, 0)))
	}
	if i.Incomplete > 0 {
		out = append(out, fmt.Sprintf("%d span(s) lack latency attributes (an older vLLM, or a span that is not vLLM's): they are shown with what they carry, and their missing stages are empty.", i.Incomplete))
	}
	if i.SpansSkipped > 0 {
		out = append(out, fmt.Sprintf("%d span(s) of very large traces were not read.", i.SpansSkipped))
	}
	return out
}

// CheckWindow is how far back Check looks for vLLM spans, and the health check for vLLM
// series: a day, so that a quiet night or a stopped test fleet still shows what there is, with
// its age.
const CheckWindow = 24 * time.Hour

// InCheckWindow says CheckWindow as health messages say it: "in the last 24 hours".
func InCheckWindow() string { return fmt.Sprintf("in the last %d hours", int(CheckWindow.Hours())) }

// Health is the answer of Check.
type Health struct {
	// VLLMSpans: at least one vLLM span started in the last CheckWindow.
	VLLMSpans bool
	// Message says what was found, for Save & test.
	Message string
}

// Validate checks a query and fills its defaults from the options (see WithDefaults).
func (o Options) Validate(q Query) (Query, error) {
	if q.From.IsZero() || q.To.IsZero() {
		return q, fmt.Errorf("%w: the time range needs a start and an end", ErrInvalidQuery)
	}
	if !q.To.After(q.From) {
		return q, fmt.Errorf("%w: the range ends (%s) before it starts (%s)", ErrInvalidQuery,
			q.To.Format(time.RFC3339), q.From.Format(time.RFC3339))
	}
	if math.IsNaN(q.MinTTFT) || math.IsInf(q.MinTTFT, 0) || q.MinTTFT < 0 {
		return q, fmt.Errorf("%w: minTtft must be a number of seconds ≥ 0, not %v", ErrInvalidQuery, q.MinTTFT)
	}
	if q.Limit < 0 {
		return q, fmt.Errorf("%w: limit must be ≥ 0, not %d", ErrInvalidQuery, q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = o.DefaultLimit
	}
	q.Limit = min(q.Limit, o.MaxLimit)
	return q, nil
}

// keep applies the filters that the backends cannot apply, or apply only coarsely.
func (q Query) keep(r Request) bool {
	if r.Start.Before(q.From) || r.Start.After(q.To) {
		return false
	}
	if q.MinTTFT > 0 && (!r.Present.Has(FieldTTFT) || r.TTFT < q.MinTTFT) {
		return false
	}
	if len(q.Instances) > 0 && !slices.Contains(q.Instances, r.Instance) {
		return false
	}
	if len(q.Models) > 0 && !slices.Contains(q.Models, r.Model) {
		return false
	}
	return true
}

// Finish filters, orders newest first and bounds a validated query's requests, and counts
// incomplete ones in info. It reuses the array of reqs.
func (q Query) Finish(reqs []Request, info *SearchInfo) []Request {
	out := reqs[:0]
	for _, r := range reqs {
		if q.keep(r) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int { return b.Start.Compare(a.Start) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	for i := range out {
		if len(out[i].Missing()) > 0 {
			info.Incomplete++
		}
	}
	return out
}

// Pick returns the earliest of a trace's vLLM requests, or ErrNotVLLM naming the spans left
// unread (st) when there is none.
func (o Options) Pick(traceID string, reqs []Request, st WalkStats) (Request, error) {
	if len(reqs) == 0 {
		err := fmt.Errorf("%w: trace %s has no span %q of service %q", ErrNotVLLM, traceID, o.SpanName, o.ServiceName)
		if st.SpansSkipped > 0 {
			err = fmt.Errorf("%w among its first %d spans (%d more not read)", err, o.MaxSpansPerTrace, st.SpansSkipped)
		}
		return Request{}, err
	}
	return slices.MinFunc(reqs, func(a, b Request) int { return a.Start.Compare(b.Start) }), nil
}
