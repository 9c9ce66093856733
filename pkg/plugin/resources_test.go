package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
)

// callResource calls a resource route of a data source built from jsonData, in process: the
// routes below read no server.
func callResource(t *testing.T, jsonData, path string) (int, []byte) {
	t.Helper()
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{URL: "http://prometheus:9090", JSONData: []byte(jsonData)})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	t.Cleanup(ds.Dispose)
	var got *backend.CallResourceResponse
	err = ds.CallResource(context.Background(), &backend.CallResourceRequest{Path: path, Method: http.MethodGet, URL: path},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			got = r
			return nil
		}))
	if err != nil || got == nil {
		t.Fatalf("CallResource %s: %v, response %v", path, err, got)
	}
	return got.Status, got.Body
}

func TestRulesResource(t *testing.T) {
	for _, c := range []struct {
		name, jsonData string
		status         int
		says           string
	}{
		{"valid settings list the thresholds in force", `{"thresholds": {"kv_cache_saturated": {"kv_usage": 0.9}}}`, http.StatusOK, `"value":0.9`},
		{"invalid thresholds are the settings' error, not the defaults", `{"thresholds": {"kv_cache_saturated": {"kv_usage": 7}}}`, http.StatusBadRequest, "data source settings: thresholds.kv_cache_saturated.kv_usage"},
		{"another invalid setting is the settings' error, not the defaults", `{"scrapeInterval": "soon"}`, http.StatusBadRequest, "data source settings: scrapeInterval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := callResource(t, c.jsonData, "rules")
			if status != c.status || !strings.Contains(string(body), c.says) {
				t.Fatalf("status %d, body %.300s: want %d saying %q", status, body, c.status, c.says)
			}
			if status != http.StatusOK {
				return
			}
			var got []diagnosis.CatalogEntry
			if err := json.Unmarshal(body, &got); err != nil || len(got) != len(diagnosis.IDs()) {
				t.Errorf("%d rules (%v), want every rule of %v", len(got), err, diagnosis.IDs())
			}
		})
	}
}
