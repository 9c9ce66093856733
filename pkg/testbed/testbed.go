// Package testbed starts the real servers that end-to-end tests talk to: a Prometheus loaded
// with OpenMetrics data through promtool's backfill, and a Jaeger v2 with in-memory storage;
// and what end-to-end beds share beside them: the vllm-sim command's backfill (SimBackfill)
// and the plugin's gRPC server as Grafana starts it (Plugin).
// Every listener is on 127.0.0.1 with a free port picked below the kernel's ephemeral range, so
// packages can run their tests at once; a server that loses its port anyway starts again on new
// ones.
//
// The binaries come from the environment (VLLM_DIAG_PROMETHEUS, VLLM_DIAG_PROMTOOL,
// VLLM_DIAG_JAEGER, set by .ci/run), else from the cache that .ci/install-servers fills. When
// they are missing a test fails with the command that installs them; with -short it skips.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// freePort picks a free port on 127.0.0.1 (pickPort) or ends the test.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := pickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// pickPort picks a free port on 127.0.0.1 outside the kernel's ephemeral range, the range that
// outgoing connections take their source ports from: a port the kernel hands out for ":0"
// can go to any test's next HTTP request between the pick and the server's bind.
func pickPort() (int, error) {
	low := ephemeralLow()
	for range 100 {
		port := lowestPickedPort + rand.IntN(low-lowestPickedPort)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in [%d, %d)", lowestPickedPort, low)
}

// lowestPickedPort keeps picked ports clear of the well-known and registered services below it.
const lowestPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, or Linux's default when the
// range cannot be read or leaves no room below it.
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low < lowestPickedPort+1000 {
		return linuxDefault
	}
	return low
}

// serveAttempts bounds how often serve starts a server that exits before it is ready.
const serveAttempts = 3

// serve starts a server and waits until each of its ready URLs answers 200. configure picks
// the ports, writes what config they need and returns the arguments and the ready URLs. Two
// test packages can still pick the same free port at once; the server that loses the bind
// exits, and serve starts it again on ports configure picks anew. The server runs until the
// test ends, its output kept in a log file that the test prints if it fails.
func serve(t testing.TB, logName, bin string, within time.Duration, configure func() (args, readyURLs []string)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		args, readyURLs := configure()
		exited, logPath := start(t, logName, bin, args...)
		err := waitReady(readyURLs, within, exited)
		if err == nil {
			return
		}
		if !errors.Is(err, errExited) || attempt == serveAttempts {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(logPath)
		t.Logf("%s exited before it was ready (attempt %d of %d), starting it on new ports; its log (last 1 KiB):\n%s",
			filepath.Base(bin), attempt, serveAttempts, tail(b, 1024))
	}
}

// start runs a server until the test ends. exited is closed when the server stops.
func start(t testing.TB, logName string, bin string, args ...string) (exited <-chan struct{}, logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), logName)
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log (last 4 KiB):\n%s", logName, tail(b, 4096))
			}
		}
	})
	return done, logPath
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var errExited = errors.New("exited before it was ready")

// probeTimeout bounds one readiness request, so that a port held by something that never
// answers does not keep waitReady from seeing the server exit.
const probeTimeout = 2 * time.Second

func probe(ctx context.Context, url string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// waitReady polls each URL in turn until it answers 200, failing when the deadline passes or
// the server exits first.
func waitReady(urls []string, within time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, url := range urls {
		for {
			resp, err := probe(ctx, url)
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("%s: server %w", url, errExited)
			case <-ctx.Done():
				return fmt.Errorf("%s not ready within %s (last error: %v)", url, within, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func run(t testing.TB, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}
