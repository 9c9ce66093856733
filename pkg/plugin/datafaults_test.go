package plugin

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// oddSeries is one series of an odd instance: its metric, extra labels and its value at the
// i-th of n scrapes (skip leaves the scrape out: a gap).
type oddSeries struct {
	metric, labels string
	value          func(i, n int) (v float64, skip bool)
}

func steady(v float64) func(int, int) (float64, bool) {
	return func(int, int) (float64, bool) { return v, false }
}

// oddInstances are instances whose data misbehaves the way real fleets' data does, each with
// the series it exposes (all of the current generation's names unless said otherwise).
var oddInstances = map[string][]oddSeries{
	"reset:8000": { // the process restarted mid-range: its counters start again from 0
		{vllm.RequestsRunning, "", steady(3)},
		{vllm.Preemptions, "", func(i, n int) (float64, bool) { return float64(i%(n/2)) * 2, false }},
	},
	"nan:8000": { // a gauge that reports NaN every third scrape
		{vllm.RequestsRunning, "", steady(3)},
		{vllm.KVCacheUsage, "", func(i, _ int) (float64, bool) {
			if i%3 == 0 {
				return math.NaN(), false
			}
			return 0.5, false
		}},
	},
	"inf:8000": { // gauges at +Inf and -Inf
		{vllm.RequestsRunning, "", func(i, _ int) (float64, bool) { return math.Inf(1 - 2*(i%2)), false }},
		{vllm.KVCacheUsage, "", func(i, _ int) (float64, bool) { return math.Inf(1 - 2*(i%2)), false }},
	},
	"gap:8000": { // scraping stopped for the middle third of the range
		{vllm.RequestsRunning, "", func(i, n int) (float64, bool) { return 2, i > n/3 && i < 2*n/3 }},
		{vllm.KVCacheUsage, "", func(i, n int) (float64, bool) { return 0.4, i > n/3 && i < 2*n/3 }},
	},
	"dup:8000": { // the same series twice, from two engines (data parallel) of one server
		{vllm.RequestsRunning, `engine="0"`, steady(2)},
		{vllm.RequestsRunning, `engine="1"`, steady(5)},
		{vllm.KVCacheUsage, `engine="0"`, steady(0.3)},
		{vllm.KVCacheUsage, `engine="1"`, steady(0.6)},
	},
	"v0:8000": { // an old vLLM beside the current ones: its KV usage has the V0 name
		{vllm.RequestsRunning, "", steady(4)},
		{vllm.GPUCacheUsage, "", steady(0.7)},
	},
	"bare:8000": { // a vLLM whose other metrics are dropped by relabelling
		{vllm.RequestsRunning, "", steady(1)},
	},
	"extra:8000": { // labels the plugin does not know
		{vllm.RequestsRunning, `pod="vllm-7d9f",region="eu-west-1",le="oops"`, steady(6)},
		{vllm.KVCacheUsage, `pod="vllm-7d9f",region="eu-west-1"`, steady(0.2)},
	},
}

const oddModel = "odd/model"

