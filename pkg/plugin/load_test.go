package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// envInt reads a positive integer knob of the load benchmark.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkLoad sends queries from LOAD_WORKERS concurrent clients (default 200), spread over
// LOAD_DATASOURCES data source instances (default 20), for LOAD_SECONDS (default 5; the
// README's figures use 60), against a real Prometheus and Jaeger holding a simulated fleet of
// 12 instances with one span in five kept. Each worker cycles through signals, diagnosis
// (findings and alert) and requests queries. It prints requests, errors, p50 and p99 latency,
// the process's peak RSS (the plugin is served in this process, over gRPC) and the goroutines
// before and after. Figures, not assertions; only errors are counted.
func BenchmarkLoad(b *testing.B) {
	workers, instances := envInt("LOAD_WORKERS", 200), envInt("LOAD_DATASOURCES", 20)
	duration := time.Duration(envInt("LOAD_SECONDS", 5)) * time.Second

	end := time.Now().Truncate(time.Minute).Add(-2 * time.Minute)
	start := end.Add(-time.Hour)
	sc, err := sim.Fleet(12)
	if err != nil {
		b.Fatal(err)
	}
	res, err := sim.Run(sc, start, time.Hour, simScrape, sim.WithSpanSampling(5))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "fleet.om")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := res.WriteOpenMetrics(f); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	prom := testbed.Prometheus(b, path)
	jaeger := testbed.Jaeger(b)
	ctx := context.Background()
	exp, err := sim.NewExporter(ctx, res.Scenario, jaeger.OTLPGRPC, sim.ProtocolGRPC, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Export(ctx, res.Spans); err != nil {
		b.Fatal(err)
	}
	_ = exp.Close(ctx)
	time.Sleep(3 * time.Second) // Jaeger's OTLP receiver batches before storing
	client := grpcPlugin(b)

	pcs := make([]backend.PluginContext, instances)
	for i := range pcs {
		pcs[i] = pluginContext(prom.URL, map[string]any{"scrapeInterval": simScrape.String(), "timeout": 30,
			"tracesBackend": TracesJaeger, "tracesUrl": jaeger.QueryURL})
	}
	tr := backend.TimeRange{From: end.Add(-30 * time.Minute), To: end}
	query := func(model map[string]any) backend.DataQuery { return rangeQuery("A", tr.From, tr.To, model) }
	mix := []backend.DataQuery{
		query(signalsQuery(string(series.TTFTP99), string(series.KVUsage), string(series.Running))),
		query(map[string]any{"queryType": "diagnosis"}),
		query(map[string]any{"queryType": "diagnosis", "format": "alert"}),
		query(map[string]any{"queryType": "requests", "limit": 50}),
	}

	for b.Loop() {
		runtime.GC()
		goroutinesBefore := runtime.NumGoroutine()
		var (
			mu        sync.Mutex
			latencies []time.Duration
			errs      atomic.Int64
			firstErr  atomic.Value
		)
		deadline := time.Now().Add(duration)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				var mine []time.Duration
				for i := w; time.Now().Before(deadline); i++ {
					q := mix[i%len(mix)]
					t0 := time.Now()
					qctx, cancel := context.WithTimeout(ctx, time.Minute)
					resp, err := client.QueryData(qctx, &backend.QueryDataRequest{PluginContext: pcs[w%instances], Queries: []backend.DataQuery{q}})
					cancel()
					mine = append(mine, time.Since(t0))
					if err == nil && resp.Responses["A"].Error != nil {
						err = resp.Responses["A"].Error
					}
					if err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		time.Sleep(time.Second) // let the gRPC streams of the last calls wind down
		runtime.GC()
		goroutinesAfter := runtime.NumGoroutine()
		slices.Sort(latencies)
		pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
		fmt.Printf("load: %d workers, %d data sources, %s: %d requests (%.1f/s), %d errors, p50 %s, p99 %s, max %s, peak RSS %s, goroutines %d before, %d after (%d of them idle keep-alive HTTP connections of the instances' pools)\n",
			workers, instances, duration, len(latencies), float64(len(latencies))/duration.Seconds(), errs.Load(),
			pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond),
			peakRSS(), goroutinesBefore, goroutinesAfter, keepAliveGoroutines())
		if e := firstErr.Load(); e != nil {
			fmt.Printf("load: first error: %s\n", clipRaw(e.(string)))
		}
		b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(errs.Load()), "errors")
	}
}

// keepAliveGoroutines counts the goroutines that serve idle keep-alive connections (a read and
// a write loop each): the pools of the data source instances, which Grafana keeps, not leaks.
func keepAliveGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	var n int
	for _, g := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) > 1 && (strings.HasPrefix(lines[1], "net/http.(*persistConn).readLoop") || strings.HasPrefix(lines[1], "net/http.(*persistConn).writeLoop")) {
			n++
		}
	}
	return n
}

// peakRSS is the process's high-water resident set size (VmHWM), as Linux reports it.
func peakRSS() string {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(line, "VmHWM:")), " ")
		}
	}
	return "unknown"
}
