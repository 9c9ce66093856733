package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// FuzzParseQuery: any query JSON and query type parse or fail with an error, never a panic;
// a parsed query is of a known type, the one Grafana sent if it sent one.
func FuzzParseQuery(f *testing.F) {
	f.Add([]byte(`{"queryType":"signals","signals":["ttft_p50"],"instance":"a.*"}`), "")
	f.Add([]byte(`{"queryType":"requests","limit":-1,"minTtft":1e308}`), "requests")
	f.Fuzz(func(t *testing.T, raw []byte, queryType string) {
		q, err := ParseQuery(raw, queryType)
		if err != nil {
			return
		}
		if queryType != "" && string(q.QueryType()) != queryType {
			t.Errorf("query type %q, Grafana sent %q", q.QueryType(), queryType)
		}
		if _, ok := lookup(queryTypes, q.QueryType()); !ok {
			t.Errorf("a parsed query of the unknown type %q", q.QueryType())
		}
	})
}

// FuzzExpr: the one-line text form parses into explain, signals or diagnosis, or fails.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{"explain 0af7651916cd43dd8448eb211c80319c", "signals ttft_p50,kv_usage", "diagnosis", "  explain  ", "latency x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		raw, _ := json.Marshal(map[string]string{"expr": expr})
		q, err := ParseQuery(raw, "")
		if err != nil {
			return
		}
		switch q := q.(type) {
		case ExplainQuery:
			if strings.TrimSpace(q.TraceID) == "" {
				t.Errorf("explain without a trace id from %q", expr)
			}
		case SignalsQuery, DiagnosisQuery:
		default:
			t.Errorf("expr %q parsed as %q", expr, q.QueryType())
		}
	})
}

// FuzzLoadSettings: any jsonData loads or fails with an error that never shows a secret.
func FuzzLoadSettings(f *testing.F) {
	f.Add([]byte(`{"tracesBackend":"jaeger","tracesUrl":"http://u:p@j:16686","timeout":"5","thresholds":{"kv_cache_saturated":{"kv_usage":0.9}}}`), "http://prometheus:9090")
	f.Add([]byte(`{"scrapeInterval":"-1s","labelMatchers":"{job=~\"a\"}","timeout":1e400}`), "prometheus:9090")
	f.Fuzz(func(t *testing.T, jsonData []byte, url string) {
		s, err := LoadSettings(backend.DataSourceInstanceSettings{URL: url, JSONData: jsonData,
			DecryptedSecureJSONData: map[string]string{"tracesBasicAuthPassword": markerTracesPass, "tracesBearerToken": markerTracesBearer}})
		if err != nil {
			for _, m := range secretMarkers {
				if strings.Contains(err.Error(), m) {
					t.Errorf("error %q shows a secret", err)
				}
			}
			return
		}
		if s.Timeout <= 0 || s.ScrapeInterval <= 0 {
			t.Errorf("timeout %s, scrape interval %s: want both positive", s.Timeout, s.ScrapeInterval)
		}
	})
}

// FuzzParseTimeout: jsonData.timeout is a positive duration or an error.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{`5`, `"5"`, `0.5`, `-1`, `1e400`, `null`, `"x"`, `true`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := parseTimeout(json.RawMessage(raw))
		if err == nil && d <= 0 {
			t.Errorf("timeout %s from %q", d, raw)
		}
	})
}
