package verdict

import (
	"math"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Signals are the signals a verdict reads, for the range queries of both windows.
var Signals = []series.Signal{
	series.RequestCount, series.RequestRate, series.PromptLengthMean, series.OutputLengthMean,
	series.TTFTP50, series.TTFTP99, series.PrefixCacheHitRate, series.PromptTPS,
	series.SpecAcceptanceRate, series.GenerationTPS, series.TPOTMean,
	series.KVUsage, series.Running, series.Waiting, series.PreemptionRate,
}

// Window is a span of time, From to To.
type Window struct {
	From, To time.Time
}

// Interval is a quantile over a window: the bucket bounds that certainly hold it, and an
// estimate between them. All are NaN when the window has no data.
type Interval struct {
	Value, Lower, Upper float64
}

// Known reports whether the interval has data.
func (q Interval) Known() bool { return !math.IsNaN(q.Lower) && !math.IsNaN(q.Upper) }

// Down reports whether q is certainly below base: its upper bucket bound is at or below the
// baseline's lower bound.
func (q Interval) Down(base Interval) bool {
	return q.Known() && base.Known() && q.Upper <= base.Lower
}

// Up reports whether q is certainly above base.
func (q Interval) Up(base Interval) bool {
	return q.Known() && base.Known() && q.Lower >= base.Upper
}

// ratio divides two quantile intervals: the widest ratio their buckets allow.
func ratio(num, den Interval) Interval {
	if !num.Known() || !den.Known() {
		return Interval{Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
	}
	upper := math.Inf(1)
	if den.Lower > 0 {
		upper = num.Upper / den.Lower
	}
	return Interval{Value: num.Value / den.Value, Lower: num.Lower / den.Upper, Upper: upper}
}

// Stats is one instance and model summarised over one window. Absent signals are NaN.
type Stats struct {
	// Covered is the span the whole tiles cover; Tiles is how many there are.
	Covered Window
	Tiles   int
	// Requests is the number of requests that got a first token in the covered span.
	Requests float64
	// Load: finished requests per second, mean prompt and output tokens per request.
	RequestRate, PromptLength, OutputLength float64

	TTFTP50, TTFTP99 Interval
	// HitRate is prefix-cache hits over lookups, in tokens.
	HitRate float64
	// Acceptance is accepted draft tokens over proposed ones; NaN without speculative decoding.
	Acceptance float64
	// TPOT is the mean decode time per output token, in seconds.
	TPOT float64

	KVUsage, Running, RunningMax, Waiting float64
	// PreemptionRate is per second; Preemptions the count over the covered span.
	PreemptionRate, Preemptions float64

	// What a rule's promise may read besides (PromiseSignals), NaN when not fetched: mean
	// queue time per request (seconds), waiting / (running + waiting), the shares of finished
	// requests aborted and cut at their length limit, engine steps per second.
	QueueTime, WaitingRatio, AbortRatio, LengthRatio, StepRate float64

	// Config is the instance's vllm:cache_config_info; HasConfig is false without one.
	Config    vllm.CacheConfig
	HasConfig bool
}

// Summarise reduces a key's series to one window's statistics (see the package doc for how
// each kind of signal is aggregated). The set's rate window must equal its grid step.
func Summarise(set *series.Set, key series.Key, w Window) Stats {
	st := Stats{Requests: 0}
	var tiles []int
	g := set.Grid
	for i := 0; i < g.Len; i++ {
		t := g.Time(i)
		if !t.Add(-g.Step).Before(w.From) && !t.After(w.To) {
			tiles = append(tiles, i)
		}
	}
	st.Tiles = len(tiles)
	if len(tiles) > 0 {
		st.Covered = Window{From: g.Time(tiles[0]).Add(-g.Step), To: g.Time(tiles[len(tiles)-1])}
	}
	values := func(sig series.Signal) []float64 {
		out := make([]float64, len(tiles))
		for j, i := range tiles {
			out[j] = set.Value(key, sig, i)
		}
		return out
	}
	count := values(series.RequestCount)
	for _, c := range count {
		if !math.IsNaN(c) {
			st.Requests += c
		}
	}
	st.RequestRate = mean(values(series.RequestRate), nil)
	st.PromptLength = mean(values(series.PromptLengthMean), count)
	st.OutputLength = mean(values(series.OutputLengthMean), count)
	st.TPOT = mean(values(series.TPOTMean), count)
	st.HitRate = mean(values(series.PrefixCacheHitRate), values(series.PromptTPS))
	st.Acceptance = mean(values(series.SpecAcceptanceRate), values(series.GenerationTPS))
	st.TTFTP50 = quantile(set.Get(key, series.TTFTP50), tiles, count)
	st.TTFTP99 = quantile(set.Get(key, series.TTFTP99), tiles, count)
	st.KVUsage = mean(values(series.KVUsage), nil)
	running := values(series.Running)
	st.Running = mean(running, nil)
	st.RunningMax = math.NaN()
	for _, r := range running {
		if !math.IsNaN(r) && (math.IsNaN(st.RunningMax) || r > st.RunningMax) {
			st.RunningMax = r
		}
	}
	st.Waiting = mean(values(series.Waiting), nil)
	st.PreemptionRate = mean(values(series.PreemptionRate), nil)
	st.Preemptions = st.PreemptionRate * st.Covered.To.Sub(st.Covered.From).Seconds()
	st.QueueTime = mean(values(series.QueueTimeMean), count)
	st.WaitingRatio = mean(values(series.WaitingRatio), nil)
	finished := values(series.RequestRate)
	st.AbortRatio = mean(values(series.AbortRatio), finished)
	st.LengthRatio = mean(values(series.LengthRatio), finished)
	st.StepRate = mean(values(series.EngineStepRate), nil)
	st.Config, st.HasConfig = set.CacheConfig[key.Instance]
	return st
}

// mean averages the known values, weighted when weights are given (a tile whose weight is
// unknown or zero counts for nothing); NaN when nothing counts.
func mean(values, weights []float64) float64 {
	var sum, total float64
	for j, v := range values {
		w := 1.0
		if weights != nil {
			w = weights[j]
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(w) || w <= 0 {
			continue
		}
		sum += v * w
		total += w
	}
	if total == 0 {
		return math.NaN()
	}
	return sum / total
}

// quantile combines the tiles' quantile intervals into the window's (see the package doc).
func quantile(s *series.Series, tiles []int, count []float64) Interval {
	q := Interval{Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
	if s == nil || !s.HasBounds() {
		return q
	}
	vals := make([]float64, len(tiles))
	for j, i := range tiles {
		vals[j] = s.Values[i]
		lo, hi := s.Lower[i], s.Upper[i]
		if math.IsNaN(s.Values[i]) || math.IsNaN(lo) || math.IsNaN(hi) {
			continue
		}
		if math.IsNaN(q.Lower) || lo < q.Lower {
			q.Lower = lo
		}
		if math.IsNaN(q.Upper) || hi > q.Upper {
			q.Upper = hi
		}
	}
	q.Value = mean(vals, count)
	return q
}
