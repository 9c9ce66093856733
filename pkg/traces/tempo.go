package traces

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

	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Tempo reads vLLM requests from Grafana Tempo.
//
// Search sends one TraceQL query whose select() asks for every vLLM attribute, so the search
// answer itself carries whole requests: one request per search instead of one per trace
// found, and no trace bodies (whose size a gateway's spans can inflate) to read. The hint
// with(most_recent=true) makes the limit keep the newest traces, not the first found.
type Tempo struct {
	backend
}

// NewTempo returns a Tempo source at baseURL (the Tempo query frontend, or Grafana Cloud's
// Tempo endpoint) that sends its requests through client, which carries auth and timeouts.
func NewTempo(client *http.Client, baseURL string, opts Options) (*Tempo, error) {
	b, err := newBackend("Tempo", client, baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Tempo{b}, nil
}

// tempoSpansPerSpanSet is the spss of a search: how many matching spans of one trace come
// back. A trace holds more than one vLLM span only when a gateway calls vLLM several times.
const tempoSpansPerSpanSet = 100

// Search implements Source.
func (t *Tempo) Search(ctx context.Context, q Query) ([]Request, SearchInfo, error) {
	q, err := t.opts.validate(q)
	if err != nil {
		return nil, SearchInfo{}, err
	}
	tql := t.traceQL(q)
	info := SearchInfo{Query: tql}
	params := url.Values{
		"q":     {tql},
		"start": {strconv.FormatInt(q.From.Unix(), 10)},
		// Tempo's end is whole seconds: round up so the range's last second is searched.
		"end":   {strconv.FormatInt(q.To.Add(time.Second-1).Unix(), 10)},
		"limit": {strconv.Itoa(q.Limit)},
		"spss":  {strconv.Itoa(min(tempoSpansPerSpanSet, t.opts.MaxSpansPerTrace))},
	}
	status, body, err := t.get(ctx, "/api/search", params)
	if err != nil {
		return nil, info, err
	}
	if status != http.StatusOK {
		if status == http.StatusBadRequest {
			return nil, info, t.fail(status, "rejected the TraceQL query "+tql+
				" (select() needs Tempo 2.2, most_recent 2.8): "+clip(strings.TrimSpace(string(body)), 300), nil)
		}
		return nil, info, t.statusError(status, string(body))
	}
	var resp tempoSearchResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, info, t.fail(status, "answered with something other than Tempo's search JSON", err)
	}
	info.Traces = len(resp.Traces)
	info.Truncated = len(resp.Traces) >= q.Limit
	reqs, err := t.searchRequests(resp, q, &info)
	if err != nil {
		return nil, info, err
	}
	return q.finish(reqs, &info), info, nil
}

// Get implements Source.
func (t *Tempo) Get(ctx context.Context, traceID string) (Request, error) {
	id, err := NormalizeTraceID(traceID)
	if err != nil {
		return Request{}, err
	}
	status, body, err := t.get(ctx, "/api/v2/traces/"+id, nil)
	if err != nil {
		return Request{}, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		return Request{}, fmt.Errorf("%w: Tempo has no trace %s", ErrNotFound, id)
	case http.StatusBadRequest:
		return Request{}, fmt.Errorf("%w %s: Tempo says %s", ErrInvalidTraceID, id, clip(strings.TrimSpace(string(body)), 300))
	default:
		return Request{}, t.statusError(status, string(body))
	}
	var resp struct {
		Trace json.RawMessage `json:"trace"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return Request{}, t.fail(status, "answered with something other than a trace in OTLP JSON", err)
	}
	// Tempo answers an unknown id with 200 and an empty trace.
	if len(resp.Trace) == 0 || string(resp.Trace) == "null" || string(resp.Trace) == "{}" {
		return Request{}, fmt.Errorf("%w: Tempo has no trace %s", ErrNotFound, id)
	}
	td, err := decodeTracesData(resp.Trace)
	if err != nil {
		return Request{}, t.fail(status, "answered with a trace that is not valid OTLP JSON", err)
	}
	if len(td.GetResourceSpans()) == 0 {
		return Request{}, fmt.Errorf("%w: Tempo has no trace %s", ErrNotFound, id)
	}
	var st walkStats
	return t.opts.pick(id, t.opts.requests(td, &st), st)
}

// Check implements Source.
func (t *Tempo) Check(ctx context.Context) (Health, error) { return t.health(ctx, t) }

// traceQL writes the search. Values from users are quoted; the TTFT threshold is written as
// a float, since TraceQL is typed and `> 1` never matches a float attribute.
func (t *Tempo) traceQL(q Query) string {
	conds := []string{
		"resource.service.name = " + strconv.Quote(q.Service),
		"name = " + strconv.Quote(q.SpanName),
	}
	if q.MinTTFT > 0 {
		conds = append(conds, "span."+vllm.AttrTTFT+" >= "+traceQLFloat(q.MinTTFT))
	}
	return "{ " + strings.Join(conds, " && ") + " } | select(" + strings.Join(t.selected(), ", ") + ") with(most_recent=true)"
}

// selected lists the attributes a search asks Tempo to return with each span.
func (t *Tempo) selected() []string {
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
	for _, k := range append([]string{t.opts.InstanceAttribute, t.opts.ModelAttribute}, portAttributes...) {
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
func (t *Tempo) searchRequests(resp tempoSearchResponse, q Query, info *SearchInfo) ([]Request, error) {
	var out []Request
	for _, tr := range resp.Traces {
		traceID, err := NormalizeTraceID(tr.TraceID)
		if err != nil {
			return nil, t.fail(http.StatusOK, "returned a malformed trace id", err)
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
				if len(seen) > t.opts.MaxSpansPerTrace {
					info.SpansSkipped++
					continue
				}
				start, err1 := strconv.ParseInt(sp.StartTimeUnixNano, 10, 64)
				dur, err2 := strconv.ParseInt(sp.DurationNanos, 10, 64)
				if err1 != nil || err2 != nil || start <= 0 || dur < 0 || start > math.MaxInt64-dur {
					return nil, t.fail(http.StatusOK, fmt.Sprintf("returned span %s of trace %s with a malformed time (%q, %q)",
						sp.SpanID, traceID, sp.StartTimeUnixNano, sp.DurationNanos), nil)
				}
				kvs := make([]*commonpb.KeyValue, 0, len(sp.Attributes))
				for _, a := range sp.Attributes {
					v := &commonpb.AnyValue{}
					if err := otlpJSON.Unmarshal(a.Value, v); err != nil {
						return nil, t.fail(http.StatusOK, fmt.Sprintf("returned attribute %q in an unknown form", a.Key), err)
					}
					kvs = append(kvs, &commonpb.KeyValue{Key: a.Key, Value: v})
				}
				r := t.opts.newRequest(spanData{
					traceID: traceID,
					spanID:  padHex(sp.SpanID, 16),
					start:   time.Unix(0, start).UTC(),
					end:     time.Unix(0, start+dur).UTC(),
					attrs:   attrs{span: kvs},
				})
				if r.Service == "" {
					r.Service = q.Service
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}
