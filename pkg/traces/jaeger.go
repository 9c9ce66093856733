package traces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Jaeger reads vLLM requests from Jaeger v2 through its API v3 (OTLP JSON).
//
// The API v3 over HTTP ignores attribute filters, so TTFT, instance and model are filtered
// here. The span duration (arrival to finish, the request's e2e) is never below its TTFT, so
// a minimum TTFT is also sent as a minimum duration, which only drops spans that would be
// filtered out anyway.
type Jaeger struct {
	backend
}

// NewJaeger returns a Jaeger source whose query service (port 16686 by default) is at
// baseURL, sending its requests through client, which carries auth and timeouts.
func NewJaeger(client *http.Client, baseURL string, opts Options) (*Jaeger, error) {
	b, err := newBackend("Jaeger", client, baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Jaeger{b}, nil
}

// Search implements Source.
func (j *Jaeger) Search(ctx context.Context, q Query) ([]Request, SearchInfo, error) {
	q, err := j.opts.validate(q)
	if err != nil {
		return nil, SearchInfo{}, err
	}
	params := url.Values{
		"query.service_name":   {q.Service},
		"query.operation_name": {q.SpanName},
		"query.start_time_min": {q.From.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {q.To.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(q.Limit)},
	}
	if d := time.Duration(q.MinTTFT*float64(time.Second)) - time.Millisecond; d > 0 {
		params.Set("query.duration_min", d.String())
	}
	info := SearchInfo{Query: params.Encode()}
	status, body, err := j.get(ctx, "/api/v3/traces", params)
	if err != nil {
		return nil, info, err
	}
	if status == http.StatusNotFound && isJaegerAPIError(body) {
		// Jaeger answers an empty search with 404 "No traces found".
		return nil, info, nil
	}
	if status != http.StatusOK {
		return nil, info, j.statusError(status, jaegerMessage(body))
	}
	opts := j.opts
	opts.ServiceName, opts.SpanName = q.Service, q.SpanName
	reqs, st, err := j.decode(body, opts)
	if err != nil {
		return nil, info, err
	}
	info.Traces = len(st.perTrace)
	info.SpansSkipped = st.spansSkipped
	info.Truncated = len(st.perTrace) >= q.Limit
	return q.finish(reqs, &info), info, nil
}

// Get implements Source.
func (j *Jaeger) Get(ctx context.Context, traceID string) (Request, error) {
	id, err := NormalizeTraceID(traceID)
	if err != nil {
		return Request{}, err
	}
	status, body, err := j.get(ctx, "/api/v3/traces/"+id, nil)
	if err != nil {
		return Request{}, err
	}
	switch {
	case status == http.StatusOK:
	case status == http.StatusNotFound && isJaegerAPIError(body):
		return Request{}, fmt.Errorf("%w: Jaeger has no trace %s", ErrNotFound, id)
	case status == http.StatusBadRequest:
		return Request{}, fmt.Errorf("%w %s: Jaeger says %s", ErrInvalidTraceID, id, jaegerMessage(body))
	default:
		return Request{}, j.statusError(status, jaegerMessage(body))
	}
	reqs, st, err := j.decode(body, j.opts)
	if err != nil {
		return Request{}, err
	}
	if len(st.perTrace) == 0 {
		return Request{}, fmt.Errorf("%w: Jaeger has no trace %s", ErrNotFound, id)
	}
	return j.opts.pick(id, reqs, st)
}

// Check implements Source.
func (j *Jaeger) Check(ctx context.Context) (Health, error) { return j.health(ctx, j) }

type jaegerChunk struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		HTTPCode int    `json:"httpCode"`
		Message  string `json:"message"`
	} `json:"error"`
}

// decode reads an API v3 answer: a stream of {"result": TracesData} chunks (the gateway may
// send one per batch of traces), of which any may be {"error": ...}.
func (j *Jaeger) decode(body []byte, opts Options) ([]Request, walkStats, error) {
	var (
		st   walkStats
		reqs []Request
	)
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var c jaegerChunk
		err := dec.Decode(&c)
		if errors.Is(err, io.EOF) {
			return reqs, st, nil
		}
		if err != nil {
			return nil, st, j.fail(http.StatusOK, "answered with something other than OTLP JSON", err)
		}
		if c.Error != nil {
			return nil, st, j.fail(c.Error.HTTPCode, "failed while streaming traces: "+c.Error.Message, nil)
		}
		if len(c.Result) == 0 {
			continue
		}
		td, err := decodeTracesData(c.Result)
		if err != nil {
			return nil, st, j.fail(http.StatusOK, "answered with traces that are not valid OTLP JSON", err)
		}
		reqs = append(reqs, opts.requests(td, &st)...)
	}
}

// isJaegerAPIError tells Jaeger's own JSON error, such as its "No traces found", from a 404
// of a path that does not exist (a tracesUrl that is not Jaeger's query service).
func isJaegerAPIError(body []byte) bool {
	var c jaegerChunk
	return json.Unmarshal(body, &c) == nil && c.Error != nil
}

func jaegerMessage(body []byte) string {
	var c jaegerChunk
	if json.Unmarshal(body, &c) == nil && c.Error != nil {
		return c.Error.Message
	}
	return strings.TrimSpace(string(body))
}
