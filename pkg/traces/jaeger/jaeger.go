// Package jaeger is the traces.Source of Jaeger v2, over its HTTP API v3.
package jaeger

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

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/httpbackend"
)

// Source reads vLLM requests from Jaeger v2 through its API v3 (OTLP JSON).
//
// The API v3 over HTTP ignores attribute filters, so TTFT, instance and model are filtered
// here. The span duration (arrival to finish, the request's e2e) is never below its TTFT, so
// a minimum TTFT is also sent as a minimum duration, which only drops spans that would be
// filtered out anyway.
type Source struct {
	b httpbackend.Backend
}

// New returns a Jaeger source whose query service (port 16686 by default) is at baseURL,
// sending its requests through client, which carries auth and timeouts.
func New(client *http.Client, baseURL string, opts traces.Options) (*Source, error) {
	b, err := httpbackend.New("Jaeger", client, baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Source{b}, nil
}

// Search implements traces.Source.
func (j *Source) Search(ctx context.Context, q traces.Query) ([]traces.Request, traces.SearchInfo, error) {
	q, err := j.b.Opts.Validate(q)
	if err != nil {
		return nil, traces.SearchInfo{}, err
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
	info := traces.SearchInfo{Query: params.Encode()}
	status, body, err := j.b.Get(ctx, "/api/v3/traces", params)
	if err != nil {
		return nil, info, err
	}
	if status == http.StatusNotFound && isJaegerAPIError(body) {
		// Jaeger answers an empty search with 404 "No traces found".
		return nil, info, nil
	}
	if status != http.StatusOK {
		return nil, info, j.b.StatusError(status, jaegerMessage(body))
	}
	opts := j.b.Opts
	opts.ServiceName, opts.SpanName = q.Service, q.SpanName
	reqs, st, err := j.decode(body, opts)
	if err != nil {
		return nil, info, err
	}
	info.Traces = st.Traces()
	info.SpansSkipped = st.SpansSkipped
	info.Truncated = st.Traces() >= q.Limit
	return q.Finish(reqs, &info), info, nil
}

// Get implements traces.Source.
func (j *Source) Get(ctx context.Context, traceID string) (traces.Request, error) {
	id, err := traces.NormalizeTraceID(traceID)
	if err != nil {
		return traces.Request{}, err
	}
	status, body, err := j.b.Get(ctx, "/api/v3/traces/"+id, nil)
	if err != nil {
		return traces.Request{}, err
	}
	switch {
	case status == http.StatusOK:
	case status == http.StatusNotFound && isJaegerAPIError(body):
		return traces.Request{}, fmt.Errorf("%w: Jaeger has no trace %s", traces.ErrNotFound, id)
	case status == http.StatusBadRequest:
		return traces.Request{}, fmt.Errorf("%w %s: Jaeger says %s", traces.ErrInvalidTraceID, id, jaegerMessage(body))
	default:
		return traces.Request{}, j.b.StatusError(status, jaegerMessage(body))
	}
	reqs, st, err := j.decode(body, j.b.Opts)
	if err != nil {
		return traces.Request{}, err
	}
	if st.Traces() == 0 {
		return traces.Request{}, fmt.Errorf("%w: Jaeger has no trace %s", traces.ErrNotFound, id)
	}
	return j.b.Opts.Pick(id, reqs, st)
}

// Check implements traces.Source.
func (j *Source) Check(ctx context.Context) (traces.Health, error) { return j.b.Health(ctx, j) }

type jaegerChunk struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		HTTPCode int    `json:"httpCode"`
		Message  string `json:"message"`
	} `json:"error"`
}

// decode reads an API v3 answer: a stream of {"result": TracesData} chunks (the gateway may
// send one per batch of traces), of which any may be {"error": ...}.
func (j *Source) decode(body []byte, opts traces.Options) ([]traces.Request, traces.WalkStats, error) {
	var (
		st   traces.WalkStats
		reqs []traces.Request
	)
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var c jaegerChunk
		err := dec.Decode(&c)
		if errors.Is(err, io.EOF) {
			return reqs, st, nil
		}
		if err != nil {
			return nil, st, j.b.Fail(http.StatusOK, "answered with something other than OTLP JSON", err)
		}
		if c.Error != nil {
			return nil, st, j.b.Fail(c.Error.HTTPCode, "failed while streaming traces: "+c.Error.Message, nil)
		}
		if len(c.Result) == 0 {
			continue
		}
		td, err := traces.DecodeTracesData(c.Result)
		if err != nil {
			return nil, st, j.b.Fail(http.StatusOK, "answered with traces that are not valid OTLP JSON", err)
		}
		reqs = append(reqs, opts.Requests(td, &st)...)
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
