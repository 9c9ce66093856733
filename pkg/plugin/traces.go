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
func newTracesSource(s Settings) (traces.Source, error) {
	if s.TracesBackend == TracesNone {
		return nil, nil
	}
	var opts httpclient.Options
	if s.TracesBasicAuthUser != "" {
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: s.TracesBasicAuthUser, Password: s.tracesBasicAuthPassword}
	}
	if s.tracesBearerToken != "" {
		opts.Header = http.Header{"Authorization": {"Bearer " + s.tracesBearerToken}}
	}
	client, err := httpclient.New(withTimeoutAndRetry(opts, s.Timeout, httpretry.SafeMethods))
	if err != nil {
		return nil, fmt.Errorf("cannot build an HTTP client for the trace backend: %w", err)
	}
	to := traces.Options{
		ServiceName:       s.ServiceName,
		SpanName:          s.SpanName,
		InstanceAttribute: s.SpanInstanceAttribute,
		ModelAttribute:    s.SpanModelAttribute,
	}
	if s.TracesBackend == TracesTempo {
		return tempo.New(client, s.TracesURL, to)
	}
	return jaeger.New(client, s.TracesURL, to)
}
