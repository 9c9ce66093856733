// Package testbed starts the real servers that end-to-end tests talk to: a Prometheus loaded
// with OpenMetrics data through promtool's backfill, and a Jaeger v2 with in-memory storage;
// and what end-to-end beds share beside them: the vllm-sim command's backfill (SimBackfill)
// and the plugin's gRPC server as Grafana starts it (Plugin).
// Every listener is on 127.0.0.1 with a free port, so packages can run their tests at once.
//
// The binaries come from the environment (VLLM_DIAG_PROMETHEUS, VLLM_DIAG_PROMTOOL,
// VLLM_DIAG_JAEGER, set by .ci/run), else from the cache that .ci/install-servers fills. When
// they are missing a test fails with the command that installs them; with -short it skips.
package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Versions of the servers, as .ci/install-servers builds them.
const (
	PrometheusVersion = "v0.316.0"
	JaegerVersion     = "v1.76.0"
)

func cacheDir() string {
	if d := os.Getenv("VLLM_DIAG_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "vllm-diagnosis")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "vllm-diagnosis")
}

// binary finds a server binary or ends the test with the way to install it.
func binary(t testing.TB, env, dir, name string) string {
	t.Helper()
	candidates := []string{os.Getenv(env), filepath.Join(cacheDir(), dir, name)}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	msg := fmt.Sprintf("%s not found: set %s or run .ci/install-servers (it builds %s into %s)", name, env, dir, cacheDir())
	if testing.Short() {
		t.Skip(msg)
	}
	t.Fatal(msg)
	return ""
}

// PromtoolPath returns the promtool binary, for tests that check an exposition with it.
func PromtoolPath(t testing.TB) string {
	return binary(t, "VLLM_DIAG_PROMTOOL", "prometheus-"+PrometheusVersion, "promtool")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free port on 127.0.0.1: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a server until the test ends, keeping its output in a log file that the test
// prints if it fails.
func start(t testing.TB, logName string, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), logName)
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log (last 4 KiB):\n%s", logName, tail(b, 4096))
			}
		}
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitReady polls url until it answers 200 or the deadline passes.
func waitReady(t testing.TB, url string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready within %s (last error: %v)", url, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func run(t testing.TB, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}
