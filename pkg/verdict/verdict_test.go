package verdict

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

var (
	key   = series.Key{Instance: "10.0.0.1:8000", Model: "meta-llama/Llama-3.1-8B-Instruct"}
	step  = time.Minute
	tiles = 20
	nan   = math.NaN()
)

// bucket is a histogram bucket (lower, upper] that holds a quantile.
type bucket [2]float64

// load is what one window measured, constant over its tiles unless running varies.
type load struct {
	requests             float64 // per tile
	rate, prompt, output float64
	p50, p99             bucket
	hit, accept, tpot    float64 // NaN: the signal is absent
	kv, waiting, preempt float64
	running              []float64 // cycled over the tiles
	cfg                  *vllm.CacheConfig
}

func healthy() load {
	return load{requests: 100, rate: 2, prompt: 600, output: 150, p50: bucket{0.1, 0.25}, p99: bucket{1, 2.5},
		hit: nan, accept: nan, tpot: 0.02, kv: 0.4, waiting: 0.2, running: []float64{12}}
}

// build makes the set a range query would return for the window starting at start: tiles+1
// points, the first of which covers the minute before the window.
func (l load) build(start time.Time) (*series.Set, Window) {
	g := series.NewGrid(start, start.Add(time.Duration(tiles)*step), step)
	set := series.NewSet(g)
	put := func(sig series.Signal, v func(i int) float64, b *bucket) {
		s := series.NewSeries(sig, key, g.Len)
		if b != nil {
			s.Lower, s.Upper = make([]float64, g.Len), make([]float64, g.Len)
		}
		for i := range s.Values {
			s.Values[i] = v(i)
			if b != nil {
				s.Lower[i], s.Upper[i] = b[0], b[1]
			}
		}
		set.Put(s)
	}
	constant := func(sig series.Signal, v float64) {
		if !math.IsNaN(v) {
			put(sig, func(int) float64 { return v }, nil)
		}
	}
	constant(series.RequestCount, l.requests)
	constant(series.RequestRate, l.rate)
	constant(series.PromptLengthMean, l.prompt)
	constant(series.OutputLengthMean, l.output)
	constant(series.PromptTPS, l.rate*l.prompt)
	constant(series.GenerationTPS, l.rate*l.output)
	constant(series.PrefixCacheHitRate, l.hit)
	constant(series.SpecAcceptanceRate, l.accept)
	constant(series.TPOTMean, l.tpot)
	constant(series.KVUsage, l.kv)
	constant(series.Waiting, l.waiting)
	constant(series.PreemptionRate, l.preempt)
	put(series.Running, func(i int) float64 { return l.running[i%len(l.running)] }, nil)
	for _, q := range []struct {
		sig series.Signal
		b   bucket
	}{{series.TTFTP50, l.p50}, {series.TTFTP99, l.p99}} {
		b := q.b
		put(q.sig, func(int) float64 { return (b[0] + b[1]) / 2 }, &b)
	}
	if l.cfg != nil {
		set.CacheConfig[key.Instance] = *l.cfg
	}
	return set, Window{From: start, To: g.End()}
}

func cfg(prefix bool, dtype string, blocks int) *vllm.CacheConfig {
	return &vllm.CacheConfig{PrefixCaching: prefix, PrefixCachingKnown: true, BlockSize: 16, CacheDType: dtype, NumGPUBlocks: blocks}
}

func verdictOf(t *testing.T, o Optimisation, declared []Optimisation, base, cur load) Row {
	t.Helper()
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	bs, bw := base.build(t0)
	cs, cw := cur.build(t0.Add(2 * time.Hour))
	for _, r := range Evaluate(Input{Baseline: bs, Current: cs, BaselineWindow: bw, CurrentWindow: cw, Declared: declared, Params: DefaultParams()}) {
		if r.Optimisation == o {
			return r
		}
	}
	t.Fatalf("no row for %s", o)
	return Row{}
}

type verdictCase struct {
	name     string
	declared []Optimisation
	base     func(*load)
	cur      func(*load)
	want     Outcome
	// reason is a phrase the reason must contain, when the case is about why.
	reason string
}

