// Package tempo is the traces.Source of Grafana Tempo, over its HTTP API.
package tempo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/httpbackend"
	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Source reads vLLM requests from Grafana Tempo.
//
// Search sends TraceQL, with the instance, model and TTFT filters as its conditions so that
// Tempo applies them before its limit, and a select() of the attributes an answer reads (those
// of the spans' vocabulary, traces.SpanAttributes; Tempo returns the attributes the conditions
// name without asking), so the search answer itself carries whole requests: one request per
// search instead of one per trace found, and no trace bodies (whose size a gateway's spans can
// inflate) to read. The hint with(most_recent=true) makes the limit keep the newest traces, not
// the first found. Every query stays under MaxTraceQLBytes: a search whose filter lists would
// pass it is split into several.
//
// select() needs Tempo 2.2; the with() hints parse from Tempo 2.4, and most_recent is applied
// from 2.8 (an older Tempo ignores it, and a search that reaches its limit keeps the first
// traces found).
type Source struct {
	b httpbackend.Backend
}

// MaxTraceQLBytes bounds every TraceQL query sent to Tempo. Tempo's TraceQL lexer reads the query
// through Go's text/scanner, whose buffer holds 1,024 bytes, and looks ahead at each attribute
// name and each number on a copy of the scanner: a copy that refills the buffer consumes input
// that the lexer then never sees, so a token that straddles byte 1,024 ends the query early
// ("parse error at line 1, col 1025: syntax error: unexpected $end"), in every Tempo from 2.2 to
// 3.1. Whether a longer query fails depends on where its tokens fall; one shorter than the
// buffer is read whole at once, and no look-ahead can refill it.
const MaxTraceQLBytes = 1000

// New returns a Tempo source at baseURL (the Tempo query frontend, or Grafana Cloud's Tempo
// endpoint) that sends its requests through client, which carries auth and timeouts.
func New(client *http.Client, baseURL string, opts traces.Options) (*Source, error) {
	b, err := httpbackend.New("Tempo", client, baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Source{b}, nil
}

// tempoSpansPerSpanSet is the spss of a search: how many matching spans of one trace come
// back. A trace holds more than one vLLM span only when a gateway calls vLLM several times.
const tempoSpansPerSpanSet = 100

// Search implements traces.Source. A query whose TraceQL would pass MaxTraceQLBytes is sent as
// several, each for part of its instances or models (see split); their answers are merged,
// and SearchInfo.Query lists each TraceQL sent, one per line.
func (t *Source) Search(ctx context.Context, q traces.Query) ([]traces.Request, traces.SearchInfo, error) {
	q, err := t.b.Opts.Validate(q)
	if err != nil {
		return nil, traces.SearchInfo{}, err
	}
	parts, err := t.split(q)
	if err != nil {
		return nil, traces.SearchInfo{}, err
	}
	var (
		info    traces.SearchInfo
		reqs    []traces.Request
		queries []string
	)
	for _, p := range parts {
		got, pinfo, err := t.searchOne(ctx, p)
		queries = append(queries, pinfo.Query)
		info.Query = strings.Join(queries, "\n")
		if err != nil {
			return nil, info, err
		}
		info.Traces += pinfo.Traces
		info.SpansSkipped += pinfo.SpansSkipped
		info.Truncated = info.Truncated || pinfo.Truncated
		reqs = append(reqs, got...)
	}
	return q.Finish(reqs, &info), info, nil
}

// searchOne sends one validated query whose TraceQL is under MaxTraceQLBytes.
func (t *Source) searchOne(ctx context.Context, q traces.Query) ([]traces.Request, traces.SearchInfo, error) {
	tql := t.traceQL(q)
	info := traces.SearchInfo{Query: tql}
	params := url.Values{
		"q":     {tql},
		"start": {strconv.FormatInt(q.From.Unix(), 10)},
		// Tempo's end is whole seconds: round up so the range's last second is searched.
		"end":   {strconv.FormatInt(q.To.Add(time.Second-1).Unix(), 10)},
		"limit": {strconv.Itoa(q.Limit)},
		"spss":  {strconv.Itoa(min(tempoSpansPerSpanSet, t.b.Opts.MaxSpansPerTrace))},
	}
	status, body, err := t.b.Get(ctx, "/api/search", params)
	if err != nil {
		return nil, info, err
	}
	if status != http.StatusOK {
		if status == http.StatusBadRequest {
			return nil, info, t.refused(tql, string(body))
		}
		return nil, info, t.b.StatusError(status, string(body))
	}
	var resp tempoSearchResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, info, t.b.Fail(status, "answered with something other than Tempo's search JSON", err)
	}
	info.Traces = len(resp.Traces)
	info.Truncated = len(resp.Traces) >= q.Limit
	reqs, err := t.searchRequests(resp, q, &info)
	if err != nil {
		return nil, info, err
	}
	return reqs, info, nil
}

