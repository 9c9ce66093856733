package sim

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// runs caches one 30-minute run per scenario: the tests below read the same results.
var runs sync.Map

func run(t testing.TB, name string) *Result {
	t.Helper()
	if r, ok := runs.Load(name); ok {
		return r.(*Result)
	}
	sc, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, t0, 30*time.Minute, 15*time.Second)
	if err != nil {
		t.Fatalf("run %s: %v", name, err)
	}
	runs.Store(name, res)
	return res
}

// exposition is what an instance's /metrics would print now, in the text format.
func exposition(t *testing.T, sc Scenario, d time.Duration) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var mu sync.Mutex
	live, err := newLive(sc, d)
	if err != nil {
		t.Fatal(err)
	}
	live.advanceTo(d.Seconds())
	for _, s := range live.sims {
		var b bytes.Buffer
		if err := writeText(&b, s.metrics.reg); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		out[s.in.Address] = b.Bytes()
		mu.Unlock()
	}
	return out
}

// vLLM's own /metrics draws two lint complaints from promtool, which a faithful copy must
// draw too: colons in names, and a histogram named iteration_tokens_total.
func vllmLint(line string) bool {
	return strings.HasSuffix(line, "metric names should not contain ':'") ||
		line == `vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix`
}

// shape is an exposition without its values: the families, series and buckets that promtool
// judges. Instances that differ only in their values print the same shape.
func shape(text []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Every scenario's every instance is checked, each distinct shape once: one promtool call
// reports both format errors and lint problems, and vLLM's own lints are filtered out.
func TestEveryScenarioPassesPromtoolCheckMetrics(t *testing.T) {
	promtool := testbed.PromtoolPath(t)
	seen := map[string]bool{}
	for _, name := range Scenarios() {
		for _, gen := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationV0} {
			sc, _ := Lookup(name)
			sc.Generation = gen
			for inst, text := range exposition(t, sc, 2*time.Minute) {
				if k := shape(text); !seen[k] {
					seen[k] = true
					t.Run(name+"/"+string(gen)+"/"+inst, func(t *testing.T) {
						t.Parallel()
						cmd := exec.Command(promtool, "check", "metrics")
						cmd.Stdin = bytes.NewReader(text)
						out, _ := cmd.CombinedOutput()
						for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
							if line != "" && !vllmLint(line) {
								t.Errorf("promtool check metrics: %s", line)
							}
						}
					})
				}
			}
		}
	}
}

func TestOpenMetricsBackfillsWithPromtool(t *testing.T) {
	promtool := testbed.PromtoolPath(t)
	for _, gen := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationV0} {
		t.Run(string(gen), func(t *testing.T) {
			sc, _ := Lookup(RuleSpecDecodeInefficient)
			sc.Generation = gen
			res, err := Run(sc, t0, 10*time.Minute, 15*time.Second, WithoutSpans())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := dir + "/out.om"
			if err := res.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", path, dir+"/data").CombinedOutput()
			if err != nil {
				t.Fatalf("promtool rejected the OpenMetrics file: %v\n%s", err, out)
			}
		})
	}
}

// parse reads a text exposition into families.
func parse(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parsing exposition: %v", err)
	}
	return fams
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}

