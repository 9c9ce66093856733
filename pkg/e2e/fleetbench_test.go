package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// benchSpan is how much history each benchmark fleet holds: the diagnosis reads the last two
// hours and the hour before them for baselines.
const benchSpan = 3 * time.Hour

type benchFleet struct {
	n        int
	prom     *testbed.PromServer
	queryLog string
	start    time.Time
}

var (
	benchMu     sync.Mutex
	benchFleets = map[int]*benchFleet{}
)

// fleetFor simulates a fleet of n instances over benchSpan once per test binary and backfills a
// Prometheus that logs its queries.
func fleetFor(b *testing.B, n int) *benchFleet {
	benchMu.Lock()
	defer benchMu.Unlock()
	if f, ok := benchFleets[n]; ok {
		return f
	}
	sc, err := sim.Fleet(n)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-benchSpan - 5*time.Minute).Truncate(time.Minute)
	began := time.Now()
	res, err := sim.Run(sc, start, benchSpan, scrape, sim.WithoutSpans())
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fleetbench")
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "fleet.om")
	if err := res.WriteFile(file); err != nil {
		b.Fatal(err)
	}
	simulated := time.Since(began)
	res = nil
	f := &benchFleet{n: n, queryLog: filepath.Join(dir, "queries.log"), start: start}
	began = time.Now()
	f.prom = testbed.PrometheusLogging(b, f.queryLog, file)
	// The backfill's cost decides which fleet sizes a machine can bench: print it.
	fmt.Printf("fleet N=%d: simulated and written in %s, backfilled and loaded in %s\n", n, simulated.Round(time.Second), time.Since(began).Round(time.Second))
	_ = os.Remove(file)
	benchFleets[n] = f
	return f
}

// loggedQuery is one line of Prometheus's query log.
type loggedQuery struct {
	Params struct {
		Query string    `json:"query"`
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
		Step  float64   `json:"step"`
	} `json:"params"`
}

// queriesSince reads the query log from byte offset off.
func queriesSince(b *testing.B, path string, off int64) ([]loggedQuery, int64) {
	fh, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Seek(off, 0); err != nil {
		b.Fatal(err)
	}
	var out []loggedQuery
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		off += int64(len(sc.Bytes())) + 1
		var q loggedQuery
		if err := json.Unmarshal(sc.Bytes(), &q); err == nil && q.Params.Query != "" {
			out = append(out, q)
		}
	}
	return out, off
}

