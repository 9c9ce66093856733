package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/verdict"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// A verdict compares two windows of one server: configuration A before, B after. vLLM must
// restart to change these flags, so each side is its own simulator run (counters start at
// zero again), written into one Prometheus: run A from t0 for verdictSpan, a minute of
// restart, run B for verdictSpan plus the few minutes that the current window leaves out as
// warm-up, so that no window sees the other configuration's cache_config_info.
const (
	verdictSpan    = 20 * time.Minute
	verdictRestart = time.Minute
	verdictWarmUp  = 4 * time.Minute
)

// verdictEngine is an 8B model on one 80 GB GPU: a decode step of a dozen sequences takes
// about 15 ms, prefill runs at about 16k tokens per second.
func verdictEngine() sim.EngineConfig {
	return sim.EngineConfig{
		MaxNumBatchedTokens: 2048, MaxNumSeqs: 128, MaxModelLen: 8192, ChunkedPrefill: true,
		BlockSize: 16, NumGPUBlocks: 4000, CacheDType: "auto", GPUMemoryUtilization: 0.9, PrefixCaching: true,
		Cost: sim.CostModel{StepOverhead: 0.012, PerPrefillToken: 60e-6, PerDecodeSeq: 0.2e-3, PerContextToken: 0.2e-6, PerDraftToken: 0.15},
	}
}

// verdictLoad is chat traffic: one of four 256-token system prompts, a 400-token question,
// a 150-token answer, four requests a second.
func verdictLoad() sim.Load {
	return sim.Load{
		RatePerSecond: 4, PrefixTokens: 256, NumPrefixes: 4,
		SuffixTokens: sim.Dist{Mean: 400, CV: 0.5, Min: 8},
		OutputTokens: sim.Dist{Mean: 150, CV: 0.5, Min: 4},
		MaxTokens:    1024, Temperature: 0.7,
	}
}

// change is one server's configuration before and after.
type change struct {
	address               string
	before, after         sim.EngineConfig
	loadBefore, loadAfter sim.Load
}

// Each change and its reverse run on their own instance. Chunked prefill is not among them:
// the simulator's scheduler, like vLLM's, gives a running prefill chunk the whole token budget
// before it admits a waiting request, so chunking cannot shorten a new request's TTFT there;
// its changes are generated directly as TTFT histograms (chunkedPrefillChanges).
var verdictChanges = func() map[string]change {
	plain := func(addr string, e func(*sim.EngineConfig), before, after func(*sim.EngineConfig, *sim.Load)) change {
		c := change{address: addr, before: verdictEngine(), after: verdictEngine(), loadBefore: verdictLoad(), loadAfter: verdictLoad()}
		if e != nil {
			e(&c.before)
			e(&c.after)
		}
		before(&c.before, &c.loadBefore)
		after(&c.after, &c.loadAfter)
		return c
	}
	// A 7000-token shared system prompt, with or without a per-request timestamp in it.
	system := func(e *sim.EngineConfig) { e.NumGPUBlocks = 12000 }
	prompt := func(timestamped bool) func(*sim.EngineConfig, *sim.Load) {
		return func(_ *sim.EngineConfig, l *sim.Load) {
			l.PrefixTokens, l.NumPrefixes, l.RatePerSecond, l.UniquePrefix = 7000, 2, 1, timestamped
			l.SuffixTokens = sim.Dist{Mean: 200, CV: 0.5, Min: 8}
		}
	}
	drafter := func(acceptance float64) func(*sim.EngineConfig, *sim.Load) {
		return func(e *sim.EngineConfig, _ *sim.Load) { e.SpecTokens, e.SpecAcceptance = 3, acceptance }
	}
	dtype := func(d string) func(*sim.EngineConfig, *sim.Load) {
		return func(e *sim.EngineConfig, _ *sim.Load) { e.CacheDType = d }
	}
	rate := func(r float64) func(*sim.EngineConfig, *sim.Load) {
		return func(_ *sim.EngineConfig, l *sim.Load) { l.RatePerSecond = r }
	}
	// The kv_cache_saturated scenario's traffic (long answers, four 1024-token system prompts)
	// under a concurrency limit: 128 lets the running requests outgrow the 64,000-token pool,
	// 40 of them (about 1000 tokens each, the prompts shared) fit it.
	saturating := func(seqs int) func(*sim.EngineConfig, *sim.Load) {
		return func(e *sim.EngineConfig, l *sim.Load) {
			e.MaxNumSeqs = seqs
			l.PrefixTokens, l.RatePerSecond, l.MaxTokens = 1024, 1.1, 2048
			l.OutputTokens = sim.Dist{Mean: 1200, CV: 0.3, Min: 64}
		}
	}
	return map[string]change{
		"timestamped to fixed prompt":                        plain("127.0.0.1:9003", system, prompt(true), prompt(false)),
		"fixed to timestamped prompt":                        plain("127.0.0.1:9004", system, prompt(false), prompt(true)),
		"mismatched to matched drafter":                      plain("127.0.0.1:9005", nil, drafter(0.35), drafter(0.85)),
		"matched to mismatched drafter":                      plain("127.0.0.1:9006", nil, drafter(0.85), drafter(0.35)),
		"fp16 to fp8 KV cache":                               plain("127.0.0.1:9007", nil, dtype("auto"), dtype("fp8")),
		"fp8 to fp16 KV cache":                               plain("127.0.0.1:9008", nil, dtype("fp8"), dtype("auto")),
		"traffic doubles, nothing changes":                   plain("127.0.0.1:9009", nil, rate(4), rate(8)),
		"a request every two minutes":                        plain("127.0.0.1:9010", nil, rate(1.0/120), rate(1.0/120)),
		"max_num_seqs 128 lowered to 40 under KV saturation": plain("127.0.0.1:9011", nil, saturating(128), saturating(40)),
		"restart under KV saturation, max_num_seqs kept":     plain("127.0.0.1:9012", nil, saturating(128), saturating(128)),
		"restart, prompt still timestamped":                  plain("127.0.0.1:9013", system, prompt(true), prompt(true)),
	}
}()

