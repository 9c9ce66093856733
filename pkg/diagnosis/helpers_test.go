package diagnosis

import (
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

var (
	t0   = time.Date(2026, 8, 20, 9, 0, 0, 0, time.UTC)
	step = 15 * time.Second
	keyA = series.Key{Instance: "10.0.0.1:8000", Model: "llama-3-8b"}
	keyB = series.Key{Instance: "10.0.0.2:8000", Model: "llama-3-8b"}
)

// The shape of most tests: an hour of healthy baseline (steps 0..239), then the evaluated
// 10 minutes (steps 240..279) where the scenario's values apply.
const (
	baseSteps  = 240
	totalSteps = 280
)

var evalFrom = t0.Add(baseSteps * step)

// sample is one value to put in a series; quantiles carry their bucket.
type sample struct {
	v, lo, hi float64
	bounded   bool
}

func x(v float64) sample          { return sample{v: v} }
func qb(v, lo, hi float64) sample { return sample{v: v, lo: lo, hi: hi, bounded: true} }
func nan() sample                 { return sample{v: math.NaN(), lo: math.NaN(), hi: math.NaN()} }
func stepAt(i int) time.Time      { return t0.Add(time.Duration(i) * step) }
func newSet(n int) *series.Set    { return series.NewSet(series.Grid{Start: t0, Step: step, Len: n}) }
func cacheOn(set *series.Set, k series.Key) {
	set.CacheConfig[k.Instance] = vllm.CacheConfig{PrefixCaching: true, PrefixCachingKnown: true, BlockSize: 16, CacheDType: "auto", NumGPUBlocks: 4000}
}

// fill sets a signal of k to s over steps [from, to).
func fill(set *series.Set, k series.Key, sig series.Signal, from, to int, s sample) {
	x := set.Get(k, sig)
	if x == nil {
		x = series.NewSeries(sig, k, set.Grid.Len)
		set.Put(x)
	}
	if s.bounded && !x.HasBounds() {
		x.Lower, x.Upper = series.NaNs(set.Grid.Len), series.NaNs(set.Grid.Len)
	}
	for i := from; i < to && i < set.Grid.Len; i++ {
		x.Values[i] = s.v
		if x.HasBounds() {
			x.Lower[i], x.Upper[i] = s.lo, s.hi
			if !s.bounded {
				x.Lower[i], x.Upper[i] = math.NaN(), math.NaN()
			}
		}
	}
}

// healthy is a server that no rule should flag. Values are chosen so that the threshold
// multiples in the tests are exact in floating point.
func healthy() map[series.Signal]sample {
	return map[series.Signal]sample{
		series.TTFTP50:              qb(0.2, 0.1, 0.25),
		series.TTFTP99:              qb(0.4, 0.25, 0.5),
		series.TPOTP99:              qb(0.04, 0.025, 0.05),
		series.E2EP99:               qb(4, 2.5, 5),
		series.RequestCount:         x(200),
		series.PrefillTimeMean:      x(0.5),
		series.QueueTimeMean:        x(0.01),
		series.DecodeTimeMean:       x(2),
		series.KVUsage:              x(0.5),
		series.PreemptionRate:       x(0),
		series.Running:              x(8),
		series.Waiting:              x(0),
		series.WaitingRatio:         x(0),
		series.PrefixCacheHitRate:   x(0.8),
		series.SpecAcceptanceRate:   x(0.8),
		series.SpecAcceptanceLength: x(3),
		series.AbortRatio:           x(0),
		series.RequestRate:          x(5),
		series.PromptLengthMean:     x(1000),
		series.OutputLengthMean:     x(200),
		series.GenerationTPS:        x(1000),
		series.EngineStepRate:       x(60),
		series.LengthRatio:          x(0.02),
	}
}

// scenario is a healthy hour for k, then `after` over the evaluated steps.
func scenario(set *series.Set, k series.Key, after map[series.Signal]sample) {
	for sig, s := range healthy() {
		fill(set, k, sig, 0, set.Grid.Len, s)
	}
	for sig, s := range after {
		fill(set, k, sig, baseSteps, set.Grid.Len, s)
	}
	cacheOn(set, k)
}

func evaluate(t *testing.T, set *series.Set, opts Options) Result {
	t.Helper()
	res, err := Evaluate(set, opts)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return res
}

func findingsOf(res Result, rule string) []Finding {
	var out []Finding
	for _, f := range res.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func statesOf(t *testing.T, res Result, k series.Key, rule string) []State {
	t.Helper()
	for _, tl := range res.Timelines {
		if tl.Key != k {
			continue
		}
		for _, rs := range tl.Rules {
			if rs.Rule == rule {
				return rs.States
			}
		}
	}
	t.Fatalf("no timeline for %s on %v", rule, k)
	return nil
}

func count(states []State, s State) int {
	n := 0
	for _, x := range states {
		if x == s {
			n++
		}
	}
	return n
}