func TestExpositionMatchesTheVLLMVocabulary(t *testing.T) {
	for _, name := range []string{"healthy", RuleSpecDecodeInefficient} {
		t.Run(name, func(t *testing.T) {
			sc, _ := Lookup(name)
			texts := exposition(t, sc, 5*time.Minute)
			for inst, text := range texts {
				fams := parse(t, text)
				spec := sc.Instances[0].Engine.SpecTokens > 0
				for _, in := range sc.Instances {
					if in.Address == inst {
						spec = in.Engine.SpecTokens > 0
					}
				}
				for _, want := range vllm.Current {
					isSpec := strings.HasPrefix(want.Name, "vllm:spec_decode")
					f, ok := fams[want.Name]
					if isSpec && !spec {
						if ok {
							t.Errorf("%s: %s exported without speculative decoding", inst, want.Name)
						}
						continue
					}
					if !ok {
						t.Errorf("%s: %s missing", inst, want.Name)
						continue
					}
					if got := strings.ToLower(f.GetType().String()); got != string(want.Type) {
						t.Errorf("%s: %s has type %s, want %s", inst, want.Name, got, want.Type)
					}
					if f.GetHelp() != want.Help {
						t.Errorf("%s: %s help %q, want %q", inst, want.Name, f.GetHelp(), want.Help)
					}
					wantLabels := append([]string{vllm.LabelEngine, vllm.LabelModelName}, want.Labels...)
					if want.NoModel {
						wantLabels = append([]string{vllm.LabelEngine}, cacheInfoLabels...)
					}
					sort.Strings(wantLabels)
					for _, m := range f.GetMetric() {
						if got := labelNames(m); !slices.Equal(got, wantLabels) {
							t.Errorf("%s: %s labels %v, want %v", inst, want.Name, got, wantLabels)
						}
						if want.Buckets != nil {
							var got []float64
							for _, b := range m.GetHistogram().GetBucket() {
								if !math.IsInf(b.GetUpperBound(), 1) { // the text parser adds +Inf
									got = append(got, b.GetUpperBound())
								}
							}
							if !slices.Equal(got, want.Buckets) {
								t.Errorf("%s: %s buckets %v, want %v", inst, want.Name, got, want.Buckets)
							}
						}
					}
				}
				for got := range fams {
					if _, ok := vllm.Lookup(got); !ok {
						t.Errorf("%s: %s is not a vLLM metric", inst, got)
					}
				}
			}
		})
	}
}

func TestV0ExpositionUsesTheV0NamesAndNoEngineLabel(t *testing.T) {
	sc, _ := Lookup(RuleSpecDecodeInefficient)
	sc.Generation = vllm.GenerationV0
	for inst, text := range exposition(t, sc, 5*time.Minute) {
		fams := parse(t, text)
		var names []string
		for n, f := range fams {
			names = append(names, n+"_count", n)
			for _, m := range f.GetMetric() {
				if slices.Contains(labelNames(m), vllm.LabelEngine) {
					t.Errorf("%s: %s has an engine label; V0 had none", inst, n)
				}
			}
		}
		if d := vllm.Detect(names); d.Generation != vllm.GenerationV0 {
			t.Errorf("%s: detected as %s, want v0", inst, d.Generation)
		}
		for _, n := range []string{vllm.GPUCacheUsage, vllm.TimePerOutputToken, vllm.TimeInQueueRequests, vllm.GPUPrefixCacheHitRate} {
			if _, ok := fams[n]; !ok {
				t.Errorf("%s: %s missing from the V0 exposition", inst, n)
			}
		}
		want := []string{vllm.QueueTime, vllm.PrefillTime}
		if _, spec := fams[vllm.SpecAcceptanceRateV0]; spec {
			want = append(want, vllm.SpecDraftTokens, vllm.SpecAcceptedTokens)
		}
		for _, n := range want {
			if _, ok := fams[n]; !ok {
				t.Errorf("%s: %s missing from the V0 exposition (V0 printed it from 0.6 on)", inst, n)
			}
		}
		for _, n := range []string{vllm.KVCacheUsage, vllm.InterTokenLatency, vllm.PrefixCacheQueries, vllm.SpecDrafts} {
			if _, ok := fams[n]; ok {
				t.Errorf("%s: current name %s in the V0 exposition", inst, n)
			}
		}
	}
}

func TestCacheConfigInfoDescribesThePool(t *testing.T) {
	tests := []struct {
		dtype      string
		wantBlocks string
	}{
		{"auto", "4000"},
		{"fp8", "8000"}, // half the bytes per block: twice the blocks in the same memory
	}
	for _, tt := range tests {
		t.Run(tt.dtype, func(t *testing.T) {
			sc, _ := Lookup("healthy")
			sc.Instances = sc.Instances[:1]
			sc.Instances[0].Engine.CacheDType = tt.dtype
			for _, text := range exposition(t, sc, time.Minute) {
				f := parse(t, text)[vllm.CacheConfigInfo]
				labels := map[string]string{}
				for _, l := range f.GetMetric()[0].GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				c := vllm.ParseCacheConfig(labels)
				if labels["num_gpu_blocks"] != tt.wantBlocks || c.BlockSize != 16 || !c.PrefixCaching || c.CacheDType != tt.dtype {
					t.Errorf("cache_config_info %v", labels)
				}
			}
		})
	}
}