func runCases(t *testing.T, o Optimisation, cases []verdictCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, cur := healthy(), healthy()
			if c.base != nil {
				c.base(&base)
			}
			if c.cur != nil {
				c.cur(&cur)
			}
			r := verdictOf(t, o, c.declared, base, cur)
			if r.Outcome != c.want {
				t.Fatalf("verdict %q, want %q (reason: %s)", r.Outcome, c.want, r.Reason)
			}
			if r.Reason == "" && r.Outcome != Worked {
				t.Errorf("a %q verdict carries no reason", r.Outcome)
			}
			if c.reason != "" && !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", r.Reason, c.reason)
			}
			if r.Expected == "" || r.Baseline == "" || r.Current == "" {
				t.Errorf("row misses its expectation or measurements: %+v", r)
			}
		})
	}
}

// fewer gives a window 10 requests in all, under the minimum of 20.
func fewer(l *load) { l.requests = 0.5 }

// busier raises the request rate by half.
func busier(l *load) { l.rate *= 1.5 }

func TestChunkedPrefillVerdicts(t *testing.T) {
	declared := []Optimisation{ChunkedPrefill}
	blocking := func(l *load) { l.p99 = bucket{2.5, 5} }
	runCases(t, ChunkedPrefill, []verdictCase{
		{name: "p99 leaves its bucket and the ratio nears 1: worked", declared: declared, base: blocking,
			cur: func(l *load) { l.p99 = bucket{0.5, 0.75} }, want: Worked},
		{name: "p99 rises: did not work", declared: declared, cur: blocking, want: DidNotWork, reason: "rose"},
		{name: "p99 in the same bucket: did not work, within bucket resolution", declared: declared, want: DidNotWork, reason: "bucket resolution"},
		{name: "p99 down but the median slowed more: did not work", declared: declared, base: blocking,
			cur: func(l *load) { l.p99, l.p50 = bucket{1, 2.5}, bucket{0.01, 0.02} }, want: DidNotWork, reason: "p99/p50 certainly rose"},
		{name: "not declared: not in use, since metrics cannot show it", base: blocking, want: NotInUse, reason: "optimisations"},
		{name: "too few requests now: not enough data", declared: declared, base: blocking, cur: fewer, want: NotEnoughData, reason: "current window has 10 requests"},
		{name: "traffic rose by half: not comparable", declared: declared, base: blocking, cur: busier, want: NotComparable, reason: "request rate"},
		{name: "prompts doubled: not comparable", declared: declared, base: blocking, cur: func(l *load) { l.prompt *= 2 }, want: NotComparable, reason: "mean prompt length"},
	})
}

func TestPrefixCachingVerdicts(t *testing.T) {
	on := func(hit float64, p50 bucket) func(*load) {
		return func(l *load) { l.cfg, l.hit, l.p50 = cfg(true, "auto", 4000), hit, p50 }
	}
	slow := bucket{0.5, 0.75}
	fast := bucket{0.1, 0.25}
	runCases(t, PrefixCaching, []verdictCase{
		{name: "hits above 0.5 and p50 leaves its bucket: worked", base: on(0.02, slow), cur: on(0.9, fast), want: Worked},
		{name: "hits stay near zero: did not work, naming the prefix", base: on(0.02, slow), cur: on(0.01, slow), want: DidNotWork, reason: "shorter than one block"},
		{name: "prompts shorter than one KV block: did not work, and why it cannot", base: func(l *load) { on(0, slow)(l); l.prompt = 10 },
			cur: func(l *load) { on(0, slow)(l); l.prompt = 10 }, want: DidNotWork, reason: "shorter than one KV block"},
		{name: "hits above 0.5 but p50 in the same bucket: did not work", base: on(0.02, fast), cur: on(0.9, fast), want: DidNotWork, reason: "bucket resolution"},
		{name: "cache_config_info says off: not in use", base: on(0.02, slow), cur: func(l *load) { on(0, slow)(l); l.cfg.PrefixCaching = false }, want: NotInUse, reason: "enable_prefix_caching=False"},
		{name: "no configuration and no hits, undeclared: not in use", want: NotInUse, reason: "cache_config_info"},
		{name: "declared without configuration: evaluated", declared: []Optimisation{PrefixCaching},
			base: func(l *load) { l.hit, l.p50 = 0.02, slow }, cur: func(l *load) { l.hit, l.p50 = 0.9, fast }, want: Worked},
		{name: "too few requests in the baseline: not enough data", base: func(l *load) { on(0.02, slow)(l); fewer(l) }, cur: on(0.9, fast), want: NotEnoughData, reason: "baseline window has 10 requests"},
		{name: "traffic rose by half: not comparable", base: on(0.02, slow), cur: func(l *load) { on(0.9, fast)(l); busier(l) }, want: NotComparable, reason: "request rate"},
		{name: "already hitting in the baseline: not comparable", base: on(0.9, slow), cur: on(0.9, fast), want: NotComparable, reason: "already"},
	})
}

