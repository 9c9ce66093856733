package plugin

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/seed/vllm-datasource/pkg/series"
)

// startBinary builds the plugin's executable and starts it as Grafana does: hashicorp
// go-plugin with the SDK's handshake, gRPC only. It returns the dispensed gRPC clients.
func startBinary(t *testing.T) (grpcplugin.DiagnosticsClient, grpcplugin.DataClient) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpx_vllm")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/seed/vllm-datasource/pkg").CombinedOutput(); err != nil {
		t.Fatalf("go build of the plugin: %v\n%s", err, out)
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{grpcplugin.ProtocolVersion: {
			"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
			"data":        &grpcplugin.DataGRPCPlugin{},
		}},
		Cmd:              exec.Command(bin),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "gpx_vllm", Level: hclog.Error, Output: testWriter{t}}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("go-plugin handshake with the binary: %v", err)
	}
	diag, err := rpc.Dispense("diagnostics")
	if err != nil {
		t.Fatal(err)
	}
	data, err := rpc.Dispense("data")
	if err != nil {
		t.Fatal(err)
	}
	return diag.(grpcplugin.DiagnosticsClient), data.(grpcplugin.DataClient)
}

// testWriter sends the plugin host's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func builtBinaryAnswersOverGoPlugin(t *testing.T, e *env) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	diag, data := startBinary(t)
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
