package plugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
)

// tempoRefusalIsTempos: a requests query whose search Tempo refuses fails on its own,
// downstream, saying that Tempo's TraceQL parser refused it and naming the query sent; the
// neighbour of its batch answers; the health check passes (Prometheus is fine) and says why the
// trace backend fails. The refusal is a live Tempo 3.1's, to a query past its lexer's buffer
// (testdata/tempo_live_3.1_search_select_1057_bytes_rejected.json).
func tempoRefusalIsTempos(t *testing.T, e *env) {
	raw, err := os.ReadFile(filepath.Join("testdata", "tempo_live_3.1_search_select_1057_bytes_rejected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Status != http.StatusBadRequest {
		t.Fatalf("fixture: status %d, %v", rec.Status, err)
	}
	tempo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(rec.Status)
		_, _ = w.Write([]byte(rec.Body))
	}))
	t.Cleanup(tempo.Close)
	pc := pluginContext(e.v1.URL, map[string]any{"tracesBackend": "tempo", "tracesUrl": tempo.URL})
	res := e.query(t, pc, e.dataQuery("R", map[string]any{"queryType": "requests", "limit": 10}),
		e.dataQuery("S", signalsQuery(string(series.KVUsage))))
	checkFailure(t, res.Responses["R"], gatewayFailure("Tempo at "+tempo.URL+" answered 400: Tempo's TraceQL parser refused the query { resource.service.name",
		") with(most_recent=true): invalid TraceQL query: parse error at line 1, col 1025", "need Tempo 2.8 or later"))
	okResponse(t, res, "S")
	h := e.health(t, pc)
	if h.Status != backend.HealthStatusOk || !strings.Contains(h.Message, "Trace backend: Tempo at "+tempo.URL+" answered 400: Tempo's TraceQL parser refused") {
		t.Errorf("health %s %q; want OK, saying Tempo's parser refused the trace search", h.Status, h.Message)
	}
}
