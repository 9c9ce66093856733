package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
)

// freeRun finds n consecutive free ports on 127.0.0.1 (sim.Serve listens on port+i).
func freeRun(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		port := 20000 + rand.IntN(8000)
		ok := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+i))
			if err != nil {
				ok = false
				break
			}
			_ = l.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// TestScrapeFindsTheFaultOnItsInstance serves a three-instance scenario's /metrics live (one
// instance faulty from a third to two thirds of its three minutes), scrapes it with --scrape
// every 2 s beside an unreachable target and one serving HTML, and watches: the fault fires on
// the instance the simulator injected it into, the bad targets get one line each.
func TestScrapeFindsTheFaultOnItsInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a scenario for three minutes")
	}
	const rule = sim.RuleSpecDecodeInefficient
	const run = 3 * time.Minute
	sc, err := sim.Lookup(rule)
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freeRun(t, len(sc.Instances)))
	placed, err := sim.Relisten(sc, listen)
	if err != nil {
		t.Fatal(err)
	}
	// Ground truth: the instance the simulator injects the fault into.
	var faulty string
	var urls []string
	for _, in := range placed.Instances {
		urls = append(urls, "http://"+in.Address)
		for _, f := range in.Faults {
			if f.Rule == rule {
				faulty = in.Address
			}
		}
	}
	if faulty == "" {
		t.Fatalf("scenario %s injects no %s", rule, rule)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, sc, sim.ServeOptions{Listen: listen, Duration: run}) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body>Grafana</body></html>")
	}))
	defer html.Close()
	unreachable := fmt.Sprintf("http://127.0.0.1:%d", freeRun(t, 1))
	th := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(th, []byte(`{"`+rule+`": {"for": 10}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	cmdCtx, stop := context.WithTimeout(context.Background(), run+time.Minute)
	defer stop()
	cmd := exec.CommandContext(cmdCtx, cliBin, "--scrape", strings.Join(append(urls, unreachable, html.URL), ","),
		"--scrape-interval", "2s", "--thresholds", th, "--watch", "--every", "5s", "--output", "json")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var fired []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		var tr transition
		if err := json.Unmarshal(lines.Bytes(), &tr); err != nil {
			t.Fatalf("a watch line is not a transition: %v: %s", err, lines.Text())
		}
		if tr.Rule == rule && tr.State == "firing" {
			fired = append(fired, tr.Instance)
			break
		}
	}
	if len(fired) == 0 {
		t.Fatalf("%s never fired within %s; stderr:\n%s", rule, run+time.Minute, stderr.String())
	}
	if fired[0] != faulty {
		t.Errorf("%s fired on %s, want the faulty %s", rule, fired[0], faulty)
	}
	errs := stderr.String()
	for _, want := range []struct{ target, says string }{
		{unreachable + "/metrics", "connection refused"},
		{html.URL + "/metrics", "not a Prometheus /metrics endpoint"},
	} {
		if n := strings.Count(errs, want.target+": "); n != 1 || !strings.Contains(errs, want.says) {
			t.Errorf("%s: %d lines, want one saying %q; stderr:\n%s", want.target, n, want.says, errs)
		}
	}
}

// syncBuffer is stderr read while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestScrapeReportsEachBadTarget: every kind of bad target gets its own line, and when no
// target is good the command says so and exits 3.
func TestScrapeReportsEachBadTarget(t *testing.T) {
	htmlPage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body>Grafana</body></html>")
	}))
	defer htmlPage.Close()
	selfSigned := httptest.NewUnstartedServer(promhttp.Handler())
	// The scraper's refused handshakes are the point, not news for the test log.
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0)
	selfSigned.StartTLS()
	defer selfSigned.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "node_cpu_seconds_total", Help: "not vLLM"}))
	notVLLM := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer notVLLM.Close()
	unreachable := fmt.Sprintf("http://127.0.0.1:%d", freeRun(t, 1))

	cases := []struct{ target, says string }{
		{unreachable, "connection refused"},
		{htmlPage.URL, "not a Prometheus /metrics endpoint"},
		{selfSigned.URL, "certificate"},
		{notVLLM.URL, "none of vLLM's"},
	}
	var targets []string
	for _, c := range cases {
		targets = append(targets, c.target)
	}
	var stderr strings.Builder
	code := run(context.Background(), []string{"--scrape", strings.Join(targets, ","), "--scrape-interval", "1s"},
		io.Discard, &stderr, func(string) string { return "" })
	errs := stderr.String()
	if code != exitError || !strings.Contains(errs, "none of the 4 target(s) serves vLLM metrics") {
		t.Fatalf("exit %d, want %d and the line that no target serves vLLM metrics; stderr:\n%s", code, exitError, errs)
	}
	for _, c := range cases {
		var lines []string
		for _, l := range strings.Split(errs, "\n") {
			if strings.HasPrefix(l, "vllm-diagnose: "+c.target+"/metrics: ") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], c.says) {
			t.Errorf("%s: lines %q, want one saying %q", c.target, lines, c.says)
		}
	}
}

func TestScrapeRejects(t *testing.T) {
	checkRejections(t, []rejection{
		{"a URL that is not http", []string{"--scrape", "ftp://127.0.0.1:8000"}, "is not a vLLM URL"},
		{"a URL without a port", []string{"--scrape", "http://vllm"}, "is not a vLLM URL"},
		{"no URL", []string{"--scrape", " , "}, "names no target"},
		{"beside --prometheus", []string{"--scrape", "http://127.0.0.1:8000", "--prometheus", "http://127.0.0.1:9090"}, "drop --prometheus"},
		{"a bad scrape interval", []string{"--scrape", "http://127.0.0.1:8000", "--scrape-interval", "soon"}, "--scrape-interval"},
		{"--save into a directory with files", []string{"--scrape", "http://127.0.0.1:8000", "--save", "."}, "is not empty"},
	})
}

// TestScrapeWaitsForTheQuickestRule: the wait is the rate window (four scrape intervals) and
// the shortest `for`, as README's CLI table says: engine_stalled's 90 s by default.
func TestScrapeWaitsForTheQuickestRule(t *testing.T) {
	th := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(th, []byte(`{"client_timeouts": {"for": 20}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		thresholds string
		interval   time.Duration
		want       time.Duration
	}{
		{"default thresholds, 15 s scrapes", "", 15 * time.Second, 150 * time.Second},
		{"a rule's for shortened to 20 s, 2 s scrapes", th, 2 * time.Second, 28 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := newRootCommand(context.Background(), io.Discard, io.Discard, func(string) string { return "" })
			cmd.opts.conn.thresholdsFile = c.thresholds
			got, err := cmd.dataNeeded(c.interval)
			if err != nil || got != c.want {
				t.Errorf("waits %s (%v), want %s", got, err, c.want)
			}
		})
	}
}