// chunkedPrefillChanges are servers whose TTFT observations (per scrape interval) put p50 in
// (0.04, 0.06] and p99 in (1, 2.5] while long prefills block other requests, and p99 in
// (0.25, 0.5] once chunked prefill stops that: written with the openmetrics_test.go generator.
var chunkedPrefillChanges = func() map[string]struct{ before, after server } {
	blocked := []observation{{seconds: 0.05, count: 97}, {seconds: 2, count: 3}}
	chunked := []observation{{seconds: 0.05, count: 97}, {seconds: 0.3, count: 3}}
	srv := func(addr string, ttft []observation) server {
		return server{instance: addr, model: sim.ModelLlama, running: 8, kvUsage: 0.3, ttft: ttft, itl: []observation{{seconds: 0.02, count: 500}}}
	}
	return map[string]struct{ before, after server }{
		"chunked prefill off to on": {srv("127.0.0.1:9101", blocked), srv("127.0.0.1:9101", chunked)},
		"chunked prefill on to off": {srv("127.0.0.1:9102", chunked), srv("127.0.0.1:9102", blocked)},
	}
}()

// verdictEnv is one Prometheus holding both runs of every change, and the plugin over gRPC.
type verdictEnv struct {
	client   *datasourcetest.TestPluginClient
	prom     *testbed.PromServer
	baseline verdict.Window
	current  verdict.Window
}

