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

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/httpbackend"
	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Source reads vLLM requests from Grafana Tempo.
//
// Search sends one TraceQL query, with the instance and TTFT filters as its conditions so that
// Tempo applies them before its limit, and whose select() asks for every vLLM attribute, so the search
// answer itself carries whole requests: one request per search instead of one per trace
// found, and no trace bodies (whose size a gateway's spans can inflate) to read. The hint
// with(most_recent=true) makes the limit keep the newest traces, not the first found.
type Source struct {
	b httpbackend.Backend
}

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

// Search implements traces.Source.
func (t *Source) Search(ctx context.Context, q traces.Query) ([]traces.Request, traces.SearchInfo, error) {
	q, err := t.b.Opts.Validate(q)
	if err != nil {
		return nil, traces.SearchInfo{}, err
	}
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
			return nil, info, t.b.Fail(status, "rejected the TraceQL query "+tql+
				" (select() needs Tempo 2.2, most_recent 2.8): "+httpbackend.Detail(string(body)), nil)
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
	return q.Finish(reqs, &info), info, nil
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
	if c := t.instanceCondition(q.Instances); c != "" {
		conds = append(conds, c)
	}
	if c := t.modelCondition(q.Models); c != "" {
		conds = append(conds, c)
	}
	if q.MinTTFT > 0 {
		conds = append(conds, "span."+vllm.AttrTTFT+" >= "+traceQLFloat(q.MinTTFT))
	}
	return "{ " + strings.Join(conds, " && ") + " } | select(" + strings.Join(t.selected(), ", ") + ") with(most_recent=true)"
}

// instanceCondition selects the spans of the instances: `=` for one, `=~` over the quoted
// values for several (Tempo anchors regular expressions). service.instance.id and host.name
// are resource attributes by the semantic conventions, so they are looked up there; any other
// instance attribute is unscoped, which matches it on the span or its resource.
func (t *Source) instanceCondition(instances []string) string {
	if len(instances) == 0 {
		return ""
	}
	attr := t.b.Opts.InstanceAttribute
	ref := "." + traceQLAttr(attr)
	if attr == vllm.ResourceInstanceID || attr == vllm.ResourceHostName {
		ref = "resource" + ref
	}
	return oneOf(ref, instances)
}

// modelCondition selects the spans whose model attribute is one of the models, on the span
// or its resource (unscoped): `=` for one, `=~` over the quoted values for several. A span
// without the attribute does not match: see traces.Query.Models.
func (t *Source) modelCondition(models []string) string {
	if len(models) == 0 {
		return ""
	}
	return oneOf("."+traceQLAttr(t.b.Opts.ModelAttribute), models)
}

// oneOf is the condition that the attribute ref equals one of the values: `=` for one, `=~`
// over the regexp-quoted values for several, each written as a quoted TraceQL string.
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

// selected lists the attributes a search asks Tempo to return with each span.
func (t *Source) selected() []string {
	var sel []string
	seen := map[string]bool{}
	add := func(ref string) {
		if !seen[ref] {
			seen[ref] = true
			sel = append(sel, ref)
		}
	}
	for _, k := range []string{
		vllm.AttrQueue, vllm.AttrPrefill, vllm.AttrDecode, vllm.AttrInference, vllm.AttrTTFT, vllm.AttrE2E,
		vllm.AttrTimeInScheduler, vllm.AttrTimeInForward, vllm.AttrTimeInExecute,
		vllm.AttrPromptTokens, vllm.AttrOutputTokens, vllm.AttrCachedTokens,
		vllm.AttrRequestID, vllm.AttrTemperature, vllm.AttrTopP, vllm.AttrMaxTokens,
		vllm.AttrResponseModel, vllm.AttrFinishReason,
	} {
		add("span." + k)
	}
	add("resource." + vllm.ResourceServiceName)
	add("resource." + vllm.ResourceHostName)
	for _, k := range append([]string{t.b.Opts.InstanceAttribute, t.b.Opts.ModelAttribute}, traces.PortAttributes...) {
		add("span." + traceQLAttr(k))
		add("resource." + traceQLAttr(k))
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

// traceQLFloat writes v so that TraceQL reads a float: 1 becomes 1.0.
func traceQLFloat(v float64) string {
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
// so they are padded back; the service comes from the query when Tempo leaves it out.
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
				if r.Service == "" {
					r.Service = t.b.Opts.ServiceName
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}
