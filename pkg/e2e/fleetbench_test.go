package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	dir, err := os.MkdirTemp("", "fleetbench")
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "fleet.om")
	// In parts of 50 instances, so that N = 500 holds one part in memory, not 17 GB.
	err = sim.WriteFileAtomic(file, func(w io.Writer) error {
		_, err := sim.WriteOpenMetricsInParts(w, sc, start, benchSpan, scrape, 50)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	simulated := time.Since(began)
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

// wireFloor sends the same queries all at once and only reads the answers: Prometheus's own
// time and the transfer, without any client's decoding, the floor no client can beat.
func wireFloor(b *testing.B, promURL string, qs []loggedQuery) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seconds := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64) }
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, q := range qs {
		g.Go(func() error {
			form, path := url.Values{"query": {q.Params.Query}}, "/api/v1/query"
			if q.Params.Step == 0 {
				form.Set("time", seconds(q.Params.End))
			} else {
				path = "/api/v1/query_range"
				form.Set("start", seconds(q.Params.Start))
				form.Set("end", seconds(q.Params.End))
				form.Set("step", strconv.FormatFloat(q.Params.Step, 'f', -1, 64))
			}
			req, err := http.NewRequestWithContext(gctx, http.MethodPost, promURL+path, strings.NewReader(form.Encode()))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: HTTP %d", q.Params.Query, resp.StatusCode)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(began)
}

// pluginPackage is the plugin's main package, built and run as Grafana runs it.
const pluginPackage = "github.com/seed/vllm-datasource/pkg"

// idleFor is how long the benchmark watches the plugin's resident set after the last refresh
// (VLLM_DIAG_FLEET_IDLE, default 2m; 0 skips it): the evaluations expire within one scrape
// interval, and a minute after the last one the plugin gives their memory back to the system.
func idleFor(b *testing.B) time.Duration {
	raw := os.Getenv("VLLM_DIAG_FLEET_IDLE")
	if raw == "" {
		return 2 * time.Minute
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		b.Fatalf("VLLM_DIAG_FLEET_IDLE: %q is not a duration", raw)
	}
	return d
}

// fleetMemory is what one fleet's plugin process holds, in MB, read from its /proc status.
type fleetMemory struct {
	start, idle, idleAnon, idleFile, peak float64
	refresh50                             time.Duration
}

// BenchmarkFleetDiagnosis measures one diagnosis of a simulated fleet (two hours, with the hour
// before for baselines) through the built plugin binary, spoken to over gRPC as Grafana does,
// against two floors: the PromQL it issued, read back from Prometheus's query log and sent at
// once by a plain client (client_golang, which decodes the answers), and the same queries with
// their answers read and discarded (the wire floor). It reports both ratios (sums over the
// iterations; each iteration's ratio to the client floor is printed) and the number of PromQL
// queries; and, once per fleet, 50 concurrent dashboard refreshes (four diagnosis panels each, a
// request per panel as Grafana sends them):
// their wall time and the plugin process's peak RSS, its RSS before the first query and once
// idle (idleFor after the last refresh), split into anonymous memory and the executable's
// mapped pages. VLLM_DIAG_FLEET_N lists the fleet sizes (default 10).
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
		// The fleet and its plugin process live as long as this benchmark: a sub-benchmark's
		// cleanups run after each of its calibration rounds.
		f := fleetFor(b, n)
		proc := testbed.PluginBinary(b, pluginPackage)
		var mem *fleetMemory
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { benchFleetDiagnosis(b, f, proc, &mem) })
	}
}