// refused explains Tempo's 400 to a search, naming the query: Tempo answers a query its TraceQL
// parser cannot read with "invalid TraceQL query: ...", and other bad parameters in their own
// words.
func (t *Source) refused(tql, body string) error {
	detail := httpbackend.Detail(body)
	who := "Tempo refused the search"
	if strings.Contains(detail, "TraceQL") {
		who = "Tempo's TraceQL parser refused the query"
	}
	return t.b.Fail(http.StatusBadRequest, fmt.Sprintf("%s %s: %s (the plugin's searches need Tempo 2.8 or later: "+
		"select() from 2.2, with(most_recent=true) parsed from 2.4 and applied from 2.8)", who, tql, detail), nil)
}

// split returns q as queries whose TraceQL is under MaxTraceQLBytes: q itself when it is, else
// the halves of its longer filter list (instances or models), each split again. A query that
// is too long for one instance and one model cannot be split: the settings or values that
// make it so are too long, and it fails as the user's (traces.ErrInvalidQuery).
func (t *Source) split(q traces.Query) ([]traces.Query, error) {
	tql := t.traceQL(q)
	if len(tql) < MaxTraceQLBytes {
		return []traces.Query{q}, nil
	}
	a, b := q, q
	switch n, m := len(q.Instances), len(q.Models); {
	case n > 1 && n >= m:
		a.Instances, b.Instances = q.Instances[:n/2:n/2], q.Instances[n/2:]
	case m > 1:
		a.Models, b.Models = q.Models[:m/2:m/2], q.Models[m/2:]
	default:
		return nil, fmt.Errorf("%w: the TraceQL search %s is %d bytes, and Tempo's TraceQL parser misreads queries longer than 1,024 bytes "+
			"(the plugin keeps each under %d bytes): shorten the service name, span name or attribute settings, or the instance or model value",
			traces.ErrInvalidQuery, clip.To(tql, 200), len(tql), MaxTraceQLBytes)
	}
	first, err := t.split(a)
	if err != nil {
		return nil, err
	}
	second, err := t.split(b)
	if err != nil {
		return nil, err
	}
	return append(first, second...), nil
}

