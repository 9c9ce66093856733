package traces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Source reads vLLM requests from a trace backend.
type Source interface {
	// Search returns the vLLM requests that started in the query's range and pass its
	// filters, newest first, at most Query.Limit of them.
	Search(ctx context.Context, q Query) ([]Request, SearchInfo, error)
	// Get returns the vLLM request of one trace. When the trace holds several vLLM spans
	// (a gateway that called vLLM more than once), the earliest is returned.
	Get(ctx context.Context, traceID string) (Request, error)
	// Check says whether the backend answers and whether vLLM spans arrived in the last hour.
	Check(ctx context.Context) (Health, error)
}

// Query selects vLLM requests.
type Query struct {
	// From and To bound the requests' start (arrival) time; both are required.
	From, To time.Time
	// Service and SpanName override Options.ServiceName and Options.SpanName when set.
	Service, SpanName string
	// Instances and Models keep only requests whose Instance or Model is one of them (exact
	// values; empty keeps all). A request without a model passes the model filter: V1 spans
	// carry none, and the caller resolves it from the metrics.
	Instances, Models []string
	// MinTTFT keeps only requests whose time to first token is at least this many seconds
	// (0 keeps all; a request without the attribute is then dropped).
	MinTTFT float64
	// Limit bounds the answer (0 means Options.DefaultLimit; above Options.MaxLimit it is
	// lowered to that).
	Limit int
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

// Health is the answer of Check.
type Health struct {
	// VLLMSpans: at least one vLLM span started in the last hour.
	VLLMSpans bool
	// Message says what was found, for Save & test.
	Message string
}

// validate checks a query and fills its defaults from the options.
func (o Options) validate(q Query) (Query, error) {
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
	if q.Service == "" {
		q.Service = o.ServiceName
	}
	if q.SpanName == "" {
		q.SpanName = o.SpanName
	}
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
	if len(q.Models) > 0 && r.Model != "" && !slices.Contains(q.Models, r.Model) {
		return false
	}
	return true
}

// finish filters, orders newest first and bounds the requests, and counts incomplete ones.
func (q Query) finish(reqs []Request, info *SearchInfo) []Request {
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

// pick returns the earliest vLLM request of a trace, or ErrNotVLLM.
func (o Options) pick(traceID string, reqs []Request, st walkStats) (Request, error) {
	if len(reqs) == 0 {
		err := fmt.Errorf("%w: trace %s has no span %q of service %q", ErrNotVLLM, traceID, o.SpanName, o.ServiceName)
		if st.spansSkipped > 0 {
			err = fmt.Errorf("%w among its first %d spans (%d more not read)", err, o.MaxSpansPerTrace, st.spansSkipped)
		}
		return Request{}, err
	}
	return slices.MinFunc(reqs, func(a, b Request) int { return a.Start.Compare(b.Start) }), nil
}

// backend is the HTTP side that Tempo and Jaeger share.
type backend struct {
	name   string
	base   *url.URL
	client *http.Client
	opts   Options
}

func newBackend(name string, client *http.Client, baseURL string, opts Options) (backend, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return backend{}, fmt.Errorf("%s URL %q is not an http(s) URL with a host", name, clip(baseURL, 200))
	}
	if client == nil {
		return backend{}, fmt.Errorf("%s: no HTTP client", name)
	}
	return backend{name: name, base: u, client: client, opts: opts.withDefaults()}, nil
}

func (b backend) fail(status int, msg string, err error) *DownstreamError {
	return &DownstreamError{Backend: b.name, URL: b.base.Redacted(), Status: status, Msg: msg, Err: err}
}

// get sends a GET and reads the whole answer, at most MaxBodyBytes of it. Transport failures,
// timeouts, truncated and oversized answers are DownstreamErrors; the status is left to the
// caller, since 400 and 404 mean different things per endpoint.
func (b backend) get(ctx context.Context, path string, params url.Values) (int, []byte, error) {
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, b.fail(0, "request could not be built", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, b.fail(0, transportMessage(ctx, err), stripURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, b.opts.MaxBodyBytes+1))
	if err != nil {
		return resp.StatusCode, nil, b.fail(resp.StatusCode, "answer was cut short", stripURL(err))
	}
	if int64(len(body)) > b.opts.MaxBodyBytes {
		return resp.StatusCode, nil, b.fail(resp.StatusCode, fmt.Sprintf(
			"answer is larger than the %s limit: narrow the time range or lower the limit", byteSize(b.opts.MaxBodyBytes)), nil)
	}
	return resp.StatusCode, body, nil
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func transportMessage(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return "request was canceled"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "did not answer in time"
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return "did not answer in time"
	}
	return "could not be reached: check tracesUrl and that the server is running"
}

// stripURL drops the URL that net/http puts in its errors: the error already names the
// redacted base URL, and the query string adds nothing a user can act on.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// statusError explains an unexpected status.
func (b backend) statusError(status int, detail string) *DownstreamError {
	var msg string
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		msg = "refused the credentials: check the traces basic auth user and password or bearer token"
	case status == http.StatusNotFound:
		msg = fmt.Sprintf("has no such API path: check that tracesUrl points at %s itself", b.name)
	case status == http.StatusTooManyRequests:
		msg = "is rate limiting: try again later or lower the limit"
	case status >= 500:
		msg = "failed"
	default:
		msg = "rejected the request"
	}
	if d := strings.TrimSpace(detail); d != "" {
		msg += ": " + clip(d, 300)
	}
	return b.fail(status, msg, nil)
}

// checkWindow is the range Check looks for vLLM spans in.
const checkWindow = time.Hour

func (b backend) health(ctx context.Context, s Source) (Health, error) {
	now := time.Now()
	reqs, _, err := s.Search(ctx, Query{From: now.Add(-checkWindow), To: now, Limit: 1})
	if err != nil {
		return Health{}, err
	}
	if len(reqs) == 0 {
		return Health{Message: fmt.Sprintf("%s at %s answers, but has no span %q of service %q in the last hour: "+
			"check that vLLM runs with --otlp-traces-endpoint and OTEL_SERVICE_NAME=%s, and the service and span name settings",
			b.name, b.base.Redacted(), b.opts.SpanName, b.opts.ServiceName, b.opts.ServiceName)}, nil
	}
	return Health{VLLMSpans: true, Message: fmt.Sprintf("%s at %s answers, with vLLM spans (service %q, span %q) in the last hour",
		b.name, b.base.Redacted(), b.opts.ServiceName, b.opts.SpanName)}, nil
}
