// Package jaeger is the traces.Source of Jaeger v2, over its HTTP APIs (v3 for traces by id,
// the query service's /api/traces for searches).
package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/httpbackend"
	"github.com/seed/vllm-datasource/pkg/vllm"
	"golang.org/x/sync/errgroup"
)

// Source reads vLLM requests from Jaeger v2: traces by id through its API v3 (OTLP JSON),
// searches through the query service's /api/traces.
//
// Searches do not use the API v3: over HTTP it ignores attribute filters (Jaeger 1.76's
// gateway builds the query with an empty attribute map), so an instance's requests could only
// be picked out of the first Limit traces of the whole fleet. /api/traces takes `tags`, an
// exact match on span or resource attributes (process tags), which Jaeger applies before its
// limit. Tags cannot say "one of", so a query for several instances is one search per
// instance, maxParallel at a time. The span duration (arrival to finish, the request's e2e) is
// never below its TTFT, so a minimum TTFT is sent as minDuration, which only drops spans that
// would be filtered out anyway.
type Source struct {
	b httpbackend.Backend
}

// maxParallel bounds the searches of one query in flight at once.
const maxParallel = 4

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
	// Jaeger's tags match exact values, ANDed: one search per instance and model.
	instances, models := q.Instances, q.Models
	if len(instances) == 0 {
		instances = []string{""}
	}
	if len(models) == 0 {
		models = []string{""}
	}
	n := len(instances) * len(models)
	reqs := make([][]traces.Request, n)
	infos := make([]traces.SearchInfo, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallel)
	for i := range n {
		inst, model := instances[i/len(models)], models[i%len(models)]
		g.Go(func() error {
			var err error
			reqs[i], infos[i], err = j.searchOne(gctx, q, inst, model)
			return err
		})
	}
	err = g.Wait()
	var (
		info    traces.SearchInfo
		all     []traces.Request
		queries []string
	)
	for i := range infos {
		if infos[i].Query != "" {
			queries = append(queries, infos[i].Query)
		}
		info.Traces += infos[i].Traces
		info.SpansSkipped += infos[i].SpansSkipped
		info.Truncated = info.Truncated || infos[i].Truncated
		all = append(all, reqs[i]...)
	}
	info.Query = strings.Join(queries, "\n")
	if err != nil {
		return nil, info, err
	}
	return q.Finish(all, &info), info, nil
}

// searchOne is one /api/traces search, for one instance when inst is set and one model when
// model is set (tagged on the span or its process, as Jaeger matches tags).
func (j *Source) searchOne(ctx context.Context, q traces.Query, inst, model string) ([]traces.Request, traces.SearchInfo, error) {
	params := url.Values{
		"service":   {j.b.Opts.ServiceName},
		"operation": {j.b.Opts.SpanName},
		"start":     {strconv.FormatInt(q.From.UnixMicro(), 10)},
		"end":       {strconv.FormatInt(q.To.UnixMicro(), 10)},
		"limit":     {strconv.Itoa(q.Limit)},
	}
	tagged := func(m map[string]string) (string, error) {
		if model != "" {
			m[j.b.Opts.ModelAttribute] = model
		}
		if len(m) == 0 {
			return "", nil
		}
		b, err := json.Marshal(m)
		return string(b), err
	}
	first := map[string]string{}
	if inst != "" {
		first[j.b.Opts.InstanceAttribute] = inst
	}
	tags, err := tagged(first)
	if err != nil {
		return nil, traces.SearchInfo{}, err
	}
	if tags != "" {
		params.Set("tags", tags)
	}
	reqs, info, err := j.get(ctx, q, params)
	host, port, fallback := hostPort(inst)
	if err != nil || info.Traces > 0 || !fallback {
		return reqs, info, err
	}
	// Spans without the instance attribute are matched by host.name and port (the instance
	// a Request reads from them): one more search, only when the first found nothing.
	for _, key := range traces.PortAttributes {
		tags, err := tagged(map[string]string{vllm.ResourceHostName: host, key: port})
		if err != nil {
			return nil, info, err
		}
		params.Set("tags", tags)
		more, moreInfo, err := j.get(ctx, q, params)
		moreInfo.Query = info.Query + "\n" + moreInfo.Query
		if err != nil || moreInfo.Traces > 0 {
			return more, moreInfo, err
		}
		info = moreInfo
	}
	return nil, info, nil
}

// hostPort splits an instance into the host.name and port its spans may carry instead of
// the instance attribute.
func hostPort(inst string) (host, port string, ok bool) {
	h, p, err := net.SplitHostPort(inst)
	return h, p, err == nil && h != "" && p != ""
}

// get sends one /api/traces search.
func (j *Source) get(ctx context.Context, q traces.Query, params url.Values) ([]traces.Request, traces.SearchInfo, error) {
	if d := time.Duration(q.MinTTFT*float64(time.Second)) - time.Millisecond; d > 0 {
		params.Set("minDuration", d.String())
	}
	info := traces.SearchInfo{Query: params.Encode()}
	status, body, err := j.b.Get(ctx, "/api/traces", params)
	if err != nil {
		return nil, info, err
	}
	if status != http.StatusOK {
		return nil, info, j.b.StatusError(status, v1Message(body))
	}
	reqs, err := j.decodeV1(body, j.b.Opts, &info)
	if err != nil {
		return nil, info, err
	}
	info.Truncated = info.Traces >= q.Limit
	return reqs, info, nil
}

// v1Message is the message of a /api/traces error answer, or the body.
func v1Message(body []byte) string {
	var a v1Answer
	if json.Unmarshal(body, &a) == nil && len(a.Errors) > 0 {
		return a.Errors[0].Msg
	}
	return strings.TrimSpace(string(body))
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