// writeOdd writes the odd instances as OpenMetrics over the same grid as the env's fleet.
func writeOdd(t *testing.T, end time.Time) string {
	t.Helper()
	byMetric := map[string][]string{}
	n := int(dataSpan / scrape)
	for inst, list := range oddInstances {
		for _, s := range list {
			labels := fmt.Sprintf(`instance=%q,job="vllm",model_name=%q`, inst, oddModel)
			if s.labels != "" {
				labels += "," + s.labels
			}
			for i := 0; i <= n; i++ {
				v, skip := s.value(i, n)
				if skip {
					continue
				}
				byMetric[s.metric] = append(byMetric[s.metric], fmt.Sprintf("%s{%s} %s %d", s.metric, labels, num(v), end.Add(-time.Duration(n-i)*scrape).Unix()))
			}
		}
	}
	var b strings.Builder
	for metric, lines := range byMetric {
		typ := "gauge"
		if strings.HasSuffix(metric, "_total") {
			typ = "counter"
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n%s\n", strings.TrimSuffix(metric, "_total"), typ, strings.Join(lines, "\n"))
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "odd.om.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDataFaults: a real Prometheus backfilled with the env's two healthy servers and the
// odd instances; each case queries one odd instance beside a healthy neighbour query.
func TestDataFaults(t *testing.T) {
	e := newEnv(t)
	prom := testbed.Prometheus(t, fleet{generation: vllm.GenerationV1, end: e.end, span: dataSpan, instances: []server{serverA, serverB}}.write(t), writeOdd(t, e.end))
	pc := pluginContext(prom.URL, nil)
	for _, tc := range []struct {
		name     string
		instance string
		signals  []series.Signal
		// frames is how many frames (per signal and instance) must answer; check looks at them.
		frames int
		notice string
		check  func(t *testing.T, frames data.Frames)
	}{
		{name: "counter resets: the rate never goes negative", instance: "reset:8000", signals: []series.Signal{series.PreemptionRate}, frames: 1,
			check: allValues(func(v float64) bool { return v >= 0 }, "a rate at or above 0")},
		{name: "NaN samples answer as gaps, never NaN", instance: "nan:8000", signals: []series.Signal{series.KVUsage}, frames: 1,
			check: allValues(func(v float64) bool { return v == 0.5 }, "0.5")},
		{name: "±Inf samples never reach a frame as numbers that break JSON", instance: "inf:8000", signals: []series.Signal{series.KVUsage, series.Running}, frames: 2,
			check: marshals},
		{name: "a gap in scraping leaves empty points, values around it", instance: "gap:8000", signals: []series.Signal{series.KVUsage}, frames: 1,
			check: gapInTheMiddle},
		{name: "duplicated series of one instance answer one series", instance: "dup:8000", signals: []series.Signal{series.KVUsage, series.Running}, frames: 2,
			check: marshals},
		{name: "a renamed metric (V0 beside V1) still answers its signal", instance: "v0:8000", signals: []series.Signal{series.KVUsage}, frames: 1,
			check: allValues(func(v float64) bool { return v == 0.7 }, "0.7")},
		{name: "missing metrics give a notice, not an error", instance: "bare:8000", signals: []series.Signal{series.TTFTP99, series.Running}, frames: 1,
			notice: "ttft_p99: no data"},
		{name: "unknown labels are ignored", instance: "extra:8000", signals: []series.Signal{series.KVUsage, series.Running}, frames: 2,
			check: marshals},
		{name: "two vLLM versions side by side answer together", instance: "v0:8000|nan:8000", signals: []series.Signal{series.KVUsage}, frames: 2,
			check: marshals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.signals))
			for i, s := range tc.signals {
				names[i] = string(s)
			}
			q := signalsQuery(names...)
			q["instance"] = tc.instance
			dq := map[string]any{"queryType": "diagnosis", "instance": tc.instance}
			res := e.query(t, pc, e.dataQuery("ODD", q), e.dataQuery("DIAG", dq), e.dataQuery("OK", signalsQuery(string(series.TTFTP50))))
			r := okResponse(t, res, "ODD")
			okResponse(t, res, "DIAG") // the rules evaluate over odd data without failing
			if got := len(signalFrames(t, r.Frames)); got != tc.frames {
				t.Errorf("%d frames, want %d", got, tc.frames)
			}
			if tc.notice != "" && !strings.Contains(strings.Join(notices(r.Frames), "\n"), tc.notice) {
				t.Errorf("notices %q do not say %q", notices(r.Frames), tc.notice)
			}
			if tc.check != nil {
				tc.check(t, r.Frames)
			}
			if got := len(signalFrames(t, okResponse(t, res, "OK").Frames)); got != 2 {
				t.Errorf("the neighbour query answered %d frames, want 2", got)
			}
		})
	}
}

// allValues checks every non-empty point of every frame.
func allValues(ok func(float64) bool, want string) func(*testing.T, data.Frames) {
	return func(t *testing.T, frames data.Frames) {
		t.Helper()
		var n int
		for _, f := range frames {
			if len(f.Fields) != 2 {
				continue
			}
			for i := 0; i < f.Rows(); i++ {
				if v := f.Fields[1].At(i).(*float64); v != nil {
					n++
					if !ok(*v) {
						t.Fatalf("%s at row %d: %g, want %s", f.Name, i, *v, want)
					}
				}
			}
		}
		if n == 0 {
			t.Error("no values at all")
		}
	}
}

// marshals checks that the frames encode as Grafana's JSON data frames.
func marshals(t *testing.T, frames data.Frames) {
	t.Helper()
	for _, f := range frames {
		if _, err := f.MarshalJSON(); err != nil {
			t.Errorf("frame %s does not encode: %v", f.Name, err)
		}
	}
	if _, err := (backend.DataResponse{Frames: frames}).MarshalJSON(); err != nil {
		t.Errorf("the response does not encode: %v", err)
	}
}

// gapInTheMiddle checks that the middle of the range is empty and its edges hold values.
func gapInTheMiddle(t *testing.T, frames data.Frames) {
	t.Helper()
	f := frames[0]
	rows := f.Rows()
	at := func(i int) *float64 { return f.Fields[1].At(i).(*float64) }
	if at(rows/2) != nil {
		t.Errorf("a value in the middle of the gap: %g", *at(rows / 2))
	}
	if at(rows/6) == nil || at(rows-2) == nil {
		t.Error("no values before or after the gap")
	}
}
