package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

func builtBinaryAnswersOverGoPlugin(t *testing.T, e *env) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	proc := testbed.PluginBinary(t, "github.com/seed/vllm-datasource/pkg")
	diag, data := proc.Diagnostics, proc.Data
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc := pluginContext(e.v1.URL, nil)

	health, err := diag.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: backend.ToProto().PluginContext(pc)})
	if err != nil {
		t.Fatalf("CheckHealth: %v", err)
	}
	if health.Status != pluginv2.CheckHealthResponse_OK || !strings.Contains(health.Message, "2 vLLM instance(s)") {
		t.Errorf("health %s %q, want OK with 2 instances", health.Status, health.Message)
	}

	req := backend.ToProto().QueryDataRequest(&backend.QueryDataRequest{PluginContext: pc,
		Queries: []backend.DataQuery{e.dataQuery("A", signalsQuery(string(series.KVUsage)))}})
	resp, err := data.QueryData(ctx, req)
	if err != nil {
		t.Fatalf("QueryData: %v", err)
	}
	res, err := backend.FromProto().QueryDataResponse(resp)
	if err != nil {
		t.Fatalf("decoding the QueryData response: %v", err)
	}
	got := signalFrames(t, okResponse(t, res, "A").Frames)
	for k, want := range e.promAnswer(t, e.v1API, signalPromQL[series.KVUsage]) {
		k.signal = string(series.KVUsage)
		sameValues(t, k.signal+" "+k.instance, got[k], want)
	}
}
