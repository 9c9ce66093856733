package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// JaegerServer is a running Jaeger v2 all-in-one with in-memory storage.
type JaegerServer struct {
	// QueryURL is the base URL of the query API (/api/v3/...), http://127.0.0.1:PORT.
	QueryURL string
	// OTLPGRPC and OTLPHTTP are host:port endpoints of the OTLP receivers.
	OTLPGRPC string
	OTLPHTTP string
}

// jaegerConfig binds every listener to loopback: by default Jaeger's query server listens on
// all interfaces.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 200000
  jaeger_query:
    storage:
      traces: mem
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// Jaeger starts an empty Jaeger v2 and waits until it is healthy.
func Jaeger(t testing.TB) *JaegerServer {
	t.Helper()
	bin := binary(t, "VLLM_DIAG_JAEGER", "jaeger-"+JaegerVersion, "jaeger")
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	var s *JaegerServer
	serve(t, "jaeger.log", bin, 60*time.Second, func() ([]string, []string) {
		query, queryGRPC, health, otlpGRPC, otlpHTTP := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
		body := fmt.Sprintf(jaegerConfig, query, queryGRPC, health, otlpGRPC, otlpHTTP)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s = &JaegerServer{
			QueryURL: fmt.Sprintf("http://127.0.0.1:%d", query),
			OTLPGRPC: fmt.Sprintf("127.0.0.1:%d", otlpGRPC),
			OTLPHTTP: fmt.Sprintf("127.0.0.1:%d", otlpHTTP),
		}
		return []string{"--config", cfg}, []string{fmt.Sprintf("http://127.0.0.1:%d/status", health), s.QueryURL + "/api/v3/services"}
	})
	return s
}