func TestSpecDecodeVerdicts(t *testing.T) {
	drafter := func(accept, tpot float64) func(*load) { return func(l *load) { l.accept, l.tpot = accept, tpot } }
	runCases(t, SpecDecode, []verdictCase{
		{name: "matched drafter: acceptance above 0.7 and faster decode: worked", base: drafter(0.35, 0.03), cur: drafter(0.85, 0.02), want: Worked},
		{name: "switched on from off: worked", base: drafter(nan, 0.03), cur: drafter(0.85, 0.02), want: Worked},
		{name: "mismatched drafter: counterproductive", base: drafter(0.85, 0.02), cur: drafter(0.4, 0.03), want: DidNotWork, reason: "counterproductive"},
		{name: "acceptance between 0.6 and 0.7: did not work", base: drafter(0.35, 0.03), cur: drafter(0.65, 0.02), want: DidNotWork, reason: "not above 0.7"},
		{name: "good acceptance, decode not faster: did not work", base: drafter(0.35, 0.02), cur: drafter(0.85, 0.0195), want: DidNotWork, reason: "did not fall by 10%"},
		{name: "no spec-decode series now: not in use", base: drafter(0.85, 0.02), want: NotInUse, reason: "off"},
		{name: "declared but no series: not in use, saying so", declared: []Optimisation{SpecDecode}, want: NotInUse, reason: "declared"},
		{name: "too few requests: not enough data", base: drafter(0.35, 0.03), cur: func(l *load) { drafter(0.85, 0.02)(l); fewer(l) }, want: NotEnoughData},
		{name: "answers twice as long: not comparable", base: drafter(0.35, 0.03), cur: func(l *load) { drafter(0.85, 0.02)(l); l.output *= 2 }, want: NotComparable, reason: "mean output length"},
		{name: "already accepting well in the baseline: not comparable", base: drafter(0.8, 0.02), cur: drafter(0.85, 0.02), want: NotComparable, reason: "already"},
	})
}

func TestFP8KVCacheVerdicts(t *testing.T) {
	kv := func(dtype string, blocks int, usage float64) func(*load) {
		return func(l *load) { l.cfg, l.kv = cfg(true, dtype, blocks), usage }
	}
	fp16 := kv("auto", 4000, 0.6)
	runCases(t, FP8KVCache, []verdictCase{
		{name: "fp8 halves KV per request and doubles the blocks: worked", base: fp16, cur: kv("fp8", 8000, 0.3), want: Worked},
		{name: "fp8 but KV per request barely moves: did not work", base: fp16, cur: kv("fp8", 8000, 0.55), want: DidNotWork, reason: "only went"},
		{name: "fp8 without more blocks: did not work", base: fp16, cur: kv("fp8", 4000, 0.3), want: DidNotWork, reason: "KV blocks"},
		{name: "back to fp16: not in use", base: kv("fp8", 8000, 0.3), cur: fp16, want: NotInUse, reason: "cache_dtype=auto"},
		{name: "fp8 in both windows: not comparable", base: kv("fp8", 8000, 0.3), cur: kv("fp8", 8000, 0.3), want: NotComparable, reason: "already fp8"},
		{name: "declared without configuration: judged on KV per request", declared: []Optimisation{FP8KVCache},
			base: func(l *load) { l.kv = 0.6 }, cur: func(l *load) { l.kv = 0.3 }, want: Worked},
		{name: "too few requests: not enough data", base: fp16, cur: func(l *load) { kv("fp8", 8000, 0.3)(l); fewer(l) }, want: NotEnoughData},
		{name: "traffic rose by half: not comparable", base: fp16, cur: func(l *load) { kv("fp8", 8000, 0.3)(l); busier(l) }, want: NotComparable},
		// 12 → 24 running: KV per request 0.6/12 = 0.05 → 0.6/24 = 0.025 looks halved, but at
		// another concurrency.
		{name: "twice the concurrency: not comparable", base: fp16, cur: func(l *load) { kv("fp8", 8000, 0.6)(l); l.running = []float64{24} },
			want: NotComparable, reason: "same concurrency"},
	})
}

