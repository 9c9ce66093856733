package plugin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/httpretry"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
	"github.com/seed/vllm-datasource/pkg/traces/tempo"
)

// TracesBackend names a data source's trace backend (jsonData.tracesBackend).
type TracesBackend string

// The trace backends; tracesBackends says what each is.
const (
	TracesNone   TracesBackend = "none"
	TracesTempo  TracesBackend = "tempo"
	TracesJaeger TracesBackend = "jaeger"
)

// tracesBackend is what the plugin knows of one trace backend.
type tracesBackend struct {
	EnumValue
	// name is the backend as messages and links name it.
	name string
	// source builds the backend's client; nil for none.
	source func(client *http.Client, baseURL string, o traces.Options) (traces.Source, error)
	// traceQuery is the query model with which Grafana's own data source of this backend looks
	// one trace id up, for the requests' links.
	traceQuery func(traceID string) map[string]any
}

// tracesBackends are the trace backends a data source can read: a new one is its client
// (pkg/traces/<name>, a traces.Source) and one entry here (README, Layout).
var tracesBackends = []tracesBackend{
	{EnumValue: EnumValue{Value: string(TracesNone), Doc: "no trace backend: the requests and explain queries answer an error"},
		name: "no trace backend"},
	{EnumValue: EnumValue{Value: string(TracesTempo), Doc: "Grafana Tempo: TraceQL searches, traces by id"},
		name: "Tempo",
		source: func(c *http.Client, u string, o traces.Options) (traces.Source, error) {
			return tempo.New(c, u, o)
		},
		// Tempo looks a trace id up as a TraceQL query.
		traceQuery: func(id string) map[string]any { return map[string]any{"queryType": "traceql", "query": id} }},
	{EnumValue: EnumValue{Value: string(TracesJaeger), Doc: "Jaeger: searches through /api/traces, traces by id through its API v3"},
		name: "Jaeger",
		source: func(c *http.Client, u string, o traces.Options) (traces.Source, error) {
			return jaeger.New(c, u, o)
		},
		// Jaeger's query model without a queryType is a trace id lookup.
		traceQuery: func(id string) map[string]any { return map[string]any{"query": id} }},
}

// backendOf returns what the plugin knows of a trace backend, or an error naming the valid
// values: a data source's settings fail on an unknown one.
func backendOf(b TracesBackend) (tracesBackend, error) {
	tb, ok := lookup(tracesBackends, b)
	if !ok {
		return tracesBackend{}, fmt.Errorf("tracesBackend %q is not a trace backend this data source reads: use one of %s", b, valueList(tracesBackends))
	}
	return tb, nil
}

// errNoTraces answers the queries that need spans when no trace backend is configured.
var errNoTraces = errors.New("no trace backend is configured: set Tempo or Jaeger and its URL in the data source's settings (tracesBackend, tracesUrl) to query requests")

// newTracesSource builds the trace backend's client from the settings, or nil when none is
// configured: the one place where settings become a trace source. Its HTTP client comes from
// the SDK (tracing, error source), is bounded by the data source's timeout like the Prometheus
// client, and carries the traces credentials, which never leave it: errors name the URL with
// any password redacted. It returns the client's idle-connection closer for Dispose.
func newTracesSource(s Settings) (traces.Source, func(), error) {
	tb, err := backendOf(s.TracesBackend)
	if err != nil || tb.source == nil {
		return nil, nil, err
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
	src, err := tb.source(client, s.TracesURL, traces.Options{
		ServiceName:       s.ServiceName,
		SpanName:          s.SpanName,
		InstanceAttribute: s.SpanInstanceAttribute,
		ModelAttribute:    s.SpanModelAttribute,
	})
	if err != nil {
		return nil, nil, err
	}
	return src, closeIdle, nil
}

// tracesName is the settings' trace backend as messages name it.
func (s Settings) tracesName() string {
	tb, _ := backendOf(s.TracesBackend)
	return tb.name
}

// traceLinks says where a request's trace id links to: Grafana's own data source of the trace
// backend, when the settings name one, and the drill-down on the data source that answered.
func (s Settings) traceLinks(answeringUID string) frames.TraceLinks {
	l := frames.TraceLinks{VLLMUID: answeringUID}
	if tb, _ := backendOf(s.TracesBackend); tb.traceQuery != nil && s.TracesDatasourceUID != "" {
		l.DatasourceUID, l.Backend, l.Query = s.TracesDatasourceUID, tb.name, tb.traceQuery(frames.TraceIDValue)
	}
	return l
}