func newVerdictEnv(t *testing.T) *verdictEnv {
	t.Helper()
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	runB := t0.Add(verdictSpan + verdictRestart)
	e := &verdictEnv{
		baseline: verdict.Window{From: t0, To: t0.Add(verdictSpan)},
		current:  verdict.Window{From: runB.Add(verdictWarmUp), To: runB.Add(verdictWarmUp + verdictSpan)},
	}
	var before, after []sim.Instance
	// Instances in a fixed order: the simulator seeds each one's randomness by its index.
	names := make([]string, 0, len(verdictChanges))
	for n := range verdictChanges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := verdictChanges[n]
		before = append(before, sim.Instance{Address: c.address, Model: sim.ModelLlama, Engine: c.before, Load: c.loadBefore})
		after = append(after, sim.Instance{Address: c.address, Model: sim.ModelLlama, Engine: c.after, Load: c.loadAfter})
	}
	files := []string{
		writeRun(t, "before", sim.Scenario{Name: "before", Seed: 7, Instances: before}, t0, verdictSpan),
		writeRun(t, "after", sim.Scenario{Name: "after", Seed: 8, Instances: after}, runB, verdictWarmUp+verdictSpan),
	}
	for _, c := range chunkedPrefillChanges {
		files = append(files,
			fleet{generation: vllm.GenerationV1, end: e.baseline.To, span: verdictSpan, instances: []server{c.before}}.write(t),
			fleet{generation: vllm.GenerationV1, end: e.current.To, span: verdictWarmUp + verdictSpan, instances: []server{c.after}}.write(t))
	}
	e.prom = testbed.Prometheus(t, files...)
	e.client = grpcPlugin(t)
	return e
}

func writeRun(t *testing.T, name string, sc sim.Scenario, start time.Time, span time.Duration) string {
	t.Helper()
	res, err := sim.Run(sc, start, span, scrape, sim.WithoutSpans())
	if err != nil {
		t.Fatalf("simulating %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name+".om.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := res.WriteOpenMetrics(f); err != nil {
		t.Fatalf("writing %s: %v", name, err)
	}
	return path
}

// verdictQuery asks for the verdicts of one instance, the baseline in RFC 3339.
func (e *verdictEnv) verdictQuery(refID, instance string, declared ...string) backend.DataQuery {
	raw, _ := json.Marshal(map[string]any{
		"queryType": QueryTypeVerdict, "instance": instance, "optimisations": declared,
		"baselineFrom": e.baseline.From.Format(time.RFC3339), "baselineTo": e.baseline.To.Format(time.RFC3339),
	})
	return backend.DataQuery{RefID: refID, QueryType: string(QueryTypeVerdict), JSON: raw, Interval: scrape,
		TimeRange: backend.TimeRange{From: e.current.From, To: e.current.To}}
}

func (e *verdictEnv) run(t *testing.T, queries ...backend.DataQuery) *backend.QueryDataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginContext(e.prom.URL, nil), Queries: queries})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	return res
}

// verdictRow is one row of the verdict frame, by field name.
type verdictRow map[string]any

func rowsOf(t *testing.T, r backend.DataResponse) []verdictRow {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("query failed: %v", r.Error)
	}
	if len(r.Frames) != 1 {
		t.Fatalf("%d frames, want one table", len(r.Frames))
	}
	f := r.Frames[0]
	out := make([]verdictRow, f.Rows())
	for i := range out {
		out[i] = verdictRow{}
		for _, fld := range f.Fields {
			v, _ := fld.ConcreteAt(i)
			out[i][fld.Name] = v
		}
	}
	return out
}

func rowFor(t *testing.T, rows []verdictRow, o verdict.Optimisation) verdictRow {
	t.Helper()
	for _, r := range rows {
		if r["optimisation"] == string(o) {
			return r
		}
	}
	t.Fatalf("no %s row among %d", o, len(rows))
	return nil
}

