package plugin

import (
	"errors"
	"fmt"
	"net/http"

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