// BenchmarkScrapeMemory scrapes a ten-instance fleet served live as many times as 30 minutes
// at 15 s would (120 scrapes each), every second so that it takes two minutes, then diagnoses it,
// and reports the command's peak resident set (README: under 200 MB). The series and samples
// the embedded TSDB holds are those of the 30 minutes; only the pace differs.
func BenchmarkScrapeMemory(b *testing.B) {
	const instances, scrapes, every = 10, 120, time.Second
	sc, err := sim.Fleet(instances)
	if err != nil {
		b.Fatal(err)
	}
	port := freeRun(b, instances)
	placed, err := sim.Relisten(sc, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		b.Fatal(err)
	}
	var urls []string
	for _, in := range placed.Instances {
		urls = append(urls, "http://"+in.Address)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- sim.Serve(ctx, sc, sim.ServeOptions{Listen: fmt.Sprintf("127.0.0.1:%d", port), Duration: time.Hour})
	}()
	defer func() {
		cancel()
		<-served
	}()
	// Every rule's `for` is the 120 scrapes, so the command scrapes that long and stops.
	rules, err := diagnosis.Rules(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	th := map[string]map[string]float64{}
	for _, r := range rules {
		th[r.ID] = map[string]float64{diagnosis.ForParam: (scrapes * every).Seconds()}
	}
	raw, _ := json.Marshal(th)
	file := filepath.Join(b.TempDir(), "thresholds.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cmd := exec.Command(cliBin, "--scrape", strings.Join(urls, ","), "--scrape-interval", every.String(),
			"--thresholds", file, "--output", "json")
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code > exitCritical || stderr.Len() > 0 {
			b.Fatalf("exit %d (%v), stderr %q", code, err, stderr.String())
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			b.Fatal("no resource usage on this platform")
		}
		b.ReportMetric(float64(ru.Maxrss)/1024, "MB-peak-RSS") // Linux reports kilobytes
	}
}
