package plugin

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/frames"
)

// TestTraceBackendsFromSettings: each trace backend the settings may name becomes its source
// through the one constructor, and its requests link to Grafana's own data source of it with
// that data source's trace id lookup.
func TestTraceBackendsFromSettings(t *testing.T) {
	cases := []struct {
		backend TracesBackend
		source  bool
		title   string
		lookup  map[string]any
	}{
		{TracesNone, false, "", nil},
		{TracesTempo, true, "Open trace in Tempo", map[string]any{"queryType": "traceql", "query": frames.TraceIDValue}},
		{TracesJaeger, true, "Open trace in Jaeger", map[string]any{"query": frames.TraceIDValue}},
	}
	if len(cases) != len(tracesBackends) {
		t.Fatalf("%d cases for %d trace backends: add the new one here", len(cases), len(tracesBackends))
	}
	for _, c := range cases {
		t.Run(string(c.backend), func(t *testing.T) {
			raw, _ := json.Marshal(JSONData{TracesBackend: c.backend, TracesURL: "http://traces:3200", TracesDatasourceUID: "traces-uid"})
			s, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090", JSONData: raw})
			if err != nil {
				t.Fatal(err)
			}
			src, closeIdle, err := newTracesSource(s)
			if err != nil {
				t.Fatal(err)
			}
			if (src != nil) != c.source || (closeIdle != nil) != c.source {
				t.Fatalf("source %v, closer %t; want a source: %t", src, closeIdle != nil, c.source)
			}
			l := s.traceLinks("vllm-uid")
			if l.VLLMUID != "vllm-uid" || !maps.Equal(l.Query, c.lookup) || (c.lookup != nil && l.DatasourceUID != "traces-uid") {
				t.Errorf("links %+v, want the lookup %v", l, c.lookup)
			}
			if c.lookup != nil && "Open trace in "+l.Backend != c.title {
				t.Errorf("link title from %q, want %q", l.Backend, c.title)
			}
		})
	}
}