func benchFleetDiagnosis(b *testing.B, f *benchFleet, proc *testbed.PluginProcess, mem **fleetMemory) {
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
	pc := backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
		UID: fmt.Sprintf("fleet-%d", f.n), Name: "vLLM", URL: f.prom.URL, JSONData: []byte("{}"), Updated: time.Now(),
	}}
	askAll := func(qs ...backend.DataQuery) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		resp, err := proc.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: qs})
		if err != nil {
			b.Fatal(err)
		}
		for ref, r := range resp.Responses {
			if r.Error != nil {
				b.Fatalf("%s: %v", ref, r.Error)
			}
		}
	}
	startRSS := testbed.MemoryMB(proc.PID, "VmRSS")[0]
	// One warm-up, so that generation detection is not measured.
	askAll(diagnosisQuery("A", "findings"))
	_, off := queriesSince(b, f.queryLog, 0)

	t := timeAgainstFloor(b, f, api, pc, off, func() { askAll(diagnosisQuery("A", "findings")) })
	fmt.Printf("fleet N=%d: ratio of each of %d iterations: %s\n", f.n, b.N, strings.Join(t.ratios, " "))

	if *mem == nil {
		m := &fleetMemory{start: startRSS}
		if err := testbed.ResetPeakMemory(proc.PID); err != nil {
			b.Fatalf("resetting the plugin's peak RSS: %v", err)
		}
		pc.DataSourceInstanceSettings.Updated = time.Now()
		began := time.Now()
		// Grafana sends each panel's queries as a request of its own.
		panels := []backend.DataQuery{diagnosisQuery("headline", "findings"), diagnosisQuery("findings", "findings"),
			diagnosisQuery("timeline", "timeline"), diagnosisQuery("annotations", "findings")}
		var wg sync.WaitGroup
		for range 50 {
			for _, panel := range panels {
				wg.Add(1)
				go func() {
					defer wg.Done()
					askAll(panel)
				}()
			}
		}
		wg.Wait()
		m.refresh50 = time.Since(began)
		m.peak = testbed.MemoryMB(proc.PID, "VmHWM")[0]
		if idle := idleFor(b); idle > 0 {
			var trace []string
			for waited := time.Duration(0); waited < idle; waited += 30 * time.Second {
				time.Sleep(min(30*time.Second, idle-waited))
				trace = append(trace, fmt.Sprintf("%.0f", testbed.MemoryMB(proc.PID, "VmRSS")[0]))
			}
			fmt.Printf("fleet N=%d: RSS every 30 s after the refreshes, MB: %s\n", f.n, strings.Join(trace, " "))
			rss := testbed.MemoryMB(proc.PID, "VmRSS", "RssAnon", "RssFile")
			m.idle, m.idleAnon, m.idleFile = rss[0], rss[1], rss[2]
		}
		*mem = m
	}
	m := *mem
	t.report(b)
	b.ReportMetric(float64(m.refresh50.Milliseconds()), "refresh50-ms")
	b.ReportMetric(m.start, "start-rss-MB")
	if m.idle > 0 {
		b.ReportMetric(m.idle, "idle-rss-MB")
		b.ReportMetric(m.idleAnon, "idle-anon-MB")
		b.ReportMetric(m.idleFile, "idle-file-MB")
	}
	b.ReportMetric(m.peak, "peak-rss-MB")
}

// floorTimes are a benchmark's query times through the plugin against the same PromQL sent by a
// plain client (the floor) and read off the wire (the wire floor).
type floorTimes struct {
	plugin, floor, wire time.Duration
	queries             int
	ratios              []string
}

// timeAgainstFloor runs ask b.N times, each on a new data source instance (nothing cached but
// the generation, which a running instance also keeps), and times the PromQL each run sent
// (read from the query log from off on) as a plain client and off the wire.
func timeAgainstFloor(b *testing.B, f *benchFleet, api v1.API, pc backend.PluginContext, off int64, ask func()) floorTimes {
	t := floorTimes{ratios: make([]string, 0, b.N)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pc.DataSourceInstanceSettings.Updated = time.Now()
		began := time.Now()
		ask()
		took := time.Since(began)
		var qs []loggedQuery
		qs, off = queriesSince(b, f.queryLog, off)
		t.queries = len(qs)
		floorTook := floor(b, api, qs)
		_, off = queriesSince(b, f.queryLog, off)
		wireTook := wireFloor(b, f.prom.URL, qs)
		_, off = queriesSince(b, f.queryLog, off)
		t.plugin, t.floor, t.wire = t.plugin+took, t.floor+floorTook, t.wire+wireTook
		t.ratios = append(t.ratios, fmt.Sprintf("%.2f", took.Seconds()/floorTook.Seconds()))
	}
	b.StopTimer()
	return t
}

// report reports the times per run and their ratios.
func (t floorTimes) report(b *testing.B) {
	b.ReportMetric(float64(t.plugin.Milliseconds())/float64(b.N), "plugin-ms/op")
	b.ReportMetric(float64(t.floor.Milliseconds())/float64(b.N), "floor-ms/op")
	b.ReportMetric(t.plugin.Seconds()/t.floor.Seconds(), "ratio")
	b.ReportMetric(float64(t.wire.Milliseconds())/float64(b.N), "wire-ms/op")
	b.ReportMetric(t.plugin.Seconds()/t.wire.Seconds(), "wire-ratio")
	b.ReportMetric(float64(t.queries), "promql-queries")
}
