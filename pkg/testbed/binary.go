package testbed

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// PluginProcess is the plugin's built executable running as Grafana runs it: a child process
// spoken to over hashicorp go-plugin with the SDK's handshake, gRPC only.
type PluginProcess struct {
	Diagnostics grpcplugin.DiagnosticsClient
	Data        grpcplugin.DataClient
	// PID is the child's process id, for reading its own memory from /proc.
	PID int
}

// releaseBuild is how the SDK's mage targets build a plugin's backend for release (build.Build):
// the SDK's build tag, no cgo, and no symbol table or DWARF.
var releaseBuild = []string{"-tags", "arrow_json_stdlib", "-ldflags", "-w -s"}

// PluginBinary builds the package pkg (the plugin's main) as a release build does, and starts it.
// The process is killed when the test ends.
func PluginBinary(t testing.TB, pkg string) *PluginProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpx_vllm")
	build := exec.Command("go", append(append([]string{"build", "-o", bin}, releaseBuild...), pkg)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the plugin: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
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
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "gpx_vllm", Level: hclog.Error, Output: testLog{t}}),
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
	return &PluginProcess{Diagnostics: diag.(grpcplugin.DiagnosticsClient), Data: data.(grpcplugin.DataClient), PID: cmd.Process.Pid}
}

// QueryData sends req as Grafana does, converting to and from the protocol's messages.
func (p *PluginProcess) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp, err := p.Data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// MemoryMB reads fields of the process's /proc status, in MB: VmRSS (resident), VmHWM (peak
// resident), RssAnon (heap, stacks, runtime) and RssFile (the executable's mapped pages). A
// field that cannot be read is -1.
func MemoryMB(pid int, fields ...string) []float64 {
	out := make([]float64, len(fields))
	for i := range out {
		out[i] = -1
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for i, f := range fields {
			if f == name {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				if err == nil {
					out[i] = kb / 1024
				}
			}
		}
	}
	return out
}

// ResetPeakMemory makes the process's VmHWM its current resident set (Linux clear_refs 5), so
// that the next peak read covers only what follows.
func ResetPeakMemory(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// testLog sends the plugin host's log lines to the test log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