func TestVerdictsOnSimulatedChanges(t *testing.T) {
	e := newVerdictEnv(t)
	cases := []struct {
		change   string
		declared []string
		opt      verdict.Optimisation
		want     verdict.Outcome
	}{
		{"chunked prefill off to on", []string{"chunked_prefill"}, verdict.ChunkedPrefill, verdict.Worked},
		{"chunked prefill on to off", []string{"chunked_prefill"}, verdict.ChunkedPrefill, verdict.DidNotWork},
		{"chunked prefill off to on", nil, verdict.ChunkedPrefill, verdict.NotInUse},
		{"timestamped to fixed prompt", nil, verdict.PrefixCaching, verdict.Worked},
		{"fixed to timestamped prompt", nil, verdict.PrefixCaching, verdict.DidNotWork},
		{"mismatched to matched drafter", nil, verdict.SpecDecode, verdict.Worked},
		{"matched to mismatched drafter", nil, verdict.SpecDecode, verdict.DidNotWork},
		{"fp16 to fp8 KV cache", nil, verdict.FP8KVCache, verdict.Worked},
		// Undoing fp8 leaves no fp8 to judge: the data says the cache is fp16 now.
		{"fp8 to fp16 KV cache", []string{"fp8_kv_cache"}, verdict.FP8KVCache, verdict.NotInUse},
		{"traffic doubles, nothing changes", nil, verdict.PrefixCaching, verdict.NotComparable},
		{"traffic doubles, nothing changes", nil, verdict.Concurrency, verdict.NotComparable},
		{"a request every two minutes", nil, verdict.PrefixCaching, verdict.NotEnoughData},
		{"a request every two minutes", nil, verdict.Concurrency, verdict.NotEnoughData},
	}
	var queries []backend.DataQuery
	for i, c := range cases {
		queries = append(queries, e.verdictQuery(string(rune('A'+i)), addressOf(c.change), c.declared...))
	}
	res := e.run(t, queries...)
	for i, c := range cases {
		t.Run(c.change+"/"+string(c.opt)+"/"+string(c.want), func(t *testing.T) {
			rows := rowsOf(t, res.Responses[string(rune('A'+i))])
			r := rowFor(t, rows, c.opt)
			if r["verdict"] != string(c.want) {
				t.Errorf("verdict %q, want %q\nbaseline: %v\ncurrent: %v\nreason: %v", r["verdict"], c.want, r["baseline"], r["current"], r["reason"])
			}
			if r["instance"] != addressOf(c.change) || r["model_name"] != sim.ModelLlama {
				t.Errorf("row for %v %v, want %s %s", r["instance"], r["model_name"], addressOf(c.change), sim.ModelLlama)
			}
			t.Logf("%s: %s: %s | load %v→%v req/s", c.opt, r["verdict"], r["reason"], r["baseline_request_rate"], r["current_request_rate"])
		})
	}
}

func addressOf(change string) string {
	if c, ok := chunkedPrefillChanges[change]; ok {
		return c.before.instance
	}
	return verdictChanges[change].address
}

func TestVerdictBadInputIsAPluginErrorPerQuery(t *testing.T) {
	client := grpcPlugin(t)
	now := time.Now()
	query := func(refID string, model map[string]any) backend.DataQuery {
		model["queryType"] = QueryTypeVerdict
		raw, _ := json.Marshal(model)
		return backend.DataQuery{RefID: refID, QueryType: string(QueryTypeVerdict), JSON: raw, Interval: scrape,
			TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}
	}
	cases := []struct {
		name  string
		model map[string]any
		says  string
	}{
		{"malformed baselineTo alone", map[string]any{"baselineTo": "yesterday"}, `baselineTo "yesterday" is not a time`},
		{"malformed baselineFrom", map[string]any{"baselineFrom": "last tuesday"}, `baselineFrom "last tuesday" is not a time`},
		{"malformed baselineTo", map[string]any{"baselineFrom": "now-1d", "baselineTo": "2026-13-45"}, `baselineTo "2026-13-45" is not a time`},
		{"baseline after the range", map[string]any{"baselineFrom": "now+1h", "baselineTo": "now+2h"}, "is not before the query's time range"},
		{"baseline overlapping the range", map[string]any{"baselineFrom": "now-90m", "baselineTo": "now-30m"}, "overlaps the query's time range"},
		{"baseline ending before it starts", map[string]any{"baselineFrom": "now-2h", "baselineTo": "now-3h"}, "baselineTo must be after baselineFrom"},
		{"baseline shorter than two rate windows", map[string]any{"baselineFrom": "now-1d", "baselineTo": "now-1d+30s"}, "needs at least 2m0s per window"},
		{"unknown optimisation", map[string]any{"baselineFrom": "now-1d", "optimisations": []string{"paged_attention"}}, `unknown optimisation "paged_attention"`},
		{"unknown rule, naming the rules", map[string]any{"baselineFrom": "now-1d", "rule": "kv_cache_saturatd"}, `unknown rule "kv_cache_saturatd" (did you mean "kv_cache_saturated"?); the rules are engine_stalled, `},
	}
	var queries []backend.DataQuery
	for i, c := range cases {
		queries = append(queries, query(string(rune('A'+i)), c.model))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Nothing listens at this URL: every case must fail before any Prometheus request.
	res, err := client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginContext("http://127.0.0.1:1", nil), Queries: queries})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := res.Responses[string(rune('A'+i))]
			if r.Error == nil {
				t.Fatal("no error")
			}
			if r.ErrorSource != backend.ErrorSourcePlugin || r.Status != backend.StatusBadRequest {
				t.Errorf("error source %q status %d, want plugin and 400", r.ErrorSource, r.Status)
			}
			if !strings.Contains(r.Error.Error(), c.says) {
				t.Errorf("error %q does not say %q", r.Error, c.says)
			}
		})
	}
}