// floor sends the very queries the plugin issued, all at once, as a plain client would.
func floor(b *testing.B, api v1.API, qs []loggedQuery) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, q := range qs {
		g.Go(func() error {
			var err error
			if q.Params.Step == 0 {
				_, _, _, err = api.Query(gctx, q.Params.Query, q.Params.End)

			} else {
				step := time.Duration(q.Params.Step * float64(time.Second))
				_, _, _, err = api.QueryRange(gctx, q.Params.Query, v1.Range{Start: q.Params.Start, End: q.Params.End, Step: step})
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(began)
}

// rssMB reads this process's resident set (VmRSS) or its peak (VmHWM) in MB.
func rssMB(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkFleetDiagnosis measures one diagnosis of a simulated fleet (two hours, with the hour
// before for baselines) through the plugin's gRPC against its floor: the PromQL it issued, read
// back from Prometheus's query log and sent at once by a plain client. It reports the ratio, the
// number of PromQL queries, and 50 concurrent dashboard refreshes (four diagnosis panels each):
// their wall time and this process's peak RSS (the plugin runs in the test process; its RSS
// includes the test harness), and the idle RSS once the evaluations expired, split into heap,
// anonymous memory and the binary's mapped pages. VLLM_DIAG_FLEET_N lists the fleet sizes (default 10).
func BenchmarkFleetDiagnosis(b *testing.B) {
	sizes := os.Getenv("VLLM_DIAG_FLEET_N")
	if sizes == "" {
		sizes = "10"
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("VLLM_DIAG_FLEET_N: %q is not a fleet size", s)
		}
		// The fleet lives as long as this benchmark: a sub-benchmark's cleanups run after each of
		// its calibration rounds.
		f := fleetFor(b, n)
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { benchFleetDiagnosis(b, f) })
	}
}

func benchFleetDiagnosis(b *testing.B, f *benchFleet) {
	client, err := promapi.NewClient(promapi.Config{Address: f.prom.URL})
	if err != nil {
		b.Fatal(err)
	}
	api := v1.NewAPI(client)
	to := f.start.Add(benchSpan)
	from := to.Add(-2 * time.Hour)
	diagnosisQuery := func(ref, format string) backend.DataQuery {
		return query(ref, map[string]any{"queryType": "diagnosis", "format": format}, from, to, scrape)
	}
	askAll := func(tp interface {
		QueryData(context.Context, *backend.QueryDataRequest) (*backend.QueryDataResponse, error)
	}, pc backend.PluginContext, qs ...backend.DataQuery) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		resp, err := tp.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: qs})
		if err != nil {
			b.Fatal(err)
		}
		for ref, r := range resp.Responses {
			if r.Error != nil {
				b.Fatalf("%s: %v", ref, r.Error)
			}
		}
	}
	// One warm-up, so that generation detection is not measured.
	tp, pc := pluginFor(b, f.prom.URL, map[string]any{})
	pc.DataSourceInstanceSettings.UID = fmt.Sprintf("fleet-%d", f.n)
	askAll(tp.Client, pc, diagnosisQuery("A", "findings"))
	_, off := queriesSince(b, f.queryLog, 0)

	var plugin, flr time.Duration
	var queries int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A new data source each time: nothing cached but the generation, which a running
		// instance also keeps.
		pc.DataSourceInstanceSettings.Updated = time.Now()
		began := time.Now()
		askAll(tp.Client, pc, diagnosisQuery("A", "findings"))
		plugin += time.Since(began)
		var qs []loggedQuery
		qs, off = queriesSince(b, f.queryLog, off)
		queries = len(qs)
		flr += floor(b, api, qs)
		_, off = queriesSince(b, f.queryLog, off)
	}
	b.StopTimer()

	// Idle is a plugin between refreshes: its evaluations expire within one scrape interval
	// (the data source's default, the simulator's), and then nothing of the fleet is held.
	time.Sleep(scrape + time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	idle := rssMB("VmRSS")
	// What the resident set is: anonymous memory (heap, stacks, runtime) and the mapped test
	// binary's pages (code the plugin, the harness and their libraries ran).
	idleAnon, idleFile := rssMB("RssAnon"), rssMB("RssFile")
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	idleHeap := float64(mem.HeapInuse) / (1 << 20)
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM to the current RSS
	pc.DataSourceInstanceSettings.Updated = time.Now()
	began := time.Now()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			askAll(tp.Client, pc, diagnosisQuery("headline", "findings"), diagnosisQuery("findings", "findings"),
				diagnosisQuery("timeline", "timeline"), diagnosisQuery("annotations", "findings"))
		}()
	}
	wg.Wait()
	refresh50 := time.Since(began)

	b.ReportMetric(float64(plugin.Milliseconds())/float64(b.N), "plugin-ms/op")
	b.ReportMetric(float64(flr.Milliseconds())/float64(b.N), "floor-ms/op")
	b.ReportMetric(plugin.Seconds()/flr.Seconds(), "ratio")
	b.ReportMetric(float64(queries), "promql-queries")
	b.ReportMetric(float64(refresh50.Milliseconds()), "refresh50-ms")
	b.ReportMetric(idle, "idle-rss-MB")
	b.ReportMetric(idleHeap, "idle-heap-MB")
	b.ReportMetric(idleAnon, "idle-anon-MB")
	b.ReportMetric(idleFile, "idle-file-MB")
	b.ReportMetric(rssMB("VmHWM"), "peak-rss-MB")
}