func TestFP8VerdictStatesThePoolInTokens(t *testing.T) {
	base, cur := healthy(), healthy()
	base.cfg, base.kv = cfg(true, "auto", 4000), 0.6
	cur.cfg, cur.kv = cfg(true, "fp8", 8000), 0.3
	r := verdictOf(t, FP8KVCache, nil, base, cur)
	// 4000 × 16 = 64000 and 8000 × 16 = 128000 tokens.
	if r.Outcome != Worked || !strings.Contains(r.Change, "KV pool 64000 → 128000 tokens") {
		t.Fatalf("%s: change %q", r.Outcome, r.Change)
	}
}

func TestConcurrencyVerdicts(t *testing.T) {
	runCases(t, Concurrency, []verdictCase{
		{name: "running at its ceiling without a queue: worked", cur: func(l *load) { l.running, l.waiting = []float64{16, 15, 16}, 0.5 }, want: Worked},
		{name: "queue above 10% of running: did not work", cur: func(l *load) { l.running, l.waiting = []float64{16}, 8 }, want: DidNotWork, reason: "requests queue"},
		{name: "running far below its ceiling: did not work", cur: func(l *load) { l.running, l.waiting = []float64{2, 10}, 0 }, want: DidNotWork, reason: "rarely full"},
		{name: "too few requests: not enough data", cur: fewer, want: NotEnoughData},
		{name: "traffic rose by half: not comparable", cur: busier, want: NotComparable},
	})
}

func TestEveryKeyGetsOneRowPerOptimisation(t *testing.T) {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	bs, bw := healthy().build(t0)
	cs, cw := healthy().build(t0.Add(time.Hour))
	other := series.Key{Instance: "10.0.0.2:8000", Model: "Qwen/Qwen2.5-7B-Instruct"}
	s := series.NewSeries(series.RequestCount, other, cs.Grid.Len)
	for i := range s.Values {
		s.Values[i] = 100
	}
	cs.Put(s)
	rows := Evaluate(Input{Baseline: bs, Current: cs, BaselineWindow: bw, CurrentWindow: cw, Params: DefaultParams()})
	if len(rows) != 2*len(All) {
		t.Fatalf("%d rows, want %d", len(rows), 2*len(All))
	}
	for i, r := range rows {
		if want := All[i%len(All)]; r.Optimisation != want {
			t.Errorf("row %d is %s, want %s", i, r.Optimisation, want)
		}
		if r.Key == other && r.Outcome != NotInUse && r.Outcome != NotEnoughData {
			t.Errorf("%s on a key absent from the baseline: %q, want not enough data (or not in use)", r.Optimisation, r.Outcome)
		}
	}
	if rows[0].Key != key || rows[len(All)].Key != other {
		t.Errorf("rows are not sorted by instance: %v then %v", rows[0].Key, rows[len(All)].Key)
	}
}