// promiseQuery asks whether a rule's promise held on one instance. Both windows start
// verdictWarmUp after their run did, so that neither holds the minutes a cold server needs to
// fill its KV cache: the baseline stands for the finding's window, the range for the time after
// the change.
func (e *verdictEnv) promiseQuery(refID, instance, rule string) backend.DataQuery {
	raw, _ := json.Marshal(map[string]any{
		"queryType": QueryTypeVerdict, "instance": instance, "rule": rule,
		"baselineFrom": e.baseline.From.Add(verdictWarmUp).Format(time.RFC3339), "baselineTo": e.baseline.To.Format(time.RFC3339),
	})
	return backend.DataQuery{RefID: refID, QueryType: string(QueryTypeVerdict), JSON: raw, Interval: scrape,
		TimeRange: backend.TimeRange{From: e.current.From, To: e.current.To}}
}

// promiseRow is the one row of a verdict answer's promise frame, by field name.
func promiseRow(t *testing.T, r backend.DataResponse) verdictRow {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("query failed: %v", r.Error)
	}
	for _, f := range r.Frames {
		if f.Name != "promise" {
			continue
		}
		if f.Rows() != 1 {
			t.Fatalf("promise frame has %d rows, want one for the instance", f.Rows())
		}
		row := verdictRow{}
		for _, fld := range f.Fields {
			row[fld.Name], _ = fld.ConcreteAt(0)
		}
		return row
	}
	t.Fatalf("no promise frame among %d frames", len(r.Frames))
	return nil
}

// The outcome follows what the simulator's configuration changed: the fix a finding's advice
// names moves its promised signal, a restart that keeps the configuration does not.
func TestPromisesOnSimulatedChanges(t *testing.T) {
	e := newVerdictEnv(t)
	cases := []struct {
		change, rule string
		want         verdict.Outcome
	}{
		{"max_num_seqs 128 lowered to 40 under KV saturation", "kv_cache_saturated", verdict.Moved},
		{"restart under KV saturation, max_num_seqs kept", "kv_cache_saturated", verdict.DidNotMove},
		{"timestamped to fixed prompt", "prefix_cache_miss", verdict.Moved},
		{"restart, prompt still timestamped", "prefix_cache_miss", verdict.DidNotMove},
		{"fixed to timestamped prompt", "prefix_cache_miss", verdict.GotWorse},
	}
	var queries []backend.DataQuery
	for i, c := range cases {
		queries = append(queries, e.promiseQuery(string(rune('A'+i)), addressOf(c.change), c.rule))
	}
	res := e.run(t, queries...)
	for i, c := range cases {
		t.Run(c.change+"/"+c.rule, func(t *testing.T) {
			r := promiseRow(t, res.Responses[string(rune('A'+i))])
			if r["outcome"] != string(c.want) {
				t.Errorf("outcome %q, want %q: %v", r["outcome"], c.want, r["sentence"])
			}
			if r["rule"] != c.rule || r["instance"] != addressOf(c.change) {
				t.Errorf("row for %v on %v, want %s on %s", r["rule"], r["instance"], c.rule, addressOf(c.change))
			}
			t.Logf("%s %s: %v → %v (%v): %s", r["metric"], r["direction"], r["before"], r["after"], r["outcome"], r["sentence"])
		})
	}
}
