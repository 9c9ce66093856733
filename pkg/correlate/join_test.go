package correlate

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

var (
	t0   = time.Date(2026, 8, 14, 10, 0, 0, 0, time.UTC)
	step = 15 * time.Second
	keyA = series.Key{Instance: "10.0.0.1:8000", Model: "llama"}
	keyB = series.Key{Instance: "10.0.0.2:8000", Model: "qwen"}
)

func at(i int) time.Time { return t0.Add(time.Duration(i) * step) }

// grid returns a set of n steps with one series per signal and key, whose value at step i is
// f(i).
func grid(n int, put map[series.Key]map[series.Signal]func(i int) float64) *series.Set {
	set := series.NewSet(series.Grid{Start: t0, Step: step, Len: n})
	for k, sigs := range put {
		for sig, f := range sigs {
			s := series.NewSeries(sig, k, n)
			for i := range s.Values {
				s.Values[i] = f(i)
			}
			set.Put(s)
		}
	}
	return set
}

// request is a V1 request of key k from start to end, with every stage present.
func request(k series.Key, start, end time.Time) traces.Request {
	e2e := end.Sub(start).Seconds()
	r := traces.Request{TraceID: strings.Repeat("0", 31) + "1", Start: start, End: end, Instance: k.Instance, Model: k.Model,
		Queue: e2e * 0.1, Prefill: e2e * 0.2, Decode: e2e * 0.6, Inference: e2e * 0.8, TTFT: e2e * 0.3, E2E: e2e,
		PromptTokens: 500, OutputTokens: 100, Scheduler: math.NaN(), Forward: math.NaN(), Execute: math.NaN()}
	r.Present = present(traces.FieldQueue, traces.FieldPrefill, traces.FieldDecode, traces.FieldInference, traces.FieldTTFT,
		traces.FieldE2E, traces.FieldPromptTokens, traces.FieldOutputTokens)
	return r
}

func present(fs ...traces.Field) traces.Fields {
	var out traces.Fields
	for _, f := range fs {
		out |= 1 << f
	}
	return out
}

func ramp(i int) float64 { return float64(i) / 100 }

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func TestAsOfTakesTheLastSampleAtOrBeforeTheStart(t *testing.T) {
	set := grid(40, map[series.Key]map[series.Signal]func(int) float64{keyA: {series.KVUsage: ramp}})
	cases := []struct {
		name   string
		start  time.Time
		sample int // -1: none
	}{
		{"start on a sample", at(10), 10},
		{"start just before the next sample", at(11).Add(-time.Nanosecond), 10},
		{"start just after a sample", at(10).Add(time.Millisecond), 10},
		{"start before the grid", at(0).Add(-time.Second), -1},
		{"start after the grid", at(45), 39},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Join(Input{Requests: []traces.Request{request(keyA, c.start, c.start.Add(time.Second))}, Set: set}, Options{})
			row := res.Rows[0]
			got := row.State(series.KVUsage).AtStart
			if c.sample < 0 {
				if !math.IsNaN(got) || !row.MetricsAt.IsZero() {
					t.Fatalf("kv_usage at start = %v at %v, want no sample", got, row.MetricsAt)
				}
				return
			}
			if want := ramp(c.sample); got != want || !row.MetricsAt.Equal(at(c.sample)) {
				t.Fatalf("kv_usage at start = %v at %v, want %v at %v", got, row.MetricsAt, want, at(c.sample))
			}
		})
	}
}

func TestWorstIsTheWorstSampleWhileTheRequestRan(t *testing.T) {
	// kv_usage peaks at step 12; the hit rate dips at step 13; step 11 has no samples.
	kv := func(i int) float64 {
		switch i {
		case 11:
			return math.NaN()
		case 12:
			return 0.97
		}
		return 0.5
	}
	hit := func(i int) float64 {
		switch i {
		case 11:
			return math.NaN()
		case 13:
			return 0.05
		}
		return 0.8
	}
	set := grid(40, map[series.Key]map[series.Signal]func(int) float64{keyA: {series.KVUsage: kv, series.PrefixCacheHitRate: hit}})
	cases := []struct {
		name              string
		start, end        time.Time
		wantKV, wantHit   float64
		wantKV0, wantHit0 float64
	}{
		{"spans the peak and the dip", at(10).Add(time.Second), at(14), 0.97, 0.05, 0.5, 0.8},
		{"ends before the peak", at(10).Add(time.Second), at(12).Add(-time.Second), 0.5, 0.8, 0.5, 0.8},
		{"within one step: the sample in force", at(12).Add(time.Second), at(12).Add(5 * time.Second), 0.97, 0.8, 0.97, 0.8},
		{"starts on a gap: worst from the next samples", at(11).Add(time.Second), at(13), 0.97, 0.05, math.NaN(), math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := Join(Input{Requests: []traces.Request{request(keyA, c.start, c.end)}, Set: set}, Options{}).Rows[0]
			kvs, hits := row.State(series.KVUsage), row.State(series.PrefixCacheHitRate)
			if !sameFloat(kvs.Worst, c.wantKV) || !sameFloat(hits.Worst, c.wantHit) {
				t.Errorf("worst kv_usage %v, hit rate %v; want %v (highest) and %v (lowest)", kvs.Worst, hits.Worst, c.wantKV, c.wantHit)
			}
			if !sameFloat(kvs.AtStart, c.wantKV0) || !sameFloat(hits.AtStart, c.wantHit0) {
				t.Errorf("at start kv_usage %v, hit rate %v; want %v and %v", kvs.AtStart, hits.AtStart, c.wantKV0, c.wantHit0)
			}
		})
	}
}

