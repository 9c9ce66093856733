package testbed

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPickPortIsBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		port, err := pickPort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowestPickedPort || port >= ephemeralLow() {
			t.Fatalf("picked %d, want it in [%d, %d)", port, lowestPickedPort, ephemeralLow())
		}
	}
}

func TestServeStartsAgainOnNewPortsWhenThePortWasTaken(t *testing.T) {
	prom := binary(t, "VLLM_DIAG_PROMETHEUS", "prometheus-"+PrometheusVersion, "prometheus")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	serve(t, "prometheus.log", prom, 60*time.Second, func() ([]string, []string) {
		addr := taken.Addr().String()
		if len(addrs) > 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		}
		addrs = append(addrs, addr)
		return []string{"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr},
			[]string{"http://" + addr + "/-/ready"}
	})
	if len(addrs) != 2 {
		t.Fatalf("started on %v, want the taken address and then one new one", addrs)
	}
}