func TestSpansObeyTheRequestTimeline(t *testing.T) {
	for _, name := range []string{"healthy", RuleKVCacheSaturated, RuleClientTimeouts} {
		t.Run(name, func(t *testing.T) {
			res := run(t, name)
			if len(res.Spans) == 0 {
				t.Fatal("no spans")
			}
			for _, s := range res.Spans {
				const eps = 1e-9
				switch {
				case s.TTFT+eps < s.Queue:
					t.Fatalf("%s: TTFT %v below queue time %v", s.RequestID, s.TTFT, s.Queue)
				case s.Prefill+s.Decode > s.E2E+eps:
					t.Fatalf("%s: prefill %v + decode %v above e2e %v", s.RequestID, s.Prefill, s.Decode, s.E2E)
				case s.Queue < 0 || s.Prefill <= 0 || s.Decode < 0:
					t.Fatalf("%s: negative phase: %+v", s.RequestID, s)
				case s.End.Sub(s.Start) > time.Duration(s.E2E*1e9)+time.Microsecond || s.End.Sub(s.Start) < time.Duration(s.E2E*1e9)-time.Microsecond:
					t.Fatalf("%s: span lasts %v, e2e %v", s.RequestID, s.End.Sub(s.Start), s.E2E)
				case s.FinishReason == "abort":
					t.Fatalf("%s: an aborted request has a span", s.RequestID)
				case !strings.HasPrefix(s.RequestID, "chatcmpl-"):
					t.Fatalf("request id %q", s.RequestID)
				}
			}
		})
	}
}

func TestKVUsageIsAFraction(t *testing.T) {
	for _, name := range []string{RuleKVCacheSaturated, RulePreemptionsFreeCache, RulePastTheKnee} {
		t.Run(name, func(t *testing.T) {
			res := run(t, name)
			for _, st := range res.stores {
				for _, s := range st.families[vllm.KVCacheUsage].order {
					for _, v := range s.rows {
						if v < 0 || v > 1 {
							t.Fatalf("%s: kv usage %v", st.instance, v)
						}
					}
				}
			}
		})
	}
}

