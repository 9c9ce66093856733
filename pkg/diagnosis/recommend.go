package diagnosis

import (
	"fmt"
	"math"
	"slices"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Recommendation is the value a finding's action should set, computed from the instance's own
// configuration and traffic over the finding's window, beside the flag's current value and where
// that comes from. When a number cannot be had, Value is NaN and Missing names the metric or
// vLLM version that is absent; the finding's Action still names the flag. When the computed
// value would not move the flag the way the action says, Value is NaN too and Instead says why
// the finding fired anyway and what to look at: advice never contradicts its finding.
type Recommendation struct {
	// Flag is the vLLM flag (or, for prefix_cache_miss, the quantity) the value is for.
	Flag  string
	Value float64
	// Current is the flag's value now as far as the metrics show it; CurrentSource says where
	// it comes from, or why it is unknown.
	Current       Current
	CurrentSource string
	// Change is what setting Value does to the flag: Raise, Lower, or Target when the current
	// value is not known well enough to say.
	Change Change
	// Effect is what setting it should do.
	Effect string
	// Arithmetic is the computation in one line a person can check.
	Arithmetic string
	// Missing names what is absent when Value is NaN.
	Missing string
	// Instead, when set, replaces the value: the computed one would not change the flag.
	Instead string
}

// Change is what a recommendation does to its flag.
type Change string

// The changes.
const (
	Raise Change = "raise"
	Lower Change = "lower"
	// Target is a value to set whose current one is unknown (or within the value's reach).
	Target Change = "target"
)

// Current is what the metrics show of a flag's value: between Low and High (equal when exact,
// High +Inf when only a lower bound is seen). The zero value is unknown.
type Current struct {
	Low, High float64
	known     bool
}

// Between is a current value the metrics place in (lo, hi], such as a histogram bucket.
func Between(lo, hi float64) Current { return Current{lo, hi, true} }

// Exact is a current value the metrics state.
func Exact(v float64) Current { return Between(v, v) }

// AtLeast is a current value the metrics bound from below.
func AtLeast(v float64) Current { return Between(v, math.Inf(1)) }

// Unknown is a current value the metrics do not show.
func Unknown() Current { return Current{} }

// Known reports whether anything of the current value is known.
func (c Current) Known() bool { return c.known }

// Value is the one number that stands for the current value: the value when exact, the upper
// bound of a bucket, the lower bound when only that is known; NaN when unknown.
func (c Current) Value() float64 {
	switch {
	case !c.known:
		return math.NaN()
	case math.IsInf(c.High, 1):
		return c.Low
	}
	return c.High
}

func (c Current) String() string {
	switch {
	case !c.Known():
		return "unknown"
	case c.Low == c.High:
		return whole(c.Low)
	case math.IsInf(c.High, 1):
		return "at least " + whole(c.Low)
	}
	return "in " + interval(c.Low, c.High)
}

// Known reports whether the recommendation carries a value.
func (r Recommendation) Known() bool { return r.Flag != "" && !math.IsNaN(r.Value) }

// String is the recommendation in one line: the change from the current value to the new one,
// effect, arithmetic; the target when the current value is unknown; why there is no change; or
// what is missing; empty for a rule without recommendations.
func (r Recommendation) String() string {
	current := r.Current.String()
	if r.CurrentSource != "" {
		current += ": " + r.CurrentSource
	}
	switch {
	case r.Instead != "":
		return fmt.Sprintf("%s: no change (current %s): %s (%s)", r.Flag, current, r.Instead, r.Arithmetic)
	case !r.Known() && r.Missing != "":
		return "no value: " + r.Missing
	case !r.Known():
		return ""
	case r.Change == Raise || r.Change == Lower:
		return fmt.Sprintf("%s %s from %s to %s: %s (%s; current %s)", r.Change, r.Flag, r.Current, whole(r.Value), r.Effect, r.Arithmetic, current)
	}
	return fmt.Sprintf("set %s to %s as a target (its current value is %s): %s (%s)", r.Flag, whole(r.Value), current, r.Effect, r.Arithmetic)
}

// settle compares the computed value with the current one in the direction the action wants
// (Raise or Lower): beyond every current value the metrics allow, it is that change; not beyond
// any of them, it would not change the flag, and instead says why the finding fired and what to
// look at; otherwise (current unknown, or the value within its bounds) it is a target.
func (r Recommendation) settle(want Change, cur Current, source string, instead func() string) Recommendation {
	r.Current, r.CurrentSource, r.Change = cur, source, Target
	if !r.Known() || !cur.Known() {
		return r
	}
	beyond := func(bound float64) bool {
		if want == Raise {
			return r.Value > bound
		}
		return r.Value < bound
	}
	// far is the bound the value must pass to change the flag whatever it is now; a value not
	// past near changes nothing. Lowering a flag known only from below (the most requests seen
	// running) to a value at or above that bound would not limit anything that ran.
	near, far := cur.High, cur.Low
	if want == Raise {
		near, far = cur.Low, cur.High
	} else if math.IsInf(cur.High, 1) {
		near = cur.Low
	}
	switch {
	case beyond(far):
		r.Change = want
	case !beyond(near):
		r.Instead = instead()
		r.Arithmetic = fmt.Sprintf("computed %s; %s", whole(r.Value), r.Arithmetic)
		r.Value = math.NaN()
	}
	return r
}

func unknownRec(flag, missing string) Recommendation {
	return Recommendation{Flag: flag, Value: math.NaN(), Current: Unknown(), Missing: missing}
}

// floor rounds down, forgiving the last bits of floating point (44.99999999 is 45).
func floor(v float64) float64 { return math.Floor(v + 1e-9*math.Abs(v)) }

// whole prints a count of tokens, requests or sequences without an exponent; fractions as num.
func whole(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return num(v)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func secondsText(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", 1000*v)
	}
	return fmt.Sprintf("%.2f s", v)
}

// recommender computes a finding's Recommendation from the instance's series over the
// finding's window. reads are the signals it needs beyond the rule's own, fetched with them. A
// rule that recommends no value says why in none, and has no compute.
type recommender struct {
	reads []series.Signal
	// histograms are the metric families whose buckets it reads whole (series.Set.Histogram).
	histograms []string
	compute    func(e *env, sp span) Recommendation
	none       string
}

// noValue is the recommender of a rule whose action sets no number; why says so.
func noValue(why string) recommender { return recommender{none: why} }

func recommendFor(e *env, sp span) Recommendation {
	if f := e.rule.recommend.compute; f != nil {
		return f(e, sp)
	}
	return Recommendation{Value: math.NaN(), Current: Unknown()}
}

// maxOver is a signal's largest value over steps [from, to], NaN when it has none.
func (e *env) maxOver(s series.Signal, from, to int) float64 {
	top := math.NaN()
	for i := from; i <= to; i++ {
		if v := e.at(s, i); !(v <= top) && !math.IsNaN(v) {
			top = v
		}
	}
	return top
}

// meanOver is a signal's mean over steps [from, to], NaN steps skipped.
func (e *env) meanOver(s series.Signal, from, to int) float64 {
	return meanOf(func(i int) float64 { return e.at(s, i) }, from, to)
}

// meanOf is the mean of value(i) over steps [from, to], NaN steps skipped.
func meanOf(value func(i int) float64, from, to int) float64 {
	sum, n := 0.0, 0
	for i := from; i <= to; i++ {
		if v := value(i); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// kvFull is the KV usage from which a plateau of running requests is the cache's limit rather
// than --max-num-seqs: the headroom a recommended --max-num-seqs leaves.
const kvFull = 1 - KVHeadroom

// runningCeiling is what the window shows of --max-num-seqs, which vLLM does not export:
// running requests that sat at their window maximum for half the steps or more, with requests
// waiting and the KV cache below kvFull, sat at the flag (its plateau); otherwise the flag is
// at least that maximum.
func runningCeiling(e *env, sp span) (Current, string) {
	top := e.maxOver(series.Running, sp.start, sp.end)
	if math.IsNaN(top) {
		return Unknown(), "no vllm:num_requests_running in the window, and vLLM does not export --max-num-seqs"
	}
	at, n := 0, 0
	for i := sp.start; i <= sp.end; i++ {
		r := e.at(series.Running, i)
		if math.IsNaN(r) {
			continue
		}
		n++
		if r == top && e.at(series.Waiting, i) > 0 && e.at(series.KVUsage, i) < kvFull {
			at++
		}
	}
	if top > 0 && 2*at >= n {
		return Exact(top), fmt.Sprintf("the plateau of vllm:num_requests_running, at %s for %d of %d steps with requests waiting and the KV cache below %s", whole(top), at, n, num(kvFull))
	}
	return AtLeast(top), "the most vllm:num_requests_running reached in the window; vLLM does not export --max-num-seqs"
}

// stepBudget is what the window shows of --max-num-batched-tokens: no engine step schedules
// more tokens than the budget, and under load steps fill it, so the largest bucket of the
// tokens-per-step histogram reached over a rate window holds the budget. Its median over the
// window's steps is read, so that the minutes a redeploy back to another budget drains the queue
// in, at the finding's edge, do not count.
func stepBudget(e *env, sp span) (Current, string) {
	h := e.set.Histogram(vllm.IterationTokens, e.key)
	if h == nil {
		return Unknown(), "no " + vllm.IterationTokens + " histogram for this instance, and vLLM does not export --max-num-batched-tokens"
	}
	var tops []float64
	for i := sp.start; i <= sp.end; i++ {
		if top := h.Top(i); top > 0 {
			tops = append(tops, top)
		}
	}
	if len(tops) == 0 {
		return Unknown(), "no engine step observed in " + vllm.IterationTokens + " over the window"
	}
	slices.Sort(tops)
	top := tops[(len(tops)-1)/2]
	lo := 0.0
	for _, u := range h.Uppers {
		if u < top {
			lo = u
		}
	}
	return Between(lo, top), "the largest bucket of " + vllm.IterationTokens + " the engine steps reached, at the window's median step (tokens per step, which the budget bounds)"
}
