package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PromServer is a running Prometheus.
type PromServer struct {
	// URL is the base URL of its HTTP API, http://127.0.0.1:PORT.
	URL string
}

// Prometheus starts a Prometheus whose TSDB holds the given OpenMetrics files (timestamps in
// seconds, ending in "# EOF"), backfilled with promtool. It scrapes nothing, so the data is
// exactly what the files say. Retention is long enough to keep old backfilled blocks.
func Prometheus(t testing.TB, openMetricsFiles ...string) *PromServer {
	t.Helper()
	return PrometheusLogging(t, "", openMetricsFiles...)
}

// PrometheusLogging is Prometheus with its query log (query_log_file) written to queryLog, one
// JSON line per query it evaluates; empty: none.
func PrometheusLogging(t testing.TB, queryLog string, openMetricsFiles ...string) *PromServer {
	t.Helper()
	promtool := PromtoolPath(t)
	data := filepath.Join(t.TempDir(), "data")
	for _, f := range openMetricsFiles {
		run(t, promtool, "tsdb", "create-blocks-from", "openmetrics", f, data)
	}
	return serveTSDB(t, data, queryLog)
}

// PrometheusOn starts a Prometheus on an existing TSDB directory, such as one a command
// saved. It scrapes nothing and keeps every block.
func PrometheusOn(t testing.TB, tsdbDir string) *PromServer {
	t.Helper()
	return serveTSDB(t, tsdbDir, "")
}

// serveTSDB starts Prometheus on the TSDB in data, with its query log in queryLog (if any).
func serveTSDB(t testing.TB, data, queryLog string) *PromServer {
	t.Helper()
	prom := binary(t, "VLLM_DIAG_PROMETHEUS", "prometheus-"+PrometheusVersion, "prometheus")
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	config := "global:\n  scrape_interval: 15s\n"
	if queryLog != "" {
		config += fmt.Sprintf("  query_log_file: %q\n", queryLog)
	}
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var s *PromServer
	serve(t, "prometheus.log", prom, 60*time.Second, func() ([]string, []string) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		s = &PromServer{URL: "http://" + addr}
		return []string{
			"--config.file=" + cfg,
			"--storage.tsdb.path=" + data,
			"--storage.tsdb.retention.time=3650d",
			"--web.listen-address=" + addr,
		}, []string{s.URL + "/-/ready"}
	})
	return s
}
