package plugin

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
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
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"

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
// before, after, and once Grafana's instance manager has disposed of the instances, grouped by
// what started them. Figures, not assertions; only errors are counted.
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
	prom := simPrometheus(b, res)
	jaeger := testbed.Jaeger(b)
	ctx := context.Background()
	if err := sim.ExportAll(ctx, res.Scenario, jaeger.OTLPGRPC, res.Spans, 30*time.Second); err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second) // Jaeger's OTLP receiver batches before storing
	client := grpcPlugin(b)

	pcs := make([]backend.PluginContext, instances)
	for i := range pcs {
		pcs[i] = pluginContext(prom.URL, map[string]any{"scrapeInterval": simScrape.String(), "timeout": 30,
			"tracesBackend": TracesJaeger, "tracesUrl": jaeger.QueryURL})
	}
	// The baseline includes the gRPC connection (five goroutines), as in Grafana, whose
	// connection to the plugin lives as long as the plugin: a call without queries opens it.
	if _, err := client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pcs[0]}); err != nil {
		b.Fatal(err)
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
		goroutinesBefore, groupsBefore := goroutineGroups()
		var (
			mu        sync.Mutex
			latencies []time.Duration
			errs      atomic.Int64
			errKinds  = map[string]int{}
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
						mu.Lock()
						errKinds[errorKind(err.Error())]++
						mu.Unlock()
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
		goroutinesAfter, groupsAfter := goroutineGroups()
		goroutinesDisposed, groupsDisposed := disposeAll(ctx, b, client, pcs)
		slices.Sort(latencies)
		pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
		fmt.Printf("load: %d workers, %d data sources, %s: %d requests (%.1f/s), %d errors, p50 %s, p99 %s, max %s, peak RSS %.0f MB, goroutines %d before, %d after, %d once the instances are disposed\n",
			workers, instances, duration, len(latencies), float64(len(latencies))/duration.Seconds(), errs.Load(),
			pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond),
			testbed.MemoryMB(os.Getpid(), "VmHWM")[0], goroutinesBefore, goroutinesAfter, goroutinesDisposed)
		fmt.Printf("load: goroutines before, by the function that started them: %s\n", groupsBefore)
		fmt.Printf("load: goroutines after, by the function that started them: %s\n", groupsAfter)
		if groupsDisposed == groupsBefore {
			groupsDisposed = "the same as before"
		}
		fmt.Printf("load: goroutines once disposed: %s\n", groupsDisposed)
		if len(errKinds) > 0 {
			fmt.Printf("load: errors by kind: %s\n", byCount(errKinds))
		}
		b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(errs.Load()), "errors")
	}
}

// disposeAll has Grafana's instance manager replace every data source instance, as it does when
// their settings are saved: one call each with a newer Updated time and no query (so the new
// instances call no backend), then a wait past the manager's dispose delay (5 s) for it to
// dispose of the old ones. It returns the goroutines left.
func disposeAll(ctx context.Context, b *testing.B, client *datasourcetest.TestPluginClient, pcs []backend.PluginContext) (int, string) {
	for i, pc := range pcs {
		s := *pc.DataSourceInstanceSettings
		s.Updated = s.Updated.Add(time.Second)
		pc.DataSourceInstanceSettings = &s
		pcs[i] = pc
		if _, err := client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc}); err != nil {
			b.Fatalf("replacing instance %d: %v", i, err)
		}
	}
	time.Sleep(7 * time.Second)
	runtime.GC()
	return goroutineGroups()
}

// goroutineGroups counts the process's goroutines and groups them by the function each was
// started with (the outermost frame of its stack), largest groups first.
func goroutineGroups() (int, string) {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	byFunc := map[string]int{}
	total := 0
	// debug=1 is a "goroutine profile: total N" line, then each distinct stack as "N @ pc..."
	// and one "#\tpc\tfunc+off\tfile:line" per frame, stacks apart by a blank line.
	_, stacks, _ := strings.Cut(buf.String(), "\n")
	for _, rec := range strings.Split(stacks, "\n\n") {
		lines := strings.Split(strings.TrimSpace(rec), "\n")
		n, err := strconv.Atoi(strings.Fields(lines[0] + " x")[0])
		if err != nil || len(lines) < 2 {
			continue
		}
		f := strings.Fields(lines[len(lines)-1])
		fn := "?"
		if len(f) >= 3 {
			fn, _, _ = strings.Cut(f[2], "+0x")
		}
		byFunc[fn] += n
		total += n
	}
	return total, byCount(byFunc)
}

// byCount lists counts, largest first.
func byCount(counts map[string]int) string {
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if c := counts[b] - counts[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%d %s", counts[name], name)
	}
	return strings.Join(parts, ", ")
}

// errorKind is the start of an error message, enough to tell the kinds apart.
func errorKind(msg string) string {
	if r := []rune(msg); len(r) > 90 {
		return string(r[:90]) + "…"
	}
	return msg
}