func TestPrefixCacheNeverHitsWhenEveryPrefixDiffers(t *testing.T) {
	sc, _ := Lookup("healthy")
	for i := range sc.Instances {
		sc.Instances[i].Load.UniquePrefix = true
	}
	res, err := Run(sc, t0, 5*time.Minute, 15*time.Second, WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	// Only a preempted request's recompute can hit: its own blocks, still cached.
	for _, in := range sc.Instances {
		v := res.view(in.Address)
		end := v.times[len(v.times)-1]
		l := res.LookupsBetween(in.Address, t0, end.Add(time.Second))
		if q := v.increase(vllm.PrefixCacheQueries, t0, end); q == 0 || l.Queries == 0 {
			t.Errorf("%s: %v prefix cache queries, %d first-time", in.Address, q, l.Queries)
		}
		if h := v.increase(vllm.PrefixCacheHits, t0, end); l.Hits != 0 || h != float64(l.RecomputeHits) {
			t.Errorf("%s: %d first-time hits with a per-request prefix, and %v hits counted for %d recompute hits", in.Address, l.Hits, h, l.RecomputeHits)
		}
	}
}

// checkSink fails the test when the engine preempts while blocks were still available.
type checkSink struct {
	t   *testing.T
	eng *engine
	n   int
}

func (c *checkSink) preempted(*request) {
	c.n++
	if !c.eng.exhausted {
		c.t.Fatalf("preemption while the pool was not exhausted (free %d, evictable %d of %d)", c.eng.free, c.eng.evictable, c.eng.total)
	}
}

func (c *checkSink) prefixLookup(int, int, bool)            {}
func (c *checkSink) firstToken(*request, float64)           {}
func (c *checkSink) tokens(*request, int, float64, float64) {}
func (c *checkSink) spec(int, int, int, []int)              {}
func (c *checkSink) finished(*request, float64, string)     {}
func (c *checkSink) step(float64, float64, int, int, bool)  {}

func TestPreemptionOnlyWhenThePoolIsExhausted(t *testing.T) {
	cfg := baseEngine()
	cfg.NumGPUBlocks = 600
	c := &checkSink{t: t}
	c.eng = newEngine(cfg, rand.New(rand.NewPCG(1, 1)), c)
	for i := range 40 {
		c.eng.waiting = append(c.eng.waiting, &request{id: uint64(i + 1), prompt: 500, target: 400, maxTokens: 1000})
	}
	now := 0.0
	for steps := 0; c.eng.busy() && steps < 100000; steps++ {
		dt := c.eng.plan(now)
		if dt == 0 {
			continue
		}
		now += dt
		c.eng.commit(now, dt)
	}
	if c.eng.busy() {
		t.Fatal("requests still in the engine after 100000 steps")
	}
	if c.n == 0 {
		t.Fatal("40 requests of 900 tokens on a 600-block pool never preempted: the test shows nothing")
	}
	if c.eng.free != c.eng.total-c.eng.evictable {
		t.Errorf("blocks leaked: free %d + evictable %d != total %d", c.eng.free, c.eng.evictable, c.eng.total)
	}
}

func TestSameSeedSameOutput(t *testing.T) {
	sc, _ := Lookup(RulePrefixCacheMiss)
	var outs [2][]byte
	for i := range outs {
		res, err := Run(sc, t0, 5*time.Minute, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.WriteOpenMetrics(&b); err != nil {
			t.Fatal(err)
		}
		outs[i] = b.Bytes()
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs with the same seed differ")
	}
}

func TestOpenMetricsShape(t *testing.T) {
	res := run(t, "healthy")
	var b bytes.Buffer
	if err := res.WriteOpenMetrics(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	tests := []struct{ name, want string }{
		{"ends in EOF", "# EOF\n"},
		{"counter family without _total", "# TYPE vllm:num_preemptions counter\n"},
		{"counter sample with _total", "\nvllm:num_preemptions_total{"},
		{"histogram family", "# TYPE vllm:time_to_first_token_seconds histogram\n"},
		{"normalised le", `le="1.0"`},
		{"instance label", `instance="127.0.0.1:8001"`},
		{"job label", `job="vllm"`},
		{"timestamps in seconds", " " + strconv.FormatFloat(float64(t0.Unix()), 'g', -1, 64) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(text, tt.want) {
				t.Errorf("output lacks %q", tt.want)
			}
		})
	}
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Error("output does not end in # EOF")
	}
}

func TestWriteOpenMetricsInPartsIsRunInParts(t *testing.T) {
	sc, err := Fleet(5)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Run(sc, t0, 10*time.Minute, 15*time.Second, WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := whole.WriteOpenMetrics(&want); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	truth, err := WriteOpenMetricsInParts(&got, sc, t0, 10*time.Minute, 15*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	samples := func(text string) []string {
		var out []string
		for _, line := range strings.Split(text, "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
		sort.Strings(out)
		return out
	}
	if w, g := samples(want.String()), samples(got.String()); !slices.Equal(w, g) {
		t.Errorf("the parts hold %d samples, the whole run %d, or they differ", len(g), len(w))
	}
	if !strings.HasSuffix(got.String(), "# EOF\n") || strings.Count(got.String(), "# EOF") != 1 {
		t.Error("want one # EOF, at the end")
	}
	if !slices.EqualFunc(truth, whole.Truth, func(a, b Finding) bool { return a == b }) {
		t.Errorf("truth %v, want the whole run's %v", truth, whole.Truth)
	}
}