// Get implements traces.Source.
func (t *Source) Get(ctx context.Context, traceID string) (traces.Request, error) {
	id, err := traces.NormalizeTraceID(traceID)
	if err != nil {
		return traces.Request{}, err
	}
	status, body, err := t.b.Get(ctx, "/api/v2/traces/"+id, nil)
	if err != nil {
		return traces.Request{}, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		return traces.Request{}, fmt.Errorf("%w: Tempo has no trace %s", traces.ErrNotFound, id)
	case http.StatusBadRequest:
		return traces.Request{}, fmt.Errorf("%w %s: Tempo says %s", traces.ErrInvalidTraceID, id, httpbackend.Detail(string(body)))
	default:
		return traces.Request{}, t.b.StatusError(status, string(body))
	}
	var resp struct {
		Trace json.RawMessage `json:"trace"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return traces.Request{}, t.b.Fail(status, "answered with something other than a trace in OTLP JSON", err)
	}
	// Tempo answers an unknown id with 200 and an empty trace.
	if len(resp.Trace) == 0 || string(resp.Trace) == "null" || string(resp.Trace) == "{}" {
		return traces.Request{}, fmt.Errorf("%w: Tempo has no trace %s", traces.ErrNotFound, id)
	}
	td, err := traces.DecodeTracesData(resp.Trace)
	if err != nil {
		return traces.Request{}, t.b.Fail(status, "answered with a trace that is not valid OTLP JSON", err)
	}
	if len(td.GetResourceSpans()) == 0 {
		return traces.Request{}, fmt.Errorf("%w: Tempo has no trace %s", traces.ErrNotFound, id)
	}
	var st traces.WalkStats
	reqs := t.b.Opts.Requests(td, &st)
	return t.b.Opts.Pick(id, reqs, st)
}

// Check implements traces.Source.
func (t *Source) Check(ctx context.Context) (traces.Health, error) { return t.b.Health(ctx, t) }

// traceQL writes the search. Values from users are quoted; the TTFT threshold is written as
// a float, since TraceQL is typed and `> 1` never matches a float attribute.
func (t *Source) traceQL(q traces.Query) string {
	conds := []string{
		"resource.service.name = " + strconv.Quote(t.b.Opts.ServiceName),
		"name = " + strconv.Quote(t.b.Opts.SpanName),
	}
	if len(q.Instances) > 0 {
		conds = append(conds, oneOf(t.instanceRef(), q.Instances))
	}
	if len(q.Models) > 0 {
		conds = append(conds, oneOf(t.modelRef(), q.Models))
	}
	if q.MinTTFT > 0 {
		conds = append(conds, "span."+vllm.AttrTTFT+" >= "+traceQLThreshold(q.MinTTFT))
	}
	return "{ " + strings.Join(conds, " && ") + " } | select(" + strings.Join(t.selected(q), ", ") + ") with(most_recent=true)"
}

// instanceRef is the instance attribute as conditions and select() name it. service.instance.id
// and host.name are resource attributes by the semantic conventions, so they are looked up
// there; any other instance attribute is unscoped, which matches it on the span or its
// resource.
func (t *Source) instanceRef() string {
	attr := t.b.Opts.InstanceAttribute
	if attr == vllm.ResourceInstanceID || attr == vllm.ResourceHostName {
		return "resource." + traceQLAttr(attr)
	}
	return "." + traceQLAttr(attr)
}

// modelRef is the model attribute, unscoped: on the span or its resource. A span without it
// does not match a condition on it: see traces.Query.Models.
func (t *Source) modelRef() string { return "." + traceQLAttr(t.b.Opts.ModelAttribute) }

// oneOf is the condition that the attribute ref equals one of the values: `=` for one, `=~`
// over the regexp-quoted values for several (Tempo anchors regular expressions), each written
// as a quoted TraceQL string.
func oneOf(ref string, values []string) string {
	if len(values) == 1 {
		return ref + " = " + strconv.Quote(values[0])
	}
	alts := make([]string, len(values))
	for i, v := range values {
		alts[i] = regexp.QuoteMeta(v)
	}
	return ref + " =~ " + strconv.Quote(strings.Join(alts, "|"))
}

// selected lists the attributes a search asks Tempo to return with each span: those the answer
// reads that spans of the query's generation carry, and the instance and model attributes
// unless a condition names them (Tempo returns those anyway). Without an instance condition,
// the host name and ports follow the instance attribute: a Request falls back to them.
func (t *Source) selected(q traces.Query) []string {
	var sel []string
	seen := map[string]bool{}
	add := func(ref string) {
		if !seen[ref] {
			seen[ref] = true
			sel = append(sel, ref)
		}
	}
	modelAttr := t.b.Opts.ModelAttribute
	for _, k := range traces.SpanAttributes(q.Generation) {
		if k == modelAttr && len(q.Models) > 0 {
			continue
		}
		add("span." + k)
	}
	if len(q.Models) == 0 && modelAttr != vllm.AttrResponseModel {
		add(t.modelRef())
	}
	if len(q.Instances) == 0 {
		add(t.instanceRef())
		add("resource." + vllm.ResourceHostName)
		for _, k := range traces.PortAttributes {
			add("." + k)
		}
	}
	return sel
}

var plainAttr = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// traceQLAttr writes an attribute name, quoted when it holds characters TraceQL's lexer
// would split on.
func traceQLAttr(name string) string {
	if plainAttr.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// Bounds of a TTFT threshold as written in TraceQL, in seconds: a value outside is written as
// the bound, which keeps every request the exact threshold keeps (Finish applies it exactly),
// and keeps the number short.
const (
	minThreshold = 1e-6
	maxThreshold = 1e9
)

// traceQLThreshold writes a TTFT threshold v > 0 so that TraceQL reads a float (1 becomes 1.0),
// in at most about 27 bytes: v below a microsecond as 0.0, above 10⁹ s as 10⁹.
func traceQLThreshold(v float64) string {
	switch {
	case v < minThreshold:
		v = 0
	case v > maxThreshold:
		v = maxThreshold
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

type tempoSearchResponse struct {
	Traces []struct {
		TraceID  string          `json:"traceID"`
		SpanSet  *tempoSpanSet   `json:"spanSet"`
		SpanSets []*tempoSpanSet `json:"spanSets"`
	} `json:"traces"`
}

type tempoSpanSet struct {
	Spans []struct {
		SpanID            string `json:"spanID"`
		StartTimeUnixNano string `json:"startTimeUnixNano"`
		DurationNanos     string `json:"durationNanos"`
		Attributes        []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"attributes"`
	} `json:"spans"`
}

