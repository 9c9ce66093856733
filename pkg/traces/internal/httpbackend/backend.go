// Package httpbackend is the HTTP side that the Tempo and Jaeger sources share: the base URL
// and client, bounded GETs, and errors that name the backend and its redacted URL in words a
// user can act on.
package httpbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// Backend is one trace backend reached over HTTP.
type Backend struct {
	// Name is "Tempo" or "Jaeger", as errors and health messages say it.
	Name string
	// Opts are the source's options, defaults filled in.
	Opts   traces.Options
	base   *url.URL
	client *http.Client
}

// New checks that baseURL is an http(s) URL with a host and fills the options' defaults.
func New(name string, client *http.Client, baseURL string, opts traces.Options) (Backend, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Backend{}, fmt.Errorf("%s URL %q is not an http(s) URL with a host", name, clip.To(baseURL, 200))
	}
	if client == nil {
		return Backend{}, fmt.Errorf("%s: no HTTP client", name)
	}
	return Backend{Name: name, base: u, client: client, Opts: opts.WithDefaults()}, nil
}

// Fail is a failure of the backend, marked with the SDK's downstream error source: it names the
// backend, its redacted URL, the status when the answer was not a 2xx (0 when no answer came),
// msg (what happened and what to check) and the underlying error, kept in the chain.
func (b Backend) Fail(status int, msg string, err error) error {
	s := fmt.Sprintf("%s at %s: %s", b.Name, b.base.Redacted(), msg)
	if status != 0 && (status < 200 || status > 299) {
		s = fmt.Sprintf("%s at %s answered %d: %s", b.Name, b.base.Redacted(), status, msg)
	}
	if err != nil {
		return backend.DownstreamError(fmt.Errorf("%s: %w", s, err))
	}
	return backend.DownstreamError(errors.New(s))
}

// Get sends a GET and reads the whole answer, at most MaxBodyBytes of it. Transport failures,
// timeouts, truncated and oversized answers are downstream errors; the status is left to the
// caller, since 400 and 404 mean different things per endpoint.
func (b Backend) Get(ctx context.Context, path string, params url.Values) (int, []byte, error) {
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, b.Fail(0, "request could not be built", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, b.Fail(0, transportMessage(ctx, err), stripURL(err))
	}
	defer resp.Body.Close()
	// An answer that declares its size is refused before any of it is read; one that streams
	// (chunked) is read up to the limit only.
	if resp.ContentLength > b.Opts.MaxBodyBytes {
		return resp.StatusCode, nil, b.tooLarge(resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, b.Opts.MaxBodyBytes+1))
	if err != nil {
		return resp.StatusCode, nil, b.Fail(resp.StatusCode, "answer was cut short", stripURL(err))
	}
	if int64(len(body)) > b.Opts.MaxBodyBytes {
		return resp.StatusCode, nil, b.tooLarge(resp.StatusCode)
	}
	return resp.StatusCode, body, nil
}

func (b Backend) tooLarge(status int) error {
	return b.Fail(status, fmt.Sprintf("answer is larger than the %s limit: narrow the time range or lower the limit", byteSize(b.Opts.MaxBodyBytes)), nil)
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

// Detail is a backend's answer as quoted in an error: trimmed and clipped.
func Detail(body string) string { return clip.To(strings.TrimSpace(body), 300) }

// StatusError explains an unexpected status, quoting the backend's detail.
func (b Backend) StatusError(status int, detail string) error {
	var msg string
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		msg = "refused the credentials: check the traces basic auth user and password or bearer token"
	case status == http.StatusNotFound:
		msg = fmt.Sprintf("has no such API path: check that tracesUrl points at %s itself", b.Name)
	case status == http.StatusTooManyRequests:
		msg = "is rate limiting: try again later or lower the limit"
	case status >= 500:
		msg = "failed"
	default:
		msg = "rejected the request"
	}
	if d := Detail(detail); d != "" {
		msg += ": " + d
	}
	return b.Fail(status, msg, nil)
}

// checkLimit bounds the health check's search. Tempo's searches keep the newest traces
// (with(most_recent=true)), so one would do there; Jaeger's order depends on its storage, so a
// few more make the newest found likelier to be the newest there is.
const checkLimit = 20

// Health implements Source.Check for the source s that b serves: a search of the last
// traces.CheckWindow, whose message says the window's length and the age of the newest span
// found.
func (b Backend) Health(ctx context.Context, s traces.Source) (traces.Health, error) {
	now := time.Now()
	reqs, _, err := s.Search(ctx, traces.Query{From: now.Add(-traces.CheckWindow), To: now, Limit: checkLimit})
	if err != nil {
		return traces.Health{}, err
	}
	window := traces.InCheckWindow()
	if len(reqs) == 0 {
		return traces.Health{Message: fmt.Sprintf("%s at %s answers, but has no span %q of service %q %s: "+
			"check that vLLM runs with --otlp-traces-endpoint and OTEL_SERVICE_NAME=%s, and the service and span name settings",
			b.Name, b.base.Redacted(), b.Opts.SpanName, b.Opts.ServiceName, window, b.Opts.ServiceName)}, nil
	}
	// Search answers newest first.
	newest := reqs[0].Start
	return traces.Health{VLLMSpans: true, Message: fmt.Sprintf("%s at %s answers, with vLLM spans (service %q, span %q) %s; the newest found started %s",
		b.Name, b.base.Redacted(), b.Opts.ServiceName, b.Opts.SpanName, window, ago(now.Sub(newest)))}, nil
}

// ago says how long ago something was, d before now, to the minute.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute ago"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", d/time.Minute)
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		return fmt.Sprintf("%d h %d min ago", d/time.Hour, m)
	}
	return fmt.Sprintf("%d h ago", d/time.Hour)
}
