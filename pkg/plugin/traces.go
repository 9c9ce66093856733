package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"

	"github.com/seed/vllm-datasource/pkg/httpretry"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
	"github.com/seed/vllm-datasource/pkg/traces/tempo"
)

// errNoTraces answers the queries that need spans when no trace backend is configured.
var errNoTraces = errors.New("no trace backend is configured: set Tempo or Jaeger and its URL in the data source's settings (tracesBackend, tracesUrl) to query requests")

// newTracesSource builds the trace backend's client from the settings, or nil when none is
// configured. Its HTTP client comes from the SDK (tracing, error source), is bounded by the data
// source's timeout like the Prometheus client, and carries
// the traces credentials, which never leave it: errors name the URL with any password redacted.
// It returns the client's idle-connection closer for Dispose.
func newTracesSource(s Settings) (traces.Source, func(), error) {
	if s.TracesBackend == TracesNone {
		return nil, nil, nil
	}
	var opts httpclient.Options
	if s.TracesBasicAuthUser != "" {
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: s.TracesBasicAuthUser, Password: s.tracesBasicAuthPassword}
	}
	if s.tracesBearerToken != "" {
		opts.Header = http.Header{"Authorization": {"Bearer " + s.tracesBearerToken}}
	}
	client, closeIdle, err := newHTTPClient(opts, s.Timeout, httpretry.SafeMethods)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot build an HTTP client for the trace backend: %w", err)
	}
	to := traces.Options{
		ServiceName:       s.ServiceName,
		SpanName:          s.SpanName,
		InstanceAttribute: s.SpanInstanceAttribute,
		ModelAttribute:    s.SpanModelAttribute,
	}
	var src traces.Source
	if s.TracesBackend == TracesTempo {
		src, err = tempo.New(client, s.TracesURL, to)
	} else {
		src, err = jaeger.New(client, s.TracesURL, to)
	}
	if err != nil {
		return nil, nil, err
	}
	return src, closeIdle, nil
}

// tracesError answers a query whose trace backend call failed: the backend's own failures are
// downstream errors, what the user asked for (a bad id, an unknown or non-vLLM trace) the
// plugin's, with the message the traces package wrote.
func tracesError(err error) backend.DataResponse {
	if traces.IsDownstream(err) {
		status := backend.StatusBadGateway
		if isTimeout(err) {
			status = backend.StatusTimeout
		}
		return backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, err.Error())
	}
	status := backend.StatusBadRequest
	if errors.Is(err, traces.ErrNotFound) {
		status = backend.StatusNotFound
	}
	return backend.ErrDataResponseWithSource(status, backend.ErrorSourcePlugin, err.Error())
}

// isTimeout reports whether a backend call ran out of time (the client's timeout or the
// query's deadline).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