// searchRequests reads the spans of a search answer. Tempo drops leading zeros of trace ids,
// so they are padded back.
func (t *Source) searchRequests(resp tempoSearchResponse, q traces.Query, info *traces.SearchInfo) ([]traces.Request, error) {
	var out []traces.Request
	for _, tr := range resp.Traces {
		traceID, err := traces.NormalizeTraceID(tr.TraceID)
		if err != nil {
			return nil, t.b.Fail(http.StatusOK, "returned a malformed trace id", err)
		}
		sets := tr.SpanSets
		if len(sets) == 0 && tr.SpanSet != nil {
			sets = append(sets, tr.SpanSet)
		}
		seen := map[string]bool{}
		for _, set := range sets {
			for _, sp := range set.Spans {
				if seen[sp.SpanID] {
					continue
				}
				seen[sp.SpanID] = true
				if len(seen) > t.b.Opts.MaxSpansPerTrace {
					info.SpansSkipped++
					continue
				}
				start, err1 := strconv.ParseInt(sp.StartTimeUnixNano, 10, 64)
				dur, err2 := strconv.ParseInt(sp.DurationNanos, 10, 64)
				if err1 != nil || err2 != nil || start <= 0 || dur < 0 || start > math.MaxInt64-dur {
					return nil, t.b.Fail(http.StatusOK, fmt.Sprintf("returned span %s of trace %s with a malformed time (%q, %q)",
						sp.SpanID, traceID, sp.StartTimeUnixNano, sp.DurationNanos), nil)
				}
				kvs := make([]*commonpb.KeyValue, 0, len(sp.Attributes))
				for _, a := range sp.Attributes {
					v, err := traces.DecodeAnyValue(a.Value)
					if err != nil {
						return nil, t.b.Fail(http.StatusOK, fmt.Sprintf("returned attribute %q in an unknown form", a.Key), err)
					}
					kvs = append(kvs, &commonpb.KeyValue{Key: a.Key, Value: v})
				}
				r := t.b.Opts.NewRequest(traces.Span{
					TraceID:    traceID,
					SpanID:     sp.SpanID,
					Start:      time.Unix(0, start).UTC(),
					End:        time.Unix(0, start+dur).UTC(),
					Attributes: kvs,
				})
				// The service and a single instance come from the query when Tempo leaves
				// them out: its conditions matched them.
				if r.Service == "" {
					r.Service = t.b.Opts.ServiceName
				}
				if r.Instance == "" && len(q.Instances) == 1 {
					r.Instance = q.Instances[0]
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}