func TestSummariseCountsOnlyWholeTilesInsideTheWindow(t *testing.T) {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	set, _ := healthy().build(t0)
	cases := []struct {
		name     string
		w        Window
		tiles    int
		from, to time.Time
	}{
		{"aligned window: every point but the first", Window{t0, t0.Add(20 * step)}, 20, t0, t0.Add(20 * step)},
		{"window starting mid-tile drops that tile", Window{t0.Add(30 * time.Second), t0.Add(20 * step)}, 19, t0.Add(step), t0.Add(20 * step)},
		{"window ending mid-tile drops that tile", Window{t0, t0.Add(10*step + 30*time.Second)}, 10, t0, t0.Add(10 * step)},
		{"window shorter than a tile has none", Window{t0.Add(10 * time.Second), t0.Add(50 * time.Second)}, 0, time.Time{}, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := Summarise(set, key, c.w)
			if st.Tiles != c.tiles || !st.Covered.From.Equal(c.from) || !st.Covered.To.Equal(c.to) {
				t.Errorf("%d tiles covering %v–%v, want %d covering %v–%v", st.Tiles, st.Covered.From, st.Covered.To, c.tiles, c.from, c.to)
			}
			if want := 100 * float64(c.tiles); st.Requests != want {
				t.Errorf("%v requests, want %v", st.Requests, want)
			}
		})
	}
}

func TestSummariseWeightsMeansByRequestsAndWidensQuantiles(t *testing.T) {
	g := series.NewGrid(time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 8, 1, 10, 2, 0, 0, time.UTC), step)
	set := series.NewSet(g)
	put := func(sig series.Signal, vals, lo, hi []float64) {
		s := series.NewSeries(sig, key, g.Len)
		copy(s.Values, vals)
		if lo != nil {
			s.Lower, s.Upper = lo, hi
		}
		set.Put(s)
	}
	// Two tiles: 10 requests of 100 tokens, then 30 of 500; p99 in (0.5, 0.75] then (1, 2.5].
	put(series.RequestCount, []float64{nan, 10, 30}, nil, nil)
	put(series.PromptLengthMean, []float64{nan, 100, 500}, nil, nil)
	put(series.TTFTP99, []float64{nan, 0.6, 2}, []float64{nan, 0.5, 1}, []float64{nan, 0.75, 2.5})
	st := Summarise(set, key, Window{From: g.Start, To: g.End()})
	if st.PromptLength != 400 {
		t.Errorf("prompt length %v, want the request-weighted 400", st.PromptLength)
	}
	if st.TTFTP99.Lower != 0.5 || st.TTFTP99.Upper != 2.5 {
		t.Errorf("p99 interval %v–%v, want the union of the tiles' buckets 0.5–2.5", st.TTFTP99.Lower, st.TTFTP99.Upper)
	}
}

func TestIntervalsMoveOnlyWhenBucketsSeparate(t *testing.T) {
	base := Interval{Value: 1.5, Lower: 1, Upper: 2.5}
	cases := []struct {
		name     string
		cur      Interval
		down, up bool
	}{
		{"the bucket below: down", Interval{Value: 0.9, Lower: 0.75, Upper: 1}, true, false},
		{"the same bucket: neither", Interval{Value: 1.1, Lower: 1, Upper: 2.5}, false, false},
		{"overlapping wider interval: neither", Interval{Value: 1, Lower: 0.5, Upper: 2.5}, false, false},
		{"the bucket above: up", Interval{Value: 3, Lower: 2.5, Upper: 5}, false, true},
		{"no data: neither", Interval{Value: nan, Lower: nan, Upper: nan}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.cur.Down(base); got != c.down {
				t.Errorf("Down = %v, want %v", got, c.down)
			}
			if got := c.cur.Up(base); got != c.up {
				t.Errorf("Up = %v, want %v", got, c.up)
			}
		})
	}
}

func TestParseOptimisationsRejectsUnknownNames(t *testing.T) {
	got, err := ParseOptimisations([]string{"chunked_prefill", " fp8_kv_cache"})
	if err != nil || len(got) != 2 || got[1] != FP8KVCache {
		t.Fatalf("ParseOptimisations = %v, %v", got, err)
	}
	if _, err := ParseOptimisations([]string{"flash_attention"}); err == nil || !strings.Contains(err.Error(), "chunked_prefill") {
		t.Errorf("an unknown name gives %v, want an error listing the known ones", err)
	}
}
