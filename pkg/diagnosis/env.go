package diagnosis

import (
	"fmt"
	"math"
	"sort"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// verdict is a condition's three-valued truth at one step.
type verdict uint8

const (
	unknown verdict = iota
	holds
	fails
)

// outcome is a condition at one step: its verdict; when it holds, its margin (the smallest
// relative distance past a threshold among its comparisons) and severity; when unknown, why.
type outcome struct {
	v        verdict
	margin   float64
	severity Severity
	reason   string
}

// judge combines the comparisons of one condition with Kleene logic: one certain failure makes
// the condition false even when another part has no data (a restarted server with an empty KV
// cache is simply not saturated); otherwise missing data makes it unknown.
type judge struct {
	failed  bool
	missing string
	margin  float64
}

func newJudge() judge { return judge{margin: math.Inf(1)} }

func (j *judge) lack(reason string) {
	if j.missing == "" {
		j.missing = reason
	}
}

// relative margin of v past t; a zero threshold has none to measure, so it does not lower the
// condition's margin.
func (j *judge) pass(v, t float64) {
	if t == 0 {
		return
	}
	j.margin = math.Min(j.margin, math.Abs(v-t)/math.Abs(t))
}

func (j *judge) test(ok bool, v, t float64) {
	switch {
	case math.IsNaN(v) || math.IsNaN(t):
	case ok:
		j.pass(v, t)
	default:
		j.failed = true
	}
}

func (j *judge) above(v, t float64)   { j.test(v > t, v, t) }
func (j *judge) atLeast(v, t float64) { j.test(v >= t, v, t) }
func (j *judge) below(v, t float64)   { j.test(v < t, v, t) }
func (j *judge) atMost(v, t float64)  { j.test(v <= t, v, t) }

func (j *judge) outcome(sev Severity) outcome {
	switch {
	case j.failed:
		return outcome{v: fails}
	case j.missing != "":
		return outcome{v: unknown, reason: j.missing}
	}
	return outcome{v: holds, margin: j.margin, severity: sev}
}

// env is what a condition sees: one key's series, the thresholds in force, and baselines.
type env struct {
	set         *series.Set
	key         series.Key
	rule        *Rule
	minRequests float64
	baseSteps   int
	baseLabel   string
	baselines   map[baseKey]*baselineSeries
	// anchor is the first step of the rule's run in progress, or -1. A run's later steps take
	// their baselines from the hour before it started, as an alert compares with the time before
	// the incident: otherwise a long fault becomes, step by step, its own baseline.
	anchor int
	// found memoises the key's series by signal: a rule reads a handful of them at every step,
	// and a linear scan of those beats the set's two map lookups.
	found []*series.Series
	// ttft is the tightest TTFT objective of the key's model (zero when none).
	ttft TTFTObjective
}

// get returns the key's series of a signal, or nil.
func (e *env) get(s series.Signal) *series.Series {
	for _, x := range e.found {
		if x.Signal == s {
			return x
		}
	}
	x := e.set.Get(e.key, s)
	if x != nil {
		e.found = append(e.found, x)
	}
	return x
}

// at is a signal's value at step i, NaN without a sample.
func (e *env) at(s series.Signal, i int) float64 {
	x := e.get(s)
	if x == nil || i < 0 || i >= len(x.Values) {
		return math.NaN()
	}
	return x.Values[i]
}

func (e *env) p(name string) float64 { return e.rule.Param(name) }

func (e *env) cacheConfig() (vllm.CacheConfig, bool) {
	c, ok := e.set.CacheConfig[e.key.Instance]
	return c, ok
}

// value is a signal at step i; NaN (and a reason) when there is no sample.
func (e *env) value(j *judge, s series.Signal, i int) float64 {
	v := e.at(s, i)
	if math.IsNaN(v) {
		j.lack("no " + string(s) + " sample")
	}
	return v
}

// optional is a signal at step i, NaN without complaint when it has no sample.
func (e *env) optional(s series.Signal, i int) float64 { return e.at(s, i) }

// enough reports whether the window ending at step i holds enough requests for a quantile.
func (e *env) enough(j *judge, i int) bool {
	n := e.at(series.RequestCount, i)
	if math.IsNaN(n) || n < e.minRequests {
		j.lack(fmt.Sprintf("fewer than %s requests in the window", num(e.minRequests)))
		return false
	}
	return true
}

// bounds is the histogram bucket that holds a quantile at step i. A quantile series without
// bounds is taken as exact (trace-derived values are). NaN when the window has too few requests.
func (e *env) bounds(j *judge, s series.Signal, i int) (lo, hi float64) {
	if !e.enough(j, i) {
		return math.NaN(), math.NaN()
	}
	return e.rawBounds(j, s, i)
}

func (e *env) rawBounds(j *judge, s series.Signal, i int) (lo, hi float64) {
	x := e.get(s)
	nan := math.NaN()
	if x == nil || i >= len(x.Values) || math.IsNaN(x.Values[i]) {
		j.lack("no " + string(s) + " sample")
		return nan, nan
	}
	if !x.HasBounds() {
		return x.Values[i], x.Values[i]
	}
	lo, hi = x.Lower[i], x.Upper[i]
	if math.IsNaN(lo) || math.IsNaN(hi) || hi <= 0 {
		j.lack("no bucket bounds for " + string(s))
		return nan, nan
	}
	return lo, hi
}

// ratio is num/den for interval arithmetic: 0/0 stays NaN, x/+Inf is 0, x/0 is +Inf.
func ratio(n, d float64) float64 {
	if d == 0 && n == 0 {
		return math.NaN()
	}
	return n / d
}

type baseKey struct {
	sig      series.Signal
	quantile bool
}

// baselineSeries holds, per step, the median of the signal over the baseline window before it
// (value) and the median of its bucket upper bounds (upper, for quantiles); NaN where the window
// has too little data.
type baselineSeries struct {
	value, upper []float64
}

// minBaselineCoverage is the share of the baseline window's steps that must hold usable data.
const minBaselineCoverage = 0.5

// baseline returns the baseline of a signal, computed once per key. A step of the window counts
// when it has a sample and, for quantiles, bucket bounds and enough requests. The median keeps a
// short incident inside the window from moving the baseline.
func (e *env) baseline(s series.Signal, quantile bool) *baselineSeries {
	return e.baselineOf(baseKey{s, quantile}, func() *series.Series { return e.set.Get(e.key, s) })
}

// baselineOf is baseline for a series a rule derives (k names it), computed once per key.
func (e *env) baselineOf(k baseKey, get func() *series.Series) *baselineSeries {
	quantile := k.quantile
	if b, ok := e.baselines[k]; ok {
		return b
	}
	n := e.set.Grid.Len
	b := &baselineSeries{value: series.NaNs(n), upper: series.NaNs(n)}
	e.baselines[k] = b
	x := get()
	if x == nil || e.baseSteps < 1 {
		return b
	}
	usable := func(i int) (v, up float64, ok bool) {
		v = x.Values[i]
		if math.IsNaN(v) {
			return 0, 0, false
		}
		if !quantile {
			return v, v, true
		}
		if c := e.at(series.RequestCount, i); math.IsNaN(c) || c < e.minRequests {
			return 0, 0, false
		}
		if !x.HasBounds() {
			return v, v, true
		}
		if math.IsNaN(x.Upper[i]) {
			return 0, 0, false
		}
		return v, x.Upper[i], true
	}
	need := int(math.Ceil(minBaselineCoverage * float64(e.baseSteps)))
	var vals, ups sortedWindow
	for i := 0; i < n && i < len(x.Values); i++ {
		if len(vals) >= need {
			b.value[i], b.upper[i] = vals.median(), ups.median()
		}
		if v, up, ok := usable(i); ok {
			vals.add(v)
			ups.add(up)
		}
		if out := i - e.baseSteps; out >= 0 {
			if v, up, ok := usable(out); ok {
				vals.remove(v)
				ups.remove(up)
			}
		}
	}
	return b
}

func (e *env) baselineReason(s series.Signal) string {
	return fmt.Sprintf("too little %s data in the %s before (baseline)", s, e.baseLabel)
}

// baseStep is the step whose baseline applies at step i: the run's first step while a run is
// in progress (see anchor), else i.
func (e *env) baseStep(i int) int {
	if e.anchor >= 0 && e.anchor < i {
		return e.anchor
	}
	return i
}

// baseValue is the baseline median of a signal at step i.
func (e *env) baseValue(j *judge, s series.Signal, i int) float64 {
	v := e.baseline(s, false).value[e.baseStep(i)]
	if math.IsNaN(v) {
		j.lack(e.baselineReason(s))
	}
	return v
}

// baseUpper is the upper bound of a quantile's baseline at step i.
func (e *env) baseUpper(j *judge, s series.Signal, i int) float64 {
	v := e.baseline(s, true).upper[e.baseStep(i)]
	if math.IsNaN(v) {
		j.lack(e.baselineReason(s))
	}
	return v
}

// sortedWindow is a sliding window kept sorted, so its median costs O(1) and each move O(w).
type sortedWindow []float64

func (w *sortedWindow) add(v float64) {
	i := sort.SearchFloat64s(*w, v)
	*w = append(*w, 0)
	copy((*w)[i+1:], (*w)[i:])
	(*w)[i] = v
}

func (w *sortedWindow) remove(v float64) {
	i := sort.SearchFloat64s(*w, v)
	if i < len(*w) && (*w)[i] == v {
		*w = append((*w)[:i], (*w)[i+1:]...)
	}
}

func (w sortedWindow) median() float64 {
	n := len(w)
	if n%2 == 1 {
		return w[n/2]
	}
	return (w[n/2-1] + w[n/2]) / 2
}