func TestSignalsOfOtherKeysAreNotJoined(t *testing.T) {
	set := grid(40, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.KVUsage: func(int) float64 { return 0.3 }},
		keyB: {series.KVUsage: func(int) float64 { return 0.9 }},
	})
	row := Join(Input{Requests: []traces.Request{request(keyB, at(5), at(6))}, Set: set}, Options{}).Rows[0]
	if got := row.State(series.KVUsage).AtStart; got != 0.9 {
		t.Fatalf("kv_usage = %v, want %v (the request's own instance and model)", got, 0.9)
	}
	if got := row.State(series.Running).AtStart; !math.IsNaN(got) {
		t.Fatalf("running = %v, want NaN: the metrics have no running series", got)
	}
}

func TestFindingsActiveWhileTheRequestRan(t *testing.T) {
	finding := func(rule string, k series.Key, from, to int) diagnosis.Finding {
		return diagnosis.Finding{Rule: rule, Key: k, Start: at(from), End: at(to)}
	}
	otherModel := series.Key{Instance: keyA.Instance, Model: "other"}
	fs := []diagnosis.Finding{
		finding("before", keyA, 0, 9),
		finding("overlaps_start", keyA, 5, 10),
		finding("inside", keyA, 11, 11),
		finding("overlaps_end", keyA, 12, 30),
		finding("after", keyA, 13, 20),
		finding("other_instance", keyB, 0, 39),
		finding("other_model", otherModel, 0, 39),
		finding("instance_wide", series.Key{Instance: keyA.Instance}, 0, 39),
	}
	req := request(keyA, at(10), at(12))
	row := Join(Input{Requests: []traces.Request{req}, Findings: fs}, Options{}).Rows[0]
	got := row.FindingRules()
	slices.Sort(got)
	want := []string{"inside", "instance_wide", "overlaps_end", "overlaps_start"}
	if !slices.Equal(got, want) {
		t.Fatalf("active findings %s, want %s (overlap of [start, end], same instance and model)", got, want)
	}
	noModel := req
	noModel.Model = ""
	row = Join(Input{Requests: []traces.Request{noModel}, Findings: fs}, Options{}).Rows[0]
	if !strings.Contains(strings.Join(row.FindingRules(), ","), "other_model") {
		t.Fatalf("a request without a model got %v: findings of every model of its instance should match", row.FindingRules())
	}
}

func TestModelComesFromTheInstancesOnlyModel(t *testing.T) {
	two := series.Key{Instance: keyB.Instance, Model: "second"}
	set := grid(40, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.KVUsage: func(int) float64 { return 0.4 }},
		keyB: {series.KVUsage: ramp},
		two:  {series.KVUsage: ramp},
	})
	cases := []struct {
		name        string
		instance    string
		model       string
		fromMetrics bool
		notice      string
	}{
		{"one model: taken", keyA.Instance, keyA.Model, true, ""},
		{"several models: left empty", keyB.Instance, "", false, "serves " + keyB.Model + ", second"},
		{"instance without metrics", "10.9.9.9:8000", "", false, "has no vLLM metrics"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := request(series.Key{Instance: c.instance}, at(3), at(4))
			res := Join(Input{Requests: []traces.Request{req}, Set: set}, Options{})
			row := res.Rows[0]
			if row.Model != c.model || row.ModelFromMetrics != c.fromMetrics {
				t.Fatalf("model %q (from metrics %v), want %q (%v)", row.Model, row.ModelFromMetrics, c.model, c.fromMetrics)
			}
			if c.fromMetrics && row.State(series.KVUsage).AtStart != 0.4 {
				t.Fatalf("kv_usage %v: the filled model's metrics should be joined", row.State(series.KVUsage).AtStart)
			}
			var notes string
			for _, n := range res.Notices {
				if strings.Contains(n, "model") || strings.Contains(n, "metrics") {
					notes += n
				}
			}
			if (c.notice == "") != (notes == "") || !strings.Contains(notes, c.notice) {
				t.Fatalf("notices %q, want one containing %q", notes, c.notice)
			}
		})
	}
}

func TestCoverageCountsFinishedRequestsFromTheRequestRate(t *testing.T) {
	const rate = 2.0 // requests per second on each of two keys
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.RequestRate: func(int) float64 { return rate }},
		keyB: {series.RequestRate: func(int) float64 { return rate }},
	})
	from, to := at(20), at(60)
	spans := 12
	reqs := make([]traces.Request, spans)
	for i := range reqs {
		reqs[i] = request(keyA, at(20+i), at(21+i))
	}
	res := Join(Input{Requests: reqs, Set: set, From: from, To: to}, Options{})
	want := 2 * rate * to.Sub(from).Seconds()
	if res.Coverage.Finished != want || res.Coverage.Spans != spans {
		t.Fatalf("coverage %d of %v, want %d of %v", res.Coverage.Spans, res.Coverage.Finished, spans, want)
	}
	if text := res.Coverage.Text(); !strings.Contains(text, thousands(want)) || !strings.Contains(text, "biased") {
		t.Fatalf("coverage text %q should give %s finished and warn that span percentiles are biased", text, thousands(want))
	}
	res = Join(Input{Requests: reqs, Set: set, From: from, To: to, Truncated: true}, Options{})
	if !strings.Contains(res.Coverage.Text(), "at least") {
		t.Fatalf("truncated coverage %q should be a lower bound", res.Coverage.Text())
	}
	res = Join(Input{Requests: reqs, From: from, To: to}, Options{})
	if res.Coverage.Known() {
		t.Fatalf("coverage %v known without metrics", res.Coverage.Finished)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 3400: "3,400", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
